# Sensitivity to the fidelity mode (rules/sensitivity.smk): the other mode, its rows and engine, and
# the summaries it reads.
from earnest.fidelity import other as other_mode
from earnest.stats.engines import engine_for, resolve_rows

SENS = config["sensitivity"]
SENS_DIR = "results/sensitivity"
OTHER = other_mode(FIDELITY)
OTHER_ROWS = resolve_rows(None, OTHER)
# the configured engine if it fits the other mode's rows (laplace fits aggregated rows only), else lme4
OTHER_ENGINE = engine_for(STATS["engine"], rows=OTHER_ROWS).name


wildcard_constraints:
    mode=OTHER,


def sensitivity_summary_files(wildcards=None):
    """The other mode's per-group summaries of every model x prompt of this run."""
    return [f"{SENS_DIR}/{OTHER}/stats/all/glmm{g}/{m}/{p}/summary.parquet" for m, p in model_prompts() for g in (1, 2)]
