"""Paired comparisons of one family (the models of a prompt, or the prompts of a model).

snakemake.input.scored: scored parquets of the family's conditions; snakemake.params: family
("models" | "prompts"), fixed (the prompt or model held fixed), conditions, resamples, seed,
item_effects, agq, engine, alpha, labels (prompt -> display name); snakemake.output: csv (md, tex beside it),
png / pdf (the OR matrix); snakemake.log[0].
"""

from pathlib import Path

import pandas as pd

from earnest.gsm.failure_classes import judged
from earnest.joblog import job_logger
from earnest.stats.plots_power import figure_pairwise_matrix
from earnest.stats import compare as C

log = job_logger(snakemake.log[0], "compare_family")  # noqa: F821

try:
    p = snakemake.params  # noqa: F821
    files = snakemake.input.scored  # noqa: F821
    files = [files] if isinstance(files, str) else list(files)
    # answers the machine failed to run are neither right nor wrong: their items leave the pairs
    data = C.compare_input_from_scored(judged(pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)))
    pairs = C.compare_family(data, p.family, p.fixed, list(p.conditions), n_resamples=int(p.resamples),
                             seed=int(p.seed), alpha=float(p.alpha), item_effects=bool(p.item_effects),
                             cores=int(snakemake.threads), engine=str(p.engine), agq=int(p.agq),
                             log=log.info)  # noqa: F821
    labels = dict(p.labels)
    csv = Path(snakemake.output.csv)  # noqa: F821
    C.write_pairs_table(pairs, csv.parent / csv.stem, alpha=float(p.alpha), labels=labels)
    png = Path(snakemake.output.png)  # noqa: F821
    what = "Models with the prompt" if p.family == "models" else "Prompts of the model"
    figure_pairwise_matrix(pairs, png.parent / png.stem, order=list(p.conditions), alpha=float(p.alpha),
                           title=f"{what} {labels.get(p.fixed, p.fixed)}", labels=labels)
except Exception:
    log.exception("the paired comparisons failed")
    raise
