"""StatFormBench construction, rule sfb_final: the built benchmark, its outcomes and statistics (earnest.statform.build.files).

input.rewrite, input.decisions, input.taxonomy; params.require_review, units, excluded;
output.samples, output.status, output.taxonomy, output.stats; log[0]: log file.
"""

from earnest.joblog import job_logger

sm = snakemake  # noqa: F821
log = job_logger(sm.log[0], "sfb_final")

from earnest.statform.build import files as F  # noqa: E402

unit = sm.wildcards.get("unit", "")
info = F.run_finalize(list(sm.input.rewrite), list(sm.input.decisions), sm.input.taxonomy, sm.params.require_review,
                      sm.output.samples, sm.output.status, sm.output.taxonomy, sm.output.stats,
                      dict(sm.params.units), list(sm.params.excluded))
log.info("sfb_final %s: %s", unit, info)
