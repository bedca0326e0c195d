"""StatFormBench construction, rule sfb_split: one textbook entry split into samples by the model (earnest.statform.build.files).

input.entry (entries/{unit}.json); params.llm ({model, model_cfg, cache_dir, max_new_tokens,
max_retries, prompts_dir}); output[0] split/{unit}.jsonl; log[0]: log file.
"""

from _sfb_stage import run_stage

sm = snakemake  # noqa: F821


def stage(F, unit):
    return F.run_split(sm.input.entry, sm.output[0], dict(sm.params.llm))


run_stage(sm, stage)
