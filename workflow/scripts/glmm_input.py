"""Build the GLMM input of one model x prompt from its scored tables.

snakemake.input.scored: scored parquets of that model x prompt (gsm_base and gsm_variants);
snakemake.params.reasoning_only: optional bool (default False): drop code-error rows (Appendix G);
snakemake.output[0]: GLMM input parquet (model, prompt, template, variant, correct, gamma);
snakemake.log[0]: log file.
"""

from earnest.stats.inputs import glmm_input_from_scored, read_scored
from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "glmm_input")  # noqa: F821

try:
    paths = snakemake.input.scored  # noqa: F821
    paths = [paths] if isinstance(paths, str) else list(paths)
    reasoning_only = bool(snakemake.params.get("reasoning_only", False))  # noqa: F821
    df = glmm_input_from_scored(read_scored(paths), reasoning_only=reasoning_only, source=", ".join(paths))
    log.info("%d rows (%d GSM-Base, %d GSM-Variants) from %s; reasoning_only=%s", len(df),
             int((df.variant == 0).sum()), int((df.variant == 1).sum()), paths, reasoning_only)
    df.to_parquet(snakemake.output[0], index=False)  # noqa: F821
except Exception:
    log.exception("building the GLMM input failed")
    raise
