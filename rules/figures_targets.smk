# Figures and result tables (rules/figures.smk): the prompts each figure shows, the error-class
# figures, and the targets.
from earnest.gsm.failure_classes import WRONG_ANSWER

FIG_DIR = "results/figures"
# Ex1 first, then the Ex2 prompts, each once
FIG_PROMPTS = list(dict.fromkeys([EX1_PROMPT] + list(EX2_PROMPTS)))
FIG_TEXT_PROMPTS = [p for p in FIG_PROMPTS if FORMATS[p].style == "text"]
FIG_CODE_PROMPTS = [p for p in FIG_PROMPTS if FORMATS[p].style == "code"]
PROMPT_STYLES = {p: FORMATS[p].style for p in RUN_PROMPTS}

# Figures 9-11, one job each of rule fig_errors, and what each draws from the error-class table
# (workflow/scripts/fig_error_classes.py)
ERROR_FIGURES = {
    "fig9_errors_nl": {
        "prompts": FIG_TEXT_PROMPTS,
        "datasets": [],
        "exclude": [],
        "proportions": False,
        "title": "Error classes with the natural-language prompts (GSM-Base + GSM-Variants)",
    },
    "fig10_errors_code": {
        "prompts": FIG_CODE_PROMPTS,
        "datasets": ["gsm_variants"],
        "exclude": [],
        "proportions": False,
        "title": "Error classes with the code prompts (GSM-Variants)",
    },
    "fig11_errors_code_share": {
        "prompts": FIG_CODE_PROMPTS,
        "datasets": ["gsm_variants"],
        "exclude": [WRONG_ANSWER],
        "proportions": True,
        "title": "Errors other than wrong answer with the code prompts (GSM-Variants), share per model",
    },
}


# their names' parts: the wildcards fig and errors of the fig_errors rule (report label Figure {fig})
ERROR_FIGURE_NAMES = [re.fullmatch(r"fig(\d+)_errors_(\w+)", name).groups() for name in ERROR_FIGURES]


def error_figure(key):
    """The value ``key`` of the error figure a fig_errors job draws (its wildcards fig and errors)."""
    return lambda wc: ERROR_FIGURES[f"fig{wc.fig}_errors_{wc.errors}"][key]


def scored_files(wildcards=None):
    return [scored_path(m, p, d) for m, p in model_prompts() for d in DATASETS]


def figure_targets(wildcards=None):
    """Every figure and result table rules/figures.smk makes (PNG and PDF, CSV/Markdown/LaTeX)."""
    out = []
    for stem in (
        [f"fig1_variant_effect_{p}" for p in FIG_PROMPTS]
        + ["fig2_prompts", "fig3_number_effect", "fig9_errors_nl"]
        + (["fig10_errors_code", "fig11_errors_code_share"] if FIG_CODE_PROMPTS else [])
    ):
        out += [f"{FIG_DIR}/{stem}.png", f"{FIG_DIR}/{stem}.pdf"]
    for stem in ("published_comparison", "error_classes"):
        out += [f"results/tables/{stem}.{ext}" for ext in ("csv", "md", "tex")]
    return out
