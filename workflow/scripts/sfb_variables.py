"""StatFormBench construction, rule sfb_variables: the variables of one unit's samples (earnest.statform.build.files).

input.samples; params.llm; output[0] variables/{unit}.jsonl; log[0]: log file.
"""

from earnest.joblog import job_logger

sm = snakemake  # noqa: F821
log = job_logger(sm.log[0], "sfb_variables")

from earnest.statform.build import files as F  # noqa: E402

unit = sm.wildcards.get("unit", "")
info = F.run_variables(sm.input.samples, sm.output[0], dict(sm.params.llm))
log.info("sfb_variables %s: %s", unit, info)
