"""Figures of the power study and of paired comparisons, each drawn from its results table.

* :func:`figure_power_curves`: simulated power against the odds ratio, one panel per scenario and
  effect, one line per design (templates x variants), 95% Wilson intervals of the simulated power, the Wald
  approximation dashed, the 80% target and alpha as horizontal lines, each design's MDE marked.
* :func:`figure_pairwise_matrix`: the odds ratio of every pair (row vs column) of a comparison
  family, coloured by log OR, significant cells (Holm) outlined and starred.

Matplotlib runs on the Agg backend; importing this module does not import matplotlib.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from earnest.plotting import empty_figure as _empty_figure, pyplot as _plt, save_figure as _save
from earnest.stats.defaults import ALPHA


def figure_power_curves(power: pd.DataFrame, mde: pd.DataFrame | None, stem: str | Path, *,
                        target: float = 0.8, title: str = "Power of the template-bootstrap test") -> list[Path]:
    """Power curves from a power table (``earnest.stats.power.POWER_COLUMNS``)."""
    if power.empty:
        return _empty_figure(stem, title, "no power simulations")
    plt = _plt()
    panels = list(power.groupby(["scenario", "effect"], sort=False).groups)
    n = len(panels)
    cols = min(3, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.6 * rows), squeeze=False)
    cmap = plt.get_cmap("viridis")
    for ax, (scen, effect) in zip(axes.ravel(), panels):
        sub = power[(power["scenario"] == scen) & (power["effect"] == effect)]
        designs = list(sub.groupby(["n_templates", "n_variants"], sort=True).groups)
        for i, (nt, nv) in enumerate(designs):
            d = sub[(sub["n_templates"] == nt) & (sub["n_variants"] == nv)].sort_values("odds_ratio")
            c = cmap(i / max(1, len(designs) - 1) * 0.85)
            yerr = np.vstack([d["power"] - d["power_ci_low"], d["power_ci_high"] - d["power"]]).clip(0)
            ax.errorbar(d["odds_ratio"], d["power"], yerr=yerr, marker="o", ms=4, lw=1.4,
                        capsize=2, color=c, label=f"{nt} templates x {nv} variants")
            if d["wald_power"].notna().any():
                ax.plot(d["odds_ratio"], d["wald_power"], ls="--", lw=1, color=c)
            if mde is not None and len(mde):
                m = mde[(mde["scenario"] == scen) & (mde["effect"] == effect) & (mde["n_templates"] == nt)
                        & (mde["n_variants"] == nv)]
                if len(m) and np.isfinite(m["mde_or"].iloc[0]) and not m["mde_bound"].iloc[0]:
                    ax.axvline(m["mde_or"].iloc[0], color=c, lw=0.8, ls=":")
        alpha = float(sub["alpha"].iloc[0])
        ax.axhline(target, color="grey", lw=0.8)
        ax.axhline(alpha, color="grey", lw=0.8, ls=":")
        ax.set_xscale("log")
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("true odds ratio" + (" (per unit of gamma)" if effect == "gamma" else ""))
        ax.set_ylabel("power")
        first = sub.iloc[0]
        ax.set_title(f"{scen}, {effect} effect\nGSM-Base acc. {100 * first['baseline_acc']:.0f}%, "
                     f"template var. {first['ranef_var']:.2f}", fontsize=9)
        ax.legend(fontsize=7, loc="best")
    for ax in axes.ravel()[n:]:
        ax.set_axis_off()
    first = power.iloc[0]
    fig.suptitle(f"{title}: {int(first['n_sims'])} simulated data sets per point, B = {int(first['n_resamples'])}, "
                 f"alpha = {first['alpha']:g}\n(bars: 95% Wilson interval of the simulated power; dashed: Wald approximation; "
                 f"grey: {target:.0%} and alpha; dotted: MDE)", fontsize=9)
    fig.tight_layout()
    return _save(fig, stem)


def figure_pairwise_matrix(pairs: pd.DataFrame, stem: str | Path, *, order: Sequence[str] | None = None,
                           title: str = "Paired comparisons", alpha: float = ALPHA,
                           labels: dict | None = None) -> list[Path]:
    """The OR matrix of one comparison family. ``pairs``: rows with a, b, odds_ratio (odds of a
    correct answer under a relative to b), p_holm, significant_holm. Cell (row a, column b) shows the
    OR of a vs b, (b, a) its inverse."""
    if pairs.empty:
        return _empty_figure(stem, title, "fewer than two conditions: nothing to compare")
    plt = _plt()
    names = list(order) if order else sorted(set(pairs["a"]) | set(pairs["b"]))
    names = [n for n in names if n in set(pairs["a"]) | set(pairs["b"])]
    k = len(names)
    idx = {n: i for i, n in enumerate(names)}
    logor = np.full((k, k), np.nan)
    sig = np.zeros((k, k), dtype=bool)
    degenerate = np.zeros((k, k), dtype=bool)
    for r in pairs.itertuples(index=False):
        i, j = idx[r.a], idx[r.b]
        v = math.log(r.odds_ratio) if r.odds_ratio and r.odds_ratio > 0 and math.isfinite(r.odds_ratio) else np.nan
        logor[i, j], logor[j, i] = v, -v if v == v else np.nan
        sig[i, j] = sig[j, i] = bool(r.significant_holm)
        degenerate[i, j] = degenerate[j, i] = bool(getattr(r, "degenerate", False))
        if degenerate[i, j]:
            logor[i, j] = logor[j, i] = np.nan  # a separated pair's OR carries no information
    lim = np.nanmax(np.abs(logor)) if np.isfinite(logor).any() else 1.0
    lim = max(min(lim, 8.0), 0.1)
    fig, ax = plt.subplots(figsize=(1.1 * k + 2.6, 0.9 * k + 1.8))
    im = ax.imshow(np.clip(logor, -lim, lim), cmap="RdBu", vmin=-lim, vmax=lim)
    for i in range(k):
        for j in range(k):
            if i == j:
                ax.text(j, i, "—", ha="center", va="center", fontsize=8, color="grey")
                continue
            v = logor[i, j]
            txt = ("§ degenerate" if degenerate[i, j] else "n/a" if not np.isfinite(v)
                   else f"{math.exp(v):.2f}" + ("*" if sig[i, j] else ""))
            ax.text(j, i, txt, ha="center", va="center", fontsize=8,
                    fontweight="bold" if sig[i, j] else "normal")
            if sig[i, j]:
                ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, lw=1.6, ec="black"))
    shown = [(labels or {}).get(n, n) for n in names]
    ax.set_xticks(range(k), shown, rotation=40, ha="right", fontsize=8)
    ax.set_yticks(range(k), shown, fontsize=8)
    ax.set_xlabel("b")
    ax.set_ylabel("a")
    cb = fig.colorbar(im, ax=ax, shrink=0.8)
    cb.set_label("log OR (a vs b)")
    ax.set_title(f"{title}\nOR of a correct answer, row vs column; * and box: Holm-adjusted bootstrap "
                 f"p < {alpha:g}", fontsize=9)
    fig.tight_layout()
    return _save(fig, stem)
