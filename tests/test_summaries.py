"""The summaries table (earnest.stats.summaries): one definition of significant, degenerate, Holm,
the Wald disagreement, prompt labels and Ex2 membership, and the Ex1 -> Ex2 rule read from it."""

import numpy as np
import pandas as pd
import pytest

from earnest.stats.summaries import (SUMMARIES_COLUMNS, SummariesError, build_summaries, ex2_selection,
                                     figure2_models, read_summaries, write_summaries)


def _row(model, p, *, prompt="gsm", glmm=1, term="variant", wald_p=np.nan, acc_base=50.0, acc_variants=40.0):
    return {"analysis": "all", "glmm": glmm, "model": model, "prompt": prompt, "term": term, "n_resamples": 100,
            "n_clean": 98, "n_errors": 0, "n_singular": 0, "median_log_or": -0.4, "odds_ratio": float(np.exp(-0.4)),
            "ci_low_log": -0.8, "ci_high_log": -0.1, "ci_low": 0.45, "ci_high": 0.9, "p_boot": p,
            "ranef_var_mean": 1.0, "ranef_var_sd": 0.3, "acc_base": acc_base, "acc_variants": acc_variants,
            "delta_var": acc_variants - acc_base, "n_base": 10, "n_variants": 50, "wald_estimate": -0.4,
            "wald_se": 0.1, "wald_p": wald_p, "wald_converged": True, "wald_singular": False,
            "wald_max_grad": 1e-5, "wald_tol": 0.002, "wald_messages": ""}


def test_one_definition_of_significant_and_degenerate():
    rows = pd.DataFrame([
        _row("a", 0.01, wald_p=0.01),
        _row("b", 0.02, wald_p=0.30),                              # Wald disagrees
        _row("c", 0.01, acc_base=0.0, acc_variants=0.0),            # no correct answer: degenerate
        _row("d", 0.40, wald_p=0.01),
        _row("e", np.nan),                                          # no clean estimate: no p
    ])
    table = build_summaries(rows, {"gsm": "GSM prompt (Ex1)"}, alpha=0.05, ex2_models=["a"])
    assert list(table.columns[:len(SUMMARIES_COLUMNS)]) == list(SUMMARIES_COLUMNS)
    t = table.set_index("model")
    assert t["significant_uncorrected"].to_dict() == {"a": True, "b": True, "c": False, "d": False, "e": False}
    # no correct answer and no P value (no clean estimate): not estimable
    assert t["degenerate"].to_dict() == {"a": False, "b": False, "c": True, "d": False, "e": True}
    assert t.loc["c", "fit_verdict"] == "degenerate" and "no correct answer" in t.loc["c", "fit_problems"]
    # Holm across the models of the prompt (3 P values: a fit that is not estimable, c, and one without a
    # P value, e, test nothing)
    assert t["p_holm"].tolist()[:4] == pytest.approx([0.03, 0.04, np.nan, 0.4], nan_ok=True)
    assert t["significant_holm"].to_dict() == {"a": True, "b": True, "c": False, "d": False, "e": False}
    assert t["wald_mismatch"].to_dict() == {"a": False, "b": True, "c": False, "d": True, "e": False}
    assert set(t["prompt_label"]) == {"GSM prompt (Ex1)"} and t["ex2"].to_dict()["a"] and not t.loc["b", "ex2"]
    assert (t["alpha"] == 0.05).all()


def test_ex1_to_ex2_rule_reads_the_table(tmp_path):
    rows = pd.DataFrame([_row("a", 0.01), _row("b", 0.3), _row("c", 0.01, acc_base=0.0, acc_variants=0.0),
                         _row("a", 0.001, prompt="simple_nl")])
    path = write_summaries(build_summaries(rows), tmp_path / "ex1" / "summaries.parquet")
    chosen, decisions = ex2_selection(read_summaries(path), "gsm")
    assert chosen == ["a"]
    assert decisions["c"]["verdict"] == "degenerate" and decisions["c"]["selected"] is False
    assert decisions["b"] == {"p_boot": 0.3, "verdict": "ok", "problems": [], "selected": False}


def test_labels_default_to_the_prompt_name_and_figure_models():
    t = build_summaries(pd.DataFrame([_row("a", 0.5), _row("b", 0.5, prompt="simple_nl")]), {"gsm": ""},
                        ex2_models=["b"])
    assert dict(zip(t["prompt"], t["prompt_label"])) == {"gsm": "gsm", "simple_nl": "simple_nl"}
    assert figure2_models(t) == ["b"]


def test_holm_counts_a_missing_p_in_reference_mode_only():
    """A model without a P value (no clean resample) stays in its Holm family in reference mode, as
    the authors' multipletests keeps it; earnest mode corrects the tests that were made."""
    ps = {"a": 0.01, "b": 0.02, "c": 0.03, "d": np.nan}
    rows = pd.DataFrame([_row(m, p) for m, p in ps.items()])
    ref = build_summaries(rows.assign(fidelity="reference")).set_index("model")["p_holm"]
    ear = build_summaries(rows.assign(fidelity="earnest")).set_index("model")["p_holm"]
    assert ref[["a", "b", "c"]].tolist() == pytest.approx([0.04, 0.06, 0.06]) and np.isnan(ref["d"])
    assert ear[["a", "b", "c"]].tolist() == pytest.approx([0.03, 0.04, 0.04]) and np.isnan(ear["d"])
    assert build_summaries(rows)["p_holm"].tolist()[:3] == pytest.approx([0.03, 0.04, 0.04])   # no column: earnest
    mixed = rows.assign(fidelity=["reference", "reference", "earnest", "earnest"])
    with pytest.raises(SummariesError, match="x.parquet: rows of more than one fidelity mode"):
        build_summaries(mixed, source="x.parquet")
    with pytest.raises(SummariesError, match="column 'fidelity': 'paper' is not a fidelity mode"):
        build_summaries(rows.assign(fidelity="paper"))


def test_bad_rows_are_named():
    with pytest.raises(SummariesError, match=r"3 files: missing column\(s\) p_boot"):
        build_summaries(pd.DataFrame([_row("a", 0.1)]).drop(columns="p_boot"), source="3 files")
    with pytest.raises(SummariesError, match="more than one row for analysis all, GLMM 1, model a"):
        build_summaries(pd.DataFrame([_row("a", 0.1), _row("a", 0.2)]))


def test_estimates_beyond_ten_log_odds_of_unpenalised_fits():
    """Issue 25's three tables, on unpenalised fits (no prior: shards written before earnest mode
    penalised its fits, or by another tool): in earnest mode an interval stretched to -17.57 by
    diverging fits, and one to +17.08, are not estimable, never significant; an ordinary row is
    untouched; resamples that did not converge are stated. In reference mode (issue 54) the authors'
    procedure decides alone: a 'significant' effect made of diverging fits (median -19.1, interval
    [-19.46, -18.89], p 0) is significant there, with earnest's note beside it."""
    def row(model, med, lo, hi, p, **kw):
        r = _row(model, p)
        r.update(median_log_or=med, ci_low_log=lo, ci_high_log=hi, **kw)
        return r
    rows = pd.DataFrame([row("b", 1.2, -17.57, 2.21, 0.04, engine="laplace"),
                         row("c", -0.9, -2.03, 17.08, 0.03, engine="lme4"),
                         row("d", -0.4, -0.8, -0.1, 0.01, n_not_converged=6)])
    t = build_summaries(rows).set_index("model")
    assert t["degenerate"].to_dict() == {"b": True, "c": True, "d": False}
    assert set(t.loc[["b", "c"], "verdict"]) == {"not estimable"}
    assert not t.loc[["b", "c"], "significant_uncorrected"].any() and t.loc["d", "significant_uncorrected"]
    assert "interval's lower end -17.57" in t.loc["b", "fit_problems"] and "upper end 17.08" in t.loc["c", "fit_problems"]
    assert t.loc["d", "fit_verdict"] == "caution" and "6 of 100 resamples did not converge" in t.loc["d", "fit_problems"]
    # with a prior (earnest mode's penalised fits) the same numbers are what the fits say: no refusal
    pen = build_summaries(rows.assign(prior="normal prior")).set_index("model")
    assert not pen["degenerate"].any()
    ref = build_summaries(pd.DataFrame([row("a", -19.1, -19.46, -18.89, 0.0, engine="laplace",
                                            fidelity="reference")])).set_index("model")
    assert ref.loc["a", "verdict"] == "significant" and not ref.loc["a", "degenerate"]
    assert "beyond +-10 log-odds (median -19.10, interval's lower end -19.46" in ref.loc["a", "fit_problems"]


def test_an_interval_interpolated_from_a_diverged_estimate_is_degenerate():
    """lme4 on per-answer rows (benchmarks/engine_verdicts.py): 26 ordinary clean estimates and one
    of a separated resample at -14 give the interval [-9.28, 3.27], its lower end inside +-10 but
    interpolated from -14: degenerate too. One such estimate the percentiles do not touch is not."""
    from earnest.stats.summary import diverged_order_statistics, percentile_interval
    rng = np.random.default_rng(1)
    theta = np.r_[rng.uniform(1.1, 3.3, 26), -14.0]
    lo, hi = percentile_interval(theta)
    assert -10 < lo < 0 and diverged_order_statistics(theta)
    assert not diverged_order_statistics(np.r_[rng.uniform(1.1, 3.3, 100), -14.0])
    r = _row("a", 0.08)
    r.update(median_log_or=float(np.median(theta)), ci_low_log=lo, ci_high_log=hi, diverged=True, n_diverged=1)
    t = build_summaries(pd.DataFrame([r, _row("b", 0.08)])).set_index("model")
    assert t["degenerate"].to_dict() == {"a": True, "b": False}
    assert "built from 1 bootstrap estimate beyond +-10 log-odds" in t.loc["a", "fit_problems"]


def test_a_bootstrap_p_of_zero_is_below_two_over_n_not_zero():
    """Issue 40.6 and 50.4: twenty models whose 200 estimates all lie below 0 (Eq. 4: P = 0). In earnest
    mode P is below 2/200, Eq. 4's smallest non-zero value, displayed "<0.01", and Holm corrects the
    bound: 20 x 0.01 = 0.2, so none is significant after Holm, and the table says why: unresolved at
    this B, B >= 801 would resolve it (2/B < 0.05/20); the authors' rule (reference mode) keeps 0."""
    from earnest.gsm.paper_tables import variant_effect_table
    from earnest.stats.summary import p_bound

    assert p_bound(0.0, 200, "earnest") == pytest.approx(0.01)
    assert np.isnan(p_bound(0.01, 200, "earnest")) and np.isnan(p_bound(0.0, 200, "reference"))
    rows = pd.DataFrame([{**_row(f"m{k}", 0.0), "n_clean": 200, "fidelity": "earnest", "p_bound": 2 / 200}
                         for k in range(20)])
    s = build_summaries(rows)
    assert s["p_holm"].tolist() == pytest.approx([0.2] * 20)
    assert s["significant_uncorrected"].all() and not s["significant_holm"].any()
    assert set(s["verdict"]) == {"unresolved"} and set(s["resolving_resamples"]) == {801}
    assert "801" in s["verdict_reason"].iloc[0]
    display, _, _ = variant_effect_table(s, "gsm")
    assert set(display["P value"]) == {"<0.010"}
    assert set(display["Corrected P value"]) == {"<0.200 (unresolved: B ≥ 801)"}   # and the table says why          # the Holm value of a bound is a bound
    ref = build_summaries(rows.assign(fidelity="reference", p_bound=np.nan))
    assert (ref["p_holm"] == 0).all() and ref["significant_holm"].all()
