# Scoring: extract answers (regex for text prompts, the sandbox for code prompts) and mark correctness.
# Its input functions: rules/score_targets.smk.


include: "score_targets.smk"


rule score:
    input:
        generations="results/generations/{model}/{prompt}/{dataset}.parquet",
        dataset_items="results/data/{dataset}.parquet",
    output:
        "results/scored/{model}/{prompt}/{dataset}.parquet",
    log:
        "logs/score/{model}/{prompt}/{dataset}.log",
    group:
        "post"
    conda:
        # reference mode: the authors' Python (3.12) runs model code
        "../envs/score-reference.yaml" if config["fidelity"] == "reference" else "../envs/score.yaml"
    resources:
        **SMALL_JOB,
    params:
        style=lambda wc: FORMATS[wc.prompt].style,
        fidelity=config["fidelity"],
        sandbox_python=config["sandbox"]["python"],
    script:
        "../workflow/scripts/score.py"


rule sandbox_table:
    input:
        scored=code_scored_files,
    output:
        md=report("results/tables/sandbox.md", category="Tables"),
        csv="results/tables/sandbox.csv",
    log:
        "logs/sandbox_table.log",
    group:
        "final"
    conda:
        "../envs/score.yaml"
    resources:
        **SMALL_JOB,
    script:
        "../workflow/scripts/sandbox_table.py"
