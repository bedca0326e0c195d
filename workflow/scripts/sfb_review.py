"""StatFormBench construction, rule sfb_review: the review sheets of every unit's rewritten samples (earnest.statform.build.files).

input.rewrite (every unit); params.batch_size; output[0] the review folder; log[0]: log file.
"""

from earnest.joblog import job_logger

sm = snakemake  # noqa: F821
log = job_logger(sm.log[0], "sfb_review")

from earnest.statform.build import files as F  # noqa: E402

unit = sm.wildcards.get("unit", "")
info = {"files": F.run_review_export(list(sm.input.rewrite), sm.output[0], sm.params.batch_size)}
log.info("sfb_review %s: %s", unit, info)
