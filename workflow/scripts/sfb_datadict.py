"""StatFormBench construction, rule sfb_datadict: the data dictionary of one case project (deterministic, no model) (earnest.statform.build.files).

input.files (the project's data files); params.project_dir, params.seed; output[0] datadict/{unit}.json; log[0]: log file.
"""

from _sfb_stage import run_stage

sm = snakemake  # noqa: F821


def stage(F, unit):
    return F.run_datadict(unit, sm.params.project_dir, list(sm.input.files), int(sm.params.seed), sm.output[0])


run_stage(sm, stage)
