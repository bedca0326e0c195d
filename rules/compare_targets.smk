# Paired comparisons (rules/compare.smk): the families of the run, the scored tables each reads.

COMPARE = config["compare"]  # defaults: config/schema.yaml
COMPARE_DIR = "results/compare"


wildcard_constraints:
    family="models|prompts",
    fixed=_alternatives(set(MODELS) | set(FORMATS)),


def compare_conditions(family, fixed):
    """The conditions of one family: the models with results on prompt ``fixed``, or the prompts
    model ``fixed`` was run with (Ex1 and Ex2)."""
    pairs = model_prompts()
    if family == "models":
        return sorted({m for m, p in pairs if p == fixed})
    return sorted({p for m, p in pairs if m == fixed})


def compare_families():
    out = []
    pairs = model_prompts()
    for p in sorted({p for _, p in pairs}):
        if len(compare_conditions("models", p)) >= 2:
            out.append(("models", p))
    for m in sorted({m for m, _ in pairs}):
        if len(compare_conditions("prompts", m)) >= 2:
            out.append(("prompts", m))
    return out


def compare_scored(wildcards):
    conds = compare_conditions(wildcards.family, wildcards.fixed)
    if wildcards.family == "models":
        return [scored_path(m, wildcards.fixed, d) for m in conds for d in DATASETS]
    return [scored_path(wildcards.fixed, p, d) for p in conds for d in DATASETS]


def compare_targets(wildcards=None):
    if not COMPARE["enabled"]:
        return []
    return [f"{COMPARE_DIR}/{f}/{x}/{name}" for f, x in compare_families() for name in ("pairs.csv", "matrix.png")]
