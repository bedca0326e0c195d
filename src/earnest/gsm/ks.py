"""Section 4.3 / Appendix D.3: are the integers in GSM-Variants questions larger than in GSM-Base?

All integers written in digits in each dataset's questions (``earnest.gsm.gamma.integers_in``) are
unrolled into one sample per dataset and compared with the two-sample Kolmogorov-Smirnov test;
:func:`plot_integer_distributions` draws Figure 8 (binned shares and cumulative shares).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable

import numpy as np
from scipy import stats

from earnest.gsm.datasets import DATASET_LABELS
from earnest.fidelity import EARNEST
from earnest.gsm.gamma import integers_in, magnitude
from earnest.wording import format_p


@dataclass(frozen=True)
class KSResult:
    """Two-sample K-S statistic D, its P value and the sample sizes (integers per dataset)."""
    statistic: float
    pvalue: float
    n_base: int
    n_variants: int

    def as_dict(self) -> dict:
        return asdict(self)


def integers_of(questions: Iterable[str], *, fidelity: str = EARNEST) -> np.ndarray:
    """Every integer written in digits in every question, unrolled, as |n| (the magnitude is what
    gamma measures; signs are rare and would only mirror the distribution). ``fidelity``:
    which numbers count (``earnest.gsm.gamma.integers_in``)."""
    out: list[int] = []
    for q in questions:
        out.extend(abs(n) for n in integers_in(str(q), fidelity=fidelity))
    return np.asarray(out, dtype=float)


def ks_test(base_questions: Iterable[str], variant_questions: Iterable[str], *,
            fidelity: str = EARNEST) -> KSResult:
    """Two-sample K-S test of the integers in GSM-Base against those in GSM-Variants questions
    (numbers read as fidelity mode ``fidelity`` reads them)."""
    a = integers_of(base_questions, fidelity=fidelity)
    b = integers_of(variant_questions, fidelity=fidelity)
    if a.size == 0 or b.size == 0:
        raise ValueError(f"K-S test needs integers in both datasets (found {a.size} in GSM-Base, "
                         f"{b.size} in GSM-Variants)")
    res = stats.ks_2samp(a, b)
    return KSResult(float(res.statistic), float(res.pvalue), int(a.size), int(b.size))


@dataclass(frozen=True)
class TemplateShift:
    """How much larger the numbers of a set's questions are than their own template's GSM-Base
    question, template by template (paired). ``mean``: the mean over templates of (the mean, over
    the set's questions of the template, of the question's sum of log10(1 + |n|) over its integers)
    minus the same for the GSM-Base question; ``ci_low``/``ci_high``: its 95% t interval;
    ``n_larger``/``n_smaller``: templates with a positive / negative shift; ``pvalue``: two-sided
    Wilcoxon signed-rank test of the shifts (zeros dropped); ``n_templates``: templates compared."""
    mean: float
    ci_low: float
    ci_high: float
    n_larger: int
    n_smaller: int
    pvalue: float
    n_templates: int

    def as_dict(self) -> dict:
        return asdict(self)


def _magnitude(question: str, fidelity: str) -> float:
    return magnitude(question, fidelity=fidelity)


def template_shift(base, other, *, fidelity: str = EARNEST) -> TemplateShift:
    """The per-template shift of ``other``'s numbers against GSM-Base (:class:`TemplateShift`).

    ``base`` and ``other`` are item tables (template_id, question); only templates present in
    both count. The pooled K-S test treats ~14,000 integers of 100 templates as independent and
    can call a set "matched" while most templates' numbers still grow; this test is paired."""
    def per_template(items) -> dict:
        out: dict = {}
        for t, q in zip(items["template_id"], items["question"]):
            out.setdefault(int(t), []).append(_magnitude(q, fidelity))
        return {t: float(np.mean(v)) for t, v in out.items()}

    b, o = per_template(base), per_template(other)
    common = sorted(set(b) & set(o))
    if not common:
        raise ValueError("template shift: no template is in both sets")
    d = np.array([o[t] - b[t] for t in common])
    n = d.size
    mean = float(d.mean())
    if n > 1:
        half = float(stats.t.ppf(0.975, n - 1) * d.std(ddof=1) / np.sqrt(n))
    else:
        half = float("nan")
    nonzero = d[d != 0]
    pvalue = float(stats.wilcoxon(nonzero).pvalue) if nonzero.size else 1.0
    return TemplateShift(mean, mean - half, mean + half, int((d > 0).sum()), int((d < 0).sum()), pvalue, n)


# Variable-width bins: unit steps for small counts, then roughly logarithmic steps.
BIN_EDGES = np.array([0, 1, 2, 3, 4, 5, 6, 8, 10, 13, 16, 21, 26, 31, 41, 51, 76, 101, 151, 201, 301,
                      501, 1001, 2001, 5001, 10001, 100001, np.inf])


def plot_integer_distributions(base_ints, variant_ints, stem: str | Path, ks: KSResult | None = None,
                               zoom_quantile: float = 0.95) -> list[Path]:
    """Figure 8: shares of integers per variable-width bin (top) and cumulative shares (bottom,
    x axis cut at the ``zoom_quantile`` of the pooled integers). Writes ``stem.png``, ``stem.pdf`` and
    ``stem.svg`` (:func:`earnest.plotting.save_figure`; the report shows the SVG)."""
    from earnest.plotting import pyplot, save_figure

    plt = pyplot()
    a = np.asarray(base_ints, dtype=float)
    b = np.asarray(variant_ints, dtype=float)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 7))
    labels = []
    for lo, hi in zip(BIN_EDGES[:-1], BIN_EDGES[1:]):
        labels.append(f"{int(lo)}" if hi - lo == 1 else (f"≥{int(lo)}" if np.isinf(hi) else f"{int(lo)}–{int(hi) - 1}"))
    x = np.arange(len(labels))
    width = 0.4
    base, variants = DATASET_LABELS["gsm_base"], DATASET_LABELS["gsm_variants"]
    for data, off, name in ((a, -width / 2, base), (b, width / 2, variants)):
        counts, _ = np.histogram(data, bins=BIN_EDGES)
        top.bar(x + off, counts / max(1, data.size), width=width, label=name)
    top.set_xticks(x, labels, rotation=60, fontsize=7)
    top.set_ylabel("share of integers")
    top.legend()
    title = "Integers in question texts"
    if ks is not None:
        title += f" (K-S D = {ks.statistic:.4f}, p = {format_p(ks.pvalue)})"
    top.set_title(title)
    limit = float(np.quantile(np.concatenate([a, b]), zoom_quantile)) if a.size + b.size else 1.0
    for data, name in ((a, base), (b, variants)):
        xs = np.sort(data)
        bottom.step(xs, np.arange(1, xs.size + 1) / max(1, xs.size), where="post", label=name)
    bottom.set_xlim(0, max(1.0, limit))
    bottom.set_xlabel("integer value")
    bottom.set_ylabel("cumulative share")
    bottom.legend()
    fig.tight_layout()
    return save_figure(fig, stem)
