"""Ex4's side-by-side table and dose-response rows on hand-made summaries."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

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


def _contrast(model, ratio, p, significant, degenerate=False):
    return {"model": model, "contrast_ratio": ratio, "contrast_ci_low": ratio * 0.7, "contrast_ci_high": ratio * 1.3,
            "contrast_median_log_diff": float(np.log(ratio)), "contrast_p_boot": p, "contrast_p_bound": np.nan,
            "contrast_p_holm": p, "contrast_significant_holm": significant, "contrast_degenerate": degenerate,
            "contrast_problems": "", "contrast_n_pairs": 200}


def test_differs_reads_the_contrast_not_two_significances():
    """Issue 40.4: model a's drop is significant with the original variants and not with matched ones,
    but the contrast of the two (not significant) decides: no 'differs'; model b's two drops are both
    significant, yet the contrast says the drop is larger with the original numbers."""
    rows = [
        _row("all", 1, "a", 0.6, 0.001), _row("all", 2, "a", 0.7, 0.01), _row("matched", 1, "a", 0.95, 0.6),
        _row("all", 1, "b", 0.3, 0.001), _row("all", 2, "b", 0.55, 0.002), _row("matched", 1, "b", 0.6, 0.003),
        _row("all", 1, "c", 0.9, 0.5), _row("all", 2, "c", 0.95, 0.7), _row("matched", 1, "c", 1.0, 0.9),
        _row("all", 2, "a", 0.8, 0.01, term="gamma_c"),
    ]
    contrast = pd.DataFrame([_contrast("a", 0.63, 0.2, False), _contrast("b", 0.5, 0.004, True)])
    t = side_by_side(pd.DataFrame(rows), "gsm", alpha=0.05, contrast=contrast).set_index("model")
    assert t.loc["a", "differs"] == "" and t.loc["b", "differs"] == "larger drop with GSM-Variants"
    assert t.loc["c", "differs"] == "n/a"                      # no contrast computed for c
    assert t.loc["a", "ex1_p_holm_below_alpha"] and not t.loc["a", "ex4_p_holm_below_alpha"]
    assert np.isclose(t.loc["a", "ex1_p_holm"], 0.003)        # Holm within each column's family (3 models)
    md = side_by_side_markdown(t.reset_index(), 0.05, {"statistic": 0.04, "pvalue": 0.6, "n_base": 280,
                                                       "n_variants": 14000})
    assert "| a | 0.60 [0.48, 0.72] p=0.003 * |" in md and "K-S D = 0.0400" in md
    assert "| 0.50 [0.35, 0.65] p=0.004 * | larger drop with GSM-Variants |" in md
    assert side_by_side(pd.DataFrame(rows), "gsm").set_index("model").loc["a", "differs"] == "n/a"


def _fits(variant_effect, number_effect, seed, matched_templates=None):
    from earnest.stats.engines import run_shard
    from earnest.stats.glmm import validate_glmm_input
    from earnest.stats.simulate import simulate_number_matched

    v, m = simulate_number_matched(60, 10, variant_effect=variant_effect, number_effect=number_effect, seed=seed,
                                   matched_templates=matched_templates)
    v, m = validate_glmm_input(v, 1), validate_glmm_input(m, 1)
    return (run_shard(v, 1, 200, base_seed=seed + 1, cores=1, engine="laplace"), v,
            run_shard(m, 1, 200, base_seed=seed + 1, cores=1, engine="laplace"), m)


def test_the_contrast_finds_a_number_effect_and_not_a_shared_drop():
    from earnest.stats.contrast import paired_contrast

    number = paired_contrast(*_fits(0.0, -1.0, 3))
    assert number["p_boot"] < 0.05 and not number["degenerate"] and number["ci_high"] < 1.0
    assert -1.0 > number["ci_low_log"] - 0.5 and number["ci_low_log"] < -1.0 < number["ci_high_log"] + 0.6
    shared = paired_contrast(*_fits(-1.0, 0.0, 3))           # both sets drop alike: the truth is 0
    assert shared["p_boot"] > 0.05 and shared["ci_low_log"] < 0.0 < shared["ci_high_log"]
    assert number["n_pairs"] == shared["n_pairs"] == 200


def test_the_contrast_pairs_only_resamples_of_the_same_templates():
    from earnest.stats.contrast import paired_contrast
    from earnest.stats.engines import run_shard

    sv, v, sm, m = _fits(0.0, -1.0, 5)
    fewer = m[m["template"] < 50]                             # GSM-Base rows of 10 templates gone
    with pytest.raises(ValueError, match="different templates"):
        paired_contrast(sv, v, run_shard(fewer, 1, 20, base_seed=6, engine="laplace"), fewer)
    with pytest.raises(ValueError, match="same seeds"):
        paired_contrast(sv, v, run_shard(m, 1, 20, base_seed=99, engine="laplace"), m)


def test_contrasts_per_model_holm_and_degenerate_carry_over():
    """The workflow's path: contrasts() over models, Holm across them, and a model whose Ex4 fit the
    summaries call degenerate is never a finding, whatever its P."""
    from earnest.gsm.ex4 import contrasts

    groups = {"a": dict(zip(("variants_matched", "matched"), [(s, d) for s, d in
                                                            zip(*[iter(_fits(0.0, -1.2, 7))] * 2)])),
              "b": dict(zip(("variants_matched", "matched"), [(s, d) for s, d in
                                                            zip(*[iter(_fits(0.0, -1.2, 8))] * 2)]))}
    summ = pd.DataFrame([_row("variants_matched", 1, "a", 0.4, 0.001), _row("matched", 1, "a", 1.0, 0.9),
                         _row("variants_matched", 1, "b", 0.4, 0.001), _row("matched", 1, "b", 1.0, 0.9)])
    summ["degenerate"] = [False, False, False, True]
    summ["significant_holm"], summ["p_holm"] = True, 0.01
    out = contrasts(groups, summ, "gsm").set_index("model")
    assert out.loc["a", "contrast_significant_holm"] and not out.loc["b", "contrast_significant_holm"]
    assert out.loc["b", "contrast_degenerate"] and "GSM-Matched: not estimable" in out.loc["b", "contrast_problems"]
    est = out[~out["contrast_degenerate"].astype(bool)]             # a not-estimable contrast has no Holm P
    assert (est["contrast_p_holm"] >= est["contrast_p_boot"]).all() and out.loc["b", "contrast_p_holm"] != out.loc["b", "contrast_p_holm"]


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
    assert line.split(" | ")[1] == "§" and "e-0" not in md      # not estimable: the mark alone, no P (issue 50.4)


def test_dose_rows_and_figure(tmp_path):
    rows = [_row("matched", 1, "a", 0.9, 0.3), _row("shifted1", 1, "a", 0.7, 0.01),
            _row("shifted2", 1, "a", 0.5, 0.001), _row("all", 1, "a", 0.6, 0.001)]
    d = dose_rows(pd.DataFrame(rows), "gsm")
    assert list(d.digits_added) == [0, 1, 2] and list(d.odds_ratio) == [0.9, 0.7, 0.5]
    png, pdf, svg = dose_response(d, tmp_path / "f")
    assert png.name == "f.png" and png.stat().st_size > 1000 and pdf.read_bytes()[:4] == b"%PDF"
    assert "<svg" in svg.read_text(encoding="utf-8")[:2000]      # what the report shows


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
