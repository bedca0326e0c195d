"""What the StatFormBench construction scripts (``sfb_*.py``) share: the job's log (named after the
rule), then one stage of :mod:`earnest.statform.build.files`, whose summary goes to the log.

The scripts import it by name: Snakemake puts the folder of a local script on ``sys.path``.
"""

from earnest.joblog import job_logger


def run_stage(sm, stage):
    """Start the log of the job ``sm`` (Snakemake's ``snakemake`` object), then return and log
    ``stage(F, unit)``: F is :mod:`earnest.statform.build.files` (imported after the log is set up,
    so that an import error is logged), unit the job's ``unit`` wildcard ("" when it has none)."""
    log = job_logger(sm.log[0], sm.rule)
    from earnest.statform.build import files

    unit = sm.wildcards.get("unit", "")
    info = stage(files, unit)
    log.info("%s %s: %s", sm.rule, unit, info)
    return info
