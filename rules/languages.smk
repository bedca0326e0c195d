# GSM-Symbolic in other languages (gsm_symbolic.languages; docs/languages.md). Nothing here exists
# unless the config names a language other than eng: the English study's jobs, paths and outputs
# are those of the other rules, unchanged. Per other language: its items (results/languages/<lang>/
# data), Ex1's generations with the language's GSM prompt and its scored tables, one job per
# model x dataset each, and its GLMM 1 (the paper's model, bootstrapped) one job per model, English's
# included (on the English study's scored tables), so adding a language plans only its own jobs; then
# one job fits the cross-lingual GLMM on every language, takes the per-language GLMM 1s (Holm across
# the languages) and writes results/tables/languages/ and results/figures/languages/.
# Its settings and input functions: rules/languages_targets.smk.


include: "languages_targets.smk"


if OTHER_LANGUAGES:

    rule language_items:
        output:
            variants=f"{LANG_DIR}/{{language}}/data/{{dataset}}.parquet",
            report=f"{LANG_DIR}/{{language}}/data/{{dataset}}.report.tsv",
            excluded=f"{LANG_DIR}/{{language}}/data/{{dataset}}.excluded.tsv",
        log:
            "logs/language_items/{language}/{dataset}.log",
        wildcard_constraints:
            language=_alternatives(OTHER_LANGUAGES),
            dataset="gsm_base|gsm_variants",
        group:
            "prep"
        conda:
            "../envs/score.yaml"
        container:
            env_container("score")
        resources:
            **CPU_JOB,
        params:
            templates=TEMPLATES,
            variants=GSM["variants"],
            seed=GSM["seed"],
            keep_invalid=GSM["keep_invalid_items"],
        script:
            "../workflow/scripts/language_items.py"

    # generation and scoring are the English study's rules on the language's files (their scripts read
    # the language wildcard: the language's prompt in its mode, checked against the model's context
    # first; its extraction locale)
    use rule generate as language_generate with:
        input:
            dataset_items=f"{LANG_DIR}/{{language}}/data/{{dataset}}.parquet",
            model=model_inputs,
            prompt=language_prompt_file,
        output:
            f"{LANG_DIR}/{{language}}/generations/{{model}}/{{prompt}}/{{dataset}}.parquet",
            context=f"{LANG_DIR}/{{language}}/generations/{{model}}/{{prompt}}/{{dataset}}.context.tsv",
        log:
            "logs/language_generate/{language}/{model}/{prompt}/{dataset}.log",
        benchmark:
            "logs/benchmarks/language_generate/{language}/{model}/{prompt}/{dataset}.tsv"
        wildcard_constraints:
            language=_alternatives(OTHER_LANGUAGES),
            prompt=re.escape(EX1_PROMPT),
        params:
            model=lambda wc: wc.model,
            model_cfg=lambda wc: model_cfg(wc.model),
            prompt=lambda wc: wc.prompt,
            prompt_entry=language_prompt_entry,
            prompt_mode=lambda wc: language_mode(wc.language),
            context_policy=config["generation"]["context_policy"],
            prompts_dir=_repo_path(config["prompts_dir"]),
            fidelity=FIDELITY,
            max_new_tokens=config["generation"]["max_new_tokens"],
            checkpoint_every=config["generation"]["checkpoint_every"],

    use rule score as language_score with:
        input:
            generations=f"{LANG_DIR}/{{language}}/generations/{{model}}/{{prompt}}/{{dataset}}.parquet",
            dataset_items=f"{LANG_DIR}/{{language}}/data/{{dataset}}.parquet",
        output:
            f"{LANG_DIR}/{{language}}/scored/{{model}}/{{prompt}}/{{dataset}}.parquet",
        log:
            "logs/language_score/{language}/{model}/{prompt}/{dataset}.log",
        wildcard_constraints:
            language=_alternatives(OTHER_LANGUAGES),
            prompt=re.escape(EX1_PROMPT),
        params:
            style=lambda wc: LANGUAGE_FORMATS[wc.language].style,
            fidelity=FIDELITY,
            sandbox_python="",
            english_rules=lambda wc: wc.language in ENGLISH_RULES,

    rule language_glmm1:
        input:
            scored=language_scored_inputs,
        output:
            language_glmm1_path("{language}", "{model}", "{prompt}"),
        log:
            "logs/language_glmm1/{language}/{model}/{prompt}.log",
        wildcard_constraints:
            language=_alternatives(LANGUAGES),
            prompt=re.escape(EX1_PROMPT),
        conda:
            "../envs/stats.yaml"
        container:
            env_container("stats")
        threads: config["stats"]["threads"]
        resources:
            **CPU_JOB,
        params:
            language=lambda wc: wc.language,
            resamples=config["stats"]["resamples"],
            seed=config["stats"]["seed"],
            fidelity=FIDELITY,
            engine=config["stats"]["engine"],
            prior=config["stats"]["prior"],
        script:
            "../workflow/scripts/language_glmm1.py"

    rule cross_lingual:
        input:
            scored=[language_scored(m, x, d) for m in GSM_MODELS for x in LANGUAGES for d in DATASETS],
            glmm1=[language_glmm1_path(x, m, EX1_PROMPT) for m in GSM_MODELS for x in LANGUAGES],
            excluded=[f"{LANG_DIR}/{x}/data/{d}.excluded.tsv" for x in OTHER_LANGUAGES for d in DATASETS],
            english_items=[f"results/data/{d}.parquet" for d in DATASETS],
        output:
            table=report(f"{LANG_TABLES}/cross_lingual.md", category="Tables"),
            csv=f"{LANG_TABLES}/cross_lingual.csv",
            glmm1=f"{LANG_TABLES}/glmm1_by_language.csv",
            excluded=f"{LANG_TABLES}/excluded_items.csv",
            tex=f"{LANG_TABLES}/cross_lingual.tex",
            figure=report(f"{LANG_FIGURES}/variant_effect_by_language.png", category="Figures"),
            pdf=f"{LANG_FIGURES}/variant_effect_by_language.pdf",
            published=[f"{LANG_TABLES}/published_{x}.md" for x in OTHER_LANGUAGES],
        log:
            "logs/cross_lingual.log",
        group:
            "final"
        conda:
            "../envs/stats.yaml"
        container:
            env_container("stats")
        threads: config["stats"]["threads"]
        resources:
            **CPU_JOB,
        params:
            languages=LANGUAGES,
            scored_keys=[[m, x, d] for m in GSM_MODELS for x in LANGUAGES for d in DATASETS],
            resamples=config["stats"]["resamples"],
            seed=config["stats"]["seed"],
            alpha=config["stats"]["alpha"],
            fidelity=FIDELITY,
            engine=config["stats"]["engine"],
            keep_invalid=GSM["keep_invalid_items"],
            modes={x: language_mode(x) for x in LANGUAGES},
        script:
            "../workflow/scripts/cross_lingual.py"
