"""Generate answers for one model x prompt format x dataset, resuming from checkpoints; in another
language (rule language_generate, `use rule generate`), with the language's prompt in its mode and
each prompt checked against the model's context first (earnest.gsm.context_fit).

snakemake.input.dataset_items: items parquet; snakemake.params: model (name), model_cfg (its config entry),
prompt (format name), prompt_entry (its stop strings, style and system prompt as planned, JSON), prompts_dir, fidelity,
max_new_tokens, checkpoint_every; for another language (wildcards.language) also prompt_mode, context_policy;
snakemake.threads: CPU threads; snakemake.output[0]: generations parquet; snakemake.output.context (another
language): one row per item, its prompt's tokens and shots; snakemake.log[0]: progress (items done, rate, ETA).
"""

import json

import pandas as pd

from earnest.joblog import job_logger  # noqa: E402

log = job_logger(snakemake.log[0], "generate")  # noqa: F821
from earnest.backends import load_backend  # noqa: E402
from earnest.backends.decoding import Decoding  # noqa: E402
from earnest.backends.serve import serving  # noqa: E402
from earnest.generation import generate_dataset  # noqa: E402
from earnest.gsm.prompts import load_formats  # noqa: E402

sm = snakemake  # noqa: F821
# the language rules (use rule generate as language_generate) have a language wildcard; English none
language = sm.wildcards.get("language", "eng")
cfg = dict(sm.params.model_cfg)
cfg.setdefault("threads", sm.threads)
if language == "eng":
    fmt = load_formats(sm.params.prompts_dir, fidelity=sm.params.fidelity)[sm.params.prompt]
else:
    from earnest.gsm.context_fit import CONTEXT_COLUMNS, check_context, mode_format, shots_of

    fmt = mode_format(language, sm.params.prompt_mode, sm.params.prompts_dir, fidelity=sm.params.fidelity,
                      name=sm.params.prompt)
planned = json.loads(sm.params.prompt_entry)
if (list(fmt.stop), fmt.style, fmt.system_prompt) != (planned["stop"], planned["style"], planned.get("system_prompt")):
    raise RuntimeError(f"prompt format {fmt.name!r} ({language}): formats.yaml or languages.yaml changed after the job "
                       f"was planned (stop {list(fmt.stop)} and style {fmt.style!r} now, {planned['stop']} and "
                       f"{planned['style']!r} planned; or its system_prompt); run snakemake again")
items = pd.read_parquet(sm.input.dataset_items)
# a model entry with a serve block: its server started here, on this node, and stopped however the job ends
with serving(sm.params.model, cfg, sm.log[0]) as cfg:
    backend = load_backend(sm.params.model, cfg)
    formats = None
    if language != "eng":
        formats, rows = check_context(items, fmt, backend, cfg, int(sm.params.max_new_tokens),
                                      policy=sm.params.context_policy, where=f"{language} {sm.wildcards.dataset}: ")
        pd.DataFrame(rows, columns=CONTEXT_COLUMNS).to_csv(sm.output.context, sep="\t", index=False)
        fewer = [r for r in rows if r["shots"] < shots_of(fmt)]
        log.info("%s (%s): prompts of %s tokens; %d item(s) with fewer than %d shots", language, sm.params.prompt_mode,
                 "unchecked" if rows and rows[0]["context"] is None else
                 f"{min(r['prompt_tokens'] for r in rows)}..{max(r['prompt_tokens'] for r in rows)}", len(fewer),
                 shots_of(fmt))
    generate_dataset(items, fmt, backend, model=sm.params.model, dataset=sm.wildcards.dataset, output=sm.output[0],
                     max_new_tokens=int(sm.params.max_new_tokens), checkpoint_every=int(sm.params.checkpoint_every),
                     formats=formats, samples=Decoding.from_cfg(sm.params.model, cfg).samples,
                     system_prompt=cfg.get("system_prompt"))
# the decoder's own account (transformers: batch, columns per slot, cache bytes, CUDA graphs, steps, prefills)
if getattr(backend, "last_decode", None):
    log.info("decoding: %s", backend.last_decode)
