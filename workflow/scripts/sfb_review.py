"""StatFormBench construction, rule sfb_review: the review sheets of every unit's rewritten samples (earnest.statform.build.files).

input.rewrite (every unit); params.batch_size; output[0] the review folder; log[0]: log file.
"""

from _sfb_stage import run_stage

sm = snakemake  # noqa: F821


def stage(F, unit):
    return {"files": F.run_review_export(list(sm.input.rewrite), sm.output[0], sm.params.batch_size)}


run_stage(sm, stage)
