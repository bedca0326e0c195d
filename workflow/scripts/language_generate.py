"""Generate answers for one language x model x prompt x dataset with the language's prompt.

snakemake.input.dataset_items: the language's items; snakemake.params: model, model_cfg, language,
prompt (format name), prompt_entry (its stop strings and style as planned, JSON), prompts_dir,
fidelity, max_new_tokens, checkpoint_every; snakemake.output[0]: generations parquet; snakemake.log[0].
"""

import json

import pandas as pd

from earnest.joblog import job_logger  # noqa: E402

log = job_logger(snakemake.log[0], "language_generate")  # noqa: F821
from earnest.backends import load_backend  # noqa: E402
from earnest.generation import generate_dataset  # noqa: E402
from earnest.gsm.prompts import language_format  # noqa: E402

sm = snakemake  # noqa: F821
cfg = dict(sm.params.model_cfg)
cfg.setdefault("threads", sm.threads)
fmt = language_format(sm.params.language, sm.params.prompt, sm.params.prompts_dir, fidelity=sm.params.fidelity)
planned = json.loads(sm.params.prompt_entry)
if list(fmt.stop) != planned["stop"] or fmt.style != planned["style"]:
    raise RuntimeError(f"prompt {fmt.name!r} ({sm.params.language}): languages.yaml changed after the job was "
                       "planned; run snakemake again")
items = pd.read_parquet(sm.input.dataset_items)
backend = load_backend(sm.params.model, cfg)
generate_dataset(items, fmt, backend, model=sm.params.model, dataset=sm.wildcards.dataset, output=sm.output[0],
                 max_new_tokens=int(sm.params.max_new_tokens), checkpoint_every=int(sm.params.checkpoint_every))
if getattr(backend, "last_decode", None):
    log.info("decoding: %s", backend.last_decode)
