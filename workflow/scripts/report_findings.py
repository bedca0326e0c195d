"""Every model's verdicts for the report (earnest.gsm.report.write_findings): read from the summaries
table, never recomputed.

snakemake.input.summaries; snakemake.params.prompt_labels; snakemake.output.html, .rst (beside it);
snakemake.log[0].
"""

import pandas as pd

from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "report_findings")  # noqa: F821

from earnest.gsm.report import write_findings  # noqa: E402

try:
    sm = snakemake  # noqa: F821
    paths = write_findings(pd.read_parquet(sm.input.summaries), sm.output.html, dict(sm.params.prompt_labels))
    log.info("findings: %s", ", ".join(map(str, paths)))
except Exception:
    log.exception("findings failed")
    raise
