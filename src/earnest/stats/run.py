"""The statistics steps of a bootstrapped GLMM, one library entry point each, used by both
``earnest glmm`` (:func:`run_glmm`) and the workflow's thin scripts (bootstrap_shard.py,
glmm_summary.py), so both write the same shards and the same summary columns:

* :func:`bootstrap_shard`: one shard of one model x prompt, with the engine's cross-check;
* :func:`full_fit`: the full-data fit of one model x prompt;
* :func:`summarise_shards`: the summary of one model x prompt x GLMM from its shards (with the
  full-data fit, its diagnostics and refits, and the ``engine_check_*`` columns of the checks).

The engine (lme4 | laplace, :mod:`earnest.stats.engines`) is resolved once where its name comes in
(:func:`run_glmm`, or the workflow script that calls a step) and passed down as an
:class:`earnest.stats.engines.Engine` object; no step looks its name up again.
"""

from __future__ import annotations

import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from earnest import fidelity as F
from earnest.stats import engines as E
from earnest.stats import glmm as G
from earnest.stats.glmm import safe_name
from earnest.stats.summary import check_shards, clean_mask, summarise
from earnest.wording import EFFECTS, VARIANT
from earnest.stats.defaults import CHECK_RESAMPLES, COVARIATE, SHARDS


def default_cores() -> int:
    """CPU cores this process may use (affinity-aware)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def shard_path(out_dir: str | Path, glmm: int, model: str, prompt: str, shard: int) -> Path:
    """``out_dir/glmm{g}/{model}/{prompt}/shard-{i}.parquet`` (the layout of CONTRACTS.md)."""
    return Path(out_dir) / f"glmm{glmm}" / safe_name(model) / safe_name(prompt) / f"shard-{shard}.parquet"


def write_shard(table: pd.DataFrame, path: str | Path) -> Path:
    """Write a shard atomically (a killed job never leaves half a shard that looks finished)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp"
    table.to_parquet(tmp, index=False)
    os.replace(tmp, path)
    return path


def read_shards(paths) -> pd.DataFrame:
    """Concatenate shard files, checking the shard contract and that no resample repeats."""
    frames = [pd.read_parquet(p) for p in paths]
    if not frames:
        raise ValueError("no shard files given")
    table = pd.concat(frames, ignore_index=True)
    check_shards(table, source=", ".join(str(p) for p in paths)[:300])
    return table


def _shard_is_current(path: Path, resamples: np.ndarray, base_seed: int, rows: str, eng: E.Engine,
                      labels: str = "draw", prior: str = "") -> bool:
    # a finished shard is reused only if it holds exactly the resamples and seeds asked for now,
    # fitted on the same rows (recorded in the file's metadata) with today's columns, by the engine
    # asked for now and, for an engine whose cluster labels matter (lme4), with the same labels
    # (metadata; shards written before it was recorded used "draw")
    try:
        old = pd.read_parquet(path)
    except Exception:
        return False
    if old.attrs.get("rows") != rows or any(c not in old.columns for c in G.SHARD_COLUMNS):
        return False
    if eng.uses_cluster_labels and old.attrs.get("cluster_labels", "draw") != labels:
        return False
    if old.attrs.get("prior", "") != prior:              # fitted with another prior (or none)
        return False
    done_by = set(old["engine"].astype(str)) if "engine" in old.columns else {G.LME4}
    if {G.engine_name(e) for e in done_by} != {eng.name}:
        return False
    old = old[["resample", "seed"]].drop_duplicates("resample")
    want = pd.DataFrame({"resample": resamples, "seed": [G.resample_seed(base_seed, b) for b in resamples]})
    got = old.sort_values("resample").reset_index(drop=True)
    return len(got) == len(want) and bool((got["resample"].to_numpy() == want["resample"].to_numpy()).all()
                                          and (got["seed"].to_numpy() == want["seed"].to_numpy()).all())


@dataclass
class Shard:
    """One bootstrap shard (:func:`bootstrap_shard`): ``table`` (:data:`earnest.stats.glmm.SHARD_COLUMNS`
    plus ``engine``; attrs ``rows`` and ``cluster_labels``), the engine's cross-check against lme4
    (``check``, :data:`earnest.stats.engines.CHECK_COLUMNS`; no rows when there is none), the
    seconds the fits took, the resamples lme4 fitted with glmer() because its fast path was refused,
    and why a check that was asked for has no rows ('' otherwise)."""
    table: pd.DataFrame
    check: pd.DataFrame
    seconds: float
    n_fallback: int = 0
    no_check: str = ""

    @property
    def verdict(self) -> dict | None:
        """The cross-check's verdict (:func:`earnest.stats.engines.check_summary`), None without one."""
        return E.check_summary(self.check) if len(self.check) else None


def bootstrap_shard(data: pd.DataFrame, glmm: int, n_resamples: int, base_seed: int, *, shard: int = 0,
                    n_shards: int = SHARDS, cores: int = 1, rows: str, fidelity: str, engine: E.Engine | str,
                    check_resamples: int, prior=None) -> Shard:
    """Shard ``shard`` of ``n_shards`` of a B=``n_resamples`` bootstrap of ``glmm`` for one model x
    prompt (validated GLMM input ``data``; no rows: every resample an error, see
    :func:`earnest.stats.engines.run_shard`), fitted by ``engine`` on ``rows`` (answers |
    aggregated, :func:`earnest.stats.engines.resolve_rows`) with the cluster labels of ``fidelity``
    (:func:`earnest.stats.glmm.cluster_labels`). An engine with a cross-check (laplace) refits the
    shard's first ``check_resamples`` resamples with lme4 (0: none). Resample b always uses the seed
    (``base_seed``, b), so the shard count does not change results."""
    eng = E.get_engine(engine)
    labels = G.cluster_labels(fidelity)
    prior = G.prior_for(fidelity, prior)
    t0 = time.perf_counter()
    table = E.run_shard(data, glmm, n_resamples, base_seed, shard=shard, n_shards=n_shards, cores=cores,
                        aggregate=rows == "aggregated", engine=eng, labels=labels, prior=prior)
    seconds = time.perf_counter() - t0
    table.attrs["rows"] = rows
    table.attrs["cluster_labels"] = labels
    table.attrs["prior"] = prior.label() if prior is not None else ""
    fallback = int((table.drop_duplicates("resample")["engine"] == G.GLMER_FALLBACK).sum())
    check, no_check = E.empty_check(), ""
    if eng.has_cross_check and check_resamples > 0:
        check = eng.cross_check(data, glmm, table, int(check_resamples), base_seed, prior=prior)
        if not len(check) and len(data):
            no_check = (f"no lme4 check of this shard: lme4's model frame would have more than "
                        f"{E.CHECK_MAX_ROWS} rows (minutes per glmer() fit)")
    return Shard(table, check, seconds, fallback, no_check)


def full_fit(data: pd.DataFrame, glmm: int, *, engine: E.Engine | str = G.LME4, prior=None) -> G.WaldFit:
    """The full-data fit of ``glmm`` on validated GLMM input of one model x prompt, by ``engine``
    (lme4: glmer on one row per answer, as the paper; laplace: its own, with the same checks),
    penalised by ``prior`` (earnest mode's, :func:`earnest.stats.glmm.prior_for`)."""
    return E.get_engine(engine).full_fit(data, glmm, prior=prior)


def summarise_group(data: pd.DataFrame, shards: pd.DataFrame, glmm: int, *, analysis: str = "all",
                    wald: bool = True, refit_nonconvergent: bool = True, model: str | None = None,
                    prompt: str | None = None, fidelity: str = F.DEFAULT,
                    rows: str = "", engine: E.Engine | str = G.LME4, prior=None,
                    level: float = 0.95) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Summary rows of one model x prompt plus, if its full-data fit did not converge, the
    optimiser refits (Listing 6; empty frame otherwise). ``data``: validated GLMM input; ``model``
    and ``prompt`` name the group when ``data`` has no rows (nothing is fitted then);
    ``fidelity`` decides which fits are clean; ``rows`` records what the shards were fitted on.
    The full-data fit is ``engine``'s (:func:`full_fit`); a non-convergent one gets the engine's
    diagnostics (:meth:`earnest.stats.engines.Engine.diagnose`: lme4's PIRLS-converged refit and
    optimiser refits; none for laplace). :func:`summarise_shards` adds the cross-check columns."""
    eng = E.get_engine(engine)
    if len(data):
        model, prompt = str(data["model"].iloc[0]), str(data["prompt"].iloc[0])
    elif model is None or prompt is None:
        raise ValueError("summarise_group: no rows, so model and prompt must be given")
    prior = G.prior_for(fidelity, prior)
    wf = full_fit(data, glmm, engine=eng, prior=prior) if wald and len(data) else None
    profile = None
    if prior is not None and wf is not None and not wf.error:
        # earnest mode: the penalised likelihood-ratio test and profile interval of each effect
        from earnest.stats.profile import profile_terms
        est = dict(zip(wf.coefs["term"], wf.coefs["estimate"].astype(float)))
        profile = profile_terms(eng, data, glmm, prior, est, EFFECTS[glmm], level=level)
    summary = summarise(shards, data, glmm, model=model, prompt=prompt, wald=wf, analysis=analysis,
                        fidelity=fidelity, rows=rows, profile=profile, prior=prior, level=level)
    refits = pd.DataFrame()
    if wf is not None and not bool(summary["wald_converged"].iloc[0]):
        extra, refits = eng.diagnose(data, glmm, wf, fidelity, refit=refit_nonconvergent)
        for col, value in extra.items():
            summary[col] = value
        if len(refits):
            refits.insert(0, "analysis", analysis)
            refits.insert(1, "glmm", glmm)
            refits.insert(2, "model", model)
            refits.insert(3, "prompt", prompt)
    return summary, refits


def summarise_shards(data: pd.DataFrame, shards: pd.DataFrame, glmm: int, *, checks: Sequence[pd.DataFrame] = (),
                     n_resamples: int | None = None, source: str = "shards", analysis: str = "all",
                     fidelity: str = F.DEFAULT, rows: str = "", engine: E.Engine | str = G.LME4,
                     covariate: str = COVARIATE,
                     model: str | None = None, prompt: str | None = None,
                     refit_nonconvergent: bool = True, prior=None) -> tuple[pd.DataFrame, pd.DataFrame, dict | None]:
    """The summary of one model x prompt x GLMM from its bootstrap ``shards``: (summary rows, one
    per effect; optimiser refits; the cross-checks' verdict or None).

    :func:`summarise_group` (the bootstrap summary, the full-data fit, its diagnostics and refits),
    then, when the shards' cross-checks (``checks``, :func:`bootstrap_shard`'s) have rows, their
    pooled verdict (:func:`earnest.stats.engines.check_summary`) as the ``engine_check_*`` columns,
    and ``covariate``: GLMM 2's covariate ('' for GLMM 1). With ``n_resamples`` the shards must hold
    exactly resamples 0..B-1 (``source`` names them in the error)."""
    if n_resamples is not None:
        check_shards(shards, int(n_resamples), source=source)
    summary, refits = summarise_group(data, shards, glmm, analysis=analysis, model=model, prompt=prompt,
                                      fidelity=fidelity, rows=rows, engine=engine,
                                      refit_nonconvergent=refit_nonconvergent, prior=prior)
    checks = [c for c in checks if len(c)]
    verdict = None
    if checks:
        verdict = E.check_summary(pd.concat(checks, ignore_index=True))
        summary["engine_check_resamples"] = verdict["checked"]
        summary["engine_check_max_diff"] = verdict["max_abs_diff"]
        summary["engine_check_clean_agree"] = verdict["clean_agree_tight"]
        for mode in F.MODES:                              # per clean rule: with lme4 PIRLS converged, and its defaults
            summary[f"engine_check_clean_agree_{mode}"] = verdict[f"clean_agree_tight_{mode}"]
            summary[f"engine_check_clean_agree_default_{mode}"] = verdict[f"clean_agree_default_{mode}"]
        summary["engine_check_lme4_short"] = verdict["lme4_short"]
        summary["engine_check_warning"] = verdict["warning"]
    summary["covariate"] = str(covariate) if glmm == 2 else ""
    return summary, refits, verdict


def steps(df: pd.DataFrame, n_shards: int) -> int:
    """The steps :func:`run_glmm` reports for GLMM input ``df``: each model x prompt's shards and its
    summary."""
    return len(df[["model", "prompt"]].drop_duplicates()) * (int(n_shards) + 1)


def check_path(shard: str | Path) -> Path:
    """Where the lme4 cross-check of a shard goes: next to it, ``shard-{i}.check.parquet``."""
    shard = Path(shard)
    return shard.with_name(shard.name.replace(".parquet", ".check.parquet"))


def run_glmm(df: pd.DataFrame, glmm: int, n_resamples: int, base_seed: int, out_dir: str | Path, *,
             n_shards: int = SHARDS, cores: int | None = None, rows: str | None = None, analysis: str = "all",
             fidelity: str = F.DEFAULT, engine: E.Engine | str = G.LME4, check_resamples: int = CHECK_RESAMPLES,
             covariate: str = COVARIATE, prior=None,
             log: Callable[[str], None] = print,
             on_step: Callable[[str, bool], None] | None = None) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Bootstrap ``glmm`` for every model x prompt of validated GLMM input ``df``: the steps the
    workflow runs as jobs (:func:`bootstrap_shard`, :func:`summarise_shards`), in one process.

    ``rows``: answers | aggregated (:func:`earnest.stats.engines.resolve_rows`; None = the fidelity
    mode's); ``fidelity`` also decides which fits are clean and how the lme4 engine labels a
    resample's clusters (:func:`earnest.stats.glmm.cluster_labels`). Shards are written to
    :func:`shard_path` as they finish and reused when a rerun asks for the same resamples and
    seeds, so an R failure loses no finished shard. ``engine``: lme4 | laplace (its name is looked up
    here, once; every step below gets the :class:`earnest.stats.engines.Engine`); an engine with a
    cross-check (laplace) refits each new shard's first ``check_resamples`` resamples with lme4
    (:meth:`earnest.stats.engines.Engine.cross_check`, written next to the shard, :func:`check_path`).
    Returns (summaries, refits, checks): checks has one row per checked shard with its verdict
    (:func:`earnest.stats.engines.check_summary`).

    Its steps, :func:`steps` of them (each shard, then each model x prompt's summary), are reported
    by ``on_step(message, counted)`` (``counted`` false for a shard found done: no work of this run;
    :class:`earnest.progress.Progress`), or by ``log(message)`` when no ``on_step`` is given.
    """
    def step(message: str, counted: bool = True) -> None:
        (on_step or (lambda m, _: log(m)))(message, counted)

    eng = E.get_engine(engine)
    cores = cores or default_cores()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        rows = E.resolve_rows(rows, fidelity, engine=eng)
    for w in caught:                                      # a pair that cannot reproduce the mode's clean set
        log(f"WARNING {w.message}")
    labels = G.cluster_labels(fidelity)
    summaries, refits, checks = [], [], []
    for model, prompt, sub in G.groups(df):
        paths, group_checks = [], []
        for shard in range(n_shards):
            path = shard_path(out_dir, glmm, model, prompt, shard)
            resamples = G.shard_resamples(n_resamples, shard, n_shards)
            prior_now = G.prior_for(fidelity, prior)
            if path.exists() and _shard_is_current(path, resamples, base_seed, rows, eng, labels,
                                                   prior_now.label() if prior_now is not None else ""):
                step(f"{model} / {prompt}: shard {shard + 1}/{n_shards} already done ({path})", False)
            else:
                done = bootstrap_shard(sub, glmm, n_resamples, base_seed, shard=shard, n_shards=n_shards,
                                       cores=cores, rows=rows, fidelity=fidelity, engine=eng,
                                       check_resamples=check_resamples, prior=prior)
                write_shard(done.table, path)
                n_clean = int(clean_mask(done.table, fidelity)[done.table["term"] == VARIANT].sum())
                if eng.has_cross_check and check_resamples > 0:
                    if done.no_check:
                        log(f"{model} / {prompt}: {done.no_check}")
                    write_shard(done.check, check_path(path))
                step(f"{model} / {prompt}: shard {shard + 1}/{n_shards}, {len(resamples)} resamples in "
                     f"{done.seconds:.1f} s ({eng.name} engine), {n_clean} clean -> {path}"
                     + (f"; lme4's fast path refused: {done.n_fallback} resamples fitted by glmer()"
                        if done.n_fallback else ""))
            cpath = check_path(path)
            if eng.has_cross_check and cpath.exists() and len(pd.read_parquet(cpath)):
                chk = pd.read_parquet(cpath)
                group_checks.append(chk)
                verdict = E.check_summary(chk)
                checks.append({"glmm": glmm, "model": model, "prompt": prompt, "shard": shard, **verdict})
                if verdict["warning"]:
                    log(f"WARNING {model} / {prompt} shard {shard + 1}: {verdict['warning']}")
            paths.append(path)
        t0 = time.perf_counter()
        s, r, _ = summarise_shards(sub, read_shards(paths), glmm, checks=group_checks, analysis=analysis,
                                   fidelity=fidelity, rows=rows, engine=eng, covariate=covariate, prior=prior)
        step(f"{model} / {prompt}: GLMM {glmm} summarised (full-data fit{' and optimiser refits' if len(r) else ''}) "
             f"in {time.perf_counter() - t0:.1f} s")
        summaries.append(s)
        if len(r):
            refits.append(r)
    return (pd.concat(summaries, ignore_index=True),
            pd.concat(refits, ignore_index=True) if refits else pd.DataFrame(),
            pd.DataFrame(checks))
