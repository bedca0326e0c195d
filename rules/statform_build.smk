# StatFormBench construction (paper section 4.2, Appendix A): raw entries and case projects ->
# split / induce -> quality filter -> category + variables -> rewrite + self-check -> review -> samples.
# One job per unit (textbook entry or case project) and stage, so adding entries reruns only theirs:
# an entry's job depends on its own record (params), not on the whole input file.
import json as _json

SFB = config["statform_build"]
SFB_DIR = "results/statform_build"
# read and checked by earnest.config.check_config (rules/common.smk)
SFB_ENTRIES, SFB_CASES, SFB_EXCLUDED = CHECKED.build_entries, CHECKED.build_cases, CHECKED.build_excluded
SFB_UNITS = {**{u: e["source"] for u, e in SFB_ENTRIES.items()}, **{u: "case" for u in SFB_CASES}}
SFB_REVIEW = SFB["review"]


wildcard_constraints:
    unit=_alternatives(SFB_UNITS) if SFB_UNITS else "no-unit",


def sfb_model(stage):
    return (SFB.get("stage_models") or {}).get(stage) or SFB.get("model")


def sfb_llm(stage):
    m = sfb_model(stage)
    return {"model": m, "model_cfg": model_cfg(m), "cache_dir": SFB["cache_dir"],
            "max_new_tokens": SFB["max_new_tokens"], "max_retries": SFB["max_retries"],
            "prompts_dir": str(_repo_path(SFB["prompts_dir"]))}


def sfb_model_inputs(stage):
    class _W:
        model = sfb_model(stage)
    return model_inputs(_W) if _W.model else []


def sfb_samples_of(wc):
    """What the quality filter reads: the split entry, or the questions induced from a case project."""
    return f"{SFB_DIR}/split/{wc.unit}.jsonl" if wc.unit in SFB_ENTRIES else f"{SFB_DIR}/induce/{wc.unit}.jsonl"


def sfb_decisions():
    return [str(_repo_path(d)) for d in SFB_REVIEW["decisions"]]


def statform_build_targets():
    return [BUILT_BENCHMARK, f"{SFB_DIR}/stats", f"{SFB_DIR}/review"]


SFB_PROMPTS = str(_repo_path(SFB["prompts_dir"]))
SFB_STAGE_PROMPTS = {"split": ["split"], "induce": ["induce", "induce_check", "induce_revise"],
                     "filter": ["quality_filter"], "label": ["category"], "variables": ["variables"],
                     "rewrite": ["rewrite", "rewrite_check", "rewrite_correct"]}


def sfb_prompts(stage):
    """The prompt files a stage sends: editing one reruns only the stages that use it."""
    return [f"{SFB_PROMPTS}/{n}.txt" for n in SFB_STAGE_PROMPTS[stage] + ["retry"]]


SFB_TAXONOMY = str(_repo_path(SFB["taxonomy"]))


localrules:
    sfb_entry,


rule sfb_entry:
    output:
        f"{SFB_DIR}/entries/{{unit}}.json",
    params:
        # the entry itself: editing one entry, or adding others, reruns only this entry's jobs
        record=lambda wc: _json.dumps(SFB_ENTRIES[wc.unit], sort_keys=True, ensure_ascii=False),
    run:
        from earnest.statform.build.files import write_entry

        write_entry(_json.loads(params.record), output[0])


rule sfb_split:
    input:
        entry=f"{SFB_DIR}/entries/{{unit}}.json",
        prompts=sfb_prompts("split"),
        model=lambda wc: sfb_model_inputs("split"),
    output:
        f"{SFB_DIR}/split/{{unit}}.jsonl",
    log:
        "logs/statform_build/split/{unit}.log",
    params:
        llm=lambda wc: sfb_llm("split"),
    threads: config["generation"].get("threads", 2)
    resources:
        slurm_partition=CPU_PARTITION,
        slurm_account=SLURM_ACCOUNT,
    conda:
        "../envs/statform.yaml"
    script:
        "../workflow/scripts/statform_build.py"


rule sfb_datadict:
    input:
        files=lambda wc: SFB_CASES[wc.unit]["data"],
    output:
        f"{SFB_DIR}/datadict/{{unit}}.json",
    log:
        "logs/statform_build/datadict/{unit}.log",
    params:
        project_dir=lambda wc: str(Path(SFB_CASES[wc.unit]["report"]).parent),
        seed=SFB["seed"],
    resources:
        slurm_partition=CPU_PARTITION,
        slurm_account=SLURM_ACCOUNT,
    conda:
        "../envs/statform.yaml"
    script:
        "../workflow/scripts/statform_build.py"


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
    params:
        llm=lambda wc: sfb_llm("induce"),
        max_questions=SFB["max_questions"],
        max_rounds=SFB["max_rounds"],
        report_chars=SFB["report_chars"],
    threads: config["generation"].get("threads", 2)
    resources:
        slurm_partition=CPU_PARTITION,
        slurm_account=SLURM_ACCOUNT,
    conda:
        "../envs/statform.yaml"
    script:
        "../workflow/scripts/statform_build.py"


rule sfb_filter:
    input:
        samples=sfb_samples_of,
        prompts=sfb_prompts("filter"),
        model=lambda wc: sfb_model_inputs("filter"),
    output:
        f"{SFB_DIR}/filter/{{unit}}.jsonl",
    log:
        "logs/statform_build/filter/{unit}.log",
    params:
        llm=lambda wc: sfb_llm("filter"),
    threads: config["generation"].get("threads", 2)
    resources:
        slurm_partition=CPU_PARTITION,
        slurm_account=SLURM_ACCOUNT,
    conda:
        "../envs/statform.yaml"
    script:
        "../workflow/scripts/statform_build.py"


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
    params:
        llm=lambda wc: sfb_llm("label"),
    threads: config["generation"].get("threads", 2)
    resources:
        slurm_partition=CPU_PARTITION,
        slurm_account=SLURM_ACCOUNT,
    conda:
        "../envs/statform.yaml"
    script:
        "../workflow/scripts/statform_build.py"


rule sfb_variables:
    input:
        samples=f"{SFB_DIR}/filter/{{unit}}.jsonl",
        prompts=sfb_prompts("variables"),
        model=lambda wc: sfb_model_inputs("variables"),
    output:
        f"{SFB_DIR}/variables/{{unit}}.jsonl",
    log:
        "logs/statform_build/variables/{unit}.log",
    params:
        llm=lambda wc: sfb_llm("variables"),
    threads: config["generation"].get("threads", 2)
    resources:
        slurm_partition=CPU_PARTITION,
        slurm_account=SLURM_ACCOUNT,
    conda:
        "../envs/statform.yaml"
    script:
        "../workflow/scripts/statform_build.py"


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
    params:
        llm=lambda wc: sfb_llm("rewrite"),
    threads: config["generation"].get("threads", 2)
    resources:
        slurm_partition=CPU_PARTITION,
        slurm_account=SLURM_ACCOUNT,
    conda:
        "../envs/statform.yaml"
    script:
        "../workflow/scripts/statform_build.py"


rule sfb_review:
    input:
        rewrite=expand(f"{SFB_DIR}/rewrite/{{unit}}.jsonl", unit=sorted(SFB_UNITS)),
    output:
        directory(f"{SFB_DIR}/review"),
    log:
        "logs/statform_build/review.log",
    params:
        batch_size=SFB_REVIEW["batch_size"],
    resources:
        slurm_partition=CPU_PARTITION,
        slurm_account=SLURM_ACCOUNT,
    conda:
        "../envs/statform.yaml"
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
    params:
        require_review=bool(SFB_REVIEW["require"]),
        units=SFB_UNITS,
        excluded=SFB_EXCLUDED,
    resources:
        slurm_partition=CPU_PARTITION,
        slurm_account=SLURM_ACCOUNT,
    conda:
        "../envs/statform.yaml"
    script:
        "../workflow/scripts/statform_build.py"
