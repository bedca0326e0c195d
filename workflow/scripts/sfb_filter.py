"""StatFormBench construction, rule sfb_filter: the quality filter of one unit's samples (earnest.statform.build.files).

input.samples; params.llm; output[0] filter/{unit}.jsonl; log[0]: log file.
"""

from _sfb_stage import run_stage

sm = snakemake  # noqa: F821


def stage(F, unit):
    return F.run_filter(sm.input.samples, sm.output[0], dict(sm.params.llm))


run_stage(sm, stage)
