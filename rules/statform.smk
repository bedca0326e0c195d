# StatFormBench (second paper): model x prompting strategy -> generation -> parsing -> scoring -> analyses.
# Its settings and input functions: rules/statform_targets.smk.


include: "statform_targets.smk"


if SF["source"] == "official":

    # the authors' release at its pinned revision, fetched once on the login node (or copied from
    # statform.release.path) and checked against statform.release.sha256
    rule statform_release:
        output:
            SF_RELEASE_FILE,
        log:
            "logs/statform_release.log",
        localrule: True
        conda:
            "../envs/statform.yaml"
        container:
            env_container("statform")
        params:
            repo=SF_RELEASE["repo"],
            revision=SF_RELEASE["revision"],
            file=SF_RELEASE["file"],
            sha256=SF_RELEASE["sha256"],
            path=str(_repo_path(SF_RELEASE["path"])) if SF_RELEASE["path"] else None,
        script:
            "../workflow/scripts/statform_release.py"


rule statform_data:
    input:
        dataset=statform_dataset(),
        pool=_repo_path(SF["fewshot_pool"]),
        taxonomy=statform_taxonomy(),
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
    container:
        env_container("statform")
    resources:
        **SMALL_JOB,
    params:
        limit=SF["limit"],
        seed=SF["seed"],
    script:
        "../workflow/scripts/statform_data.py"


rule statform_generate:
    input:
        samples=f"{SF_DIR}/data/samples.parquet",
        pool=f"{SF_DIR}/data/pool.parquet",
        taxonomy=f"{SF_DIR}/data/taxonomy.yaml",
        template=statform_prompt_template(),
        model=model_inputs,
    output:
        f"{SF_DIR}/generations/{{model}}/{{strategy}}.parquet",
    log:
        "logs/statform_generate/{model}/{strategy}.log",
    benchmark:
        "logs/benchmarks/statform_generate/{model}/{strategy}.tsv"
    conda:
        "../envs/statform.yaml"
    container:
        env_container("statform")
    threads: config["generation"]["threads"]
    resources:
        **GENERATION_JOB,
    params:
        model=lambda wc: wc.model,
        model_cfg=lambda wc: model_cfg(wc.model),
        strategy=lambda wc: wc.strategy,
        strategy_cfg=lambda wc: SF_STRATEGIES[wc.strategy],
        max_new_tokens=SF["max_new_tokens"],
        checkpoint_every=config["generation"]["checkpoint_every"],
        fidelity=config["fidelity"],
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
    container:
        env_container("statform")
    resources:
        **SMALL_JOB,
    params:
        fidelity=config["fidelity"],
        max_chars=SF["max_answer_chars"],
    script:
        "../workflow/scripts/statform_score.py"


rule statform_analysis:
    input:
        samples=f"{SF_DIR}/data/samples.parquet",
        scored=expand(f"{SF_DIR}/scored/{{model}}/{{strategy}}.parquet", model=SF_MODELS, strategy=SF_STRATEGIES),
    output:
        tables=report(
            directory(f"{SF_DIR}/tables"),
            patterns=["{name}.html"],
            caption="../report/statform_tables.rst",
            category="StatFormBench",
            subcategory="Tables",
            labels={"table": "{name}", "model": "all models", "dataset": "StatFormBench"},
        ),
        figures=report(
            directory(f"{SF_DIR}/figures"),
            patterns=["{name}.svg"],
            caption="../report/statform_figures.rst",
            category="StatFormBench",
            subcategory="Figures",
            labels=lambda wc: statform_figure_labels(wc.name, SF_MODELS),
        ),
    log:
        "logs/statform_analysis.log",
    group:
        "final"
    conda:
        "../envs/statform.yaml"
    container:
        env_container("statform")
    resources:
        **SMALL_JOB,
    params:
        main_strategy=SF["main_strategy"],
        baseline=SF["main_strategy"],
        n_boot=SF["resamples"],
        seed=SF["seed"],
        min_category_n=SF["min_category_n"],
        top_fine=SF["top_fine"],
        glmm=len(SF_MODELS) > 1,
        fidelity=config["fidelity"],
        strategies=SF_STRATEGIES,
    script:
        "../workflow/scripts/statform_analysis.py"


# every StatFormBench table and figure: snakemake statform --configfile config/paper_statform.yaml
rule statform:
    input:
        statform_targets(),
    localrule: True
