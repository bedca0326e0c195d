# The experimental design (rules/experiments.smk): Ex4's targets and the summaries they read.


def ex4_targets(wildcards=None):
    if not EX4["enabled"]:
        return []
    out = ["results/tables/ex4_matched.md", "results/tables/ex4_matched.csv"]
    if EX4["shifts"]:
        out.append("results/figures/ex4_dose_response.png")
    return out


#: Ex4's contrast pairs GLMM 1 of these two analyses (earnest.gsm.ex4.CONTRAST)
EX4_CONTRAST = ("variants_matched", "matched")


def ex4_summary_files(wildcards=None):
    """Ex1 (GLMM 1), Ex3 (GLMM 2), Ex4 (GLMM 1 on GSM-Matched) and Ex1 on Ex4's templates of every Ex1 model."""
    pairs = (("all", 1), ("all", 2), ("matched", 1), ("variants_matched", 1))
    return [summary_path(a, g, m, EX1_PROMPT) for m in GSM_MODELS for a, g in pairs]


def ex4_contrast_groups(wildcards=None):
    """model -> analysis -> {input, shards}: the bootstrap shards and GLMM input of both analyses
    of Ex4's contrast, paired resample by resample in ex4_table."""
    return {
        m: {
            a: {
                "input": f"{STATS_DIR}/{a}/input/{m}/{EX1_PROMPT}.parquet",
                "shards": [f"{STATS_DIR}/{a}/glmm1/{m}/{EX1_PROMPT}/shard-{k}.parquet" for k in range(N_SHARDS)],
            }
            for a in EX4_CONTRAST
        }
        for m in GSM_MODELS
    }


def ex4_contrast_files(wildcards=None):
    return [p for groups in ex4_contrast_groups().values() for g in groups.values() for p in [g["input"], *g["shards"]]]


def ex4_dose_summary_files(wildcards=None):
    """GLMM 1 on GSM-Matched and on every shifted set, of every Ex1 model (the dose-response figure)."""
    analyses = ["matched"] + [f"shifted{k}" for k in EX4["shifts"]]
    return [summary_path(a, 1, m, EX1_PROMPT) for m in GSM_MODELS for a in analyses]
