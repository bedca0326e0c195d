# Figures of the GSM-Symbolic re-evaluation (Figures 1-3 and 4-7 from the summaries table,
# Figures 9-11 from the error-class count table) and the comparison with the published numbers
# (Tables 4-5). Every figure is drawn from one results table file, never from recomputed numbers;
# one script per kind of output. Which prompts each figure shows, and the targets:
# rules/figures_targets.smk.


include: "figures_targets.smk"


rule fig_variant_effect:
    input:
        summaries=SUMMARIES,
    output:
        png=report(
            "results/figures/fig1_variant_effect_{prompt}.png",
            caption="../report/fig1_variant_effect.rst",
            category="GSM-Symbolic",
            subcategory="Variant effect per prompt (Figures 1, 4-7)",
            labels={"figure": "variant effect", "prompt": "{prompt}"},
        ),
        pdf="results/figures/fig1_variant_effect_{prompt}.pdf",
    log:
        "logs/figures/fig1_variant_effect_{prompt}.log",
    group:
        "final"
    conda:
        "../envs/plots.yaml"
    container:
        env_container("plots")
    resources:
        **SMALL_JOB,
    params:
        models=list(MODELS),
    script:
        "../workflow/scripts/fig_variant_effect.py"


rule fig_prompts:
    input:
        summaries=SUMMARIES,
    output:
        png=report(
            "results/figures/fig2_prompts.png",
            caption="../report/fig2_prompts.rst",
            category="GSM-Symbolic",
            subcategory="Prompt formats and large numbers (Figures 2, 3)",
            labels={"figure": "Figure 2"},
        ),
        pdf="results/figures/fig2_prompts.pdf",
    log:
        "logs/figures/fig2_prompts.log",
    group:
        "final"
    conda:
        "../envs/plots.yaml"
    container:
        env_container("plots")
    resources:
        **SMALL_JOB,
    params:
        figure="prompts",
        prompts=FIG_PROMPTS,
    script:
        "../workflow/scripts/fig_prompt_formats.py"


rule fig_number_effect:
    input:
        summaries=SUMMARIES,
    output:
        png=report(
            "results/figures/fig3_number_effect.png",
            caption="../report/fig3_number_effect.rst",
            category="GSM-Symbolic",
            subcategory="Prompt formats and large numbers (Figures 2, 3)",
            labels={"figure": "Figure 3"},
        ),
        pdf="results/figures/fig3_number_effect.pdf",
    log:
        "logs/figures/fig3_number_effect.log",
    group:
        "final"
    conda:
        "../envs/plots.yaml"
    container:
        env_container("plots")
    resources:
        **SMALL_JOB,
    params:
        figure="number_effect",
        prompts=FIG_PROMPTS,
    script:
        "../workflow/scripts/fig_prompt_formats.py"


rule error_class_table:
    input:
        scored=scored_files,
    output:
        csv=report(
            "results/tables/error_classes.csv",
            caption="../report/error_classes.rst",
            category="GSM-Symbolic",
            subcategory="Failure modes (Appendix F)",
            labels={"table": "error classes"},
        ),
        md="results/tables/error_classes.md",
        tex="results/tables/error_classes.tex",
    log:
        "logs/figures/error_classes.log",
    group:
        "final"
    conda:
        "../envs/plots.yaml"
    container:
        env_container("plots")
    resources:
        **SMALL_JOB,
    params:
        styles=PROMPT_STYLES,
        prompt_labels=PROMPT_LABELS,
        fidelity=config["fidelity"],
    script:
        "../workflow/scripts/error_class_table.py"


# Figures 9-11, one job each: which prompts, datasets and classes each draws (ERROR_FIGURES) and its
# caption (report/fig_errors.rst, one section per figure) follow its name.
rule fig_errors:
    input:
        table=rules.error_class_table.output.csv,
    output:
        png=report(
            "results/figures/fig{fig}_errors_{errors}.png",
            caption="../report/fig_errors.rst",
            category="GSM-Symbolic",
            subcategory="Failure modes (Appendix F)",
            labels={"figure": "Figure {fig}"},
        ),
        pdf="results/figures/fig{fig}_errors_{errors}.pdf",
    log:
        "logs/figures/fig{fig}_errors_{errors}.log",
    wildcard_constraints:
        fig=_alternatives({n for n, _ in ERROR_FIGURE_NAMES}),
        errors=_alternatives({e for _, e in ERROR_FIGURE_NAMES}),
    group:
        "final"
    conda:
        "../envs/plots.yaml"
    container:
        env_container("plots")
    resources:
        **SMALL_JOB,
    params:
        prompts=error_figure("prompts"),
        datasets=error_figure("datasets"),
        exclude=error_figure("exclude"),
        proportions=error_figure("proportions"),
        models=list(MODELS),
        title=error_figure("title"),
    script:
        "../workflow/scripts/fig_error_classes.py"


rule published_comparison:
    input:
        summaries=SUMMARIES,
        table4=str(BASEDIR / "resources/published/table4_accuracy.csv"),
        table5=str(BASEDIR / "resources/published/table5_variant_delta.csv"),
        scored=[scored_path(m, EX1_PROMPT, "gsm_variants") for m in GSM_MODELS],
    output:
        csv=report(
            "results/tables/published_comparison.csv",
            caption="../report/published_comparison.rst",
            category="GSM-Symbolic",
            subcategory="Comparison with published numbers (Tables 4, 5)",
            labels={"table": "published comparison"},
        ),
        md="results/tables/published_comparison.md",
        tex="results/tables/published_comparison.tex",
    log:
        "logs/figures/published_comparison.log",
    group:
        "final"
    conda:
        "../envs/plots.yaml"
    container:
        env_container("plots")
    resources:
        **SMALL_JOB,
    params:
        prompt=EX1_PROMPT,
        paper_names={m: MODELS[m].get("paper_name") or m for m in MODELS},
    script:
        "../workflow/scripts/published_table.py"
