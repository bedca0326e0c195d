"""StatFormBench analyses: the paper's tables and figures plus what it lacks (bootstrap intervals).

Input everywhere is a *scored* table (one row per model x strategy x sample; see
:func:`earnest.statform.metrics.score_generations`), with at least the columns ``model``,
``prompt`` (the prompting strategy), ``item_id`` (the sample id), ``source``, ``category_cg``,
``category_fg``, ``pred_cg``, ``pred_fg``, ``parse_status`` and the per-sample metric columns.

* :func:`bootstrap_metrics`: every metric with a 95% percentile bootstrap interval, resampling
  samples with replacement (seeded). All groups with the same sample set use the same resamples,
  so intervals of differences (:func:`strategy_deltas`) are paired.
* Tables (through :func:`earnest.tables.write_table`): main table (Table 1 layout), per data
  source (Table 2/7), per category (Figure 4/9 as a table), prompting strategies as changes from
  zero-shot (Table 3).
* Figures: confusion matrices (Figure 6), normalized by true label, PNG and PDF.
"""

from __future__ import annotations

from earnest import fidelity as F

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from earnest.schema import schema_default
from earnest.tables import write_table

from .metrics import METRICS, metric_matrix
from .parsing import UNPARSEABLE

#: bootstrap resamples of the StatFormBench intervals (config/schema.yaml: statform.resamples)
RESAMPLES = schema_default("statform.resamples")
#: the seed of the intervals' resamples (statform.seed) and the fine labels a confusion figure shows (statform.top_fine)
SEED = schema_default("statform.seed")
TOP_FINE = schema_default("statform.top_fine")

#: The confusion matrices' column of the unparseable answers (parsing.UNPARSEABLE), the one place it is named.
UNPARSED_LABEL = "(unparsed)"
NONE_LABEL = "(none)"


# ---------------------------------------------------------------- bootstrap


def _resample_weights(n: int, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, n) counts of how often each sample is drawn in each resample."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot)


def bootstrap_metrics(scored: pd.DataFrame, by: Sequence[str] = ("model",), n_boot: int = RESAMPLES,
                      seed: int = SEED, level: float = 0.95) -> pd.DataFrame:
    """Long table: ``by`` columns, metric, estimate, ci_low, ci_high, n (metrics in [0, 1]).

    Within each group the rows are ordered by ``item_id``; the resample counts depend only on
    (seed, number of samples), so groups over the same samples share resamples.
    """
    by = list(by)
    alpha = (1.0 - level) / 2.0
    rows = []
    for key, grp in scored.groupby(by, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        grp = grp.sort_values("item_id")
        x = metric_matrix(grp)
        n = len(grp)
        est = x.mean(axis=0)
        if n_boot > 0 and n > 0:
            w = _resample_weights(n, n_boot, seed)
            boots = w @ x / n
            lo, hi = np.quantile(boots, [alpha, 1.0 - alpha], axis=0)
        else:
            lo = hi = np.full(len(METRICS), np.nan)
        for m_i, m in enumerate(METRICS):
            rows.append({**dict(zip(by, key)), "metric": m, "estimate": est[m_i], "ci_low": lo[m_i],
                         "ci_high": hi[m_i], "n": n})
    return pd.DataFrame(rows)


def strategy_deltas(scored: pd.DataFrame, baseline: str = "zero_shot", n_boot: int = RESAMPLES, seed: int = SEED,
                    level: float = 0.95) -> pd.DataFrame:
    """Per model and strategy: the baseline's absolute metrics, others as paired differences from it.

    Columns: model, prompt, metric, estimate (absolute for the baseline, difference otherwise),
    ci_low, ci_high, n, is_delta. Only samples present under both strategies enter a difference.
    """
    alpha = (1.0 - level) / 2.0
    rows = []
    for model, mgrp in scored.groupby("model", sort=True):
        strategies = list(dict.fromkeys(mgrp["prompt"]))
        if baseline not in strategies:
            raise ValueError(f"model {model!r} has no rows for the baseline strategy {baseline!r}")
        base = mgrp[mgrp["prompt"] == baseline].set_index("item_id").sort_index()
        for strat in [baseline] + [s for s in strategies if s != baseline]:
            other = mgrp[mgrp["prompt"] == strat].set_index("item_id").sort_index()
            common = base.index.intersection(other.index)
            xb = metric_matrix(base.loc[common])
            x = metric_matrix(other.loc[common]) - (0 if strat == baseline else xb)
            n = len(common)
            est = x.mean(axis=0)
            if n_boot > 0 and n > 0:
                boots = _resample_weights(n, n_boot, seed) @ x / n
                lo, hi = np.quantile(boots, [alpha, 1.0 - alpha], axis=0)
            else:
                lo = hi = np.full(len(METRICS), np.nan)
            for m_i, m in enumerate(METRICS):
                rows.append({"model": model, "prompt": strat, "metric": m, "estimate": est[m_i],
                             "ci_low": lo[m_i], "ci_high": hi[m_i], "n": n, "is_delta": strat != baseline})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- tables


def _pct(v: float) -> str:
    return "" if pd.isna(v) else f"{100 * v:.1f}"


def _wide(long: pd.DataFrame, index: list[str], signed: pd.Series | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(display frame with "est [lo, hi]" cells, raw frame with est/lo/hi columns), metrics x 100."""
    disp_rows, raw_rows = [], []
    for key, grp in long.groupby(index, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        d = dict(zip(index, key))
        r = dict(zip(index, key))
        g = grp.set_index("metric")
        delta = bool(grp["is_delta"].iloc[0]) if "is_delta" in grp else False
        for m in METRICS:
            if m not in g.index:
                continue
            e, lo, hi = (100 * g.at[m, c] for c in ("estimate", "ci_low", "ci_high"))
            sign = "+" if delta and e >= 0 else ""
            cell = f"{sign}{e:.1f}"
            if not (pd.isna(lo) or pd.isna(hi)):
                cell += f" [{lo:.1f}, {hi:.1f}]"
            d[m] = cell
            r[m] = e
            r[f"{m}_ci_low"] = lo
            r[f"{m}_ci_high"] = hi
        d["N"] = int(grp["n"].iloc[0])
        r["N"] = int(grp["n"].iloc[0])
        disp_rows.append(d)
        raw_rows.append(r)
    return pd.DataFrame(disp_rows), pd.DataFrame(raw_rows)


def _bold_best(display: pd.DataFrame, raw: pd.DataFrame, within: list[str] | None = None) -> pd.DataFrame:
    bold = pd.DataFrame(False, index=display.index, columns=display.columns)
    groups = [raw.index] if not within else [idx for _, idx in raw.groupby(within).groups.items()]
    for idx in groups:
        for m in METRICS:
            if m in raw and len(idx) > 1:
                vals = raw.loc[idx, m]
                bold.loc[vals.index[vals == vals.max()], m] = True
    return bold


def unparseable_counts(scored: pd.DataFrame) -> pd.DataFrame:
    """Per model and strategy: N and the count of each parse_status."""
    counts = scored.pivot_table(index=["model", "prompt"], columns="parse_status", values="item_id",
                                aggfunc="count", fill_value=0)
    counts.columns = [str(c) for c in counts.columns]
    counts.insert(0, "N", counts.sum(axis=1))
    return counts.reset_index()


def write_main_table(scored: pd.DataFrame, stem: str | Path, *, strategy: str = "zero_shot", n_boot: int = RESAMPLES,
                     seed: int = SEED) -> dict[str, Path]:
    """Table 1 layout: models x six metrics under one strategy, each with its 95% bootstrap interval."""
    sub = scored[scored["prompt"] == strategy]
    if sub.empty:
        raise ValueError(f"no scored rows for strategy {strategy!r}")
    long = bootstrap_metrics(sub, ["model"], n_boot, seed)
    display, raw = _wide(long, ["model"])
    unp = sub.assign(u=sub["parse_status"].isin(UNPARSEABLE)).groupby("model")["u"].sum()
    display["unparseable"] = display["model"].map(unp).astype(int)
    raw["unparseable"] = raw["model"].map(unp).astype(int)
    bold = _bold_best(display, raw)
    return write_table(display, stem, caption=(
        f"StatFormBench results ({strategy}); metrics x 100 with 95% bootstrap intervals over samples "
        f"({n_boot} resamples, seed {seed}); best per column in bold; unparseable answers count as wrong."),
        bold=bold, csv=raw, label="tab:statform-main")


def write_source_table(scored: pd.DataFrame, stem: str | Path, *, strategy: str = "zero_shot", n_boot: int = RESAMPLES,
                       seed: int = SEED) -> dict[str, Path]:
    """Table 2/7 layout: each model's six metrics on each data source, with intervals."""
    sub = scored[scored["prompt"] == strategy]
    long = bootstrap_metrics(sub, ["source", "model"], n_boot, seed)
    display, raw = _wide(long, ["source", "model"])
    return write_table(display, stem, caption=(
        f"StatFormBench results by data source ({strategy}); metrics x 100 with 95% bootstrap intervals."),
        csv=raw, label="tab:statform-source")


def category_accuracy(scored: pd.DataFrame, level: str = "coarse", min_n: int = 0) -> pd.DataFrame:
    """Accuracy per model and reference category: ``level`` coarse (ACC_CG by L1) or fine (ACC_FG by L1\\L2).

    Columns: model, category, n, accuracy (in [0, 1]); categories with n <= ``min_n`` are dropped
    (the paper shows categories with more than 10 samples).
    """
    if level == "coarse":
        cat, col = scored["category_cg"], "correct_cg"
    elif level == "fine":
        cat, col = scored["category_cg"] + "\\" + scored["category_fg"], "correct_fg"
    else:
        raise ValueError("level must be 'coarse' or 'fine'")
    frame = pd.DataFrame({"model": scored["model"], "category": cat, "c": scored[col].astype(float)})
    out = frame.groupby(["model", "category"], sort=True)["c"].agg(["size", "mean"]).reset_index()
    out = out.rename(columns={"size": "n", "mean": "accuracy"})
    return out[out["n"] > min_n].reset_index(drop=True)


def write_category_table(scored: pd.DataFrame, stem: str | Path, *, level: str = "coarse", strategy: str = "zero_shot",
                         min_n: int = 0) -> dict[str, Path]:
    """Per-category accuracy as a categories x models table (accuracy x 100), with n per category."""
    sub = scored[scored["prompt"] == strategy]
    acc = category_accuracy(sub, level, min_n)
    wide = acc.pivot(index="category", columns="model", values="accuracy")
    n = acc.groupby("category")["n"].first()
    table = wide.reset_index()
    table.insert(1, "n", table["category"].map(n).astype(int))
    table.columns = [str(c) for c in table.columns]
    fmts = {c: _pct for c in table.columns if c not in ("category", "n")}
    metric = "ACC_CG" if level == "coarse" else "ACC_FG"
    return write_table(table, stem, caption=(
        f"{metric} x 100 per {level} category ({strategy}; categories with more than {min_n} samples)."),
        formatters=fmts, label=f"tab:statform-category-{level}")


def write_strategy_table(scored: pd.DataFrame, stem: str | Path, *, baseline: str = "zero_shot",
                         n_boot: int = RESAMPLES, seed: int = SEED) -> dict[str, Path]:
    """Table 3 layout: per model, the baseline's absolute scores, other strategies as signed changes."""
    long = strategy_deltas(scored, baseline, n_boot, seed)
    display, raw = _wide(long, ["model", "prompt"])
    return write_table(display, stem, caption=(
        f"Prompting strategies: {baseline} rows give absolute scores x 100, other rows changes from "
        f"{baseline} (paired over samples), each with a 95% bootstrap interval."),
        csv=raw, label="tab:statform-strategies")


# ---------------------------------------------------------------- confusion matrices


def confusion_frame(scored: pd.DataFrame, level: str = "coarse", top: int | None = None) -> pd.DataFrame:
    """Rows = true labels, columns = predicted labels, cells = share of the row (normalized by true label).

    Unparseable answers are the column ``(unparsed)``; a predicted label outside the true labels
    shown is kept as its own column. ``top`` keeps the most frequent true labels.
    """
    if level == "coarse":
        true = scored["category_cg"]
        pred = scored["pred_cg"].where(scored["pred_cg"] != "", NONE_LABEL)
    elif level == "fine":
        true = scored["category_cg"] + "\\" + scored["category_fg"]
        pred = np.where(scored["correct_fg"].astype(bool), true,
                        np.where(scored["pred_fg"] != "", scored["pred_cg"].where(scored["pred_cg"] != "", "?")
                                 + "\\" + scored["pred_fg"], NONE_LABEL))
        pred = pd.Series(pred, index=scored.index)
    else:
        raise ValueError("level must be 'coarse' or 'fine'")
    pred = pred.where(~scored["parse_status"].isin(UNPARSEABLE), UNPARSED_LABEL)
    frame = pd.DataFrame({"true": true, "pred": pred})
    order = frame["true"].value_counts()
    keep = list(order.index[:top]) if top else list(order.index)
    keep = sorted(keep)
    frame = frame[frame["true"].isin(keep)]
    cm = pd.crosstab(frame["true"], frame["pred"])
    # every shown true label is also a column, so the diagonal is the correct answers
    cols = keep + sorted(c for c in cm.columns if c not in keep)
    cm = cm.reindex(index=keep, columns=cols, fill_value=0)
    return cm.div(cm.sum(axis=1).replace(0, np.nan), axis=0).fillna(0.0)


#: a merged column of the confusion matrices: the predicted labels outside those shown that did not fit
OTHER_LABEL = "(other predicted labels)"
#: the narrowest cell of a confusion matrix (inches) whose share (6 pt) stays readable
MIN_CELL_IN = 0.26
#: the width of a confusion matrix that is not cells (inches): true labels (38 characters at 7 pt),
#: the axis label and the colour bar
_CONFUSION_MARGIN_IN = 3.2


def fit_columns(cm: pd.DataFrame, max_columns: int) -> pd.DataFrame:
    """``cm`` with at most ``max_columns`` columns: the true labels' columns (the first ``len(cm)``),
    ``(unparsed)`` and ``(none)`` stay; of the other predicted labels the most chosen stay and the rest
    are summed into one column :data:`OTHER_LABEL` (a row's shares still add up to 1)."""
    if cm.shape[1] <= max_columns:
        return cm
    nr = cm.shape[0]
    extra = list(cm.columns[nr:])
    special = [c for c in extra if c in (UNPARSED_LABEL, NONE_LABEL)]
    others = [c for c in extra if c not in special]
    room = max(0, max_columns - nr - len(special) - 1)
    chosen = set(sorted(others, key=lambda c: -float(cm[c].sum()))[:room])   # stable: ties keep the label order
    kept = [c for c in others if c in chosen]
    out = cm[list(cm.columns[:nr]) + kept + special].copy()
    out[OTHER_LABEL] = cm[[c for c in others if c not in chosen]].sum(axis=1)
    return out


def plot_confusion(cm: pd.DataFrame, title: str, stem: str | Path) -> dict[str, Path]:
    """Draw a row-normalized confusion matrix as ``stem.png``, ``stem.pdf`` and ``stem.svg``
    (:func:`earnest.plotting.save_figure`; the report shows the SVG). The figure is no wider than the
    report shows at full size (:data:`earnest.plotting.REPORT_WIDTH_IN`): cells narrow down to
    :data:`MIN_CELL_IN`, and predicted labels beyond that share one column (:func:`fit_columns`)."""
    from earnest.plotting import REPORT_WIDTH_IN, pyplot, save_figure

    plt = pyplot()
    room = REPORT_WIDTH_IN - _CONFUSION_MARGIN_IN
    cm = fit_columns(cm, max(len(cm) + 1, int(room / MIN_CELL_IN)))
    nr, nc = cm.shape
    cell = min(0.55, room / max(1, nc))
    fig, ax = plt.subplots(figsize=(max(4.0, cell * nc + _CONFUSION_MARGIN_IN), max(3.0, 0.45 * nr + 2.5)))
    im = ax.imshow(cm.to_numpy(), vmin=0.0, vmax=1.0, cmap="Blues", aspect="auto")
    ax.set_xticks(range(nc), labels=[_short(c) for c in cm.columns], rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(nr), labels=[_short(r) for r in cm.index], fontsize=7)
    for i in range(nr):
        for j in range(nc):
            v = cm.iat[i, j]
            if v > 0:
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6,
                        color="white" if v > 0.6 else "black")
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.04, label="share of true label")
    fig.tight_layout()
    return dict(zip(("png", "pdf", "svg"), save_figure(fig, stem)))


def _short(label: str, width: int = 38) -> str:
    return label if len(label) <= width else label[: width - 1] + "…"


def file_name_of(model: str) -> str:
    """A model's name as it appears in a figure's file name (``confusion_coarse_<this>``)."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in str(model))


def write_confusion_figures(scored: pd.DataFrame, outdir: str | Path, *, strategy: str = "zero_shot",
                            top_fine: int = TOP_FINE) -> list[Path]:
    """Coarse and fine confusion matrices for each model (PNG, PDF, SVG); returns the files written."""
    outdir = Path(outdir)
    sub = scored[scored["prompt"] == strategy]
    written = []
    for model, grp in sub.groupby("model", sort=True):
        safe = file_name_of(model)
        for level, top in (("coarse", None), ("fine", top_fine)):
            cm = confusion_frame(grp, level, top)
            paths = plot_confusion(cm, f"{model}: {level} categories ({strategy})", outdir / f"confusion_{level}_{safe}")
            written += list(paths.values())
    return written


# ---------------------------------------------------------------- paired strategy tests (Table 3 with a test)

#: the paired test of each metric: exact McNemar on the discordant pairs for the two accuracies
#: (binary per sample), Wilcoxon signed-rank for the four variable metrics (per-sample values in [0, 1])
PAIRED_TESTS = {"ACC_CG": "exact McNemar", "ACC_FG": "exact McNemar", "JCV": "Wilcoxon signed-rank",
                "PV": "Wilcoxon signed-rank", "RV": "Wilcoxon signed-rank", "VRI": "Wilcoxon signed-rank"}


def paired_test(base: np.ndarray, other: np.ndarray, metric: str) -> tuple[float, float, str]:
    """(statistic, P value, note) of ``other`` against ``base`` on the same samples. No discordant
    pair (McNemar) or no non-zero difference (Wilcoxon) tests nothing: P is NaN, with a note."""
    from scipy import stats as st

    if PAIRED_TESTS[metric] == "exact McNemar":
        b = int(np.sum((base > 0.5) & (other <= 0.5)))
        c = int(np.sum((base <= 0.5) & (other > 0.5)))
        if b + c == 0:
            return np.nan, np.nan, "no discordant pair"
        return float(min(b, c)), float(st.binomtest(min(b, c), b + c, 0.5).pvalue), f"{b} lost, {c} gained"
    diff = other - base
    if not np.any(diff != 0):
        return np.nan, np.nan, "no sample differs"
    res = st.wilcoxon(diff, zero_method="wilcox")
    return float(res.statistic), float(res.pvalue), f"{int(np.sum(diff != 0))} samples differ"


def strategy_tests(scored: pd.DataFrame, baseline: str = "zero_shot", fidelity: str = F.DEFAULT) -> pd.DataFrame:
    """Every strategy against ``baseline``, per model and metric, paired over the samples both answered:
    mean difference, the test of :data:`PAIRED_TESTS`, its P value and the Holm-corrected P value
    (one family per model: all its strategies x metrics; :func:`earnest.stats.summary.holm`), and the
    verdict of :func:`earnest.statform.glmm.significance` (the one place StatFormBench decides it)."""
    from earnest.stats.summary import holm

    from .glmm import significance

    rows = []
    for model, mgrp in scored.groupby("model", sort=True):
        if baseline not in set(mgrp["prompt"]):
            raise ValueError(f"model {model!r} has no rows for the baseline strategy {baseline!r}")
        base = mgrp[mgrp["prompt"] == baseline].set_index("item_id")
        for strat in [s for s in dict.fromkeys(mgrp["prompt"]) if s != baseline]:
            other = mgrp[mgrp["prompt"] == strat].set_index("item_id")
            common = base.index.intersection(other.index).sort_values()
            xb, xo = metric_matrix(base.loc[common]), metric_matrix(other.loc[common])
            for i, m in enumerate(METRICS):
                stat, p, note = paired_test(xb[:, i], xo[:, i], m)
                rows.append({"model": model, "prompt": strat, "baseline": baseline, "metric": m, "n": len(common),
                             "difference": float(np.mean(xo[:, i] - xb[:, i])) if len(common) else np.nan,
                             "test": PAIRED_TESTS[m], "statistic": stat, "p": p, "note": note})
    out = pd.DataFrame(rows, columns=["model", "prompt", "baseline", "metric", "n", "difference", "test", "statistic",
                                      "p", "note"])
    out["p_holm"] = np.nan
    for _, idx in out.groupby("model").groups.items():
        out.loc[idx, "p_holm"] = holm(out.loc[idx, "p"].to_numpy(), fidelity)
    out["significant_after_holm"] = significance(out["p_holm"], pd.Series(False, index=out.index))
    return out


def write_strategy_tests(scored: pd.DataFrame, stem: str | Path, *, baseline: str = "zero_shot",
                         fidelity: str = F.DEFAULT) -> dict[str, Path]:
    """The paired strategy tests as a table (differences x 100)."""
    tests = strategy_tests(scored, baseline, fidelity)
    shown = tests[["model", "prompt", "metric", "n", "difference", "test", "p", "p_holm", "note"]].copy()
    shown["difference"] = [("" if pd.isna(v) else f"{100 * v:+.1f}") for v in tests["difference"]]
    bold = pd.DataFrame(False, index=shown.index, columns=shown.columns)
    bold["p_holm"] = tests["significant_after_holm"].astype(bool)
    return write_table(shown, stem, caption=(
        f"Prompting strategies against {baseline}, paired over samples: difference of means x 100; exact McNemar "
        "test (accuracies) or Wilcoxon signed-rank test (variable metrics); P Holm-corrected within each model "
        "(all its strategies and metrics); bold: significant after Holm (earnest.statform.glmm.significance); "
        "no P where no sample differs."), bold=bold, csv=tests, label="tab:statform-strategy-tests")


# ---------------------------------------------------------------- truncation and the two scorings


def truncation_table(scored: pd.DataFrame) -> pd.DataFrame:
    """Per model and strategy: answers, answers that stopped at max_new_tokens, and their share."""
    hit = (scored["hit_max_tokens"].astype(bool) if "hit_max_tokens" in scored
           else scored.get("stop_reason", pd.Series("", index=scored.index)).astype(str) == "max_new_tokens")
    frame = scored.assign(_hit=hit.astype(int))
    out = frame.groupby(["model", "prompt"], sort=True)["_hit"].agg(["size", "sum"]).reset_index()
    out = out.rename(columns={"size": "N", "sum": "hit_max_new_tokens"})
    out["share"] = out["hit_max_new_tokens"] / out["N"]
    return out


def write_truncation_table(scored: pd.DataFrame, stem: str | Path) -> dict[str, Path]:
    table = truncation_table(scored)
    shown = table.assign(share=[f"{100 * v:.1f}%" for v in table["share"]])
    return write_table(shown, stem, caption=(
        "Answers that stopped at max_new_tokens (statform.max_new_tokens), per model and strategy: a truncated "
        "answer usually holds no complete JSON object and scores 0."), csv=table, label="tab:statform-truncation")


def fidelity_table(scored: pd.DataFrame) -> pd.DataFrame:
    """Per model and strategy: each metric (x 100) scored by the authors' rules (reference) and by
    earnest's, and the difference earnest - reference."""
    from .metrics import METRIC_COLUMNS

    rows = []
    for (model, prompt), grp in scored.groupby(["model", "prompt"], sort=True):
        row = {"model": model, "prompt": prompt, "N": len(grp)}
        for m in METRICS:
            ref = 100 * grp[f"reference_{METRIC_COLUMNS[m]}"].astype(float).mean()
            ear = 100 * grp[f"earnest_{METRIC_COLUMNS[m]}"].astype(float).mean()
            row.update({f"{m} reference": ref, f"{m} earnest": ear, f"{m} diff": ear - ref})
        rows.append(row)
    return pd.DataFrame(rows)


def write_fidelity_table(scored: pd.DataFrame, stem: str | Path) -> dict[str, Path]:
    table = fidelity_table(scored)
    fmts = {c: (lambda v: f"{v:.1f}") for c in table.columns if c not in ("model", "prompt", "N")}
    return write_table(table, stem, caption=(
        "The same answers scored twice: reference = the authors' evaluator's rules (exact category strings, "
        "their coarse rule, sets of serialized values or file+column, exact role strings, no credit without valid "
        "JSON); earnest = this project's (case, spaces and a final '.' ignored in categories, role aliases, "
        "one-to-one value matching, salvaged objects); diff = earnest - reference, metrics x 100."),
        formatters=fmts, csv=table, label="tab:statform-fidelity")
