"""Write every statistics table across models and prompts (Tables 2, 3, 6-23 of the GSM-Symbolic
re-evaluation) as CSV, Markdown and LaTeX, from the summaries table.

snakemake.input.summaries: the summaries table (results/stats/summaries.parquet);
snakemake.input.refits: optimiser-refit parquets; snakemake.input.glmm_inputs: GLMM input parquets
  of the all-errors analysis (for the separation check, Table 19);
snakemake.params: models (display order), prompts (display order), code_prompts (prompts with a
  reasoning-only analysis);
snakemake.output[0]: directory of tables; snakemake.log[0]: log file.
"""

import pandas as pd

from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "stats_tables")  # noqa: F821

from earnest.gsm.paper_tables import write_stats_tables  # noqa: E402
from earnest.stats.summaries import read_summaries  # noqa: E402


def _concat(value):
    """The non-empty tables of one input, concatenated; None when there are none."""
    frames = [pd.read_parquet(p) for p in ([value] if isinstance(value, str) else list(value))]
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else None


try:
    sm = snakemake  # noqa: F821
    summaries = read_summaries(sm.input.summaries)
    written = write_stats_tables(
        summaries, sm.output[0], refits=_concat(sm.input.refits), glmm_input=_concat(sm.input.glmm_inputs),
        models=list(sm.params.models), prompts=list(sm.params.prompts), code_prompts=list(sm.params.code_prompts))
    log.info("wrote %d table files to %s", len(written), sm.output[0])
except Exception:
    log.exception("writing the statistics tables failed")
    raise
