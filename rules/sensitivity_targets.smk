# Sensitivity to the fidelity mode (rules/sensitivity.smk): the other mode, its rows and engine, and
# the summaries it reads.
from earnest.fidelity import other as other_mode
from earnest.stats.glmm import resolve_rows

SENS = config["sensitivity"]
SENS_DIR = "results/sensitivity"
OTHER = other_mode(FIDELITY)
OTHER_ROWS = resolve_rows(None, OTHER)
# the laplace engine fits aggregated rows only: the other mode's answers are fitted by lme4
OTHER_ENGINE = STATS["engine"] if OTHER_ROWS == "aggregated" else "lme4"


wildcard_constraints:
    mode=OTHER,


def sensitivity_summary_files(wildcards=None):
    """The other mode's per-group summaries of every model x prompt of this run."""
    return [f"{SENS_DIR}/{OTHER}/stats/all/glmm{g}/{m}/{p}/summary.parquet" for m, p in model_prompts() for g in (1, 2)]
