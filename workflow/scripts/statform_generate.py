"""StatFormBench generation: one model x one prompting strategy over every sample.

snakemake.input.samples, snakemake.input.pool, snakemake.input.taxonomy: outputs of statform_data;
snakemake.input.template: the prompt template (config statform.prompt_template, else
  resources/statform/prompts/formulation_zero_shot.txt), or with fidelity reference the authors' two
  prompt files (resources/statform/prompts/reference/), read by earnest.statform.reference;
snakemake.params.model: model name; snakemake.params.model_cfg: its config entry (models.<name>;
  backend "openai" or "transformers", see earnest.backends);
snakemake.params.strategy: strategy name; snakemake.params.strategy_cfg: statform.strategies.<name>
  ({kind: zero_shot|definitions|few_shot, k, seed, layout: system|user});
snakemake.params.max_new_tokens: generation cap; snakemake.params.fidelity: reference = the authors'
  prompts (resources/statform/prompts/reference/), earnest = the template; snakemake.params.checkpoint_every: answers between
  checkpoints of the output (config generation.checkpoint_every; a rerun resumes from the last one);
snakemake.output[0]: generations parquet (item_id, model, prompt, dataset, response, prompt_tokens,
  new_tokens, stop_reason, seconds); snakemake.log[0]: log file.
"""

import time

from earnest.statform.pipeline import generate
from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "statform_generate")  # noqa: F821

try:
    sm = snakemake  # noqa: F821
    p = sm.params
    t0 = time.time()
    frame = generate(sm.input.samples, sm.input.pool, sm.input.taxonomy, p.model, dict(p.model_cfg), p.strategy,
                     dict(p.strategy_cfg or {}), int(p.max_new_tokens), sm.output[0],
                     prompt_template=sm.input.template if p.fidelity != "reference" else None,
                     checkpoint_every=int(p.checkpoint_every),
                     fidelity=p.fidelity)
    errors = frame["stop_reason"].str.startswith("error").sum()
    log.info("%d generations (%d errors) in %.1f s", len(frame), errors, time.time() - t0)
except Exception:
    log.exception("statform generation failed")
    raise
