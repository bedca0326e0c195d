"""StatFormBench construction, rule sfb_rewrite: the rewrite (with self-check and number check) of one unit's samples (earnest.statform.build.files).

input.label, input.variables, input.taxonomy; params.llm; output[0] rewrite/{unit}.jsonl; log[0]: log file.
"""

from earnest.joblog import job_logger

sm = snakemake  # noqa: F821
log = job_logger(sm.log[0], "sfb_rewrite")

from earnest.statform.build import files as F  # noqa: E402

unit = sm.wildcards.get("unit", "")
info = F.run_rewrite(sm.input.label, sm.input.variables, sm.output[0], dict(sm.params.llm), sm.input.taxonomy)
log.info("sfb_rewrite %s: %s", unit, info)
