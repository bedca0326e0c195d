# Scoring: extract answers (regex for text prompts, the sandbox for code prompts) and mark correctness.


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
        "../envs/score.yaml"
    resources:
        slurm_partition=CPU_PARTITION,
        slurm_account=SLURM_ACCOUNT,
    params:
        style=lambda wc: FORMATS[wc.prompt].style,
        fidelity=config["fidelity"],
    script:
        "../workflow/scripts/score.py"
