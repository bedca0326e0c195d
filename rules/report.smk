# The report as a researcher reads it (snakemake --report): every model's verdicts first (the
# landing text, report/workflow.rst, reads findings.rst beside the findings page), and from a number
# to the answers behind it. Which pages: rules/report_targets.smk.


include: "report_targets.smk"


rule report_findings:
    input:
        summaries=SUMMARIES,
    output:
        html=report(
            FINDINGS,
            caption="../report/findings.rst",
            category="Findings",
            labels={"page": "the verdict of every fit", "model": "all models", "prompt": "all prompts"},
        ),
        rst=f"{REPORT_DIR}/findings.rst",
    log:
        "logs/report/findings.log",
    group:
        "final"
    conda:
        "../envs/stats.yaml"
    container:
        env_container("stats")
    resources:
        **SMALL_JOB,
    params:
        prompt_labels=PROMPT_LABELS,
    script:
        "../workflow/scripts/report_findings.py"


rule report_answers:
    input:
        scored=lambda wc: [scored_path(wc.model, wc.prompt, d) for d in DATASETS],
    output:
        report(
            f"{REPORT_DIR}/answers/{{model}}/{{prompt}}.html",
            caption="../report/answers.rst",
            category="Answers",
            labels=lambda wc: {"model": wc.model, "prompt": PROMPT_LABELS.get(wc.prompt, wc.prompt)},
        ),
    log:
        "logs/report/answers/{model}/{prompt}.log",
    group:
        "post"
    conda:
        "../envs/stats.yaml"
    container:
        env_container("stats")
    resources:
        **SMALL_JOB,
    params:
        prompt_label=lambda wc: PROMPT_LABELS.get(wc.prompt, wc.prompt),
        max_rows=config["report"]["answers_max_rows"],
        inspect_dir=lambda wc: f"{INSPECT_DIR}/{wc.model}/{wc.prompt}" if config["inspect_logs"]["enabled"] else "",
    script:
        "../workflow/scripts/report_answers.py"
