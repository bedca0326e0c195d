"""Figures 9-11: error classes per model, one panel per prompt, from the error-class count table
(earnest.gsm.plots.figure_error_classes).

snakemake.input.table: the table's CSV (rule error_class_table);
snakemake.params: prompts (panels, top to bottom), datasets (pooled; empty = all), proportions
  (bool), exclude (classes left out), models (order), title;
snakemake.output.png / .pdf (same stem); snakemake.log[0]: log file.
"""

from pathlib import Path

from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "fig_error_classes")  # noqa: F821

from earnest.gsm import plots  # noqa: E402
from earnest.gsm.error_table import ERROR_TABLE_COLUMNS  # noqa: E402
from earnest.tables import read_table  # noqa: E402

try:
    sm = snakemake  # noqa: F821
    p = sm.params
    png = Path(sm.output.png)
    paths = plots.figure_error_classes(
        read_table(sm.input.table, ERROR_TABLE_COLUMNS), list(p.prompts), png.parent / png.stem,
        datasets=list(p.datasets) or None, proportions=bool(p.proportions), exclude=list(p.exclude),
        models=list(p.models), title=str(p.title))
    log.info("wrote %s", ", ".join(map(str, paths)))
except Exception:
    log.exception("drawing the figure failed")
    raise
