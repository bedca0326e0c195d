"""Gather the bootstrap shards of one GLMM x model x prompt into its summary, with the full-data
Wald fit and, if that fit does not converge, the refits with every lme4 optimiser (Listing 6).

snakemake.input.glmm_input: GLMM input parquet; snakemake.input.shards: shard parquets;
snakemake.params: glmm (1|2), resamples (B, checked against the shards), analysis (optional,
  "all" | "reasoning_only", default "all"), fidelity (optional, reference | earnest: which fits
  are clean), rows (optional, answers | aggregated: recorded in the summary);
snakemake.output.summary: summary parquet (one row per effect); snakemake.output.refits: optimiser
  refits parquet (no rows when the fit converged); snakemake.log[0]: log file.
"""

import logging

import pandas as pd

from earnest.stats.glmm import validate_glmm_input
from earnest.stats.run import read_shards, summarise_group
from earnest.stats.summary import check_shards

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO,  # noqa: F821
                    format="%(asctime)s %(levelname)s %(message)s", force=True)
log = logging.getLogger("glmm_summary")

try:
    p = snakemake.params  # noqa: F821
    glmm = int(p.glmm)
    src = str(snakemake.input.glmm_input)  # noqa: F821
    data = validate_glmm_input(pd.read_parquet(src), glmm, source=src)
    shard_paths = snakemake.input.shards  # noqa: F821
    shard_paths = [shard_paths] if isinstance(shard_paths, str) else list(shard_paths)
    shards = read_shards(shard_paths)
    check_shards(shards, int(p.resamples), source=f"shards of {src}")
    wc = snakemake.wildcards  # noqa: F821
    summary, refits = summarise_group(data, shards, glmm, analysis=str(p.get("analysis", "all")),
                                      model=getattr(wc, "model", None), prompt=getattr(wc, "prompt", None),
                                      fidelity=str(p.get("fidelity", "earnest")), rows=str(p.get("rows", "")))
    for r in summary.itertuples():
        log.info("%s %s GLMM %d %s: OR %.3f, p_boot %.4f, %d/%d clean; Wald p %.4f, converged %s",
                 r.model, r.prompt, glmm, r.term, r.odds_ratio, r.p_boot, r.n_clean, r.n_resamples,
                 r.wald_p, r.wald_converged)
    summary.to_parquet(snakemake.output.summary, index=False)  # noqa: F821
    refits.to_parquet(snakemake.output.refits, index=False)  # noqa: F821
except Exception:
    log.exception("summarising the bootstrap failed")
    raise
