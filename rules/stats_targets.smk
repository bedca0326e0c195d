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


def pools_gamma(analysis, mode):
    """Whether GLMM 2 of an analysis centres gamma over every model of the prompt (the authors' pool,
    earnest.gsm.glmm_input.pool_gamma_centre): in reference mode, for gamma (the authors had no other
    covariate), in the all-errors and reasoning-only analyses (Ex4's fit GLMM 1 only). Elsewhere
    gamma is centred per model x prompt, and no fit reads another model's answers."""
    return mode == "reference" and STATS["covariate"] == "gamma" and analysis in ("all", "reasoning_only")


def gamma_pool(wildcards, mode, scored=scored_path):
    """The pool of a prompt's centre (:func:`pools_gamma`): the scored tables (``scored(model, prompt,
    dataset)``) of each model that runs the prompt, in the analysis' datasets; none where it has none."""
    if not pools_gamma(wildcards.analysis, mode):
        return []
    models = [m for m, p in model_prompts() if p == wildcards.prompt]
    return [scored(m, wildcards.prompt, d) for m in models for d in glmm_datasets(wildcards)]


def gamma_centre_file(wildcards, mode, stats_dir=STATS_DIR):
    """The pool's centre that a GLMM 2 fit reads beside its input (rule gamma_centre), [] for GLMM 1 and
    where gamma is centred per model x prompt. Only GLMM 2 reads it, so a model added to the pool
    plans its own jobs, the cross-model tables and the pool's centre with the GLMM 2 fits that it
    moves, and no other model's GLMM input or GLMM 1."""
    if int(wildcards.glmm) != 2 or not pools_gamma(wildcards.analysis, mode):
        return []
    return [f"{stats_dir}/{wildcards.analysis}/centre/{wildcards.prompt}.json"]


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
