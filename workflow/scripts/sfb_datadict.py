"""StatFormBench construction, rule sfb_datadict: the data dictionary of one case project (deterministic, no model) (earnest.statform.build.files).

input.files (the project's data files); params.project_dir, params.seed; output[0] datadict/{unit}.json; log[0]: log file.
"""

from earnest.joblog import job_logger

sm = snakemake  # noqa: F821
log = job_logger(sm.log[0], "sfb_datadict")

from earnest.statform.build import files as F  # noqa: E402

unit = sm.wildcards.get("unit", "")
info = F.run_datadict(unit, sm.params.project_dir, list(sm.input.files), int(sm.params.seed), sm.output[0])
log.info("sfb_datadict %s: %s", unit, info)
