# The experimental design (rules/experiments.smk): Ex4's targets and the summaries they read.


def ex4_targets(wildcards=None):
    if not EX4["enabled"]:
        return []
    out = ["results/tables/ex4_matched.md", "results/tables/ex4_matched.csv"]
    if EX4["shifts"]:
        out.append("results/figures/ex4_dose_response.png")
    return out


def ex4_summary_files(wildcards=None):
    """Ex1 (GLMM 1), Ex3 (GLMM 2) and Ex4 (GLMM 1 on GSM-Matched) of every Ex1 model."""
    return [summary_path(a, g, m, EX1_PROMPT) for m in GSM_MODELS for a, g in (("all", 1), ("all", 2), ("matched", 1))]


def ex4_dose_summary_files(wildcards=None):
    """GLMM 1 on GSM-Matched and on every shifted set, of every Ex1 model (the dose-response figure)."""
    analyses = ["matched"] + [f"shifted{k}" for k in EX4["shifts"]]
    return [summary_path(a, 1, m, EX1_PROMPT) for m in GSM_MODELS for a in analyses]
