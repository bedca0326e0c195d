"""StatFormBench construction, rule sfb_label: the category label of one unit's samples, checked against the taxonomy (earnest.statform.build.files).

input.samples, input.taxonomy; params.llm; output[0] label/{unit}.jsonl; log[0]: log file.
"""

from _sfb_stage import run_stage

sm = snakemake  # noqa: F821


def stage(F, unit):
    return F.run_label(sm.input.samples, sm.output[0], dict(sm.params.llm), sm.input.taxonomy)


run_stage(sm, stage)
