"""Generate answers for one model x prompt format x dataset, resuming from checkpoints.

snakemake.input.dataset_items: items parquet; snakemake.params: model (name), model_cfg (its config entry),
prompt (format name), prompt_entry (its stop strings and style as planned, JSON), prompts_dir, fidelity, max_new_tokens, checkpoint_every; snakemake.threads: CPU threads;
snakemake.output[0]: generations parquet; snakemake.log[0]: progress (items done, rate, ETA).
"""

import json

import pandas as pd

from earnest.joblog import job_logger  # noqa: E402

log = job_logger(snakemake.log[0], "generate")  # noqa: F821
from earnest.backends import load_backend  # noqa: E402
from earnest.backends.serve import serving  # noqa: E402
from earnest.generation import generate_dataset  # noqa: E402
from earnest.gsm.prompts import load_formats  # noqa: E402

sm = snakemake  # noqa: F821
cfg = dict(sm.params.model_cfg)
cfg.setdefault("threads", sm.threads)
fmt = load_formats(sm.params.prompts_dir, fidelity=sm.params.fidelity)[sm.params.prompt]
planned = json.loads(sm.params.prompt_entry)
if list(fmt.stop) != planned["stop"] or fmt.style != planned["style"]:
    raise RuntimeError(f"prompt format {fmt.name!r}: formats.yaml changed after the job was planned (stop "
                       f"{list(fmt.stop)} and style {fmt.style!r} now, {planned['stop']} and {planned['style']!r} "
                       "planned); run snakemake again")
items = pd.read_parquet(sm.input.dataset_items)
# a model entry with a serve block: its server started here, on this node, and stopped however the job ends
with serving(sm.params.model, cfg, sm.log[0]) as cfg:
    backend = load_backend(sm.params.model, cfg)
    generate_dataset(items, fmt, backend, model=sm.params.model, dataset=sm.wildcards.dataset, output=sm.output[0],
                     max_new_tokens=int(sm.params.max_new_tokens), checkpoint_every=int(sm.params.checkpoint_every))
# the decoder's own account (transformers: batch, columns per slot, cache bytes, CUDA graphs, steps, prefills)
if getattr(backend, "last_decode", None):
    log.info("decoding: %s", backend.last_decode)
