# The paper's experimental design (section 3.6): Ex1 decides which models go on to Ex2.
# Ex4's input functions and targets: rules/experiments_targets.smk.


include: "experiments_targets.smk"


checkpoint ex2_selection:
    input:
        EX1_SUMMARIES,
    output:
        EX2_DECISION,
    log:
        "logs/ex2_selection.log",
    conda:
        "../envs/stats.yaml"
    container:
        env_container("stats")
    resources:
        **CPU_JOB,
    params:
        ex1_prompt=EX1_PROMPT,
    script:
        "../workflow/scripts/select_ex2.py"


# Ex4: GLMM 1 on GSM-Base vs GSM-Matched for every Ex1 model (analysis "matched"), beside Ex1 and
# Ex3; the dose-response of the variant effect over the shifted sets (analyses "shifted<k>").
rule ex4_table:
    input:
        summaries=ex4_summary_files,
        base="results/data/gsm_base.parquet",
        matched="results/data/gsm_matched.parquet",
        variants="results/data/gsm_variants.parquet",
        report="results/data/gsm_matched.report.tsv",
        contrast=ex4_contrast_files,
    output:
        md="results/tables/ex4_matched.md",
        csv="results/tables/ex4_matched.csv",
        html=report(
            "results/tables/ex4_matched.html",
            caption="../report/ex4.rst",
            category="Tables",
            subcategory="Ex4: GSM-Matched",
            labels={"table": "Ex1 beside Ex4 per model", "dataset": "GSM-Base vs GSM-Matched"},
        ),
    log:
        "logs/ex4_table.log",
    conda:
        "../envs/stats.yaml"
    container:
        env_container("stats")
    resources:
        **CPU_JOB,
    params:
        prompt=EX1_PROMPT,
        alpha=config["stats"]["alpha"],
        fidelity=config["fidelity"],
        contrast=ex4_contrast_groups,
    script:
        "../workflow/scripts/ex4_table.py"


rule ex4_dose_response:
    input:
        summaries=ex4_dose_summary_files,
    output:
        png="results/figures/ex4_dose_response.png",
        svg=report(
            "results/figures/ex4_dose_response.svg",
            caption="../report/ex4_dose_response.rst",
            category="Figures",
            labels={
                "figure": "Ex4 dose-response: variant effect over digits added",
                "model": "Ex1 models",
                "prompt": PROMPT_LABELS.get(EX1_PROMPT, EX1_PROMPT),
                "dataset": "GSM-Base vs GSM-Matched and shifted sets",
            },
        ),
        pdf="results/figures/ex4_dose_response.pdf",
    log:
        "logs/ex4_dose_response.log",
    conda:
        "../envs/stats.yaml"
    container:
        env_container("stats")
    resources:
        **CPU_JOB,
    params:
        prompt=EX1_PROMPT,
    script:
        "../workflow/scripts/ex4_dose_response.py"
