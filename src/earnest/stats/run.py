"""Whole analyses from files: shards on disk, their summary with the Wald fit, and the optimiser
refits of non-convergent fits. Used by ``earnest glmm`` and by the workflow's thin scripts.
"""

from __future__ import annotations

import os
import re
import time
import warnings
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from earnest import fidelity as F
from earnest.stats import glmm as G
from earnest.stats.summary import check_shards, clean_mask, summarise


def default_cores() -> int:
    """CPU cores this process may use (affinity-aware)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def safe_name(name: str) -> str:
    """A model or prompt name usable as one path component ('org/model' -> 'org__model')."""
    return re.sub(r"[^A-Za-z0-9._+-]", "_", name.replace("/", "__"))


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


def _shard_is_current(path: Path, resamples: np.ndarray, base_seed: int, rows: str, engine: str = "lme4",
                      labels: str = "draw") -> bool:
    # a finished shard is reused only if it holds exactly the resamples and seeds asked for now,
    # fitted on the same rows (recorded in the file's metadata) with today's columns, by the engine
    # asked for now and, for lme4, with the same cluster labels (metadata; shards written before it
    # was recorded used "draw")
    try:
        old = pd.read_parquet(path)
    except Exception:
        return False
    if old.attrs.get("rows") != rows or any(c not in old.columns for c in G.SHARD_COLUMNS):
        return False
    if engine == "lme4" and old.attrs.get("cluster_labels", "draw") != labels:
        return False
    done_by = set(old["engine"].astype(str)) if "engine" in old.columns else {"lme4"}
    if {("lme4" if e == G.GLMER_FALLBACK else e) for e in done_by} != {engine}:
        return False
    old = old[["resample", "seed"]].drop_duplicates("resample")
    want = pd.DataFrame({"resample": resamples, "seed": [G.resample_seed(base_seed, b) for b in resamples]})
    got = old.sort_values("resample").reset_index(drop=True)
    return len(got) == len(want) and bool((got["resample"].to_numpy() == want["resample"].to_numpy()).all()
                                          and (got["seed"].to_numpy() == want["seed"].to_numpy()).all())


def summarise_group(data: pd.DataFrame, shards: pd.DataFrame, glmm: int, *, analysis: str = "all",
                    wald: bool = True, refit_nonconvergent: bool = True, model: str | None = None,
                    prompt: str | None = None, fidelity: str = F.DEFAULT,
                    rows: str = "", engine: str = "lme4") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Summary rows of one model x prompt plus, if its full-data fit did not converge, the
    optimiser refits (Listing 6; empty frame otherwise). ``data``: validated GLMM input; ``model``
    and ``prompt`` name the group when ``data`` has no rows (nothing is fitted then);
    ``fidelity`` decides which fits are clean; ``rows`` records what the shards were fitted on.
    With ``engine="laplace"`` the full-data fit is the laplace engine's, and there are no lme4
    optimiser refits (Listing 6 is about lme4's optimisers)."""
    G.check_engine(engine)
    if len(data):
        model, prompt = str(data["model"].iloc[0]), str(data["prompt"].iloc[0])
    elif model is None or prompt is None:
        raise ValueError("summarise_group: no rows, so model and prompt must be given")
    wf = None
    if wald and len(data):
        if engine == "laplace":
            from earnest.stats import laplace
            wf = laplace.full_fit(data, glmm)
        else:
            wf = G.wald_fit(data, glmm)
    summary = summarise(shards, data, glmm, model=model, prompt=prompt, wald=wf, analysis=analysis,
                        fidelity=fidelity, rows=rows)
    if wf is not None and engine == "lme4" and not bool(summary["wald_converged"].iloc[0]) and not wf.error:
        # is the message lme4's own noise? The same fit with its PIRLS converged says (the paper's
        # "Convergent" column stays lme4's default verdict)
        from earnest.stats.summary import wald_clean
        tight = G.wald_fit(data, glmm, tol_pwrss=G.TIGHT_PWRSS)
        summary["wald_tight_converged"] = wald_clean(tight, fidelity)
        summary["wald_tight_messages"] = " | ".join(tight.messages) or tight.error
    refits = pd.DataFrame()
    if wf is not None and not bool(summary["wald_converged"].iloc[0]) and refit_nonconvergent and engine == "lme4":
        refits = G.refit_optimisers(data, glmm)
        refits.insert(0, "analysis", analysis)
        refits.insert(1, "glmm", glmm)
        refits.insert(2, "model", model)
        refits.insert(3, "prompt", prompt)
    return summary, refits


def check_path(shard: str | Path) -> Path:
    """Where the lme4 cross-check of a laplace shard goes: next to it, ``shard-{i}.check.parquet``."""
    shard = Path(shard)
    return shard.with_name(shard.name.replace(".parquet", ".check.parquet"))


def run_glmm(df: pd.DataFrame, glmm: int, n_resamples: int, base_seed: int, out_dir: str | Path, *,
             n_shards: int = 1, cores: int | None = None, rows: str | None = None, analysis: str = "all",
             fidelity: str = F.DEFAULT, engine: str = "lme4", check_resamples: int = 3,
             log: Callable[[str], None] = print) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Bootstrap ``glmm`` for every model x prompt of validated GLMM input ``df``.

    ``rows``: answers | aggregated (:func:`earnest.stats.glmm.resolve_rows`; None = the fidelity
    mode's); ``fidelity`` also decides which fits are clean and how the lme4 engine labels a
    resample's clusters (:func:`earnest.stats.glmm.cluster_labels`). Shards are written to
    :func:`shard_path` as they finish and reused when a rerun asks for the same resamples and
    seeds, so an R failure loses no finished shard. ``engine``: lme4 | laplace; with laplace each
    new shard's first ``check_resamples`` resamples are refitted with lme4
    (:func:`earnest.stats.glmm.cross_check`, written next to the shard, :func:`check_path`).
    Returns (summaries, refits, checks): checks has one row per checked shard with its verdict
    (:func:`earnest.stats.glmm.check_summary`).
    """
    G.check_engine(engine)
    cores = cores or default_cores()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        rows = G.resolve_rows(rows, fidelity, engine=engine)
    for w in caught:                                      # a pair that cannot reproduce the mode's clean set
        log(f"WARNING {w.message}")
    aggregate = rows == "aggregated"
    labels = G.cluster_labels(fidelity)
    summaries, refits, checks = [], [], []
    for model, prompt, sub in G.groups(df):
        paths = []
        for shard in range(n_shards):
            path = shard_path(out_dir, glmm, model, prompt, shard)
            resamples = G.shard_resamples(n_resamples, shard, n_shards)
            if path.exists() and _shard_is_current(path, resamples, base_seed, rows, engine, labels):
                log(f"{model} / {prompt}: shard {shard + 1}/{n_shards} already done ({path})")
            else:
                t0 = time.perf_counter()
                table = G.run_bootstrap(G.model_frame(sub, glmm, aggregate), glmm, resamples, base_seed, cores,
                                        engine=engine, labels=labels)
                secs = time.perf_counter() - t0
                table.attrs["rows"] = rows
                table.attrs["cluster_labels"] = labels
                write_shard(table, path)
                n_clean = int(clean_mask(table, fidelity)[table["term"] == "variant"].sum())
                fallback = int((table.drop_duplicates("resample")["engine"] == G.GLMER_FALLBACK).sum())
                log(f"{model} / {prompt}: shard {shard + 1}/{n_shards}, {len(resamples)} resamples in {secs:.1f} s "
                    f"({engine} engine), {n_clean} clean -> {path}"
                    + (f"; lme4's fast path refused: {fallback} resamples fitted by glmer()" if fallback else ""))
                if engine == "laplace" and check_resamples > 0:
                    chk = G.cross_check(sub, glmm, table, check_resamples, base_seed)
                    if not len(chk):
                        log(f"{model} / {prompt}: no lme4 check of this shard: lme4's model frame would have more "
                            f"than {G.CHECK_MAX_ROWS} rows (minutes per glmer() fit)")
                    write_shard(chk, check_path(path))
            cpath = check_path(path)
            if engine == "laplace" and cpath.exists() and len(pd.read_parquet(cpath)):
                verdict = G.check_summary(pd.read_parquet(cpath))
                checks.append({"glmm": glmm, "model": model, "prompt": prompt, "shard": shard, **verdict})
                if verdict["warning"]:
                    log(f"WARNING {model} / {prompt} shard {shard + 1}: {verdict['warning']}")
            paths.append(path)
        s, r = summarise_group(sub, read_shards(paths), glmm, analysis=analysis, fidelity=fidelity, rows=rows,
                               engine=engine)
        summaries.append(s)
        if len(r):
            refits.append(r)
    return (pd.concat(summaries, ignore_index=True),
            pd.concat(refits, ignore_index=True) if refits else pd.DataFrame(),
            pd.DataFrame(checks))
