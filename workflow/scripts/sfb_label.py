"""StatFormBench construction, rule sfb_label: the category label of one unit's samples, checked against the taxonomy (earnest.statform.build.files).

input.samples, input.taxonomy; params.llm; output[0] label/{unit}.jsonl; log[0]: log file.
"""

from earnest.joblog import job_logger

sm = snakemake  # noqa: F821
log = job_logger(sm.log[0], "sfb_label")

from earnest.statform.build import files as F  # noqa: E402

unit = sm.wildcards.get("unit", "")
info = F.run_label(sm.input.samples, sm.output[0], dict(sm.params.llm), sm.input.taxonomy)
log.info("sfb_label %s: %s", unit, info)
