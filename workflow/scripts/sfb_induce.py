"""StatFormBench construction, rule sfb_induce: questions induced from one case project's report and data dictionary (earnest.statform.build.files).

input.report, input.datadict; params.llm, max_questions, max_rounds, report_chars; output[0] induce/{unit}.jsonl; log[0]: log file.
"""

from earnest.joblog import job_logger

sm = snakemake  # noqa: F821
log = job_logger(sm.log[0], "sfb_induce")

from earnest.statform.build import files as F  # noqa: E402

unit = sm.wildcards.get("unit", "")
info = F.run_induce(unit, sm.input.report, sm.input.datadict, sm.output[0], dict(sm.params.llm),
                    sm.params.max_questions, sm.params.max_rounds, sm.params.report_chars)
log.info("sfb_induce %s: %s", unit, info)
