"""StatFormBench construction, rule sfb_split: one textbook entry split into samples by the model (earnest.statform.build.files).

input.entry (entries/{unit}.json); params.llm ({model, model_cfg, cache_dir, max_new_tokens,
max_retries, prompts_dir}); output[0] split/{unit}.jsonl; log[0]: log file.
"""

from earnest.joblog import job_logger

sm = snakemake  # noqa: F821
log = job_logger(sm.log[0], "sfb_split")

from earnest.statform.build import files as F  # noqa: E402

unit = sm.wildcards.get("unit", "")
info = F.run_split(sm.input.entry, sm.output[0], dict(sm.params.llm))
log.info("sfb_split %s: %s", unit, info)
