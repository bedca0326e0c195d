# Power of the template-bootstrap test: the study at a stated design (embedded default: the paper's
# 100 templates x 50 variants, scenarios from its published Tables 2-3) and, beside every GLMM 1
# result of the run, the minimum detectable odds ratio of its design. Statistics live in
# earnest.stats.power; these rules only wire files.
# Its settings, the published tables it reads and its targets: rules/power_targets.smk.


include: "power_targets.smk"


rule power_paper_design:
    input:
        published=str(POWER_PUBLISHED),
        tables=[str(POWER_PUBLISHED / TABLE2_FILE), str(POWER_PUBLISHED / TABLE3_FILE)],
    output:
        power=report(
            f"{POWER_DIR}/paper_design/power.csv",
            caption="../report/power_study.rst",
            category="Power",
            labels={"table": "power at the paper's design"},
        ),
        mde=f"{POWER_DIR}/paper_design/mde.csv",
        png=report(
            f"{POWER_DIR}/paper_design/power_curves.png",
            caption="../report/power_study.rst",
            category="Power",
            labels={"figure": "power curves"},
        ),
        pdf=f"{POWER_DIR}/paper_design/power_curves.pdf",
    log:
        "logs/power/paper_design.log",
    conda:
        "../envs/stats.yaml"
    container:
        env_container("stats")
    threads: POWER["threads"]
    resources:
        **CPU_JOB,
    params:
        scenarios=POWER["scenarios"],
        templates=POWER["templates"],
        variants=POWER["variants"],
        odds_ratios=POWER["odds_ratios"],
        effects=POWER["effects"],
        gamma_sd=POWER["gamma_sd"],
        sims=POWER["sims"],
        resamples=POWER["resamples"],
        alpha=config["stats"]["alpha"],
        seed=POWER["seed"],
        engine=POWER["engine"],
        cores=POWER["threads"],
    script:
        "../workflow/scripts/power_study.py"


rule power_results:
    input:
        summaries=SUMMARIES,
    output:
        csv=report(
            "results/tables/power/results_mde.csv",
            caption="../report/power_results.rst",
            category="Power",
            labels={"table": "results beside their MDE"},
        ),
        md="results/tables/power/results_mde.md",
        tex="results/tables/power/results_mde.tex",
    log:
        "logs/power/results_mde.log",
    group:
        "final"
    conda:
        "../envs/stats.yaml"
    container:
        env_container("stats")
    resources:
        **SMALL_JOB,
    script:
        "../workflow/scripts/power_results.py"
