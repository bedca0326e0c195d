"""The StatFormBench paper's figures 3, 4 and 5, drawn from the samples and the scored tables.

* Figure 3 (``dataset_statistics``): samples per coarse category, and the number of reference
  variables per sample (from the samples table).
* Figure 4 (``category_accuracy``): ACC_CG per coarse category with more than ``min_n`` samples,
  per model (top); the fine categories with the highest and the lowest ACC_FG averaged over the
  models (bottom).
* Figure 5 (``fewshot``): ACC_FG, JCV and VRI against the number of few-shot examples (0 = the
  zero-shot strategy), one line per model; drawn when a few-shot strategy was run.

Each is written as PNG, PDF and SVG (:func:`earnest.plotting.save_figure`; the report shows the SVG),
no wider than the report shows at full size (:data:`earnest.plotting.REPORT_WIDTH_IN`); what is not
drawn (no samples table, no few-shot strategy) is simply absent. :func:`figure_labels` gives each
figure file its report labels.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from earnest.plotting import REPORT_WIDTH_IN, pyplot as _plt, save_figure as _save

from .analysis import category_accuracy, file_name_of
from .metrics import METRIC_COLUMNS

FEWSHOT_METRICS = ("ACC_FG", "JCV", "VRI")


def dataset_statistics(samples: pd.DataFrame, stem: Path) -> list[Path]:
    plt = _plt()
    counts = samples["category_cg"].value_counts().sort_values()
    nvars = samples["n_variables"].astype(int)
    fig, (left, right) = plt.subplots(1, 2, figsize=(REPORT_WIDTH_IN, max(3.5, 0.3 * len(counts) + 1.5)))
    left.barh(range(len(counts)), counts.to_numpy(), color="#4477aa")
    left.set_yticks(range(len(counts)), labels=list(counts.index), fontsize=7)
    left.set_xlabel("samples")
    left.set_title(f"samples per coarse category (N = {len(samples)})", fontsize=9)
    bins = np.arange(nvars.min(), nvars.max() + 2) - 0.5
    for source, grp in samples.groupby("source", sort=True):
        right.hist(grp["n_variables"].astype(int), bins=bins, alpha=0.6, label=f"{source} ({len(grp)})")
    right.set_xlabel("reference variables per sample")
    right.set_ylabel("samples")
    right.legend(fontsize=7)
    right.set_title("variables per sample", fontsize=9)
    fig.tight_layout()
    return _save(fig, stem)


def category_figure(scored: pd.DataFrame, stem: Path, *, min_n: int = 10, n_fine: int = 5) -> list[Path]:
    plt = _plt()
    coarse = category_accuracy(scored, "coarse", min_n)
    fine = category_accuracy(scored, "fine", 0)
    models = sorted(scored["model"].unique())
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(REPORT_WIDTH_IN, 8))
    cats = sorted(coarse["category"].unique())
    width = 0.8 / max(1, len(models))
    for j, m in enumerate(models):
        acc = coarse[coarse["model"] == m].set_index("category")["accuracy"].reindex(cats)
        top.bar(np.arange(len(cats)) + j * width, 100 * acc.to_numpy(), width, label=m)
    top.set_xticks(np.arange(len(cats)) + 0.4 - width / 2, labels=cats, rotation=30, ha="right", fontsize=7)
    top.set_ylabel("ACC_CG x 100")
    top.set_title(f"coarse categories with more than {min_n} samples", fontsize=9)
    top.legend(fontsize=7, ncol=min(4, len(models)))
    mean = fine.groupby("category")["accuracy"].mean().sort_values()
    shown = pd.concat([mean.head(n_fine), mean.tail(n_fine)]) if len(mean) > 2 * n_fine else mean
    bottom.barh(range(len(shown)), 100 * shown.to_numpy(), color=["#cc6677" if v < mean.median() else "#117733"
                                                                 for v in shown])
    bottom.set_yticks(range(len(shown)), labels=[c.split("\\", 1)[-1] for c in shown.index], fontsize=7)
    bottom.set_xlabel("ACC_FG x 100, mean over models")
    bottom.set_title(f"fine categories with the lowest and highest accuracy ({len(models)} models)", fontsize=9)
    fig.tight_layout()
    return _save(fig, stem)


def fewshot_points(scored: pd.DataFrame, strategies: dict) -> pd.DataFrame:
    """model, k, metric, value (x 100): the zero-shot strategy as k = 0 and each few-shot strategy at its k."""
    ks = {name: (0 if spec.get("kind", name) == "zero_shot" else int(spec.get("k", 0)))
          for name, spec in strategies.items() if spec.get("kind", name) in ("zero_shot", "few_shot")}
    sub = scored[scored["prompt"].isin(ks)]
    rows = []
    for (model, prompt), grp in sub.groupby(["model", "prompt"], sort=True):
        for m in FEWSHOT_METRICS:
            rows.append({"model": model, "k": ks[prompt], "metric": m,
                         "value": 100 * grp[METRIC_COLUMNS[m]].astype(float).mean()})
    return pd.DataFrame(rows, columns=["model", "k", "metric", "value"])


def fewshot_figure(points: pd.DataFrame, stem: Path) -> list[Path]:
    plt = _plt()
    fig, axes = plt.subplots(1, len(FEWSHOT_METRICS), figsize=(REPORT_WIDTH_IN, 3.4))
    for ax, m in zip(axes, FEWSHOT_METRICS):
        for model, grp in points[points["metric"] == m].groupby("model", sort=True):
            grp = grp.sort_values("k")
            ax.plot(grp["k"], grp["value"], marker="o", label=model)
        ax.set_xlabel("few-shot examples (0 = zero-shot)")
        ax.set_title(m, fontsize=9)
    axes[0].set_ylabel("x 100")
    axes[-1].legend(fontsize=7)
    fig.tight_layout()
    return _save(fig, stem)


def write_paper_figures(scored: pd.DataFrame, outdir: str | Path, *, samples_path: str | Path | None = None,
                        strategy: str = "zero_shot", strategies: dict | None = None, min_n: int = 10) -> list[Path]:
    """Figures 3, 4 and 5 (module doc); returns the files written."""
    outdir = Path(outdir)
    written: list[Path] = []
    if samples_path is not None:
        written += dataset_statistics(pd.read_parquet(samples_path), outdir / "dataset_statistics")
    main = scored[scored["prompt"] == strategy]
    if not main.empty:
        written += category_figure(main, outdir / "category_accuracy", min_n=min_n)
    if strategies and any(s.get("kind") == "few_shot" for s in strategies.values()):
        points = fewshot_points(scored, strategies)
        if points["k"].nunique() > 1:
            written += fewshot_figure(points, outdir / "fewshot")
    return written


#: the analysis's figure files (their stems) and what each shows, for the report's labels
_FIGURES = (
    (r"confusion_coarse_(?P<model>.+)", "confusion matrix, coarse categories (L1)"),
    (r"confusion_fine_(?P<model>.+)", "confusion matrix, fine categories (L2)"),
    (r"dataset_statistics", "Figure 3: samples per category and variables per sample"),
    (r"category_accuracy", "Figure 4: accuracy per category"),
    (r"fewshot", "Figure 5: scores over few-shot examples"),
)


def figure_labels(name: str, models: Iterable[str]) -> dict[str, str]:
    """The report labels of one figure file of the analysis (its stem, e.g. ``confusion_fine_<model>``):
    what it shows, its model (the config's name; "all models" for a figure of every model) and the dataset."""
    for pattern, what in _FIGURES:
        m = re.fullmatch(pattern, name)
        if m:
            stem = m.groupdict().get("model")
            if stem is None:
                model = "no model (the samples)" if name == "dataset_statistics" else "all models"
            else:
                model = next((str(x) for x in models if file_name_of(x) == stem), stem)
            return {"figure": what, "model": model, "dataset": "StatFormBench"}
    return {"figure": name, "model": "all models", "dataset": "StatFormBench"}
