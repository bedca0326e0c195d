"""Score one generations table: extract answers, compare with gold answers, centre gamma.

snakemake.input.generations: generations parquet; snakemake.input.dataset_items: this dataset's
items (Snakemake reserves the name ``items`` for input, so it cannot be used);
snakemake.input.all_items: item parquets of gsm_base and gsm_variants (gamma is centred over
their union); snakemake.params.style: "text" | "code"; snakemake.params.fidelity (optional, default "earnest"):
the fidelity mode of extraction and classification; snakemake.output[0]: scored parquet;
snakemake.log[0]: log file.
"""

import logging

import pandas as pd

from earnest.scoring import gamma_mean, score_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO,  # noqa: F821
                    format="%(asctime)s %(levelname)s %(message)s", force=True)
log = logging.getLogger("score")

try:
    generations = pd.read_parquet(snakemake.input.generations)  # noqa: F821
    items = pd.read_parquet(snakemake.input.dataset_items)  # noqa: F821
    all_items = snakemake.input.all_items  # noqa: F821
    all_items = [all_items] if isinstance(all_items, str) else list(all_items)
    fidelity = getattr(snakemake.params, "fidelity", "earnest")  # noqa: F821
    g_mean = gamma_mean((pd.read_parquet(p) for p in all_items), fidelity=fidelity)
    style = snakemake.params.style  # noqa: F821
    log.info("scoring %s (%d rows, style %s, gamma mean %.4f)",
             snakemake.input.generations, len(generations), style, g_mean)  # noqa: F821
    scored = score_table(generations, items, style, g_mean, fidelity=fidelity)
    counts = scored["error_class"].replace("", "correct").value_counts().to_dict()
    log.info("accuracy %.4f; classes %s", scored["correct"].mean(), counts)
    scored.to_parquet(snakemake.output[0], index=False)  # noqa: F821
except Exception:
    log.exception("scoring failed")
    raise
