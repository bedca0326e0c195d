# earnest: evaluate language models on reasoning benchmarks and judge the results with real statistics.
#   snakemake -c2                       the embedded default (config/config.yaml)
#   snakemake -n --configfile config/paper.yaml   plan the GSM-Symbolic re-evaluation's full grid
#   snakemake --profile profiles/slurm  the same on a Slurm cluster
import sys
from pathlib import Path

from snakemake.utils import min_version

# The library this workflow ships with (src/ beside this Snakefile) comes first, for the workflow
# and for every job it starts (PYTHONPATH), whichever earnest is installed: a second checkout runs
# its own rules with its own library, never another checkout's.
_SRC = str(Path(workflow.basedir).resolve() / "src")
sys.path.insert(0, _SRC)

from earnest.libpath import use_library

use_library(_SRC)

from earnest.config import ConfigError, check_config_files

min_version("9.0")


# the embedded default, unless --configfile names a complete config of its own (merging the two
# would add the default's model to every other config). It is read by earnest first: text that is
# not UTF-8 gets its file, line and column instead of Snakemake's traceback (a file given with
# --configfile Snakemake reads before any of this runs: `earnest check-config FILE` names its faults)
if not workflow.overwrite_configfiles:
    EMBEDDED_CONFIG = f"{workflow.basedir}/config/config.yaml"
    try:
        check_config_files([EMBEDDED_CONFIG])
    except ConfigError as exc:
        sys.exit(f"earnest: config error: {exc}")

    configfile: EMBEDDED_CONFIG


report: "report/workflow.rst"


# config checks, registries, wildcard constraints and shared helpers; then one file per stage, each
# including its rules/<stage>_targets.smk (its settings, input functions and targets)
include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/generate.smk"
include: "rules/score.smk"
include: "rules/stats.smk"
include: "rules/experiments.smk"
include: "rules/figures.smk"
include: "rules/sensitivity.smk"
include: "rules/statform.smk"
include: "rules/statform_build.smk"
include: "rules/power.smk"
include: "rules/compare.smk"
include: "rules/languages.smk"
include: "rules/logs.smk"


rule all:
    default_target: True
    input:
        all_targets,
