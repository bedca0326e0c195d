# Optional logging of a run: its answers as Inspect AI logs (`inspect view`), its tables and figures
# as one MLflow run. Both off by default (config inspect_logs, mlflow; docs/workflow.md).
# Its input functions: rules/logs_targets.smk.


include: "logs_targets.smk"


rule inspect_log:
    input:
        scored="results/scored/{model}/{prompt}/{dataset}.parquet",
        generations="results/generations/{model}/{prompt}/{dataset}.parquet",
        dataset_items="results/data/{dataset}.parquet",
        prompt=prompt_files,
    output:
        "results/inspect/{model}/{prompt}/{dataset}.eval",
    log:
        "logs/inspect_log/{model}/{prompt}/{dataset}.log",
    group:
        "post"
    conda:
        "../envs/logs.yaml"
    container:
        env_container("logs")
    resources:
        **SMALL_JOB,
    params:
        # as configured (relative: to the working directory, else the workflow's folder), so that a
        # run copied elsewhere plans nothing new
        prompts_dir=config["prompts_dir"],
        fidelity=FIDELITY,
    script:
        "../workflow/scripts/inspect_log.py"


rule mlflow_log:
    input:
        results=mlflow_inputs,
        summaries=SUMMARIES,
    output:
        MLFLOW_RECORD,
    log:
        "logs/mlflow_log.log",
    localrule: True
    conda:
        "../envs/logs.yaml"
    container:
        env_container("logs")
    params:
        settings=config["mlflow"],
        config=lambda wc: {k: v for k, v in config.items() if k != "mlflow"},
    script:
        "../workflow/scripts/mlflow_log.py"
