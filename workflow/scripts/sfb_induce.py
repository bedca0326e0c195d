"""StatFormBench construction, rule sfb_induce: questions induced from one case project's report and data dictionary (earnest.statform.build.files).

input.report, input.datadict; params.llm, max_questions, max_rounds, report_chars; output[0] induce/{unit}.jsonl; log[0]: log file.
"""

from _sfb_stage import run_stage

sm = snakemake  # noqa: F821


def stage(F, unit):
    return F.run_induce(unit, sm.input.report, sm.input.datadict, sm.output[0], dict(sm.params.llm),
                        sm.params.max_questions, sm.params.max_rounds, sm.params.report_chars)


run_stage(sm, stage)
