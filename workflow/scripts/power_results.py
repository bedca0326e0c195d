"""Every GLMM 1 variant result of the run beside the minimum detectable OR of its design.

snakemake.input.summaries: summary parquet files (one per analysis x GLMM x model x prompt);
snakemake.params.alpha; snakemake.output.csv (Markdown and LaTeX beside it); snakemake.log[0].
"""

from pathlib import Path

import pandas as pd

from earnest.joblog import job_logger
from earnest.stats import power as P

log = job_logger(snakemake.log[0], "power_results")  # noqa: F821

try:
    files = snakemake.input.summaries  # noqa: F821
    files = [files] if isinstance(files, str) else list(files)
    summaries = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    csv = Path(snakemake.output.csv)  # noqa: F821
    P.write_results_mde_table(summaries, csv.parent / csv.stem, alpha=float(snakemake.params.alpha))  # noqa: F821
    log.info("wrote %s", csv)
except Exception:
    log.exception("the results' MDE table failed")
    raise
