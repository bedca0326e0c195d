"""Ex4's dose-response figure: the variant effect of GLMM 1 over GSM-Matched and the shifted sets.

snakemake.input.summaries: summary parquets (analyses matched, shifted<k>); snakemake.params.prompt;
snakemake.output.png, .svg, .pdf: the figure, drawn once and saved as each (earnest.plotting.save_figure);
snakemake.log[0].
"""
from pathlib import Path

import pandas as pd

from earnest.joblog import job_logger  # noqa: E402

log = job_logger(snakemake.log[0], "ex4_dose_response")  # noqa: F821
from earnest.gsm.ex4 import dose_response, dose_rows  # noqa: E402

sm = snakemake  # noqa: F821
rows = dose_rows(pd.concat([pd.read_parquet(p) for p in sm.input.summaries], ignore_index=True), sm.params.prompt)
dose_response(rows, Path(sm.output.png).with_suffix(""))
log.info("dose-response: %d points", len(rows))
