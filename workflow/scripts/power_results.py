"""Every GLMM 1 variant result of the run beside the minimum detectable OR of its design.

snakemake.input.summaries: the run's summaries table (results/stats/summaries.parquet);
snakemake.output.csv (Markdown and LaTeX beside it); snakemake.log[0].
"""

from pathlib import Path

import pandas as pd

from earnest.joblog import job_logger
from earnest.stats import power as P

log = job_logger(snakemake.log[0], "power_results")  # noqa: F821

try:
    summaries = pd.read_parquet(snakemake.input.summaries)  # noqa: F821
    csv = Path(snakemake.output.csv)  # noqa: F821
    P.write_results_mde_table(summaries, csv.parent / csv.stem)
    log.info("wrote %s", csv)
except Exception:
    log.exception("the results' MDE table failed")
    raise
