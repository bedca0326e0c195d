"""The Holm-Bonferroni families of the published tables, recomputed from each table's own
uncorrected P column (resources/published, transcribed from the paper), and earnest's tables
correcting within the same families (earnest.stats.summary.HOLM_FAMILY).

Printed P values are rounded to three decimals ("<0.001" below that), so each is an interval; the
Holm-adjusted value is non-decreasing in every raw P value, so the exact corrected value lies
between Holm of the lower ends and Holm of the upper ends, and the printed corrected value must
round from a number in that range. The other family must not fit, or the test could not tell.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from earnest.stats.summary import HOLM_FAMILY, add_holm, holm

PUBLISHED = Path(__file__).resolve().parents[1] / "resources" / "published"
GLMM1 = pd.read_csv(PUBLISHED / "glmm1_variant_p.csv", dtype={"p_value": str, "corrected_p_value": str})
GLMM2 = pd.read_csv(PUBLISHED / "glmm2_grid_p.csv", dtype={"p_value": str, "corrected_p_value": str})
STATS = pd.read_csv(PUBLISHED / "glmm1_bootstrap_stats.csv")


def bounds(printed: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """The interval each printed P value was rounded from."""
    lo, hi = [], []
    for s in printed:
        s = s.strip()
        if s.startswith("<"):
            lo.append(0.0)
            hi.append(float(s[1:]))
        else:
            lo.append(float(s) - 5e-4)
            hi.append(float(s) + 5e-4)
    return np.clip(lo, 0, 1), np.clip(hi, 0, 1)


def holm_consistent(raw: pd.Series, corrected: pd.Series) -> np.ndarray:
    """Per row: can the printed corrected value come from Holm over these rows' raw values?"""
    lo, hi = bounds(raw)
    c_lo, c_hi = bounds(corrected)
    return (holm(lo) <= c_hi + 1e-12) & (holm(hi) >= c_lo - 1e-12)


def families(df: pd.DataFrame, keys) -> list[pd.DataFrame]:
    return [g for _, g in df.groupby(list(keys), sort=False)]


def test_the_transcription_is_complete():
    assert sorted(GLMM1["table"].unique()) == [2, 6, 8, 10, 12]
    assert GLMM1.groupby("table").size().tolist() == [20, 8, 8, 8, 8]           # 52 GLMM 1 rows
    assert len(GLMM2) == 2 * 8 * 5                                           # Tables 14-15: 8 models x 5 prompts
    assert len(STATS) == 52 and (STATS["n_estimates"] <= 2000).all()


@pytest.mark.parametrize("table", [2, 6, 8, 10, 12])
def test_glmm1_tables_correct_across_the_models_of_one_prompt(table):
    t = GLMM1[GLMM1["table"] == table]
    assert holm_consistent(t["p_value"], t["corrected_p_value"]).all()


def test_other_corrections_do_not_fit_the_glmm1_tables():
    """The check can tell: Bonferroni within each prompt, or Holm over all 52 rows as one family,
    does not give the printed columns."""
    def bonferroni_fits(t):
        lo, hi = bounds(t["p_value"])
        c_lo, c_hi = bounds(t["corrected_p_value"])
        return ((np.minimum(1, lo * len(t)) <= c_hi) & (np.minimum(1, hi * len(t)) >= c_lo)).all()

    assert not all(bonferroni_fits(t) for t in families(GLMM1, ["table"]))
    assert not holm_consistent(GLMM1["p_value"], GLMM1["corrected_p_value"]).all()


@pytest.mark.parametrize("table", [14, 15])
def test_glmm2_tables_correct_across_the_prompts_of_one_model(table):
    t = GLMM2[GLMM2["table"] == table]
    rows = families(t, ["model"])
    assert len(rows) == 8 and all(len(r) == 5 for r in rows)
    for r in rows:
        assert holm_consistent(r["p_value"], r["corrected_p_value"]).all(), r
    # the caption's "column-wise" (across the models of one prompt) is not what was printed
    cols = families(t, ["prompt"])
    assert not all(holm_consistent(c["p_value"], c["corrected_p_value"]).all() for c in cols)


def _summaries_from_published() -> pd.DataFrame:
    """The published P values as earnest summary rows (midpoints of the printed intervals)."""
    g1 = GLMM1.assign(analysis="all", glmm=1, term="variant")
    g2 = GLMM2.assign(analysis="all", glmm=2)
    s = pd.concat([g1, g2], ignore_index=True)
    lo, hi = bounds(s["p_value"])
    return s.assign(p_boot=(lo + hi) / 2, p_lo=lo, p_hi=hi)


def test_earnest_corrects_within_the_published_families():
    """add_holm (what earnest's tables print) on the published raw P values gives every published
    corrected P value, within the rounding of the printed numbers."""
    s = _summaries_from_published()
    lo = add_holm(s.assign(p_boot=s["p_lo"]))["p_holm"].to_numpy()
    hi = add_holm(s.assign(p_boot=s["p_hi"]))["p_holm"].to_numpy()
    c_lo, c_hi = bounds(s["corrected_p_value"])
    ok = (lo <= c_hi + 1e-12) & (hi >= c_lo - 1e-12)
    assert ok.all(), s.loc[~ok, ["table", "model", "prompt", "p_value", "corrected_p_value"]]
    assert HOLM_FAMILY[2] == ("analysis", "glmm", "model", "term")


def test_published_random_effect_column_is_variance_and_its_square_root():
    """"Rand. eff. variance ± std. dev." in all 52 rows of Tables 3, 7, 9, 11, 13: the second number
    is the square root of the first (lme4's Std.Dev.), not a spread over bootstrap resamples."""
    v = STATS["ranef_variance"].to_numpy()
    sd = STATS["ranef_std_dev"].to_numpy()
    assert ((np.sqrt(v - 5e-3) - 5e-3 <= sd) & (sd <= np.sqrt(v + 5e-3) + 5e-3)).all()
