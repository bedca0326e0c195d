"""This run's GSM-Base / GSM-Variants accuracies and deltas next to the published ones (Tables 4-5;
earnest.gsm.published).

snakemake.input.summaries: results/stats/summaries.parquet;
snakemake.input.table4, .table5: resources/published/table4_accuracy.csv, table5_variant_delta.csv;
snakemake.input.scored: scored parquets of the Ex1 prompt on GSM-Variants, for the "± sd" over
  GSM-Variants instance sets;
snakemake.params: prompt (the Ex1 prompt), paper_names (dict local model -> paper model name);
snakemake.output.csv (.md, .tex with the same stem); snakemake.log[0]: log file.
"""

from pathlib import Path

import pandas as pd

from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "published_table")  # noqa: F821

from earnest.gsm.published import (TABLE4_COLUMNS, TABLE5_COLUMNS, compare_published, variant_sd,  # noqa: E402
                               write_comparison)
from earnest.stats.summaries import read_summaries  # noqa: E402
from earnest.tables import read_table, require_columns  # noqa: E402

try:
    sm = snakemake  # noqa: F821
    p = sm.params
    summaries = read_summaries(sm.input.summaries)
    files = [sm.input.scored] if isinstance(sm.input.scored, str) else list(sm.input.scored)
    cols = ["model", "dataset", "instance", "correct", "error_class"]
    frames = [require_columns(pd.read_parquet(f), cols, f)[cols] for f in files]
    sd = variant_sd(pd.concat(frames, ignore_index=True)) if frames else None
    prompt = str(p.prompt)
    comparison = compare_published(summaries, read_table(sm.input.table4, TABLE4_COLUMNS),
                                   read_table(sm.input.table5, TABLE5_COLUMNS), prompt=prompt,
                                   paper_names=dict(p.paper_names), sd=sd)
    labels = dict(zip(summaries["prompt"], summaries["prompt_label"]))
    out = Path(sm.output.csv)
    write_comparison(comparison, out.parent / out.stem, prompt_label=labels.get(prompt, prompt))
    log.info("%d shared model(s): %s", len(comparison), ", ".join(comparison["model"]) or "none")
except Exception:
    log.exception("the published comparison failed")
    raise
