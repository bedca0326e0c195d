# Statistics (rules/stats.smk): settings, the GLMM inputs and summaries of the run.
from earnest.stats.engines import resolve_rows

STATS = config["stats"]
N_SHARDS = int(STATS["shards"])
# the rows the bootstrap fits (stats.rows, else the fidelity mode's)
try:
    STATS_ROWS = resolve_rows(STATS.get("rows"), FIDELITY, engine=STATS["engine"])
except ValueError as exc:
    config_error(exc)


def glmm_datasets(wildcards):
    """GSM-Base and the variant set of an analysis: GSM-Variants (also for Ex4's variants_matched),
    or Ex4's gsm_<analysis>."""
    if wildcards.analysis in ("all", "reasoning_only", "variants_matched"):
        return list(DATASETS)
    return ["gsm_base", f"gsm_{wildcards.analysis}"]


def variant_templates(wildcards):
    """Analysis variants_matched (Ex1 on Ex4's templates): the items whose templates keep variant rows."""
    return ["results/data/gsm_matched.parquet"] if wildcards.analysis == "variants_matched" else []


def gamma_pool(wildcards, mode, scored=scored_path):
    """Reference mode's GLMM 2 centres gamma over every model of the prompt, as the authors' code does
    (earnest.gsm.glmm_input.pool_gamma_centre): the scored tables (``scored(model, prompt, dataset)``)
    of each model that runs the prompt, in the analysis' datasets. None in earnest mode (per model x
    prompt), for another covariate than gamma (the authors had gamma only) and in Ex4's analyses
    (GLMM 1 only)."""
    if mode != "reference" or STATS["covariate"] != "gamma" or wildcards.analysis not in ("all", "reasoning_only"):
        return []
    models = [m for m, p in model_prompts() if p == wildcards.prompt]
    return [scored(m, wildcards.prompt, d) for m in models for d in glmm_datasets(wildcards)]


def summary_files(wildcards=None):
    """Ex1 (GLMM 1), Ex2 (GLMM 1), Ex3 (GLMM 2), and the reasoning-only analysis of code prompts."""
    out = []
    for m, p in model_prompts():
        out.append(summary_path("all", 1, m, p))
        out.append(summary_path("all", 2, m, p))
        if p in CODE_PROMPTS:
            out.append(summary_path("reasoning_only", 1, m, p))
            out.append(summary_path("reasoning_only", 2, m, p))
    return out


def refit_files(wildcards=None):
    return [s.replace("summary.parquet", "refits.parquet") for s in summary_files()]


def glmm_input_files(wildcards=None):
    return [f"{STATS_DIR}/all/input/{m}/{p}.parquet" for m, p in model_prompts()]
