# What the report shows beyond the tables and figures (rules/report.smk): the findings page and the
# answers behind every model x prompt's numbers.

REPORT_DIR = "results/report"
FINDINGS = f"{REPORT_DIR}/findings.html"


def answers_page(model, prompt):
    return f"{REPORT_DIR}/answers/{model}/{prompt}.html"


def report_targets():
    if not GSM_MODELS:
        return []
    return [FINDINGS] + [answers_page(m, p) for m, p in model_prompts()]
