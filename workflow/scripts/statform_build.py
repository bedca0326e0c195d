"""StatFormBench construction: one script for every rule of rules/statform_build.smk (dispatch on the rule).

sfb_split:    input.entry (entries/{unit}.json); params.llm ({model, model_cfg, cache_dir, max_new_tokens,
              max_retries, prompts_dir}); output[0] split/{unit}.jsonl
sfb_datadict: input.files (the project's data files); params.project_dir, params.seed; output[0] datadict/{unit}.json
sfb_induce:   input.report, input.datadict; params.llm, max_questions, max_rounds, report_chars; output[0]
sfb_filter:   input.samples; params.llm; output[0]
sfb_label:    input.samples, input.taxonomy; params.llm; output[0]
sfb_variables: input.samples; params.llm; output[0]
sfb_rewrite:  input.label, input.variables, input.taxonomy; params.llm; output[0]
sfb_review:   input.rewrite (every unit); params.batch_size; output[0] the review folder
sfb_final:    input.rewrite, input.decisions, input.taxonomy; params.require_review, units, excluded;
              output.samples, output.status, output.taxonomy, output.stats
Every rule logs to log[0].
"""
from earnest.joblog import job_logger

sm = snakemake  # noqa: F821
log = job_logger(sm.log[0] if len(sm.log) else None, sm.rule)
from earnest.statform.build import files as F  # noqa: E402

rule, p = sm.rule, sm.params
unit = sm.wildcards.get("unit", "")
if rule == "sfb_split":
    info = F.run_split(sm.input.entry, sm.output[0], dict(p.llm))
elif rule == "sfb_datadict":
    info = F.run_datadict(unit, p.project_dir, list(sm.input.files), int(p.seed), sm.output[0])
elif rule == "sfb_induce":
    info = F.run_induce(unit, sm.input.report, sm.input.datadict, sm.output[0], dict(p.llm), p.max_questions,
                        p.max_rounds, p.report_chars)
elif rule == "sfb_filter":
    info = F.run_filter(sm.input.samples, sm.output[0], dict(p.llm))
elif rule == "sfb_label":
    info = F.run_label(sm.input.samples, sm.output[0], dict(p.llm), sm.input.taxonomy)
elif rule == "sfb_variables":
    info = F.run_variables(sm.input.samples, sm.output[0], dict(p.llm))
elif rule == "sfb_rewrite":
    info = F.run_rewrite(sm.input.label, sm.input.variables, sm.output[0], dict(p.llm), sm.input.taxonomy)
elif rule == "sfb_review":
    info = {"files": F.run_review_export(list(sm.input.rewrite), sm.output[0], p.batch_size)}
elif rule == "sfb_final":
    info = F.run_finalize(list(sm.input.rewrite), list(sm.input.decisions), sm.input.taxonomy, p.require_review,
                          sm.output.samples, sm.output.status, sm.output.taxonomy, sm.output.stats, dict(p.units),
                          list(p.excluded))
else:
    raise ValueError(f"statform_build.py: no step for rule {rule!r}")
log.info("%s %s: %s", rule, unit, info)
