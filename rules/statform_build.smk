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
        out=f"{SFB_DIR}/entries/{{unit}}.json",
    log:
        "logs/sfb_entry/{unit}.log",
    conda:
        "../envs/statform.yaml"
    container:
        env_container("statform")
    params:
        # the entry itself: editing one entry, or adding others, reruns only this entry's jobs
        record=lambda wc: _json.dumps(SFB_ENTRIES[wc.unit], sort_keys=True, ensure_ascii=False),
    script:
        "../workflow/scripts/statform_build.py"


rule sfb_datadict:
    input:
        files=lambda wc: SFB_CASES[wc.unit]["data"],
    output:
        out=f"{SFB_DIR}/datadict/{{unit}}.json",
    log:
        "logs/statform_build/datadict/{unit}.log",
    conda:
        "../envs/statform.yaml"
    container:
        env_container("statform")
    resources:
        **CPU_JOB,
    params:
        project_dir=lambda wc: str(Path(SFB_CASES[wc.unit]["report"]).parent),
        seed=SFB["seed"],
    script:
        "../workflow/scripts/statform_build.py"


rule sfb_stage:
    # every stage that asks the model (earnest.statform.build.files.LLM_STAGES): its own inputs
    # (rules/statform_build_targets.smk: sfb_stage_inputs), the prompt files it sends and its model
    input:
        unpack(sfb_stage_inputs),
    output:
        out=f"{SFB_DIR}/{{stage}}/{{unit}}.jsonl",
    log:
        "logs/statform_build/{stage}/{unit}.log",
    wildcard_constraints:
        stage=_alternatives(SFB_LLM_STAGES),
    conda:
        "../envs/statform.yaml"
    container:
        env_container("statform")
    threads: config["generation"]["threads"]
    resources:
        **CPU_JOB,
    params:
        llm=lambda wc: sfb_llm(wc.stage),
        max_questions=SFB["max_questions"],
        max_rounds=SFB["max_rounds"],
        report_chars=SFB["report_chars"],
    script:
        "../workflow/scripts/statform_build.py"


rule sfb_review:
    input:
        rewrite=expand(f"{SFB_DIR}/rewrite/{{unit}}.jsonl", unit=sorted(SFB_UNITS)),
    output:
        out=directory(f"{SFB_DIR}/review"),
    log:
        "logs/statform_build/review.log",
    conda:
        "../envs/statform.yaml"
    container:
        env_container("statform")
    resources:
        **CPU_JOB,
    params:
        batch_size=SFB_REVIEW["batch_size"],
    script:
        "../workflow/scripts/statform_build.py"


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
    container:
        env_container("statform")
    resources:
        **CPU_JOB,
    params:
        require_review=bool(SFB_REVIEW["require"]),
        units=SFB_UNITS,
        excluded=SFB_EXCLUDED,
    script:
        "../workflow/scripts/statform_build.py"
