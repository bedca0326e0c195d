"""K-S test on the integers in the questions, and its figure."""

import numpy as np
import pytest
from scipy import stats

from earnest.gsm.ks import integers_of, ks_test, plot_integer_distributions


def test_ks_on_question_integers(tmp_path):
    base = ["Olivia has $23. She bought 5 bagels for $3 each.", "There are 15 trees and 1/2 of them, 2.5 m."]
    variants = ["Olivia has $1,230. She bought 57 bagels for $13 each.", "There are 915 trees."]
    a, b = integers_of(base), integers_of(variants)
    assert a.tolist() == [23, 5, 3, 15] and b.tolist() == [1230, 57, 13, 915]
    res = ks_test(base, variants)
    ref = stats.ks_2samp(a, b)
    assert res.statistic == pytest.approx(ref.statistic) and res.pvalue == pytest.approx(ref.pvalue)
    assert (res.n_base, res.n_variants) == (4, 4)
    paths = plot_integer_distributions(a, b, tmp_path / "fig" / "number_counts", ks=res)
    assert [p.suffix for p in paths] == [".png", ".pdf", ".svg"]     # the report shows the SVG
    assert paths[0].read_bytes()[:4] == b"\x89PNG" and paths[1].read_bytes()[:4] == b"%PDF"
    assert "<svg" in paths[2].read_text(encoding="utf-8")[:2000]


def test_ks_detects_shift_and_needs_integers():
    rng = np.random.default_rng(0)
    base = [f"He has {n} apples." for n in rng.integers(1, 50, 300)]
    variants = [f"He has {n} apples." for n in rng.integers(20, 90, 300)]
    assert ks_test(base, variants).pvalue < 1e-6
    assert ks_test(base, base).statistic == 0
    with pytest.raises(ValueError, match="integers in both"):
        ks_test(["three apples"], variants)


def test_template_shift_is_paired_over_templates():
    """Issue 40.5: the matched set checked template by template. Each template's variants have larger
    numbers than its own original in 9 of 10 templates: the shift is positive, its interval excludes 0
    and the signed-rank test says so, although every number also occurs in the other set (the
    pooled K-S test sees two similar samples)."""
    import pandas as pd

    from earnest.gsm.ks import template_shift

    base = pd.DataFrame({"template_id": range(10), "question": [f"Tom has {10 * (t + 1)} apples." for t in range(10)]})
    other = pd.DataFrame({"template_id": [t for t in range(10) for _ in range(3)],
                          "question": [f"Tom has {10 * (t + 1) + (5 if t < 9 else -5)} apples." for t in range(10)
                                       for _ in range(3)]})
    sh = template_shift(base, other)
    assert sh.n_templates == 10 and (sh.n_larger, sh.n_smaller) == (9, 1)
    assert sh.mean > 0 and sh.ci_low > 0 and sh.pvalue < 0.05
    same = template_shift(base, base)
    assert same.mean == 0 and same.pvalue == 1.0
