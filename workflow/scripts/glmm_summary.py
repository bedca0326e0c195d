"""Gather the bootstrap shards of one GLMM x model x prompt into its summary, with the full-data
Wald fit and, if that fit does not converge, the refits with every lme4 optimiser (Listing 6).
The odds ratio, interval and p value are computed by earnest.stats.summary.summarise (called through
earnest.stats.run.summarise_group, which adds the Wald fit and the refits).

snakemake.input.glmm_input: GLMM input parquet; snakemake.input.shards: shard parquets;
snakemake.params: glmm (1|2), resamples (B, checked against the shards), analysis (all |
  reasoning_only | matched | shifted<k>), fidelity (reference | earnest: which fits are clean), rows
  (answers | aggregated: recorded in the summary), engine (lme4 | laplace: which full-data fit),
  covariate (GLMM 2's);
snakemake.input.checks: the shards' lme4 cross-checks (none for lme4 shards); their verdict goes into the
  summary's engine_check_* columns and, when beyond tolerance, the log as a warning;
snakemake.output.summary: summary parquet (one row per effect); snakemake.output.refits: optimiser
  refits parquet (no rows when the fit converged); snakemake.log[0]: log file.
"""

import pandas as pd

from earnest.stats.glmm import check_summary, validate_glmm_input
from earnest.stats.run import read_shards, summarise_group
from earnest.stats.summary import check_shards
from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "glmm_summary")  # noqa: F821

try:
    p = snakemake.params  # noqa: F821
    glmm = int(p.glmm)
    src = str(snakemake.input.glmm_input)  # noqa: F821
    data = validate_glmm_input(pd.read_parquet(src), glmm, source=src, fidelity=str(p.fidelity))
    shard_paths = snakemake.input.shards  # noqa: F821
    shard_paths = [shard_paths] if isinstance(shard_paths, str) else list(shard_paths)
    shards = read_shards(shard_paths)
    check_shards(shards, int(p.resamples), source=f"shards of {src}")
    wc = snakemake.wildcards  # noqa: F821
    summary, refits = summarise_group(data, shards, glmm, analysis=str(p.analysis),
                                      model=getattr(wc, "model", None), prompt=getattr(wc, "prompt", None),
                                      fidelity=str(p.fidelity), rows=str(p.rows),
                                      engine=str(p.engine))
    check_paths = snakemake.input.checks  # noqa: F821
    check_paths = [check_paths] if isinstance(check_paths, str) else list(check_paths)
    checks = [c for c in (pd.read_parquet(x) for x in check_paths) if len(c)]
    if checks:
        verdict = check_summary(pd.concat(checks, ignore_index=True))
        summary["engine_check_resamples"] = verdict["checked"]
        summary["engine_check_max_diff"] = verdict["max_abs_diff"]
        summary["engine_check_clean_agree"] = verdict["clean_agree_tight"]
        for mode in ("reference", "earnest"):             # per clean rule: with lme4 PIRLS converged, and its defaults
            summary[f"engine_check_clean_agree_{mode}"] = verdict[f"clean_agree_tight_{mode}"]
            summary[f"engine_check_clean_agree_default_{mode}"] = verdict[f"clean_agree_default_{mode}"]
        summary["engine_check_lme4_short"] = verdict["lme4_short"]
        summary["engine_check_warning"] = verdict["warning"]
        log.info("laplace engine checked against lme4 on %d resamples: largest difference %.2g, clean flags agree "
                 "on %d", verdict["checked"], verdict["max_abs_diff"], verdict["clean_agree_tight"])
        if verdict["warning"]:
            log.warning(verdict["warning"])
    summary["covariate"] = str(p.covariate) if glmm == 2 else ""
    for r in summary.itertuples():
        log.info("%s %s GLMM %d %s: OR %.3f, p_boot %.4f, %d/%d clean; Wald p %.4f, converged %s",
                 r.model, r.prompt, glmm, r.term, r.odds_ratio, r.p_boot, r.n_clean, r.n_resamples,
                 r.wald_p, r.wald_converged)
    summary.to_parquet(snakemake.output.summary, index=False)  # noqa: F821
    refits.to_parquet(snakemake.output.refits, index=False)  # noqa: F821
except Exception:
    log.exception("summarising the bootstrap failed")
    raise
