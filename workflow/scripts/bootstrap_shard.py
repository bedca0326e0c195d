"""Run one bootstrap shard of GLMM 1 or 2 for one model x prompt (one R call).

snakemake.input[0]: GLMM input parquet of one model x prompt;
snakemake.params: glmm (1|2), resamples (B), seed (base seed), shard (i, 0-based), n_shards (n),
  rows (optional, answers | aggregated, default aggregated: one row per answer, or binomial rows per
  template x variant [x gamma_c]);
snakemake.threads: R worker processes (parallel::mclapply);
snakemake.output[0]: shard parquet (resample, seed, term, estimate, ranef_var, converged, singular,
  messages, error); snakemake.log[0]: log file.
Resample b always uses a seed derived from (seed, b), so the shard count does not change results.
"""

import logging
import time

import pandas as pd

from earnest.stats.glmm import run_shard, validate_glmm_input
from earnest.stats.run import write_shard

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO,  # noqa: F821
                    format="%(asctime)s %(levelname)s %(message)s", force=True)
log = logging.getLogger("bootstrap_shard")

try:
    p = snakemake.params  # noqa: F821
    src = str(snakemake.input[0])  # noqa: F821
    df = validate_glmm_input(pd.read_parquet(src), int(p.glmm), source=src)
    t0 = time.time()
    table = run_shard(df, int(p.glmm), int(p.resamples), int(p.seed), shard=int(p.shard),
                      n_shards=int(p.n_shards), cores=int(snakemake.threads),  # noqa: F821
                      aggregate=str(p.get("rows", "aggregated")) == "aggregated")
    per = table.drop_duplicates("resample")
    log.info("GLMM %s shard %s/%s (%s rows): %d resamples in %.1f s, %d without any warning, %d errors", p.glmm,
             int(p.shard) + 1, p.n_shards, p.get("rows", "aggregated"), len(per), time.time() - t0,
             int(per.converged.sum()), int((per.error != "").sum()))
    write_shard(table, snakemake.output[0])  # noqa: F821
except Exception:
    log.exception("bootstrap shard failed")
    raise
