# Paired comparisons on the same items: the models of each prompt, the prompts of each model
# (earnest.stats.compare: bootstrap GLMM with template and item intercepts, McNemar beside it,
# Holm across the pairs of a family). One job per family; a family needs two conditions.
# Its families, input functions and targets: rules/compare_targets.smk.


include: "compare_targets.smk"


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
    group:
        COMPARE_GROUP
    conda:
        "../envs/stats.yaml"
    container:
        env_container("stats")
    threads: COMPARE["threads"]
    resources:
        **CPU_JOB,
        runtime=minutes(COMPARE["runtime"]),
    params:
        family=lambda wc: wc.family,
        fixed=lambda wc: wc.fixed,
        conditions=lambda wc: compare_conditions(wc.family, wc.fixed),
        resamples=COMPARE["resamples"] or config["stats"]["resamples"],
        seed=COMPARE["seed"],
        item_effects=COMPARE["item_effects"],
        agq=COMPARE["agq"],
        # item intercepts need an engine that fits them (lme4); template intercepts alone use the run's
        engine=engine_for(config["stats"]["engine"], item_effects=COMPARE["item_effects"]).name,
        alpha=config["stats"]["alpha"],
        labels={p: FORMATS[p].paper_name for p in RUN_PROMPTS},
    script:
        "../workflow/scripts/compare_family.py"
