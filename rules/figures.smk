# Figures of the GSM-Symbolic re-evaluation (Figures 1-3 and 4-7 from the summaries table,
# Figures 9-11 from the error-class count table) and the comparison with the published numbers
# (Tables 4-5). Every figure is drawn from one results table file, never from recomputed numbers;
# one script per kind of output. Needs from rules/common.smk: MODELS, EX1_PROMPT, GSM_MODELS,
# BASEDIR, SUMMARIES (rule summaries in rules/stats.smk), PROMPT_LABELS, scored_path(), scored_files().
from earnest.gsm.failure_classes import WRONG_ANSWER


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
    resources:
        slurm_partition=CPU_PARTITION,
        slurm_account=SLURM_ACCOUNT,
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
    resources:
        slurm_partition=CPU_PARTITION,
        slurm_account=SLURM_ACCOUNT,
    params:
        prompts=FIG_PROMPTS,
    script:
        "../workflow/scripts/fig_prompts.py"


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
    resources:
        slurm_partition=CPU_PARTITION,
        slurm_account=SLURM_ACCOUNT,
    params:
        prompts=FIG_PROMPTS,
    script:
        "../workflow/scripts/fig_number_effect.py"


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
    resources:
        slurm_partition=CPU_PARTITION,
        slurm_account=SLURM_ACCOUNT,
    params:
        styles=PROMPT_STYLES,
        prompt_labels=PROMPT_LABELS,
        fidelity=config["fidelity"],
    script:
        "../workflow/scripts/error_class_table.py"


rule fig_errors_nl:
    input:
        table=rules.error_class_table.output.csv,
    output:
        png=report(
            "results/figures/fig9_errors_nl.png",
            caption="../report/fig9_errors_nl.rst",
            category="GSM-Symbolic",
            subcategory="Failure modes (Appendix F)",
            labels={"figure": "Figure 9"},
        ),
        pdf="results/figures/fig9_errors_nl.pdf",
    log:
        "logs/figures/fig9_errors_nl.log",
    group:
        "final"
    conda:
        "../envs/plots.yaml"
    resources:
        slurm_partition=CPU_PARTITION,
        slurm_account=SLURM_ACCOUNT,
    params:
        prompts=FIG_TEXT_PROMPTS,
        datasets=[],
        exclude=[],
        proportions=False,
        models=list(MODELS),
        title="Error classes with the natural-language prompts (GSM-Base + GSM-Variants)",
    script:
        "../workflow/scripts/fig_error_classes.py"


rule fig_errors_code:
    input:
        table=rules.error_class_table.output.csv,
    output:
        png=report(
            "results/figures/fig10_errors_code.png",
            caption="../report/fig10_errors_code.rst",
            category="GSM-Symbolic",
            subcategory="Failure modes (Appendix F)",
            labels={"figure": "Figure 10"},
        ),
        pdf="results/figures/fig10_errors_code.pdf",
    log:
        "logs/figures/fig10_errors_code.log",
    group:
        "final"
    conda:
        "../envs/plots.yaml"
    resources:
        slurm_partition=CPU_PARTITION,
        slurm_account=SLURM_ACCOUNT,
    params:
        prompts=FIG_CODE_PROMPTS,
        datasets=["gsm_variants"],
        exclude=[],
        proportions=False,
        models=list(MODELS),
        title="Error classes with the code prompts (GSM-Variants)",
    script:
        "../workflow/scripts/fig_error_classes.py"


rule fig_errors_code_share:
    input:
        table=rules.error_class_table.output.csv,
    output:
        png=report(
            "results/figures/fig11_errors_code_share.png",
            caption="../report/fig11_errors_code_share.rst",
            category="GSM-Symbolic",
            subcategory="Failure modes (Appendix F)",
            labels={"figure": "Figure 11"},
        ),
        pdf="results/figures/fig11_errors_code_share.pdf",
    log:
        "logs/figures/fig11_errors_code_share.log",
    group:
        "final"
    conda:
        "../envs/plots.yaml"
    resources:
        slurm_partition=CPU_PARTITION,
        slurm_account=SLURM_ACCOUNT,
    params:
        prompts=FIG_CODE_PROMPTS,
        datasets=["gsm_variants"],
        exclude=[WRONG_ANSWER],
        proportions=True,
        models=list(MODELS),
        title="Errors other than wrong answer with the code prompts (GSM-Variants), share per model",
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
    resources:
        slurm_partition=CPU_PARTITION,
        slurm_account=SLURM_ACCOUNT,
    params:
        prompt=EX1_PROMPT,
        paper_names={m: MODELS[m].get("paper_name") or m for m in MODELS},
    script:
        "../workflow/scripts/published_table.py"
