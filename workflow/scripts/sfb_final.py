"""StatFormBench construction, rule sfb_final: the built benchmark, its outcomes and statistics (earnest.statform.build.files).

input.rewrite, input.decisions, input.taxonomy; params.require_review, units, excluded;
output.samples, output.status, output.taxonomy, output.stats; log[0]: log file.
"""

from _sfb_stage import run_stage

sm = snakemake  # noqa: F821


def stage(F, unit):
    return F.run_finalize(list(sm.input.rewrite), list(sm.input.decisions), sm.input.taxonomy, sm.params.require_review,
                          sm.output.samples, sm.output.status, sm.output.taxonomy, sm.output.stats,
                          dict(sm.params.units), list(sm.params.excluded))


run_stage(sm, stage)
