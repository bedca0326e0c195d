# Generation: one job per model x prompt format x dataset (the GPU rules).
# Its input functions: rules/generate_targets.smk.


include: "generate_targets.smk"


rule fetch_model:
    output:
        touch("results/models/{model}.fetched"),
    log:
        "logs/fetch_model/{model}.log",
    localrule: True
    conda:
        "../envs/generate.yaml"
    container:
        env_container("generate")
    params:
        hub=lambda wc: MODELS[wc.model]["hub"],
        revision=lambda wc: MODELS[wc.model].get("revision"),
        cache_dir=lambda wc: model_cfg(wc.model)["cache_dir"],
    script:
        "../workflow/scripts/fetch_model.py"


rule convert_gguf:
    input:
        gguf_file,
    output:
        directory("results/models/gguf/{model}"),
    log:
        "logs/convert_gguf/{model}.log",
    conda:
        "../envs/generate.yaml"
    container:
        env_container("generate")
    threads: 1
    resources:
        **CPU_JOB,
        mem_mb=lambda wc: model_resources(wc.model)["mem_mb"],
        runtime=60,
    params:
        gguf=lambda wc: MODELS[wc.model]["gguf"],
        dtype=lambda wc: model_dtype(MODELS[wc.model]),
    script:
        "../workflow/scripts/convert_gguf.py"


rule generate:
    input:
        dataset_items="results/data/{dataset}.parquet",
        model=model_inputs,
        prompt=prompt_files,
    output:
        "results/generations/{model}/{prompt}/{dataset}.parquet",
    log:
        "logs/generate/{model}/{prompt}/{dataset}.log",
    benchmark:
        "logs/benchmarks/generate/{model}/{prompt}/{dataset}.tsv"
    conda:
        "../envs/generate.yaml"
    container:
        env_container("generate")
    threads: config["generation"]["threads"]
    resources:
        **GENERATION_JOB,
    params:
        model=lambda wc: wc.model,
        model_cfg=lambda wc: model_cfg(wc.model),
        prompt=lambda wc: wc.prompt,
        prompt_entry=prompt_entry,
        prompts_dir=_repo_path(config["prompts_dir"]),
        fidelity=config["fidelity"],
        max_new_tokens=config["generation"]["max_new_tokens"],
        checkpoint_every=config["generation"]["checkpoint_every"],
    script:
        "../workflow/scripts/generate.py"
