# Paired comparisons on the same items: the models of each prompt, the prompts of each model
# (earnest.stats.compare: bootstrap GLMM with template and item intercepts, McNemar beside it,
# Holm across the pairs of a family). One job per family; a family needs two conditions.
# Needs from rules/common.smk: MODELS, FORMATS, GSM_MODELS, EX1_PROMPT, EX2_PROMPTS, ex2_models(),
# scored_path(), _alternatives(), CPU_PARTITION, SLURM_ACCOUNT; DATASETS.

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


rule compare_family:
    input:
        scored=compare_scored,
    output:
        csv=report(
            f"{COMPARE_DIR}/{{family}}/{{fixed}}/pairs.csv",
            caption="../report/compare.rst",
            category="Paired comparisons",
            labels={"family": "{family}", "of": "{fixed}", "output": "table"},
        ),
        md=f"{COMPARE_DIR}/{{family}}/{{fixed}}/pairs.md",
        tex=f"{COMPARE_DIR}/{{family}}/{{fixed}}/pairs.tex",
        png=report(
            f"{COMPARE_DIR}/{{family}}/{{fixed}}/matrix.png",
            caption="../report/compare.rst",
            category="Paired comparisons",
            labels={"family": "{family}", "of": "{fixed}", "output": "OR matrix"},
        ),
        pdf=f"{COMPARE_DIR}/{{family}}/{{fixed}}/matrix.pdf",
    log:
        "logs/compare/{family}/{fixed}.log",
    params:
        family=lambda wc: wc.family,
        fixed=lambda wc: wc.fixed,
        conditions=lambda wc: compare_conditions(wc.family, wc.fixed),
        resamples=COMPARE["resamples"] or config["stats"]["resamples"],
        seed=COMPARE["seed"],
        item_effects=COMPARE["item_effects"],
        alpha=config["stats"]["alpha"],
        labels={p: FORMATS[p].paper_name for p in FORMATS},
    threads: COMPARE["threads"]
    resources:
        slurm_partition=CPU_PARTITION,
        slurm_account=SLURM_ACCOUNT,
    conda:
        "../envs/stats.yaml"
    script:
        "../workflow/scripts/compare_family.py"


def compare_targets(wildcards=None):
    if not COMPARE["enabled"]:
        return []
    return [f"{COMPARE_DIR}/{f}/{x}/{name}" for f, x in compare_families() for name in ("pairs.csv", "matrix.png")]
