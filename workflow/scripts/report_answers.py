"""The answers behind one model x prompt's numbers, as a page of the report (earnest.gsm.report.write_answers).

snakemake.input.scored: the scored parquets (GSM-Base, GSM-Variants); snakemake.wildcards.model;
snakemake.params.prompt_label, .max_rows (config report.answers_max_rows), .inspect_dir (the Inspect
logs of this model x prompt, "" when the run writes none); snakemake.output[0]; snakemake.log[0].
"""

import pandas as pd

from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "report_answers")  # noqa: F821

from earnest.gsm.report import write_answers  # noqa: E402

try:
    sm = snakemake  # noqa: F821
    scored = pd.concat([pd.read_parquet(f) for f in sm.input.scored], ignore_index=True)
    write_answers(scored, sm.output[0], sm.wildcards.model, sm.params.prompt_label, max_rows=int(sm.params.max_rows),
                  sources=list(sm.input.scored), inspect_dir=sm.params.inspect_dir or None)
    log.info("%d answers, at most %d shown -> %s", len(scored), int(sm.params.max_rows), sm.output[0])
except Exception:
    log.exception("answers page failed")
    raise
