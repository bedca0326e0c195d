"""Section 3.5 summaries: Eq. 4 P value, percentile interval, Holm, accuracies, shard checks."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from earnest.stats.glmm import EFFECTS, SHARD_COLUMNS
from earnest.stats.summary import (accuracies, bootstrap_p, check_shards, clean_mask, holm,
                                   percentile_interval, summarise)


def test_bootstrap_p_eq4():
    assert bootstrap_p([-1, -2, -3, 1]) == pytest.approx(0.5)      # 2 * min(3/4, 1/4)
    assert bootstrap_p([-1, -2, -3, -4]) == 0.0
    assert bootstrap_p([0, 0]) == 1.0                               # both tails 1 -> capped
    assert np.isnan(bootstrap_p([]))


def test_percentile_interval_matches_type7():
    x = np.arange(1, 101, dtype=float)
    lo, hi = percentile_interval(x)
    assert lo == pytest.approx(1 + 0.025 * 99) and hi == pytest.approx(1 + 0.975 * 99)


def test_holm_known_values():
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted 0.005,0.01,0.03,0.04 -> 0.02,0.03,0.06,0.06 (monotone)
    assert holm(p).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    out = holm([0.5, np.nan, 0.01])
    assert np.isnan(out[1]) and out[0] == pytest.approx(0.5) and out[2] == pytest.approx(0.02)
    assert holm([0.6, 0.7]).tolist() == [1.0, 1.0]


HOLM_GOLDEN = Path(__file__).parent / "data" / "golden" / "reference" / "holm.json"


def _nan(values):
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def test_holm_reference_mode_is_the_authors_correction():
    """The authors' correct_p_values (statsmodels multipletests, Holm) run on these families
    (tests/data/golden/reference/produce_holm.py): a missing P value counts in the family's size."""
    families = json.loads(HOLM_GOLDEN.read_text())["families"]
    assert len(families) == 11
    for fam in families:
        p, want = _nan(fam["p"]), _nan(fam["reference_holm"])
        got = holm(p, "reference")
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got[~np.isnan(want)], want[~np.isnan(want)], rtol=0, atol=1e-15)
    assert holm([0.01, 0.02, 0.03, np.nan], "reference")[:3] == pytest.approx([0.04, 0.06, 0.06])


def test_holm_earnest_mode_leaves_a_missing_p_out_of_the_family():
    families = json.loads(HOLM_GOLDEN.read_text())["families"]
    differ = 0
    for fam in families:
        p = _nan(fam["p"])
        got = holm(p)                                   # earnest is the default mode
        ok = ~np.isnan(p)
        assert np.isnan(got[~ok]).all()
        # the same as correcting the P values that exist, alone
        np.testing.assert_allclose(got[ok], holm(p[ok], "reference"), rtol=0, atol=1e-15)
        want = _nan(fam["reference_holm"])
        if ok.any() and not ok.all() and not np.allclose(got[ok], want[ok]):
            differ += 1
    assert differ >= 5
    assert holm([0.01, 0.02, 0.03, np.nan], "earnest")[:3] == pytest.approx([0.03, 0.04, 0.04])
    with pytest.raises(ValueError, match="not a fidelity mode"):
        holm([0.1], "paper")


def test_accuracies_in_percent():
    df = pd.DataFrame({"variant": [0, 0, 1, 1, 1, 1], "correct": [1, 0, 1, 0, 0, 0]})
    a = accuracies(df)
    assert a["acc_base"] == 50 and a["acc_variants"] == 25 and a["delta_var"] == -25
    assert (a["n_base"], a["n_variants"]) == (2, 4)


def _shards(estimates, converged, errors=None):
    rows = []
    for b, (e, c) in enumerate(zip(estimates, converged)):
        for term in ("(Intercept)", "variant"):
            rows.append({"resample": b, "seed": b, "term": term, "estimate": e if term == "variant" else 0.1,
                         "ranef_var": 2.0 + b, "converged": c, "singular": False,
                         "messages": "" if c else "Model failed to converge", "error": (errors or {}).get(b, "")})
    return pd.DataFrame(rows, columns=list(SHARD_COLUMNS))


def test_summarise_uses_clean_estimates_only():
    sh = _shards([-1.0, -0.5, 5.0, -0.2, np.nan], [True, True, False, True, False], errors={4: "boom"})
    assert clean_mask(sh).sum() == 6
    # every template has a right and a wrong answer under both conditions: no resample is separated
    data = pd.DataFrame({"template": [0, 0, 0, 0, 1, 1, 1, 1], "variant": [0, 0, 1, 1] * 2,
                         "correct": [1, 0, 1, 0] * 2})
    s = summarise(sh, data, 1, model="m", prompt="gsm")
    assert list(s["term"]) == list(EFFECTS[1])
    r = s.iloc[0]
    assert r.n_resamples == 5 and r.n_clean == 3 and r.n_errors == 1
    assert r.median_log_or == pytest.approx(-0.5) and r.odds_ratio == pytest.approx(np.exp(-0.5))
    assert r.p_boot == 0.0 and r.p_bound == pytest.approx(2 / 3)      # P < 2/3 from 3 estimates, not 0
    assert r.ranef_var_mean == pytest.approx(np.mean([2, 3, 5]))
    assert r.ranef_var_sd == pytest.approx(np.std([2, 3, 5], ddof=1))


def test_check_shards_finds_gaps_and_repeats():
    sh = _shards([0.1, 0.2], [True, True])
    check_shards(sh, 2)
    with pytest.raises(ValueError, match="missing"):
        check_shards(sh, 3)
    with pytest.raises(ValueError, match="more than one shard"):
        check_shards(pd.concat([sh, sh]))


def test_a_group_without_rows_has_no_separated_resamples():
    """A reasoning-only analysis that excluded every item has no templates: nothing is separated."""
    from earnest.stats.summary import separation_sides

    empty = pd.DataFrame({"template": [], "variant": [], "succ": [], "fail": []})
    assert separation_sides(empty, [11, 12]).tolist() == [0.0, 0.0]
