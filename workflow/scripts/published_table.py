"""This run's GSM-Base / GSM-Variants accuracies and deltas next to the published ones (Tables 4-5).

snakemake.input.tables: statistics tables directory (summaries.csv inside) or the CSV itself;
snakemake.input.table4, .table5: resources/published/table4_accuracy.csv, table5_variant_delta.csv;
snakemake.input.scored (optional): scored parquets of the GSM prompt, for the "± sd" over
  GSM-Variants instance sets;
snakemake.params: prompt (the Ex1 prompt, default "gsm"), paper_names (dict local model ->
  paper model name), prompt_label (optional);
snakemake.output.csv (.md, .tex with the same stem); snakemake.log[0]: log file.
"""

import logging
from pathlib import Path

import pandas as pd

from earnest import plots
from earnest.published import (SUMMARY_COLUMNS, TABLE4_COLUMNS, TABLE5_COLUMNS, compare_published, variant_sd,
                               write_comparison)

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO,  # noqa: F821
                    format="%(asctime)s %(levelname)s %(message)s", force=True)
log = logging.getLogger("published_table")

try:
    p = snakemake.params  # noqa: F821
    inp = snakemake.input  # noqa: F821
    tables = Path(inp.tables)
    summaries = plots.read_table(tables / "summaries.csv" if tables.is_dir() else tables, SUMMARY_COLUMNS)
    table4 = plots.read_table(inp.table4, TABLE4_COLUMNS)
    table5 = plots.read_table(inp.table5, TABLE5_COLUMNS)
    sd = None
    if "scored" in inp.keys():
        files = [inp.scored] if isinstance(inp.scored, str) else list(inp.scored)
        cols = ["model", "dataset", "instance", "correct"]
        frames = [plots.require_columns(pd.read_parquet(f), cols, f)[cols] for f in files]
        sd = variant_sd(pd.concat(frames, ignore_index=True)) if frames else None
    prompt = str(p.get("prompt", "gsm"))
    comparison = compare_published(summaries, table4, table5, prompt=prompt,
                                   paper_names=dict(p.get("paper_names", {}) or {}), sd=sd)
    out = Path(snakemake.output.csv)  # noqa: F821
    paths = write_comparison(comparison, out.parent / out.stem,
                             prompt_label=str(p.get("prompt_label", plots.PROMPT_LABELS.get(prompt, prompt))))
    log.info("%d shared model(s): %s", len(comparison), ", ".join(comparison["model"]) or "none")
except Exception:
    log.exception("the published comparison failed")
    raise
