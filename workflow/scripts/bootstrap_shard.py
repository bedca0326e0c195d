"""Run one bootstrap shard of GLMM 1 or 2 for one model x prompt (one R call).

snakemake.input[0]: GLMM input parquet of one model x prompt;
snakemake.params: glmm (1|2), resamples (B), seed (base seed), shard (i, 0-based), n_shards (n),
  fidelity (earnest | reference: the input checks and the lme4 engine's cluster labels),
  rows (answers | aggregated: one row per answer, or binomial rows per template x variant [x gamma_c]);
  engine (lme4 | laplace), check_resamples (laplace: resamples refitted with lme4 as a check);
snakemake.threads: worker processes (R's parallel::mclapply, or the laplace engine's);
snakemake.output.shard: shard parquet (resample, seed, term, estimate, ranef_var, converged, singular,
  messages, lme4_messages, error, engine); snakemake.output.check: the lme4 cross-check of a laplace
  shard (earnest.stats.glmm.cross_check; no rows for lme4 shards); snakemake.log[0]: log file.
Resample b always uses a seed derived from (seed, b), so the shard count does not change results.
"""

import time

import pandas as pd

from earnest.stats.glmm import CHECK_COLUMNS, check_summary, cluster_labels, cross_check, run_shard, validate_glmm_input
from earnest.stats.run import write_shard
from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "bootstrap_shard")  # noqa: F821

try:
    p = snakemake.params  # noqa: F821
    src = str(snakemake.input[0])  # noqa: F821
    mode = str(p.fidelity)
    df = validate_glmm_input(pd.read_parquet(src), int(p.glmm), source=src, fidelity=mode)
    t0 = time.time()
    engine = str(p.engine)
    table = run_shard(df, int(p.glmm), int(p.resamples), int(p.seed), shard=int(p.shard),
                      n_shards=int(p.n_shards), cores=int(snakemake.threads),  # noqa: F821
                      aggregate=str(p.rows) == "aggregated", engine=engine,
                      labels=cluster_labels(mode))
    table.attrs["rows"] = str(p.rows)
    table.attrs["cluster_labels"] = cluster_labels(mode)
    per = table.drop_duplicates("resample")
    log.info("GLMM %s shard %s/%s (%s engine, %s rows): %d resamples in %.1f s, %d without any warning, %d errors",
             p.glmm, int(p.shard) + 1, p.n_shards, engine, p.rows, len(per),
             time.time() - t0, int(per.converged.sum()), int((per.error != "").sum()))
    fallback = int((per["engine"] == "lme4 (glmer fallback)").sum())
    if fallback:
        log.warning("lme4's bootstrap fast path differs from glmer() with this lme4: %d resamples fitted by glmer()",
                    fallback)
    out = snakemake.output  # noqa: F821
    write_shard(table, getattr(out, "shard", None) or out[0])
    check = pd.DataFrame({c: [] for c in CHECK_COLUMNS})
    if engine == "laplace" and int(p.check_resamples) > 0:
        check = cross_check(df, int(p.glmm), table, int(p.check_resamples), int(p.seed))
        verdict = check_summary(check)
        log.info("checked against lme4 on %d resamples: largest difference where both are clean %.2g; clean flags "
                 "agree on %d (converged PIRLS) and %d (lme4's defaults)", verdict["checked"], verdict["max_abs_diff"],
                 verdict["clean_agree_tight"], verdict["clean_agree_default"])
        if verdict["warning"]:
            log.warning(verdict["warning"])
    if getattr(out, "check", None):
        write_shard(check, out.check)
except Exception:
    log.exception("bootstrap shard failed")
    raise
