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
        # the scoring mode's env (earnest.fidelity.score_env): in reference mode the authors' Python
        # (3.12) runs model code; rules/sensitivity.smk gives the other mode's job that mode's env
        f"../{score_env(FIDELITY)}"
    container:
        env_container(Path(score_env(FIDELITY)).stem)
    resources:
        **SMALL_JOB,
    params:
        style=lambda wc: FORMATS[wc.prompt].style,
        fidelity=FIDELITY,
        # the interpreter of model code in this mode ("" = the job's own, the env's)
        sandbox_python=sandbox_python(config["sandbox"]["python"], FIDELITY),
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
    container:
        env_container("score")
    resources:
        **SMALL_JOB,
    script:
        "../workflow/scripts/sandbox_table.py"
