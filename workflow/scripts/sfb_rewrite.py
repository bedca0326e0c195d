"""StatFormBench construction, rule sfb_rewrite: the rewrite (with self-check and number check) of one unit's samples (earnest.statform.build.files).

input.label, input.variables, input.taxonomy; params.llm; output[0] rewrite/{unit}.jsonl; log[0]: log file.
"""

from _sfb_stage import run_stage

sm = snakemake  # noqa: F821


def stage(F, unit):
    return F.run_rewrite(sm.input.label, sm.input.variables, sm.output[0], dict(sm.params.llm), sm.input.taxonomy)


run_stage(sm, stage)
