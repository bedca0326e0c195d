"""Ex4's side-by-side table and dose-response rows on hand-made summaries."""

from __future__ import annotations

import numpy as np
import pandas as pd

from earnest.gsm.ex4 import dose_response, dose_rows, side_by_side, side_by_side_markdown


def _row(analysis, glmm, model, odds_ratio, p, term="variant"):
    """A per-group summary row as the workflow writes it (earnest.stats.summaries.SUMMARIES_COLUMNS)."""
    lo, hi = odds_ratio * 0.8, odds_ratio * 1.2
    return {"analysis": analysis, "glmm": glmm, "model": model, "prompt": "gsm", "term": term,
            "odds_ratio": odds_ratio, "ci_low": lo, "ci_high": hi, "p_boot": p, "median_log_or": np.log(odds_ratio),
            "ci_low_log": np.log(lo), "ci_high_log": np.log(hi), "n_resamples": 200, "n_clean": 200, "n_errors": 0,
            "n_singular": 0, "ranef_var_mean": 0.5, "ranef_var_sd": 0.1, "acc_base": 60.0, "acc_variants": 50.0,
            "delta_var": -10.0, "n_base": 100, "n_variants": 5000, "wald_estimate": np.log(odds_ratio),
            "wald_se": 0.1, "wald_p": p, "wald_converged": True, "wald_singular": False, "wald_max_grad": 1e-5,
            "wald_tol": 2e-3, "wald_messages": ""}


def test_side_by_side_flags_where_conclusions_differ():
    rows = [
        # model a: significant drop on the original variants, gone when numbers are matched
        _row("all", 1, "a", 0.6, 0.001), _row("all", 2, "a", 0.7, 0.01), _row("matched", 1, "a", 0.95, 0.6),
        # model b: the drop survives every control
        _row("all", 1, "b", 0.5, 0.001), _row("all", 2, "b", 0.55, 0.002), _row("matched", 1, "b", 0.6, 0.003),
        # model c: nothing anywhere
        _row("all", 1, "c", 0.9, 0.5), _row("all", 2, "c", 0.95, 0.7), _row("matched", 1, "c", 1.0, 0.9),
        _row("all", 2, "a", 0.8, 0.01, term="gamma_c"),
    ]
    t = side_by_side(pd.DataFrame(rows), "gsm", alpha=0.05).set_index("model")
    assert t.loc["a", "differs"] == "Ex1 vs Ex4, Ex3 vs Ex4"
    assert t.loc["b", "differs"] == "" and t.loc["c", "differs"] == ""
    assert t.loc["a", "ex1_p_holm_below_alpha"] and not t.loc["a", "ex4_p_holm_below_alpha"]
    # Holm within each column's family (3 models): a's Ex1 p 0.001 -> 0.003
    assert np.isclose(t.loc["a", "ex1_p_holm"], 0.003)
    md = side_by_side_markdown(t.reset_index(), 0.05, {"statistic": 0.04, "pvalue": 0.6, "n_base": 280,
                                                       "n_variants": 14000})
    assert "| a | 0.60 [0.48, 0.72] p=0.003 * |" in md and "K-S D = 0.0400" in md


def test_a_degenerate_fit_is_never_starred():
    """An Ex1 or Ex4 fit the summaries table marks degenerate (here: estimates beyond ±10 log-odds)
    prints the degenerate mark instead of its odds ratio, and no star, whatever its P value."""
    sep = _row("all", 1, "a", float(np.exp(-14.0)), 0.0)
    sep.update(ci_low_log=-40.0, ci_high_log=-12.0, ci_low=float(np.exp(-40.0)), ci_high=float(np.exp(-12.0)))
    rows = [sep, _row("all", 2, "a", 0.7, 0.3), _row("matched", 1, "a", 0.6, 0.001),
            _row("all", 1, "b", 0.5, 0.001), _row("all", 2, "b", 0.55, 0.002), _row("matched", 1, "b", 0.6, 0.003)]
    t = side_by_side(pd.DataFrame(rows), "gsm", alpha=0.05).set_index("model")
    assert t.loc["a", "ex1_degenerate"] and not t.loc["a", "ex1_p_holm_below_alpha"]
    assert t.loc["a", "ex4_p_holm_below_alpha"] and t.loc["b", "ex1_p_holm_below_alpha"]
    md = side_by_side_markdown(t.reset_index(), 0.05)
    line = next(x for x in md.splitlines() if x.startswith("| a |"))
    assert line.split(" | ")[1] == "§ p=<0.001" and "e-0" not in md


def test_dose_rows_and_figure(tmp_path):
    rows = [_row("matched", 1, "a", 0.9, 0.3), _row("shifted1", 1, "a", 0.7, 0.01),
            _row("shifted2", 1, "a", 0.5, 0.001), _row("all", 1, "a", 0.6, 0.001)]
    d = dose_rows(pd.DataFrame(rows), "gsm")
    assert list(d.digits_added) == [0, 1, 2] and list(d.odds_ratio) == [0.9, 0.7, 0.5]
    assert dose_response(d, tmp_path / "f.png").stat().st_size > 1000


def test_glmm_input_takes_one_controlled_set_as_the_variants():
    import pytest

    from earnest.stats.glmm import GLMMInputError
    from earnest.gsm.glmm_input import glmm_input_from_scored

    def scored(dataset, n):
        return pd.DataFrame({"model": "m", "prompt": "gsm", "dataset": dataset, "template_id": range(n),
                             "correct": [True] * n, "gamma": [1.0] * n})
    df = glmm_input_from_scored([scored("gsm_base", 2), scored("gsm_matched", 3)])
    assert list(df.variant) == [0, 0, 1, 1, 1]
    assert list(glmm_input_from_scored([scored("gsm_base", 1), scored("gsm_shifted2", 1)]).variant) == [0, 1]
    with pytest.raises(GLMMInputError, match="mixes variant sets"):
        glmm_input_from_scored([scored("gsm_variants", 1), scored("gsm_matched", 1)])
