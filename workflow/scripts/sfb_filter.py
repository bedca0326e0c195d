"""StatFormBench construction, rule sfb_filter: the quality filter of one unit's samples (earnest.statform.build.files).

input.samples; params.llm; output[0] filter/{unit}.jsonl; log[0]: log file.
"""

from earnest.joblog import job_logger

sm = snakemake  # noqa: F821
log = job_logger(sm.log[0], "sfb_filter")

from earnest.statform.build import files as F  # noqa: E402

unit = sm.wildcards.get("unit", "")
info = F.run_filter(sm.input.samples, sm.output[0], dict(sm.params.llm))
log.info("sfb_filter %s: %s", unit, info)
