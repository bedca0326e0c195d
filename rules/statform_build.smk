# StatFormBench construction (paper section 4.2, Appendix A): raw entries and case projects ->
# split / induce -> quality filter -> category + variables -> rewrite + self-check -> review -> samples.
# One job per unit (textbook entry or case project) and stage, so adding entries reruns only theirs:
# an entry's job depends on its own record (params), not on the whole input file.
# Its configuration and input functions: rules/statform_build_targets.smk.


include: "statform_build_targets.smk"


localrules:
    sfb_entry,


rule sfb_entry:
    output:
        f"{SFB_DIR}/entries/{{unit}}.json",
    log:
        "logs/sfb_entry/{unit}.log",
    conda:
        "../envs/statform.yaml"
    params:
        # the entry itself: editing one entry, or adding others, reruns only this entry's jobs
        record=lambda wc: _json.dumps(SFB_ENTRIES[wc.unit], sort_keys=True, ensure_ascii=False),
    script:
        "../workflow/scripts/sfb_entry.py"


rule sfb_split:
    input:
        entry=f"{SFB_DIR}/entries/{{unit}}.json",
        prompts=sfb_prompts("split"),
        model=lambda wc: sfb_model_inputs("split"),
    output:
        f"{SFB_DIR}/split/{{unit}}.jsonl",
    log:
        "logs/statform_build/split/{unit}.log",
    conda:
        "../envs/statform.yaml"
    threads: config["generation"]["threads"]
    resources:
        **CPU_JOB,
    params:
        llm=lambda wc: sfb_llm("split"),
    script:
        "../workflow/scripts/sfb_split.py"


rule sfb_datadict:
    input:
        files=lambda wc: SFB_CASES[wc.unit]["data"],
    output:
        f"{SFB_DIR}/datadict/{{unit}}.json",
    log:
        "logs/statform_build/datadict/{unit}.log",
    conda:
        "../envs/statform.yaml"
    resources:
        **CPU_JOB,
    params:
        project_dir=lambda wc: str(Path(SFB_CASES[wc.unit]["report"]).parent),
        seed=SFB["seed"],
    script:
        "../workflow/scripts/sfb_datadict.py"


rule sfb_induce:
    input:
        report=lambda wc: SFB_CASES[wc.unit]["report"],
        datadict=f"{SFB_DIR}/datadict/{{unit}}.json",
        prompts=sfb_prompts("induce"),
        model=lambda wc: sfb_model_inputs("induce"),
    output:
        f"{SFB_DIR}/induce/{{unit}}.jsonl",
    log:
        "logs/statform_build/induce/{unit}.log",
    conda:
        "../envs/statform.yaml"
    threads: config["generation"]["threads"]
    resources:
        **CPU_JOB,
    params:
        llm=lambda wc: sfb_llm("induce"),
        max_questions=SFB["max_questions"],
        max_rounds=SFB["max_rounds"],
        report_chars=SFB["report_chars"],
    script:
        "../workflow/scripts/sfb_induce.py"


rule sfb_filter:
    input:
        samples=sfb_samples_of,
        prompts=sfb_prompts("filter"),
        model=lambda wc: sfb_model_inputs("filter"),
    output:
        f"{SFB_DIR}/filter/{{unit}}.jsonl",
    log:
        "logs/statform_build/filter/{unit}.log",
    conda:
        "../envs/statform.yaml"
    threads: config["generation"]["threads"]
    resources:
        **CPU_JOB,
    params:
        llm=lambda wc: sfb_llm("filter"),
    script:
        "../workflow/scripts/sfb_filter.py"


rule sfb_label:
    input:
        samples=f"{SFB_DIR}/filter/{{unit}}.jsonl",
        taxonomy=SFB_TAXONOMY,
        prompts=sfb_prompts("label"),
        model=lambda wc: sfb_model_inputs("label"),
    output:
        f"{SFB_DIR}/label/{{unit}}.jsonl",
    log:
        "logs/statform_build/label/{unit}.log",
    conda:
        "../envs/statform.yaml"
    threads: config["generation"]["threads"]
    resources:
        **CPU_JOB,
    params:
        llm=lambda wc: sfb_llm("label"),
    script:
        "../workflow/scripts/sfb_label.py"


rule sfb_variables:
    input:
        samples=f"{SFB_DIR}/filter/{{unit}}.jsonl",
        prompts=sfb_prompts("variables"),
        model=lambda wc: sfb_model_inputs("variables"),
    output:
        f"{SFB_DIR}/variables/{{unit}}.jsonl",
    log:
        "logs/statform_build/variables/{unit}.log",
    conda:
        "../envs/statform.yaml"
    threads: config["generation"]["threads"]
    resources:
        **CPU_JOB,
    params:
        llm=lambda wc: sfb_llm("variables"),
    script:
        "../workflow/scripts/sfb_variables.py"


rule sfb_rewrite:
    input:
        label=f"{SFB_DIR}/label/{{unit}}.jsonl",
        variables=f"{SFB_DIR}/variables/{{unit}}.jsonl",
        taxonomy=SFB_TAXONOMY,
        prompts=sfb_prompts("rewrite"),
        model=lambda wc: sfb_model_inputs("rewrite"),
    output:
        f"{SFB_DIR}/rewrite/{{unit}}.jsonl",
    log:
        "logs/statform_build/rewrite/{unit}.log",
    conda:
        "../envs/statform.yaml"
    threads: config["generation"]["threads"]
    resources:
        **CPU_JOB,
    params:
        llm=lambda wc: sfb_llm("rewrite"),
    script:
        "../workflow/scripts/sfb_rewrite.py"


rule sfb_review:
    input:
        rewrite=expand(f"{SFB_DIR}/rewrite/{{unit}}.jsonl", unit=sorted(SFB_UNITS)),
    output:
        directory(f"{SFB_DIR}/review"),
    log:
        "logs/statform_build/review.log",
    conda:
        "../envs/statform.yaml"
    resources:
        **CPU_JOB,
    params:
        batch_size=SFB_REVIEW["batch_size"],
    script:
        "../workflow/scripts/sfb_review.py"


rule sfb_final:
    input:
        rewrite=expand(f"{SFB_DIR}/rewrite/{{unit}}.jsonl", unit=sorted(SFB_UNITS)),
        decisions=sfb_decisions(),
        taxonomy=SFB_TAXONOMY,
    output:
        samples=BUILT_BENCHMARK,
        status=f"{SFB_DIR}/status.parquet",
        taxonomy=f"{SFB_DIR}/taxonomy.yaml",
        stats=report(
            directory(f"{SFB_DIR}/stats"),
            patterns=["{name}.md"],
            caption="../report/statform_build.rst",
            category="StatFormBench construction",
        ),
    log:
        "logs/statform_build/final.log",
    conda:
        "../envs/statform.yaml"
    resources:
        **CPU_JOB,
    params:
        require_review=bool(SFB_REVIEW["require"]),
        units=SFB_UNITS,
        excluded=SFB_EXCLUDED,
    script:
        "../workflow/scripts/sfb_final.py"
