"""The answers behind one model x prompt's numbers, as a page of the report (earnest.gsm.report.write_answers).

snakemake.input.scored: the scored parquets (GSM-Base, GSM-Variants); snakemake.wildcards.model;
snakemake.params.prompt_label; snakemake.output[0]; snakemake.log[0].
"""

import pandas as pd

from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "report_answers")  # noqa: F821

from earnest.gsm.report import write_answers  # noqa: E402

try:
    sm = snakemake  # noqa: F821
    scored = pd.concat([pd.read_parquet(f) for f in sm.input.scored], ignore_index=True)
    write_answers(scored, sm.output[0], sm.wildcards.model, sm.params.prompt_label)
    log.info("%d answers -> %s", len(scored), sm.output[0])
except Exception:
    log.exception("answers page failed")
    raise
