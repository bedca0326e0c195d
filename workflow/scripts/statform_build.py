"""Every StatFormBench construction job (rules/statform_build.smk): the job's log, named after the
rule, then :func:`earnest.statform.build.files.run_job` on the job's named inputs, outputs and
params, whose summary goes to the log. The job is the rule's ``stage`` wildcard (rule sfb_stage)
or the rule's name after ``sfb_``."""

from earnest.joblog import job_logger

sm = snakemake  # noqa: F821
log = job_logger(sm.log[0], sm.rule)

from earnest.statform.build.files import run_job  # noqa: E402  (after the log: an import error is logged)

job = sm.wildcards.get("stage") or sm.rule.removeprefix("sfb_")
unit = sm.wildcards.get("unit", "")
info = run_job(job, unit, dict(sm.input.items()), dict(sm.output.items()), dict(sm.params.items()))
log.info("%s %s: %s", job, unit, info)
