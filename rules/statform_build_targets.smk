# StatFormBench construction (rules/statform_build.smk): configuration, wildcard constraints and
# input functions.
import json as _json

from earnest.statform.build.files import LLM_STAGES as SFB_LLM_STAGES

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
    return {
        "model": m,
        "model_cfg": model_cfg(m),
        "cache_dir": SFB["cache_dir"],
        "max_new_tokens": SFB["max_new_tokens"],
        "max_retries": SFB["max_retries"],
        "prompts_dir": str(_repo_path(SFB["prompts_dir"])),
    }


def sfb_model_inputs(stage):
    class _W:
        model = sfb_model(stage)

    return model_inputs(_W) if _W.model else []


def sfb_samples_of(unit):
    """What the quality filter reads: the split entry, or the questions induced from a case project."""
    return f"{SFB_DIR}/split/{unit}.jsonl" if unit in SFB_ENTRIES else f"{SFB_DIR}/induce/{unit}.jsonl"


def sfb_stage_inputs(wc):
    """The named inputs of one LLM stage of one unit (for sfb_stage in statform_build.smk): what it reads, the prompt
    files it sends (editing one reruns only the stages that use it) and its model."""
    u, d = wc.unit, SFB_DIR
    own = {
        "split": {"entry": f"{d}/entries/{u}.json"},
        "induce": {
            "report": SFB_CASES[u]["report"] if u in SFB_CASES else [],
            "datadict": f"{d}/datadict/{u}.json",
        },
        "filter": {"samples": sfb_samples_of(u)},
        "label": {"samples": f"{d}/filter/{u}.jsonl", "taxonomy": SFB_TAXONOMY},
        "variables": {"samples": f"{d}/filter/{u}.jsonl"},
        "rewrite": {
            "label": f"{d}/label/{u}.jsonl",
            "variables": f"{d}/variables/{u}.jsonl",
            "taxonomy": SFB_TAXONOMY,
        },
    }[wc.stage]
    return {
        **own,
        "prompts": sfb_prompts(wc.stage),
        "model": sfb_model_inputs(wc.stage),
    }


def sfb_decisions():
    return [str(_repo_path(d)) for d in SFB_REVIEW["decisions"]]


def statform_build_targets():
    return [BUILT_BENCHMARK, f"{SFB_DIR}/stats", f"{SFB_DIR}/review"]


SFB_PROMPTS = str(_repo_path(SFB["prompts_dir"]))
SFB_STAGE_PROMPTS = {
    "split": ["split"],
    "induce": ["preview", "induce", "induce_check", "induce_revise"],
    "filter": ["quality_filter"],
    "label": ["category"],
    "variables": ["variables"],
    "rewrite": ["rewrite", "rewrite_check", "rewrite_correct"],
}


def sfb_prompts(stage):
    """The prompt files a stage sends: editing one reruns only the stages that use it."""
    return [f"{SFB_PROMPTS}/{n}.txt" for n in SFB_STAGE_PROMPTS[stage] + ["retry"]]


SFB_TAXONOMY = str(_repo_path(SFB["taxonomy"]))
