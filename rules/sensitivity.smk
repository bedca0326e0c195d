# Sensitivity of the conclusions to the fidelity mode (config sensitivity; beyond the paper).
# The main results use config fidelity; here the other mode (earnest.fidelity.other) is computed
# under results/sensitivity/<mode>/: scored tables from the same generations (or, with
# sensitivity.regenerate, from generations made with that mode's prompt bytes), then GLMM inputs,
# bootstrap shards and summaries of the all-errors analysis, fitted on that mode's rows and judged by
# its clean-fit rule. The same rules as the main results (use rule ... with), other paths and params.

# The other mode, its rows and engine, and the summaries it reads: rules/sensitivity_targets.smk.


include: "sensitivity_targets.smk"


if SENS["enabled"]:

    if SENS["regenerate"]:

        use rule generate as sensitivity_generate with:
            output:
                f"{SENS_DIR}/{{mode}}/generations/{{model}}/{{prompt}}/{{dataset}}.parquet",
            log:
                "logs/sensitivity/{mode}/generate/{model}/{prompt}/{dataset}.log",
            benchmark:
                "logs/benchmarks/sensitivity/{mode}/generate/{model}/{prompt}/{dataset}.tsv"
            params:
                fidelity=OTHER,

    use rule score as sensitivity_score with:
        input:
            generations=(
                f"{SENS_DIR}/{{mode}}/generations/{{model}}/{{prompt}}/{{dataset}}.parquet"
                if SENS["regenerate"]
                else "results/generations/{model}/{prompt}/{dataset}.parquet"
            ),
            dataset_items="results/data/{dataset}.parquet",
        output:
            f"{SENS_DIR}/{{mode}}/scored/{{model}}/{{prompt}}/{{dataset}}.parquet",
        log:
            "logs/sensitivity/{mode}/score/{model}/{prompt}/{dataset}.log",
        conda:
            # the other mode's env and interpreter of model code (the reference column of the table
            # is scored on the authors' Python 3.12, whichever mode the main results use)
            f"../{score_env(OTHER)}"
        container:
            env_container(Path(score_env(OTHER)).stem)
        params:
            fidelity=OTHER,
            sandbox_python=sandbox_python(config["sandbox"]["python"], OTHER),

    use rule glmm_input as sensitivity_glmm_input with:
        input:
            scored=expand(
                f"{SENS_DIR}/{{{{mode}}}}/scored/{{{{model}}}}/{{{{prompt}}}}/{{dataset}}.parquet", dataset=DATASETS
            ),
            item_tables=expand("results/data/{dataset}.parquet", dataset=DATASETS),
            variant_templates=variant_templates,
        output:
            f"{SENS_DIR}/{{mode}}/stats/{{analysis}}/input/{{model}}/{{prompt}}.parquet",
        log:
            "logs/sensitivity/{mode}/glmm_input/{analysis}/{model}/{prompt}.log",

    # the other mode's pool of GLMM 2's centre (reference: every model of the prompt)
    use rule gamma_centre as sensitivity_gamma_centre with:
        input:
            pool=lambda wc: gamma_pool(wc, OTHER, lambda m, p, d: f"{SENS_DIR}/{OTHER}/scored/{m}/{p}/{d}.parquet"),
        output:
            f"{SENS_DIR}/{{mode}}/stats/{{analysis}}/centre/{{prompt}}.json",
        log:
            "logs/sensitivity/{mode}/gamma_centre/{analysis}/{prompt}.log",

    use rule bootstrap_shard as sensitivity_bootstrap_shard with:
        input:
            f"{SENS_DIR}/{{mode}}/stats/{{analysis}}/input/{{model}}/{{prompt}}.parquet",
            centre=lambda wc: gamma_centre_file(wc, OTHER, f"{SENS_DIR}/{OTHER}/stats"),
        output:
            shard=f"{SENS_DIR}/{{mode}}/stats/{{analysis}}/glmm{{glmm}}/{{model}}/{{prompt}}/shard-{{shard}}.parquet",
            check=f"{SENS_DIR}/{{mode}}/stats/{{analysis}}/glmm{{glmm}}/{{model}}/{{prompt}}/shard-{{shard}}.check.parquet",
        log:
            "logs/sensitivity/{mode}/bootstrap_shard/{analysis}/glmm{glmm}/{model}/{prompt}/shard-{shard}.log",
        benchmark:
            "logs/benchmarks/sensitivity/{mode}/bootstrap_shard/{analysis}/glmm{glmm}/{model}/{prompt}/shard-{shard}.tsv"
        params:
            rows=OTHER_ROWS,
            n_shards=SENS["shards"],
            fidelity=OTHER,
            engine=OTHER_ENGINE,

    use rule glmm_summary as sensitivity_glmm_summary with:
        input:
            glmm_input=f"{SENS_DIR}/{{mode}}/stats/{{analysis}}/input/{{model}}/{{prompt}}.parquet",
            centre=lambda wc: gamma_centre_file(wc, OTHER, f"{SENS_DIR}/{OTHER}/stats"),
            shards=expand(
                f"{SENS_DIR}/{{{{mode}}}}/stats/{{{{analysis}}}}/glmm{{{{glmm}}}}/{{{{model}}}}/{{{{prompt}}}}/shard-{{shard}}.parquet",
                shard=range(SENS["shards"]),
            ),
            checks=expand(
                f"{SENS_DIR}/{{{{mode}}}}/stats/{{{{analysis}}}}/glmm{{{{glmm}}}}/{{{{model}}}}/{{{{prompt}}}}/shard-{{shard}}.check.parquet",
                shard=range(SENS["shards"]),
            ),
        output:
            summary=f"{SENS_DIR}/{{mode}}/stats/{{analysis}}/glmm{{glmm}}/{{model}}/{{prompt}}/summary.parquet",
            refits=f"{SENS_DIR}/{{mode}}/stats/{{analysis}}/glmm{{glmm}}/{{model}}/{{prompt}}/refits.parquet",
        log:
            "logs/sensitivity/{mode}/glmm_summary/{analysis}/glmm{glmm}/{model}/{prompt}.log",
        params:
            fidelity=OTHER,
            rows=OTHER_ROWS,
            engine=OTHER_ENGINE,

    # the other mode's summaries table: the same contract (earnest.stats.summaries) as the main one
    use rule summaries as sensitivity_summaries with:
        input:
            # the other mode's per-group summaries of every model x prompt of this run
            summaries=sensitivity_summary_files,
            ex2_decision=ex2_decision_file,
        output:
            f"{SENS_DIR}/{{mode}}/stats/summaries.parquet",
        log:
            "logs/sensitivity/{mode}/summaries.log",

    rule sensitivity_table:
        input:
            main=SUMMARIES,
            other=f"{SENS_DIR}/{OTHER}/stats/summaries.parquet",
        output:
            table="results/tables/sensitivity.md",
            html=report(
                "results/tables/sensitivity.html",
                caption="../report/sensitivity.rst",
                category="Tables",
                subcategory="Fidelity-mode sensitivity",
                labels={"table": "the other fidelity mode", "model": "all models"},
            ),
            csv="results/tables/sensitivity.csv",
            tex="results/tables/sensitivity.tex",
        log:
            "logs/sensitivity_table.log",
        group:
            "final"
        conda:
            "../envs/stats.yaml"
        container:
            env_container("stats")
        resources:
            **SMALL_JOB,
        params:
            modes=[FIDELITY, OTHER],
            regenerate=SENS["regenerate"],
            models=list(MODELS),
        script:
            "../workflow/scripts/sensitivity_table.py"
