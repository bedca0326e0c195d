"""Run one bootstrap shard of GLMM 1 or 2 for one model x prompt (earnest.stats.run.bootstrap_shard,
the step ``earnest glmm`` runs too).

snakemake.input[0]: GLMM input parquet of one model x prompt; snakemake.input.centre: [] or, reference
  mode's GLMM 2, the pool's centre of gamma (workflow/scripts/gamma_centre.py);
snakemake.params: glmm (1|2), resamples (B), seed (base seed), shard (i, 0-based), n_shards (n),
  fidelity (earnest | reference: the input checks and the lme4 engine's cluster labels),
  rows (answers | aggregated: one row per answer, or binomial rows per template x variant [x gamma_c]);
  engine (lme4 | laplace), check_resamples (laplace: resamples refitted with lme4 as a check), prior
  (stats.prior: earnest mode's normal prior on the fixed effects; reference mode fits none);
snakemake.threads: worker processes (R's parallel::mclapply, or the laplace engine's);
snakemake.output.shard: shard parquet (resample, seed, term, estimate, ranef_var, converged, singular,
  messages, lme4_messages, error, engine); snakemake.output.check: the lme4 cross-check of the shard
  (earnest.stats.engines.Engine.cross_check; no rows for an engine without one); snakemake.log[0]: log file.
Resample b always uses a seed derived from (seed, b), so the shard count does not change results.
"""

import pandas as pd

from earnest.gsm.glmm_input import with_pool_centre
from earnest.joblog import job_logger
from earnest.stats.glmm import validate_glmm_input
from earnest.stats.run import bootstrap_shard, write_shard

log = job_logger(snakemake.log[0], "bootstrap_shard")  # noqa: F821

try:
    p = snakemake.params  # noqa: F821
    src = str(snakemake.input[0])  # noqa: F821
    mode = str(p.fidelity)
    centre = list(getattr(snakemake.input, "centre", None) or [])  # noqa: F821
    raw = with_pool_centre(pd.read_parquet(src), centre[0] if centre else None)
    df = validate_glmm_input(raw, int(p.glmm), source=src, fidelity=mode)
    engine, rows = str(p.engine), str(p.rows)
    done = bootstrap_shard(df, int(p.glmm), int(p.resamples), int(p.seed), shard=int(p.shard),
                           n_shards=int(p.n_shards), cores=int(snakemake.threads),  # noqa: F821
                           rows=rows, fidelity=mode, engine=engine,
                           check_resamples=int(p.check_resamples), prior=dict(p.prior))
    per = done.table.drop_duplicates("resample")
    log.info("GLMM %s shard %s/%s (%s engine, %s rows): %d resamples in %.1f s, %d without any warning, %d errors",
             p.glmm, int(p.shard) + 1, p.n_shards, engine, rows, len(per), done.seconds,
             int(per.converged.sum()), int((per.error != "").sum()))
    if done.n_fallback:
        log.warning("lme4's bootstrap fast path differs from glmer() with this lme4: %d resamples fitted by glmer()",
                    done.n_fallback)
    if done.no_check:
        log.warning(done.no_check)
    verdict = done.verdict
    if verdict is not None:
        log.info("checked against lme4 on %d resamples: largest difference where both are clean %.2g; clean flags "
                 "agree on %d (converged PIRLS) and %d (lme4's defaults)", verdict["checked"], verdict["max_abs_diff"],
                 verdict["clean_agree_tight"], verdict["clean_agree_default"])
        if verdict["warning"]:
            log.warning(verdict["warning"])
    out = snakemake.output  # noqa: F821
    write_shard(done.table, getattr(out, "shard", None) or out[0])
    if getattr(out, "check", None):
        write_shard(done.check, out.check)
except Exception:
    log.exception("bootstrap shard failed")
    raise
