"""The figures of the GSM-Symbolic re-evaluation. This module draws, and only draws: every
function takes an already-read results table and writes ``stem.png`` and ``stem.pdf``.

* The GLMM figures take the summaries table (:mod:`earnest.stats.summaries`), whose columns
  ``significant_uncorrected``, ``degenerate``, ``prompt_label`` and ``alpha`` decide hatching,
  marks and labels; nothing here recomputes a statistic or a decision. Effect titles and marks
  come from :mod:`earnest.wording`.
* The failure-mode figures take the error-class count table (:mod:`earnest.gsm.error_table`).

* Figure 1 (and Figures 4-7, the same layout for the other prompts): :func:`figure_variant_effect`.
* Figure 2: :func:`figure_prompt_comparison`.
* Figure 3: :func:`figure_number_effect`.
* Figures 9-11: :func:`figure_error_classes`.

A bar or interval is hatched (open marker) where the effect is not ``significant_uncorrected``; a degenerate
fit is marked with a section sign and a note. Missing or extreme values (no clean bootstrap
estimate, an infinite or runaway log odds ratio) are drawn as a marker with a note, never dropped
silently.

Matplotlib runs on the Agg backend; importing this module does not import matplotlib.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from earnest.gsm import failure_classes as fc
from earnest.gsm.error_table import DATASET_LABELS, ERROR_TABLE_COLUMNS
from earnest.gsm.prompts import prompt_noun
from earnest.plotting import NOTE_COLOUR as _NOTE_COLOUR, empty_figure as _empty_figure, pyplot as _plt
from earnest.plotting import save_figure as _save
from earnest.tables import require_columns
from earnest.wording import (DEGENERATE_MARK, DEGENERATE_NOTE, GAMMA_C, VARIANT, effect_title, not_significant_label,
                             significant_label, term_label)

#: Log odds ratios beyond +-CLIP_LOG_OR (OR ~ 1:3000) are drawn at the axis edge with their value.
#: lme4 returns such estimates only for (quasi-)separated data, and one of them would otherwise
#: squeeze every other model's interval into a dot.
CLIP_LOG_OR = 8.0

#: Columns of the summaries table the GLMM figures draw from.
FIGURE_COLUMNS = ("analysis", "glmm", "model", "prompt", "prompt_label", "term", "median_log_or", "ci_low_log",
                  "ci_high_log", "p_boot", "acc_base", "acc_variants", "delta_var", "n_clean", "n_resamples",
                  "alpha", "significant_uncorrected", "degenerate")

_HATCH = "///"


def _order(values: Iterable[str], preferred: Sequence[str] | None) -> list[str]:
    seen = list(dict.fromkeys(str(v) for v in values))
    head = [v for v in (preferred or []) if v in seen]
    return head + [v for v in seen if v not in head]


def _finite(x) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x)) and math.isfinite(float(x))


def _select(s: pd.DataFrame, *, glmm: int, term: str, analysis: str = "all") -> pd.DataFrame:
    sub = s[(s["analysis"].astype(str) == analysis) & (s["glmm"].astype(int) == glmm)
            & (s["term"].astype(str) == term)].copy()
    sub["model"] = sub["model"].astype(str)
    sub["prompt"] = sub["prompt"].astype(str)
    return sub


def _alpha(s: pd.DataFrame) -> float:
    """The significance level the table's ``significant_uncorrected`` column was decided at."""
    values = sorted(set(s["alpha"].astype(float)))
    return values[0] if values else 0.05


def _labels(s: pd.DataFrame) -> dict[str, str]:
    return dict(zip(s["prompt"].astype(str), s["prompt_label"].astype(str)))


def _hatch(sub: pd.DataFrame) -> np.ndarray:
    """True where a bar is hatched: the effect is not significant (the table's decision)."""
    return ~sub["significant_uncorrected"].astype(bool).to_numpy()


def _prompt_colours(prompts: Sequence[str]) -> dict[str, object]:
    plt = _plt()
    cmap = plt.get_cmap("tab10")
    return {p: cmap(i % 10) for i, p in enumerate(prompts)}


def _clip(v: float, limit: float) -> float:
    return float(np.clip(v, -limit, limit))


def _edge(v, lim: float):
    """(v clipped to +-lim, whether it was cut) for a finite or infinite v; None for NaN/None."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    v = float(v)
    return (_clip(v, lim), abs(v) > lim)


def _axis_limit(values: Iterable[float], clip: float, pad: float = 0.15) -> float:
    """Symmetric axis half-width covering the finite values within +-clip (at least 1)."""
    vals = [abs(float(v)) for v in values if _finite(v) and abs(float(v)) <= clip]
    top = max(vals) if vals else 1.0
    return min(clip, max(1.0, top)) * (1 + pad)


# ---------------------------------------------------------------- Figure 1 (and 4-7)
def figure_variant_effect(summaries: pd.DataFrame, prompt: str, stem: str | Path, *,
                          models: Sequence[str] | None = None, analysis: str = "all",
                          clip: float = CLIP_LOG_OR) -> list[Path]:
    """Figure 1 layout for one prompt, from GLMM 1's variant rows of the summaries table.

    Top: median log odds ratio of Variant with its 95% bootstrap interval per model, dashed line
    at 0 (OR = 1), and the number of clean bootstrap estimates. Bottom left: Delta_var (pp),
    hatched where not significant. Bottom right: bootstrap P values (uncorrected), dashed line at
    ``alpha``. Returns the PNG and PDF paths.
    """
    require_columns(summaries, FIGURE_COLUMNS, "summaries")
    alpha = _alpha(summaries)
    label = prompt_noun(_labels(summaries).get(str(prompt), str(prompt)))
    sub = _select(summaries, glmm=1, term=VARIANT, analysis=analysis)
    sub = sub[sub["prompt"] == str(prompt)]
    title = f"Variant effect, {label} (GLMM 1)"
    if sub.empty:
        return _empty_figure(stem, title, f"No GLMM 1 results for the {label} in this run.")
    order = _order(sub["model"], models)
    sub = sub.drop_duplicates("model").set_index("model").loc[order].reset_index()
    n = len(sub)
    y = np.arange(n)[::-1]  # first model on top
    hatch = _hatch(sub)
    # degenerate fits (see the fit_problems table) are labelled so that no one reads their numbers
    degenerate = sub["degenerate"].astype(bool)
    ylabels = [f"{m} {DEGENERATE_MARK}" if d else m for m, d in zip(sub["model"], degenerate)]

    plt = _plt()
    panel_h = 0.5 + 0.32 * n  # inches per panel; the gap between them is fixed in inches
    gap = 1.0
    fig = plt.figure(figsize=(10, 2 * panel_h + gap + 1.0))
    gs = fig.add_gridspec(3, 2, height_ratios=[panel_h, gap, panel_h], hspace=0, wspace=0.08)
    top = fig.add_subplot(gs[0, :])
    left = fig.add_subplot(gs[2, 0])
    right = fig.add_subplot(gs[2, 1], sharey=left)

    # -- top: log ORs with intervals
    shown = sub[~degenerate.to_numpy()]  # the axis spans the estimates drawn
    lim = _axis_limit(list(shown["median_log_or"]) + list(shown["ci_low_log"]) + list(shown["ci_high_log"]), clip)
    sig_c, ns_c = "#2166ac", "#7f7f7f"
    for yi, r, h, d in zip(y, sub.itertuples(index=False), hatch, degenerate):
        est, lo, hi = r.median_log_or, r.ci_low_log, r.ci_high_log
        colour = ns_c if h else sig_c
        if d:  # a degenerate fit is never drawn as an estimate (its numbers carry no information)
            top.plot([0], [yi], marker="x", color=_NOTE_COLOUR, ms=8, mew=2)
            top.annotate(f"{DEGENERATE_MARK} no estimate (degenerate fit)", (0, yi), xytext=(8, -3),
                         textcoords="offset points", fontsize=7, color=_NOTE_COLOUR)
            continue
        ends = [_edge(v, lim) for v in (lo, hi)]
        if all(e is not None for e in ends):
            top.hlines(yi, ends[0][0], ends[1][0], color=colour, lw=2)
            for end, cut in ends:
                if cut:  # the interval runs past the axis
                    top.plot([end], [yi], marker=">" if end > 0 else "<", color=colour, ms=6)
        if not _finite(est):
            if est is not None and not (isinstance(est, float) and math.isnan(est)):
                # an infinite median: separated data
                edge = math.copysign(lim, float(est))
                top.plot([edge], [yi], marker=">" if est > 0 else "<", color=_NOTE_COLOUR, ms=9)
                top.annotate(f"log OR = {est}", (edge, yi), xytext=(-6 if est > 0 else 6, 6),
                             textcoords="offset points", ha="right" if est > 0 else "left",
                             fontsize=7, color=_NOTE_COLOUR)
            else:
                top.plot([0], [yi], marker="x", color=_NOTE_COLOUR, ms=8, mew=2)
                top.annotate("no clean bootstrap estimates", (0, yi), xytext=(8, -3),
                             textcoords="offset points", fontsize=7, color=_NOTE_COLOUR)
            continue
        if abs(est) > lim:
            edge = math.copysign(lim, est)
            top.plot([edge], [yi], marker=">" if est > 0 else "<", color=_NOTE_COLOUR, ms=9)
            top.annotate(f"log OR = {est:.1f}", (edge, yi), xytext=(-8 if est > 0 else 8, 5),
                         textcoords="offset points", ha="right" if est > 0 else "left",
                         fontsize=7, color=_NOTE_COLOUR)
        else:
            top.plot([est], [yi], marker="o", color=colour, mfc="white" if h else colour, ms=6)
    top.axvline(0, ls="--", color="black", lw=1)
    top.set_xlim(-lim, lim)
    top.set_yticks(y, ylabels)
    top.set_ylim(-0.7, n - 0.3)
    top.set_xlabel(f"log odds ratio of {term_label(VARIANT)} (median of clean bootstrap estimates, 95% interval)")
    # how many bootstrap resamples the numbers rest on
    for yi, r in zip(y, sub.itertuples(index=False)):
        top.annotate(f"{int(r.n_clean)}/{int(r.n_resamples)}", (1.005, yi), xycoords=("axes fraction", "data"),
                     va="center", fontsize=7, color="#555555")
    top.annotate("clean /\nresamples", (1.005, n - 0.3), xycoords=("axes fraction", "data"), va="bottom",
                 fontsize=7, color="#555555")
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    handles = [Line2D([], [], color=sig_c, marker="o", lw=2, label=significant_label(alpha)),
               Line2D([], [], color=ns_c, marker="o", mfc="white", lw=2, label="not significant"),
               Line2D([], [], color="black", ls="--", lw=1, label="null effect (OR = 1)"),
               Patch(facecolor="white", edgecolor="black", hatch=_HATCH,
                     label=f"hatched bar: {not_significant_label(alpha)}")]
    # two rows: in one the hatched bar's entry ran into the "clean / resamples" column heading
    top.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2,
               fontsize=8, frameon=False)
    top.set_title(title, pad=36)

    # -- bottom left: Delta_var bars
    _hbars(left, y, sub["delta_var"].to_numpy(dtype=float), hatch, "#d6604d")
    left.axvline(0, color="black", lw=0.8)
    left.set_xlim(*_bar_limits(sub["delta_var"]))
    left.set_yticks(y, ylabels)
    left.set_xlabel("Δvar = Ā(GSM-Variants) − Ā(GSM-Base) (pp)")
    left.set_title("Variant performance delta", fontsize=10)

    # -- bottom right: P values
    pv = sub["p_boot"].to_numpy(dtype=float)
    _hbars(right, y, pv, hatch, "#4393c3", na_note="n/a")
    right.axvline(alpha, ls="--", color="black", lw=1)
    right.set_xlim(0, 1.05)
    right.tick_params(labelleft=False)
    right.set_xlabel("bootstrap P value (before Holm-Bonferroni)")
    right.set_title(f"P value (dashed: α = {alpha:g})", fontsize=10)
    left.set_ylim(-0.7, n - 0.3)
    if degenerate.any():
        fig.text(0.01, -0.04, _note_lines(fig, DEGENERATE_NOTE), fontsize=7, color=_NOTE_COLOUR, va="top")
    return _save(fig, stem)


def _bar_limits(values, pad: float = 0.12) -> tuple[float, float]:
    """Axis limits that include 0 and every finite value, padded on both sides."""
    v = [float(x) for x in values if _finite(x)]
    lo, hi = min(v + [0.0]), max(v + [0.0])
    span = (hi - lo) or 1.0
    return lo - pad * span, hi + pad * span


def _hbars(ax, y, values, hatch, colour, na_note: str = "n/a") -> None:
    """Horizontal bars, hatched where ``hatch``; a note where the value is missing."""
    for yi, v, h in zip(y, values, hatch):
        if not _finite(v):
            # on white: a reference line (the P panel's alpha) must not run through the note
            ax.annotate(na_note, (0, yi), xytext=(3, -3), textcoords="offset points", fontsize=7,
                        color=_NOTE_COLOUR, bbox=dict(facecolor="white", edgecolor="none", pad=1), zorder=5)
            continue
        ax.barh(yi, v, height=0.65, color="white" if h else colour, edgecolor=colour,
                hatch=_HATCH if h else None, lw=1)


# ---------------------------------------------------------------- grouped bars (Figures 2, 3)
def _bar_width(k: int) -> float:
    # a group of k bars spans at most 0.8 of a model's slot; one or two bars stay narrow
    return min(0.8 / max(1, k), 0.3)


def _bar_x(i: int, j: int, k: int) -> float:
    """Centre of bar j of k in the group of model i."""
    w = _bar_width(k)
    return i - w * k / 2 + w * (j + 0.5)


def _grouped(ax, models, prompts, values, hatch, colours, *, lows=None, highs=None,
             clip: float | None = None, lim: float | None = None, marks=None, estimates: bool = False) -> None:
    """Bars of ``values[(model, prompt)]`` grouped by model, one colour per prompt.

    ``hatch[(m, p)]`` hatches a bar; ``lows``/``highs`` add interval whiskers; values beyond
    ``lim`` are drawn at the edge with a triangle and their value; missing cells get "n/a" only
    where the pair was run (present in ``values`` as NaN); ``marks[(m, p)]`` puts the degenerate-fit
    sign above (or below) the bar. ``estimates``: the values are fitted estimates, so a marked
    (degenerate) cell draws the mark alone, never its number (the tables' rule).
    """
    k = len(prompts)
    width = _bar_width(k)
    for i, m in enumerate(models):
        for j, p in enumerate(prompts):
            if (m, p) not in values:
                continue
            x = _bar_x(i, j, k)
            v = values[(m, p)]
            c = colours[p]
            h = hatch.get((m, p), True)
            if estimates and marks is not None and marks.get((m, p)):
                ax.text(x, 0, DEGENERATE_MARK, ha="center", va="bottom", fontsize=8, color=_NOTE_COLOUR)
                continue
            if not _finite(v):
                if v is None or math.isnan(v):
                    ax.text(x, 0, "n/a", rotation=90, ha="center", va="bottom", fontsize=6, color=_NOTE_COLOUR)
                else:
                    edge = math.copysign(lim, v)
                    ax.plot([x], [edge * 0.97], marker="^" if v > 0 else "v", color=_NOTE_COLOUR, ms=7)
                    ax.text(x, edge * 0.9, "∞" if v > 0 else "−∞", ha="center", fontsize=7, color=_NOTE_COLOUR)
                continue
            shown = v if lim is None else _clip(v, lim)
            ax.bar(x, shown, width=width * 0.92, color="white" if h else c, edgecolor=c,
                   hatch=_HATCH if h else None, lw=1)
            if lim is not None and abs(v) > lim:
                ax.plot([x], [shown], marker="^" if v > 0 else "v", color=_NOTE_COLOUR, ms=7)
                ax.text(x, shown, f"{v:.1f}", ha="center", va="bottom" if v > 0 else "top", fontsize=6,
                        color=_NOTE_COLOUR)
            if lows is not None and _finite(lows.get((m, p))) and _finite(highs.get((m, p))):
                lo, hi = lows[(m, p)], highs[(m, p)]
                if lim is not None:
                    lo, hi = _clip(lo, lim), _clip(hi, lim)
                ax.vlines(x, lo, hi, color="black", lw=0.8)
            if marks is not None and marks.get((m, p)):
                ax.annotate(DEGENERATE_MARK, (x, shown), xytext=(0, 2 if shown >= 0 else -9),
                            textcoords="offset points", ha="center", fontsize=8, color=_NOTE_COLOUR)
    ax.set_xticks(np.arange(len(models)), models, rotation=30 if len(models) > 3 else 0,
                  ha="right" if len(models) > 3 else "center", fontsize=8)
    ax.set_xlim(-0.6, len(models) - 0.4)


def _prompt_legend(ax, prompts, colours, labels, alpha, extra=()):
    from matplotlib.patches import Patch
    handles = [Patch(facecolor=colours[p], edgecolor=colours[p], label=labels.get(p, p)) for p in prompts]
    handles.append(Patch(facecolor="white", edgecolor="black", hatch=_HATCH,
                         label=not_significant_label(alpha)))
    handles.extend(extra)
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


def _cells(sub: pd.DataFrame, column: str) -> dict:
    return {(r.model, r.prompt): float(getattr(r, column)) for r in sub.itertuples(index=False)}


def _flags(sub: pd.DataFrame, column: str) -> dict:
    return {(r.model, r.prompt): bool(getattr(r, column)) for r in sub.itertuples(index=False)}


def _note_lines(fig, text: str) -> str:
    """``text`` broken into lines as wide as the figure (a 7-point note): one long line would widen the
    saved figure (bbox tight) until its legend is unreadable in the report."""
    import textwrap

    return textwrap.fill(text, width=max(40, int(fig.get_figwidth() * 17)))


def _degenerate_note(fig, marks: dict) -> None:
    if any(marks.values()):
        fig.text(0.01, 0.0, _note_lines(fig, DEGENERATE_NOTE), fontsize=7, color=_NOTE_COLOUR, va="top")


def figure_prompt_comparison(summaries: pd.DataFrame, prompts: Sequence[str], stem: str | Path, *,
                             models: Sequence[str] | None = None, analysis: str = "all") -> list[Path]:
    """Figure 2: accuracies (top) and Delta_var (bottom, hatched where GLMM 1's Variant is not
    significant) across ``prompts`` for ``models`` (default: every model with results on them).
    Bars: mean accuracy on GSM-Variants; black ticks: accuracy on GSM-Base."""
    require_columns(summaries, FIGURE_COLUMNS, "summaries")
    alpha = _alpha(summaries)
    labels = _labels(summaries)
    sub = _select(summaries, glmm=1, term=VARIANT, analysis=analysis)
    sub = sub[sub["prompt"].isin([str(p) for p in prompts])].drop_duplicates(["model", "prompt"])
    title = "Accuracy and variant performance delta across prompt formats (GLMM 1)"
    if models is not None:
        sub = sub[sub["model"].isin(list(models))]
    if sub.empty:
        return _empty_figure(stem, title, "No GLMM 1 results for these prompts in this run.")
    models = _order(sub["model"], models)
    prompts = [p for p in _order(sub["prompt"], [str(p) for p in prompts])]
    colours = _prompt_colours(prompts)
    hatch = dict(zip(zip(sub["model"], sub["prompt"]), _hatch(sub)))
    marks = _flags(sub, "degenerate")
    plt = _plt()
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(max(6.5, 1.2 + 0.25 * len(prompts) * len(models) + 0.4 * len(models)), 7.5),
                                      sharex=True)
    acc_var = _cells(sub, "acc_variants")
    acc_base = _cells(sub, "acc_base")
    _grouped(top, models, prompts, acc_var, {k: False for k in acc_var}, colours)
    k = len(prompts)
    width = _bar_width(k)
    for i, m in enumerate(models):
        for j, p in enumerate(prompts):
            if _finite(acc_base.get((m, p), float("nan"))):
                x = _bar_x(i, j, k)
                top.hlines(acc_base[(m, p)], x - width * 0.46, x + width * 0.46, color="black", lw=2)
    top.set_ylim(0, 105)
    top.set_ylabel("accuracy (%)")
    top.set_title(title)
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    top.legend(handles=[Patch(facecolor=colours[p], label=f"{labels.get(p, p)}: Ā {DATASET_LABELS['gsm_variants']}") for p in prompts]
               + [Line2D([], [], color="black", lw=2, label=f"Ā {DATASET_LABELS['gsm_base']}")],
               loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    delta = _cells(sub, "delta_var")
    _grouped(bottom, models, prompts, delta, hatch, colours, marks=marks)
    bottom.axhline(0, color="black", lw=0.8)
    bottom.set_ylim(*_bar_limits(delta.values()))
    bottom.set_ylabel("Δvar (pp)")
    bottom.set_title("Variant performance delta Δvar = Ā(GSM-Variants) − Ā(GSM-Base)", fontsize=10)
    _prompt_legend(bottom, prompts, colours, labels, alpha)
    fig.tight_layout()
    _degenerate_note(fig, marks)
    return _save(fig, stem)


def figure_number_effect(summaries: pd.DataFrame, prompts: Sequence[str], stem: str | Path, *,
                         models: Sequence[str] | None = None, analysis: str = "all",
                         clip: float = CLIP_LOG_OR) -> list[Path]:
    """Figure 3: log odds ratios with 95% intervals of the raw variant effect (Variant, GLMM 1,
    top), the large-number effect (gamma_c, GLMM 2, middle) and the corrected variant effect
    (Variant, GLMM 2, bottom), per model and prompt; hatched where not significant."""
    require_columns(summaries, FIGURE_COLUMNS, "summaries")
    alpha = _alpha(summaries)
    labels = _labels(summaries)
    panels = [(g, t, effect_title(g, t)) for g, t in ((1, VARIANT), (2, GAMMA_C), (2, VARIANT))]
    subs = []
    for glmm, term, _ in panels:
        s = _select(summaries, glmm=glmm, term=term, analysis=analysis)
        s = s[s["prompt"].isin([str(p) for p in prompts])].drop_duplicates(["model", "prompt"])
        if models is not None:
            s = s[s["model"].isin(list(models))]
        subs.append(s)
    title = "Variant effect and large-number effect (log odds ratios, 95% intervals)"
    if all(s.empty for s in subs):
        return _empty_figure(stem, title, "No GLMM 1 / GLMM 2 results for these prompts in this run.")
    allm = pd.concat(subs)
    models = _order(allm["model"], models)
    prompts = _order(allm["prompt"], [str(p) for p in prompts])
    colours = _prompt_colours(prompts)
    plt = _plt()
    fig, axes = plt.subplots(3, 1, figsize=(max(6.5, 1.2 + 0.25 * len(prompts) * len(models) + 0.4 * len(models)), 10),
                             sharex=True)
    any_marks = False
    for ax, (glmm, term, name), s in zip(axes, panels, subs):
        if s.empty:
            ax.text(0.5, 0.5, f"no GLMM {glmm} results", transform=ax.transAxes, ha="center",
                    color=_NOTE_COLOUR)
        values = _cells(s, "median_log_or")
        drawn = s[~s["degenerate"].astype(bool)]  # the axis spans the estimates drawn
        lim = _axis_limit(list(drawn["median_log_or"]) + list(drawn["ci_low_log"]) + list(drawn["ci_high_log"]), clip)
        hatch = dict(zip(zip(s["model"], s["prompt"]), _hatch(s)))
        marks = _flags(s, "degenerate")
        any_marks = any_marks or any(marks.values())
        _grouped(ax, models, prompts, values, hatch, colours, lows=_cells(s, "ci_low_log"),
                 highs=_cells(s, "ci_high_log"), lim=lim, marks=marks, estimates=True)
        ax.axhline(0, color="black", lw=0.8, ls="--")
        ax.set_ylim(-lim, lim)
        ax.set_ylabel("log odds ratio")
        ax.set_title(name, fontsize=10)
    axes[0].set_title(f"{title}\n{panels[0][2]}", fontsize=10)
    from matplotlib.lines import Line2D
    _prompt_legend(axes[0], prompts, colours, labels, alpha,
                   extra=[Line2D([], [], color="black", lw=0.8, label="95% bootstrap interval"),
                          Line2D([], [], color="black", lw=0.8, ls="--", label="null effect (OR = 1)")])
    fig.tight_layout()
    _degenerate_note(fig, {"any": any_marks})
    return _save(fig, stem)


# ---------------------------------------------------------------- Figures 9-11
def _class_colours(classes: Sequence[str]) -> dict[str, object]:
    plt = _plt()
    # tab20 without its two greys: grey is reserved for "Wrong answer"
    palette = [c for i, c in enumerate(plt.get_cmap("tab20").colors) if i not in (14, 15)]
    fixed = [c for c in fc.FAILURE_CLASSES if c != fc.WRONG_ANSWER]
    colours = {}
    extra = 0
    for c in classes:
        if c == fc.WRONG_ANSWER:
            colours[c] = "#bdbdbd"
            continue
        if c in fixed:
            i = fixed.index(c)
        else:
            i = len(fixed) + extra
            extra += 1
        colours[c] = palette[i % len(palette)]
    return colours


def figure_error_classes(table: pd.DataFrame, prompts: Sequence[str], stem: str | Path, *,
                         datasets: Sequence[str] | None = None, proportions: bool = False,
                         exclude: Sequence[str] = (), models: Sequence[str] | None = None,
                         title: str = "Error classes") -> list[Path]:
    """Figures 9-11: per-model stacked bars of error classes, one panel per prompt (top to bottom
    in ``prompts`` order), from the error-class count table (:mod:`earnest.gsm.error_table`).

    ``datasets``: which datasets to pool (default all); ``exclude``: classes left out (Figure 11
    leaves out ``wrong_answer``); ``proportions``: bars show each class's share (%) of the
    model's remaining errors instead of counts.
    """
    require_columns(table, ERROR_TABLE_COLUMNS, "error class table")
    labels = dict(zip(table["prompt"].astype(str), table["prompt_label"].astype(str)))
    t = table.copy()
    for c in ("model", "prompt", "dataset", "error_class"):
        t[c] = t[c].astype(str)
    t = t[t["prompt"].isin([str(p) for p in prompts])]
    if datasets:
        t = t[t["dataset"].isin(list(datasets))]
    t = t[~t["error_class"].isin(list(exclude))]
    ds_note = " + ".join(DATASET_LABELS.get(d, d) for d in (datasets or sorted(set(table["dataset"].astype(str)))))
    if t.empty:
        return _empty_figure(stem, title, "No scored answers for these prompt formats in this run.")
    present = _order(t["prompt"], [str(p) for p in prompts])
    classes = [c for c in fc.FAILURE_CLASSES if c in set(t["error_class"])]
    classes += [c for c in _order(t["error_class"], None) if c not in classes]
    colours = _class_colours(classes)
    all_models = _order(t["model"], models)
    plt = _plt()
    n = len(all_models)
    panel_h = 1.3 + 0.3 * n
    legend_h = 0.25 * math.ceil(len(classes) / 4) + 0.3
    fig, axes = plt.subplots(len(present), 1, figsize=(9, 0.6 + legend_h + panel_h * len(present)), squeeze=False,
                             layout="constrained")
    for ax, prompt in zip(axes[:, 0], present):
        tp = t[t["prompt"] == prompt]
        counts = tp.pivot_table(index="model", columns="error_class", values="count", aggfunc="sum",
                                fill_value=0).reindex(index=[m for m in all_models if m in set(tp["model"])])
        counts = counts.reindex(columns=[c for c in classes if c in counts.columns], fill_value=0)
        models_here = list(counts.index)
        y = np.arange(len(models_here))[::-1]
        totals = counts.sum(axis=1).to_numpy(dtype=float)
        data = counts.to_numpy(dtype=float)
        if proportions:
            with np.errstate(invalid="ignore", divide="ignore"):
                data = np.where(totals[:, None] > 0, 100.0 * data / totals[:, None], 0.0)
        left = np.zeros(len(models_here))
        for j, cls in enumerate(counts.columns):
            if data[:, j].sum() == 0:
                continue
            ax.barh(y, data[:, j], left=left, height=0.65, color=colours[cls], label=fc.label(cls),
                    edgecolor="white", lw=0.5)
            left += data[:, j]
        for yi, tot in zip(y, totals):
            if tot == 0:
                ax.annotate("no errors of these classes", (0, yi), xytext=(3, -3), textcoords="offset points",
                            fontsize=7, color=_NOTE_COLOUR)
            elif not proportions:
                ax.annotate(f"{int(tot)}", (tot, yi), xytext=(3, -3), textcoords="offset points", fontsize=7)
        ax.set_yticks(y, models_here, fontsize=8)
        ax.set_ylim(-0.7, len(models_here) - 0.3)
        if proportions:
            ax.set_xlim(0, 100)
            what = " and ".join(fc.label(c).lower() for c in exclude)
            ax.set_xlabel(f"share of the model's errors other than {what} (%)" if what
                          else "share of the model's errors (%)")
        else:
            ax.set_xlim(0, max(1.0, totals.max()) * 1.12)
            ax.set_xlabel("number of responses")
        ax.set_title(f"{prompt_noun(labels.get(prompt, prompt))} ({ds_note})", fontsize=10)
    from matplotlib.patches import Patch
    handles = [Patch(color=colours[c], label=fc.label(c)) for c in classes]
    fig.legend(handles=handles, loc="outside lower center", ncol=min(4, len(handles)), fontsize=8, frameon=False)
    fig.suptitle(title, fontsize=11)
    return _save(fig, stem)
