"""Separation check (Table 19), Wald mismatch (Table 16), non-convergent fits (17-18), GLMM input
from scored tables and the reasoning-only comparison (Appendix G)."""

import pandas as pd
import pytest

from earnest.stats import diagnostics
from earnest.gsm import reasoning
from earnest.stats.glmm import GLMMInputError
from earnest.gsm.glmm_input import code_error_mask, glmm_input_from_scored
from earnest.stats.summaries import build_summaries


def _rows(template, base, variants):
    out = [{"template": template, "variant": 0, "correct": base}]
    out += [{"template": template, "variant": 1, "correct": c} for c in variants]
    return out


def test_separation_check_counts_templates():
    rows = (_rows(0, 1, [0] * 10)            # base right, variants 0 %: split of 100 pp
            + _rows(1, 1, [1] * 10)          # all correct: constant
            + _rows(2, 0, [0] * 10)          # all wrong: constant
            + _rows(3, 0, [1] * 8 + [0] * 2)  # split of exactly 80 pp: not "more than 80"
            + _rows(4, 1, [1] * 5 + [0] * 5))
    r = diagnostics.separation_check(pd.DataFrame(rows))
    assert r["large_split"] == pytest.approx(20.0)
    assert r["constancy"] == pytest.approx(40.0)
    assert r["acc_base"] == pytest.approx(60.0) and r["n_templates"] == 5


def _summary(**kw):
    base = {"analysis": "all", "glmm": 1, "model": "m", "prompt": "gsm", "term": "variant", "p_boot": 0.2,
            "wald_p": 0.2, "wald_converged": True, "wald_messages": "", "wald_max_grad": 1e-5,
            "wald_tol": 0.002, "wald_singular": False, "n_resamples": 100, "n_clean": 100, "n_errors": 0,
            "n_singular": 0, "n_base": 10, "n_variants": 40, "acc_base": 50.0, "acc_variants": 40.0,
            "delta_var": -10.0, "median_log_or": -0.4, "odds_ratio": 0.67, "ci_low_log": -1.0, "ci_high_log": 0.2,
            "ci_low": 0.37, "ci_high": 1.2, "ranef_var_mean": 1.0, "ranef_var_sd": 0.1, "wald_estimate": -0.4,
            "wald_se": 0.2}
    base.update(kw)
    return base


def test_wald_mismatch_and_nonconvergent():
    s = pd.DataFrame([
        _summary(model="a", p_boot=0.01, wald_p=0.2),
        _summary(model="b", p_boot=0.3, wald_p=0.01, wald_converged=False,
                 wald_messages="Model failed to converge with max|grad| = 0.160006 (tol = 0.002, component 1)"),
        _summary(model="c", p_boot=0.01, wald_p=0.02),
        _summary(model="d", glmm=2, term="gamma_c", p_boot=0.5, wald_p=0.04),
        # a degenerate fit (no correct answer) is significant by neither call, so it is no mismatch
        _summary(model="e", p_boot=0.01, wald_p=0.2, acc_base=0.0, acc_variants=0.0),
    ])
    s = build_summaries(s)
    mm = diagnostics.wald_mismatches(s)
    assert mm["model"].tolist() == ["a", "d", "b"]      # bootstrap-significant first, non-convergent last
    assert mm["bootstrap_significant"].tolist() == [True, False, False]
    assert s.set_index("model")["wald_mismatch"].to_dict() == {"a": True, "b": True, "c": False, "d": True, "e": False}
    nc = diagnostics.nonconvergent_fits(s, 1)
    assert nc["model"].tolist() == ["b"]
    assert nc["diagnostics"].iloc[0] == "max|grad| = 0.160006 (tol = 0.002, component 1)"
    assert diagnostics.nonconvergent_fits(s, 2).empty


def _scored(model="m", prompt="simple_code"):
    rows = []
    for t in range(3):
        rows.append({"model": model, "prompt": prompt, "dataset": "gsm_base", "template_id": t,
                     "correct": True, "gamma": 1.0 + t, "error_class": ""})
        for i, cls in enumerate(["", "wrong_answer", "syntax_error", "none_returned"]):
            rows.append({"model": model, "prompt": prompt, "dataset": "gsm_variants", "template_id": t,
                         "correct": cls == "", "gamma": 2.0 + i, "error_class": cls})
    return pd.DataFrame(rows)


def test_glmm_input_from_scored_and_reasoning_only():
    sc = _scored()
    full = glmm_input_from_scored([sc[sc.dataset == "gsm_base"], sc[sc.dataset == "gsm_variants"]])
    assert list(full.columns) == ["model", "prompt", "template", "variant", "correct", "gamma"]
    assert len(full) == 15 and full["variant"].sum() == 12 and full["correct"].sum() == 6
    assert code_error_mask(sc).sum() == 6
    ro = glmm_input_from_scored(sc, reasoning_only=True)
    assert len(ro) == 9 and ro["variant"].sum() == 6       # code errors gone, wrong answers kept
    assert code_error_mask(sc.assign(error_class=sc.error_class.replace("wrong_answer", "Wrong answer"))).sum() == 6


def test_scored_errors_name_source_and_column():
    sc = _scored()
    with pytest.raises(GLMMInputError, match=r"x\.parquet: missing column 'gamma'"):
        glmm_input_from_scored(sc.drop(columns="gamma"), source="x.parquet")
    with pytest.raises(GLMMInputError, match="column 'dataset' holds \\['gsm_other'\\]"):
        glmm_input_from_scored(sc.assign(dataset="gsm_other"))
    with pytest.raises(GLMMInputError, match="'correct' must be boolean or 0/1"):
        glmm_input_from_scored(sc.assign(correct=2))


def test_reasoning_only_comparison():
    cols = dict(glmm=1, model="m", prompt="simple_code", term="variant", n_base=100, n_clean=50)
    all_s = pd.DataFrame([{**cols, "delta_var": -4.4, "p_boot": 0.04, "median_log_or": -0.60, "n_variants": 5000,
                           "significant_uncorrected": True}])
    ro_s = pd.DataFrame([{**cols, "delta_var": -4.2, "p_boot": 0.067, "median_log_or": -0.565, "n_variants": 4975,
                          "n_base": 100, "significant_uncorrected": False}])
    r = reasoning.reasoning_only_comparison(all_s, ro_s).iloc[0]
    assert r.exclusion_rate == pytest.approx(0.5)
    assert r.estimate_delta == pytest.approx(0.035)
    assert bool(r.significance_changed) is True
    assert r.exclusion_rate_rows == pytest.approx(100 * 25 / 5100)


def _summary_row(**kw):
    base = dict(analysis="all", glmm=1, model="m", prompt="gsm", term="variant", n_base=10, n_variants=40,
                acc_base=50.0, acc_variants=40.0, n_resamples=100, n_clean=95, n_singular=0,
                wald_converged=True, wald_messages="")
    base.update(kw)
    return pd.Series(base)


def test_fit_problems_in_words():
    from earnest.stats.diagnostics import fit_problems, fit_problems_table

    assert fit_problems(_summary_row()) == ("ok", [])
    verdict, words = fit_problems(_summary_row(acc_base=0.0, acc_variants=0.0))
    assert verdict == "degenerate" and "no correct answer" in words[0]
    # complete separation in the variant indicator (issue 50): estimable, a caution that says how
    verdict, words = fit_problems(_summary_row(acc_base=0.0, acc_variants=5.0, prior="normal prior"))
    assert verdict == "caution" and "complete separation" in words[0] and "0/10" in words[0] and "2/40" in words[0]
    assert "penalised fit's estimate is finite" in words[0]
    verdict, words = fit_problems(_summary_row(acc_base=0.0, acc_variants=5.0))
    assert verdict == "degenerate" and "unpenalised odds ratio diverges" in words[0]
    # separation in the variant indicator does not make the gamma_c effect degenerate by itself
    assert fit_problems(_summary_row(acc_base=0.0, acc_variants=5.0, term="gamma_c"))[0] == "ok"
    verdict, words = fit_problems(_summary_row(n_clean=30, n_singular=4, wald_converged=False,
                                               wald_messages="Model failed to converge with max|grad| = 0.2 (tol = 0.002)"))
    assert verdict == "caution" and len(words) == 3 and "30 of 100" in words[0] and "max|grad|" in words[2]
    table = fit_problems_table(pd.DataFrame([_summary_row(), _summary_row(model="z", acc_base=100.0, acc_variants=100.0)]))
    assert list(table["verdict"]) == ["ok", "degenerate"]
