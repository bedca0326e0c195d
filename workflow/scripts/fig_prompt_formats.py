"""Figures 2 and 3 across the prompt formats for the Ex2 models (the summaries table's ex2 column):
Figure 2, accuracies and Delta_var (earnest.gsm.plots.figure_prompt_comparison); Figure 3, the
variant effect (GLMM 1, GLMM 2) and the large-number effect (GLMM 2) (earnest.gsm.plots.figure_number_effect).

snakemake.input.summaries: results/stats/summaries.parquet; snakemake.params.figure: prompts
(Figure 2) | number_effect (Figure 3); snakemake.params.prompts: prompts in display order (Ex1
first); snakemake.output.png / .pdf (same stem); snakemake.log[0].
"""

from pathlib import Path

from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "fig_prompt_formats")  # noqa: F821

from earnest.gsm import plots  # noqa: E402
from earnest.stats.summaries import figure2_models, read_summaries  # noqa: E402

FIGURES = {"prompts": plots.figure_prompt_comparison, "number_effect": plots.figure_number_effect}

try:
    sm = snakemake  # noqa: F821
    draw = FIGURES[sm.params.figure]
    table = read_summaries(sm.input.summaries)
    png = Path(sm.output.png)
    paths = draw(table, list(sm.params.prompts), png.parent / png.stem, models=figure2_models(table))
    log.info("wrote %s", ", ".join(map(str, paths)))
except Exception:
    log.exception("drawing the figure failed")
    raise
