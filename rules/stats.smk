# Statistics: bootstrapped binomial GLMMs (stats.engine: lme4 through rpy2, or the laplace engine), sharded per model x prompt.
# Resample b always uses a seed derived from (stats.seed, b): the shard count never changes a result.
from earnest.gsm.paper_tables import caption_values as stats_caption_values

# Its settings and input functions: rules/stats_targets.smk.


include: "stats_targets.smk"


rule glmm_input:
    input:
        scored=lambda wc: [scored_path(wc.model, wc.prompt, d) for d in glmm_datasets(wc)],
        item_tables=lambda wc: [f"results/data/{d}.parquet" for d in glmm_datasets(wc)],
        model=lambda wc: model_inputs(wc) if STATS["covariate"] == "number_tokens" else [],
        variant_templates=variant_templates,
    output:
        f"{STATS_DIR}/{{analysis}}/input/{{model}}/{{prompt}}.parquet",
    log:
        "logs/glmm_input/{analysis}/{model}/{prompt}.log",
    group:
        INPUT_GROUP
    conda:
        "../envs/stats.yaml"
    container:
        env_container("stats")
    resources:
        **SMALL_JOB,
    params:
        reasoning_only=lambda wc: wc.analysis == "reasoning_only",
        covariate=STATS["covariate"],
        model_cfg=lambda wc: model_cfg(wc.model) if STATS["covariate"] == "number_tokens" else {},
    script:
        "../workflow/scripts/glmm_input.py"


# reference mode's GLMM 2: the mean gamma of every model of the prompt, which its fits are centred on
rule gamma_centre:
    input:
        pool=lambda wc: gamma_pool(wc, FIDELITY),
    output:
        f"{STATS_DIR}/{{analysis}}/centre/{{prompt}}.json",
    log:
        "logs/gamma_centre/{analysis}/{prompt}.log",
    group:
        INPUT_GROUP
    conda:
        "../envs/stats.yaml"
    container:
        env_container("stats")
    resources:
        **SMALL_JOB,
    params:
        reasoning_only=lambda wc: wc.analysis == "reasoning_only",
    script:
        "../workflow/scripts/gamma_centre.py"


rule bootstrap_shard:
    input:
        f"{STATS_DIR}/{{analysis}}/input/{{model}}/{{prompt}}.parquet",
        centre=lambda wc: gamma_centre_file(wc, FIDELITY),
    output:
        shard=f"{STATS_DIR}/{{analysis}}/glmm{{glmm}}/{{model}}/{{prompt}}/shard-{{shard}}.parquet",
        check=f"{STATS_DIR}/{{analysis}}/glmm{{glmm}}/{{model}}/{{prompt}}/shard-{{shard}}.check.parquet",
    log:
        "logs/bootstrap_shard/{analysis}/glmm{glmm}/{model}/{prompt}/shard-{shard}.log",
    benchmark:
        "logs/benchmarks/bootstrap_shard/{analysis}/glmm{glmm}/{model}/{prompt}/shard-{shard}.tsv"
    group:
        SHARD_GROUP
    conda:
        "../envs/stats.yaml"
    container:
        env_container("stats")
    threads: STATS["threads"]
    resources:
        **CPU_JOB,
        runtime=minutes(STATS["shard_runtime"]),
    params:
        glmm=lambda wc: int(wc.glmm),
        resamples=STATS["resamples"],
        seed=STATS["seed"],
        shard=lambda wc: int(wc.shard),
        n_shards=N_SHARDS,
        rows=STATS_ROWS,
        fidelity=FIDELITY,
        engine=STATS["engine"],
        check_resamples=STATS["check_resamples"],
        prior=STATS["prior"],
    script:
        "../workflow/scripts/bootstrap_shard.py"


rule glmm_summary:
    input:
        glmm_input=f"{STATS_DIR}/{{analysis}}/input/{{model}}/{{prompt}}.parquet",
        centre=lambda wc: gamma_centre_file(wc, FIDELITY),
        shards=expand(
            f"{STATS_DIR}/{{{{analysis}}}}/glmm{{{{glmm}}}}/{{{{model}}}}/{{{{prompt}}}}/shard-{{shard}}.parquet",
            shard=range(N_SHARDS),
        ),
        checks=expand(
            f"{STATS_DIR}/{{{{analysis}}}}/glmm{{{{glmm}}}}/{{{{model}}}}/{{{{prompt}}}}/shard-{{shard}}.check.parquet",
            shard=range(N_SHARDS),
        ),
    output:
        summary=f"{STATS_DIR}/{{analysis}}/glmm{{glmm}}/{{model}}/{{prompt}}/summary.parquet",
        refits=f"{STATS_DIR}/{{analysis}}/glmm{{glmm}}/{{model}}/{{prompt}}/refits.parquet",
    log:
        "logs/glmm_summary/{analysis}/glmm{glmm}/{model}/{prompt}.log",
    group:
        FIT_GROUP
    conda:
        "../envs/stats.yaml"
    container:
        env_container("stats")
    resources:
        **SMALL_JOB,
    params:
        glmm=lambda wc: int(wc.glmm),
        resamples=STATS["resamples"],
        analysis=lambda wc: wc.analysis,
        fidelity=FIDELITY,
        rows=STATS_ROWS,
        engine=STATS["engine"],
        covariate=STATS["covariate"],
        collinearity_threshold=STATS["collinearity_threshold"],
        prior=STATS["prior"],
    script:
        "../workflow/scripts/glmm_summary.py"


rule summaries:
    input:
        summaries=summary_files,
        ex2_decision=ex2_decision_file,
    output:
        SUMMARIES,
    log:
        "logs/summaries.log",
    group:
        "final"
    conda:
        "../envs/stats.yaml"
    container:
        env_container("stats")
    resources:
        **SMALL_JOB,
    params:
        prompt_labels=PROMPT_LABELS,
        alpha=STATS["alpha"],
        ex2_models=lambda wc: ex2_models(),
    script:
        "../workflow/scripts/summaries.py"


# the Ex1 rows alone (GLMM 1, the Ex1 prompt, every model), for the Ex1 -> Ex2 checkpoint
rule ex1_summaries:
    input:
        summaries=[summary_path("all", 1, m, EX1_PROMPT) for m in GSM_MODELS],
    output:
        EX1_SUMMARIES,
    log:
        "logs/ex1_summaries.log",
    conda:
        "../envs/stats.yaml"
    container:
        env_container("stats")
    resources:
        **CPU_JOB,
    params:
        prompt_labels=PROMPT_LABELS,
        alpha=STATS["alpha"],
        ex2_models=[],
    script:
        "../workflow/scripts/summaries.py"


rule stats_tables:
    input:
        summaries=SUMMARIES,
        refits=refit_files,
        glmm_inputs=glmm_input_files,
    output:
        report(
            directory("results/tables/stats"),
            patterns=["{name}.html"],
            caption="../report/stats_tables.rst",
            category="Tables",
            subcategory="GLMM statistics (Tables 2, 3, 6-23)",
            labels=lambda wc: stats_table_labels(wc.name, PROMPT_LABELS),
        ),
    log:
        "logs/stats_tables.log",
    group:
        "final"
    conda:
        "../envs/stats.yaml"
    container:
        env_container("stats")
    resources:
        **SMALL_JOB,
    params:
        models=list(MODELS),
        prompts=RUN_PROMPTS,
        code_prompts=CODE_PROMPTS,
        # the words report/stats_tables.rst takes from the code (earnest.wording)
        caption=stats_caption_values(FIDELITY, STATS["engine"]),
    script:
        "../workflow/scripts/stats_tables.py"


rule ks_test:
    input:
        base="results/data/gsm_base.parquet",
        variants="results/data/gsm_variants.parquet",
    output:
        table="results/tables/ks.csv",
        html=report(
            "results/tables/ks.html",
            caption="../report/ks_table.rst",
            category="Tables",
            subcategory="Data",
            labels={"table": "Kolmogorov-Smirnov test of the integers", "dataset": "GSM-Base vs GSM-Variants"},
        ),
        figure="results/figures/fig8_integers.png",
        svg=report(
            "results/figures/fig8_integers.svg",
            caption="../report/fig8.rst",
            category="Figures",
            labels={"figure": "Figure 8: integers in the questions", "dataset": "GSM-Base vs GSM-Variants"},
        ),
        pdf="results/figures/fig8_integers.pdf",
    log:
        "logs/ks_test.log",
    group:
        "prep"
    conda:
        "../envs/stats.yaml"
    container:
        env_container("stats")
    resources:
        **SMALL_JOB,
    params:
        fidelity=config["fidelity"],
    script:
        "../workflow/scripts/ks_test.py"
