"""Failure modes (Appendix F of the GSM-Symbolic re-evaluation): the error-class count table, and
Figures 9-11 drawn from it.

Table step (snakemake.input.scored present): scored parquets -> the count table written with
  earnest.tables (snakemake.output.csv/.md/.tex share one stem); params.styles: prompt -> text|code.
Figure step (snakemake.input.table, the table's CSV): params.prompts (panels, top to bottom),
  params.datasets (pooled; default all), params.proportions (bool), params.exclude (classes left
  out), params.title, params.prompt_labels (optional), params.models (order, optional);
  snakemake.output.png / .pdf.
snakemake.log[0]: log file.
"""

import logging
from pathlib import Path

import pandas as pd

from earnest import plots

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO,  # noqa: F821
                    format="%(asctime)s %(levelname)s %(message)s", force=True)
log = logging.getLogger("error_figures")


def _stem(path):
    path = Path(path)
    return path.parent / path.stem


try:
    p = snakemake.params  # noqa: F821
    inp = snakemake.input  # noqa: F821
    if "scored" in inp.keys():
        files = [inp.scored] if isinstance(inp.scored, str) else list(inp.scored)
        frames = []
        for f in files:
            df = pd.read_parquet(f)
            frames.append(plots.require_columns(df, ("model", "prompt", "dataset", "error_class"), f))
        scored = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
            columns=["model", "prompt", "dataset", "error_class"])
        table = plots.error_class_table(scored, dict(p.styles))
        paths = plots.write_error_class_table(table, _stem(snakemake.output.csv))  # noqa: F821
        log.info("%d scored files -> %d count rows: %s", len(files), len(table), ", ".join(map(str, paths.values())))
    else:
        table = plots.read_table(inp.table, plots.ERROR_TABLE_COLUMNS)
        paths = plots.figure_error_classes(
            table, [str(x) for x in p.prompts], _stem(snakemake.output.png),  # noqa: F821
            datasets=list(p.get("datasets", []) or []) or None, proportions=bool(p.get("proportions", False)),
            exclude=list(p.get("exclude", []) or []), models=list(p.get("models", []) or []) or None,
            prompt_labels=dict(p.get("prompt_labels", {}) or {}), title=str(p.get("title", "Error classes")))
        log.info("wrote %s", ", ".join(map(str, paths)))
except Exception:
    log.exception("the failure-mode step failed")
    raise
