"""Gather the bootstrap shards of one GLMM x model x prompt into its summary
(earnest.stats.run.summarise_shards, the step ``earnest glmm`` runs too): the odds ratio, interval
and p value (earnest.stats.summary.summarise), the full-data fit and, if it does not converge, the
engine's diagnostics and the refits with every lme4 optimiser (Listing 6), and the engine_check_*
columns of the shards' cross-checks.

snakemake.input.glmm_input: GLMM input parquet; snakemake.input.shards: shard parquets;
snakemake.input.centre: [] or, reference mode's GLMM 2, the pool's centre of gamma (gamma_centre.py);
snakemake.params: glmm (1|2), resamples (B, checked against the shards), analysis (all |
  reasoning_only | matched | shifted<k>), fidelity (reference | earnest: which fits are clean), rows
  (answers | aggregated: recorded in the summary), engine (lme4 | laplace: which full-data fit),
  covariate (GLMM 2's), collinearity_threshold (GLMM 2: |correlation| of the covariate with variant
  above which the summary warns; a not estimable fit, e.g. gamma collinear with variant, is logged and
  written with its reason in column not_estimable_reason);
snakemake.input.checks: the shards' lme4 cross-checks (none for lme4 shards); their verdict goes into the
  summary's engine_check_* columns and, when beyond tolerance, the log as a warning;
snakemake.output.summary: summary parquet (one row per effect); snakemake.output.refits: optimiser
  refits parquet (no rows when the fit converged); snakemake.log[0]: log file.
"""

import pandas as pd

from earnest.gsm.glmm_input import with_pool_centre
from earnest.joblog import job_logger
from earnest.stats.glmm import validate_glmm_input
from earnest.stats.run import fit_warnings, read_shards, summarise_shards

log = job_logger(snakemake.log[0], "glmm_summary")  # noqa: F821


def paths(value) -> list:
    return [value] if isinstance(value, str) else list(value)


try:
    p = snakemake.params  # noqa: F821
    glmm = int(p.glmm)
    src = str(snakemake.input.glmm_input)  # noqa: F821
    centre = paths(getattr(snakemake.input, "centre", None) or [])  # noqa: F821
    raw = with_pool_centre(pd.read_parquet(src), centre[0] if centre else None)
    data = validate_glmm_input(raw, glmm, source=src, fidelity=str(p.fidelity))
    wc = snakemake.wildcards  # noqa: F821
    summary, refits, verdict = summarise_shards(
        data, read_shards(paths(snakemake.input.shards)), glmm,  # noqa: F821
        checks=[pd.read_parquet(x) for x in paths(snakemake.input.checks)],  # noqa: F821
        n_resamples=int(p.resamples), source=f"shards of {src}", analysis=str(p.analysis),
        fidelity=str(p.fidelity), rows=str(p.rows), engine=str(p.engine),
        covariate=str(p.covariate), model=getattr(wc, "model", None), prompt=getattr(wc, "prompt", None),
        prior=dict(p.prior), collinearity_threshold=float(p.collinearity_threshold))
    for line in fit_warnings(summary):
        log.warning(line)
    if verdict is not None:
        log.info("%s engine checked against lme4 on %d resamples: largest difference %.2g, clean flags agree "
                 "on %d", p.engine, verdict["checked"], verdict["max_abs_diff"],
                 verdict["clean_agree_tight"])
        if verdict["warning"]:
            log.warning(verdict["warning"])
    for r in summary.itertuples():
        log.info("%s %s GLMM %d %s: OR %.3f, p_boot %.4f, %d/%d clean; Wald p %.4f, converged %s",
                 r.model, r.prompt, glmm, r.term, r.odds_ratio, r.p_boot, r.n_clean, r.n_resamples,
                 r.wald_p, r.wald_converged)
    summary.to_parquet(snakemake.output.summary, index=False)  # noqa: F821
    refits.to_parquet(snakemake.output.refits, index=False)  # noqa: F821
except Exception:
    log.exception("summarising the bootstrap failed")
    raise
