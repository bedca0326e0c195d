# StatFormBench (second paper): model x prompting strategy -> generation -> parsing -> scoring -> analyses.


rule statform_data:
    input:
        dataset=statform_dataset(),
        pool=_repo_path(SF["fewshot_pool"]),
    output:
        samples=f"{SF_DIR}/data/samples.parquet",
        pool=f"{SF_DIR}/data/pool.parquet",
        taxonomy=f"{SF_DIR}/data/taxonomy.yaml",
    log:
        "logs/statform_data.log",
    group:
        "prep"
    conda:
        "../envs/statform.yaml"
    resources:
        slurm_partition=CPU_PARTITION,
        slurm_account=SLURM_ACCOUNT,
    params:
        taxonomy=str(_repo_path(SF["taxonomy"])) if SF["taxonomy"] else "",
        limit=SF["limit"],
    script:
        "../workflow/scripts/statform_data.py"


rule statform_generate:
    input:
        samples=f"{SF_DIR}/data/samples.parquet",
        pool=f"{SF_DIR}/data/pool.parquet",
        taxonomy=f"{SF_DIR}/data/taxonomy.yaml",
        model=model_inputs,
    output:
        f"{SF_DIR}/generations/{{model}}/{{strategy}}.parquet",
    log:
        "logs/statform_generate/{model}/{strategy}.log",
    benchmark:
        "logs/benchmarks/statform_generate/{model}/{strategy}.tsv"
    conda:
        "../envs/statform.yaml"
    threads: config["generation"]["threads"]
    resources:
        slurm_partition=generation_partition,
        slurm_account=SLURM_ACCOUNT,
        gpu=gpus,
        mem_mb=lambda wc: model_resources(wc.model)["mem_mb"],
        runtime=lambda wc: model_resources(wc.model)["runtime"],
    params:
        model=lambda wc: wc.model,
        model_cfg=lambda wc: model_cfg(wc.model),
        strategy=lambda wc: wc.strategy,
        strategy_cfg=lambda wc: SF_STRATEGIES[wc.strategy],
        max_new_tokens=SF["max_new_tokens"],
        prompt_template=str(_repo_path(SF["prompt_template"])) if SF["prompt_template"] else "",
    script:
        "../workflow/scripts/statform_generate.py"


rule statform_score:
    input:
        generations=f"{SF_DIR}/generations/{{model}}/{{strategy}}.parquet",
        samples=f"{SF_DIR}/data/samples.parquet",
        taxonomy=f"{SF_DIR}/data/taxonomy.yaml",
    output:
        f"{SF_DIR}/scored/{{model}}/{{strategy}}.parquet",
    log:
        "logs/statform_score/{model}/{strategy}.log",
    group:
        "post"
    conda:
        "../envs/statform.yaml"
    resources:
        slurm_partition=CPU_PARTITION,
        slurm_account=SLURM_ACCOUNT,
    script:
        "../workflow/scripts/statform_score.py"


rule statform_analysis:
    input:
        scored=expand(f"{SF_DIR}/scored/{{model}}/{{strategy}}.parquet", model=SF_MODELS, strategy=SF_STRATEGIES),
    output:
        tables=report(
            directory(f"{SF_DIR}/tables"),
            patterns=["{name}.md"],
            caption="../report/statform_tables.rst",
            category="StatFormBench",
        ),
        figures=report(
            directory(f"{SF_DIR}/figures"),
            patterns=["{name}.png"],
            caption="../report/statform_figures.rst",
            category="StatFormBench",
        ),
    log:
        "logs/statform_analysis.log",
    group:
        "final"
    conda:
        "../envs/statform.yaml"
    resources:
        slurm_partition=CPU_PARTITION,
        slurm_account=SLURM_ACCOUNT,
    params:
        main_strategy=SF["main_strategy"],
        baseline=SF["main_strategy"],
        n_boot=SF["resamples"],
        seed=SF["seed"],
        glmm=len(SF_MODELS) > 1,
    script:
        "../workflow/scripts/statform_analysis.py"
