"""Dequantize one GGUF model into a plain transformers checkpoint, once, for all its generation jobs.

snakemake.params: gguf (path or pkg:<package>/<file>), dtype (the model's); snakemake.output[0]: the
checkpoint directory.
"""

from earnest.joblog import job_logger  # noqa: E402

log = job_logger(snakemake.log[0], "convert_gguf")  # noqa: F821
from earnest.backends.hf import convert_gguf  # noqa: E402

checked = convert_gguf(snakemake.params.gguf, snakemake.output[0], snakemake.params.dtype)  # noqa: F821
log.info("converted %s into %s in %.1f s; %d tensors and %d tokenizer probes identical after reloading",
         checked["gguf"], snakemake.output[0], checked["seconds"], checked["tensors"], checked["probes"])  # noqa: F821
