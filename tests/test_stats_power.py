"""Power of the template-bootstrap test, the minimum detectable OR, and the paper's scenarios."""

import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from earnest.gsm import power_design as D
from earnest.stats import power as P


def test_intercept_gives_the_stated_accuracy_over_templates():
    for acc, var in [(0.5, 7.0), (0.19, 6.53), (0.9, 17.4), (0.3, 0.0)]:
        b0 = P.intercept_for_accuracy(acc, var)
        assert P.marginal_accuracy(b0, var) == pytest.approx(acc, abs=1e-9)
    # the simulated GSM-Base answers have that accuracy (many templates, no effect on base items)
    df = P.simulate_design(4000, 1, odds_ratio=0.5, baseline_acc=0.3, ranef_var=6.0, seed=3)
    base = df[df["variant"] == 0]["correct"].mean()
    assert base == pytest.approx(0.3, abs=0.025)
    with pytest.raises(P.PowerError, match="strictly between 0 and 1"):
        P.intercept_for_accuracy(0.0, 5.0)


def test_simulation_uses_the_same_random_numbers_for_every_odds_ratio():
    a = P.simulate_design(30, 4, odds_ratio=1.0, baseline_acc=0.5, ranef_var=4.0, seed=11)
    b = P.simulate_design(30, 4, odds_ratio=0.2, baseline_acc=0.5, ranef_var=4.0, seed=11)
    # base items do not depend on the variant effect: identical; variant items can only get worse
    assert (a[a.variant == 0]["correct"].to_numpy() == b[b.variant == 0]["correct"].to_numpy()).all()
    assert (b[b.variant == 1]["correct"].to_numpy() <= a[a.variant == 1]["correct"].to_numpy()).all()


def test_wald_approximation_matches_the_papers_bootstrap_spread(repo):
    """Known answer: at the paper's design the Wald standard error of the variant log OR is close
    to what the paper's own bootstrap intervals (Table 3) imply, and never larger than them by
    much (the bootstrap's percentile interval is wider at high accuracy)."""
    t = D.published_results(repo / "resources" / "published")
    ratios = []
    for r in t.itertuples():
        se = P.wald_se(100, 50, odds_ratio=r.odds_ratio, baseline_acc=r.acc_base / 100, ranef_var=r.ranef_variance)
        ratios.append(se / ((math.log(r.ci_high) - math.log(r.ci_low)) / 3.92))
    ratios = np.array(ratios)
    assert 0.7 < ratios.min() and ratios.max() < 1.05
    assert np.median(ratios) == pytest.approx(0.9, abs=0.08)
    # power of the Wald test: alpha at OR 1, increasing in the effect, ~1 for a huge effect
    kw = dict(baseline_acc=0.5, ranef_var=7.0)
    assert P.wald_power(100, 50, odds_ratio=1.0, **kw) == pytest.approx(0.05, abs=1e-9)
    pw = [P.wald_power(100, 50, odds_ratio=o, **kw) for o in (0.9, 0.7, 0.5, 0.3)]
    assert all(np.diff(pw) > 0) and pw[-1] > 0.98
    mde = P.wald_mde(100, 50, **kw)
    assert P.wald_power(100, 50, odds_ratio=mde, **kw) == pytest.approx(0.8, abs=1e-6)
    assert P.wald_mde(200, 50, **kw) > mde  # more templates, a smaller detectable effect (closer to 1)


def test_number_effect_wald_information_is_the_slope_information_of_the_design():
    """Known answers for GLMM 2's Wald approximation: at OR 1 the slope's information per template
    lies just below the complete-data value n E[p(1-p)] gamma_sd^2 (the unknown template intercept
    costs a little, never more), the slope is orthogonal to the intercept and variant terms, and
    the power is alpha at OR 1, rises with the OR on either side and with the design."""
    b0 = P.intercept_for_accuracy(0.5, 2.0)
    info = P.gamma_template_information(b0, 0.0, 2.0, 20, gamma_sd=1.5)
    z = np.random.default_rng(0).normal(size=400_000)
    p = 1 / (1 + np.exp(-(b0 + math.sqrt(2.0) * z)))
    complete = 21 * np.mean(p * (1 - p)) * 1.5 ** 2
    assert 0.9 * complete < info[2, 2] < complete * 1.001
    assert abs(info[2, 0]) < 0.01 * info[2, 2] and abs(info[2, 1]) < 0.01 * info[2, 2]
    # with no template variance nothing is lost: the information is the logistic regression's
    info0 = P.gamma_template_information(0.0, 0.0, 0.0, 20, gamma_sd=1.5)
    assert info0[2, 2] == pytest.approx(21 * 0.25 * 1.5 ** 2, rel=0.01)
    # twice the spread of gamma: four times the information, half the standard error
    kw = dict(odds_ratio=1.0, baseline_acc=0.5, ranef_var=2.0, effect="gamma")
    assert P.wald_se(60, 20, gamma_sd=3.0, **kw) == pytest.approx(P.wald_se(60, 20, gamma_sd=1.5, **kw) / 2, rel=0.02)
    kw.pop("odds_ratio")
    assert P.wald_power(60, 20, odds_ratio=1.0, **kw) == pytest.approx(0.05, abs=1e-9)
    pw = [P.wald_power(60, 20, odds_ratio=o, **kw) for o in (1.02, 1.05, 1.1, 1.25)]
    assert all(np.diff(pw) > 0) and pw[-1] > 0.99
    assert P.wald_power(60, 20, odds_ratio=1 / 1.1, **kw) == pytest.approx(pw[2], abs=0.02)
    mde = P.wald_mde(60, 20, **kw)
    assert 0.85 < mde < 1 and P.wald_power(60, 20, odds_ratio=mde, **kw) == pytest.approx(0.8, abs=1e-6)
    assert P.wald_mde(120, 20, **kw) > mde
    with pytest.raises(P.PowerError, match="gamma_sd"):
        P.wald_se(60, 20, gamma_sd=0.0, **dict(kw, odds_ratio=1.0))


@pytest.mark.slow
@pytest.mark.parametrize("effect", ["variant", "gamma"])
def test_simulated_power_agrees_with_the_wald_approximation_at_a_large_design(effect):
    """At 60 templates x 20 variants, at the OR where the Wald approximation gives 50% power (where
    a wrong standard error shows most), the bootstrap test's simulated power (laplace engine)
    agrees with it within 3 Monte Carlo standard errors."""
    sc = P.Scenario("s", 0.5, 2.0)
    orr = P.wald_mde(60, 20, baseline_acc=0.5, ranef_var=2.0, effect=effect, target=0.5)
    n = 80
    row = P.power_point(60, 20, orr, sc, effect=effect, n_sims=n, n_resamples=50, seed=11, engine="laplace")
    assert row["wald_power"] == pytest.approx(0.5, abs=1e-6)
    assert row["clean_share"] > 0.99
    assert abs(row["power"] - 0.5) < 3 * math.sqrt(0.25 / n)


@pytest.mark.slow
def test_number_effect_known_answers_strong_effect_and_no_effect():
    """A strong number effect (OR 2 per unit of gamma, Wald power ~1) is detected in every data
    set; with no effect the rejection rate is compatible with alpha."""
    sc = P.Scenario("s", 0.5, 2.0)
    strong = P.power_point(30, 10, 2.0, sc, effect="gamma", n_sims=20, n_resamples=50, seed=4, engine="laplace")
    assert strong["wald_power"] > 0.999 and strong["power"] == 1.0 and strong["gamma_sd"] == 1.5
    n = 150
    null = P.power_point(30, 10, 1.0, sc, effect="gamma", n_sims=n, n_resamples=50, seed=4, engine="laplace")
    from scipy import stats
    assert null["n_no_p"] == 0
    assert stats.binomtest(null["n_p_below_alpha"], n, 0.05).pvalue > 0.01, null["n_p_below_alpha"]


def _power_table(ors, powers, n=400):
    rows = []
    for o, p in zip(ors, powers):
        k = round(p * n)
        lo, hi = P.wilson(k, n)
        rows.append({"scenario": "s", "effect": "variant", "n_templates": 100, "n_variants": 50, "baseline_acc": 0.5,
                     "ranef_var": 7.0, "odds_ratio": o, "log_or": math.log(o), "n_sims": n, "n_resamples": 100,
                     "alpha": 0.05, "engine": "lme4", "n_p_below_alpha": k, "power": k / n,
                     "mc_se": math.sqrt(k / n * (1 - k / n) / n), "power_ci_low": lo, "power_ci_high": hi})
    return pd.DataFrame(rows)


def test_mde_interpolates_in_log_or_on_a_monotone_curve():
    t = _power_table([1.0, 0.7, 0.5, 0.35], [0.05, 0.3, 0.7, 0.9])
    m = P.minimum_detectable_or(t).iloc[0]
    # between OR 0.5 (power 0.7) and 0.35 (0.9): halfway in log OR
    assert m["mde_or"] == pytest.approx(math.exp((math.log(0.5) + math.log(0.35)) / 2), rel=1e-9)
    assert m["mde_bound"] == "" and m["mde_or_mc_low"] < m["mde_or"] < m["mde_or_mc_high"]
    assert m["wald_mde_or"] == pytest.approx(P.wald_mde(100, 50, baseline_acc=0.5, ranef_var=7.0))
    # a non-monotone blip is pooled, not read as a crossing
    t2 = _power_table([1.0, 0.7, 0.5, 0.35], [0.05, 0.85, 0.75, 0.95])
    assert P.isotonic([0.05, 0.85, 0.75, 0.95]).tolist() == pytest.approx([0.05, 0.8, 0.8, 0.95])
    assert P.minimum_detectable_or(t2).iloc[0]["mde_or"] == pytest.approx(0.6, abs=0.1)
    # never reached: a bound at the grid's largest effect, not an extrapolation
    t3 = _power_table([1.0, 0.7, 0.5], [0.05, 0.2, 0.5])
    m3 = P.minimum_detectable_or(t3).iloc[0]
    assert m3["mde_bound"] == "beyond grid" and m3["mde_or"] == pytest.approx(0.5)


def test_paper_scenarios_come_from_tables_2_and_3(repo):
    sc = D.published_scenarios(repo / "resources/published", ["median", "phi-2"])
    assert sc[0].baseline_acc == pytest.approx(0.535) and sc[0].ranef_var == pytest.approx(7.15)
    assert sc[1] == P.Scenario("phi-2", 0.60, 6.14)
    assert len(D.published_tables_2_3(repo / "resources/published")) == 20
    with pytest.raises(P.PowerError, match="neither a model"):
        D.published_scenarios(repo / "resources/published", ["gpt-9"])


def test_design_mde_of_real_results_says_why_it_is_missing(tmp_path):
    s = pd.DataFrame([
        {"analysis": "all", "glmm": 1, "model": "m", "prompt": "gsm", "term": "variant", "n_base": 100,
         "n_variants": 5000, "acc_base": 50.0, "ranef_var_mean": 7.0, "ci_low_log": -1.0, "ci_high_log": 0.2},
        {"analysis": "all", "glmm": 1, "model": "z", "prompt": "gsm", "term": "variant", "n_base": 10,
         "n_variants": 30, "acc_base": 0.0, "ranef_var_mean": float("nan"), "ci_low_log": float("nan"),
         "ci_high_log": float("nan")},
        # the run's reasoning-only analysis excluded every answer: no accuracy, no design (and no failure)
        {"analysis": "reasoning_only", "glmm": 1, "model": "z", "prompt": "simple_code", "term": "variant",
         "n_base": 0, "n_variants": 0, "acc_base": float("nan"), "ranef_var_mean": float("nan"),
         "ci_low_log": float("nan"), "ci_high_log": float("nan")},
    ])
    t = P.design_mde_table(s)
    assert len(t) == 2
    assert t.loc[0, "mde_or"] == pytest.approx(P.wald_mde(100, 50, baseline_acc=0.5, ranef_var=7.0))
    assert t.loc[0, "n_variants_per_template"] == 50
    assert t.loc[0, "mde_or_observed"] == pytest.approx(math.exp(-2.8016 * 1.2 / 3.92), rel=1e-3)
    assert math.isnan(t.loc[1, "mde_or"]) and "no OR is detectable" in t.loc[1, "mde_note"]
    # the report's table shows the summaries table's own verdicts, not recomputed ones
    full = s.assign(alpha=0.05, significant_uncorrected=[False] * 3, significant_holm=[False] * 3, p_holm=[1.0] * 3,
                    prompt_label="GSM prompt (Ex1)", odds_ratio=[0.6, float("nan"), float("nan")], ci_low=[0.37, float("nan"), float("nan")],
                    ci_high=[1.22, float("nan"), float("nan")], p_boot=[0.2, float("nan"), float("nan")])
    paths = P.write_results_mde_table(full, tmp_path / "results_mde")
    md = paths["md"].read_text()
    assert "0.60 [0.37, 1.22]" in md and "no (Holm: no)" in md and f"{t.loc[0, 'mde_or']:.2f}" in md
    with pytest.raises(P.PowerError, match="missing columns"):
        P.write_results_mde_table(s, tmp_path / "x")


@pytest.mark.slow
def test_a_strong_effect_is_always_detected_and_no_effect_rarely():
    sc = P.Scenario("s", 0.5, 2.0)
    # (an odds ratio of 0.05 on 20 x 5 items leaves resamples without a correct GSM-Variants answer: the
    # summaries call such fits degenerate, never significant, and so does the power study)
    strong = P.power_point(20, 5, 0.15, sc, n_sims=4, n_resamples=80, seed=2, engine="lme4")
    assert strong["power"] == 1.0 and strong["n_no_p"] == 0 and strong["fits"] == 320
    null = P.power_point(20, 5, 1.0, sc, n_sims=4, n_resamples=80, seed=2, engine="lme4")
    assert null["n_p_below_alpha"] <= 1


def test_cli_refuses_a_run_without_a_scenario(tmp_path):
    r = subprocess.run([sys.executable, "-m", "earnest.cli", "power", "--out", str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "no scenario" in r.stderr
    r = subprocess.run([sys.executable, "-m", "earnest.cli", "power", "--baseline-acc", "1.5", "--ranef-var", "2",
                        "--out", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 2 and "strictly between 0 and 1" in r.stderr


def test_cli_refuses_an_unbounded_design_before_any_fit(tmp_path):
    """--templates 100000000 would simulate 5.1e9 answers per data set; refused, naming the options,
    and nothing is written. The library refuses the same grid before its first fit."""
    out = tmp_path / "out"
    for extra, message in ((["--templates", "100000000"], "--templates 100000000 with --variants 50: "
                                                          "100000000 templates x (1 + 50 variants) = 5,100,000,000"),
                           (["--templates", "100", "--variants", "10000"], "--templates 100 with --variants 10000"),
                           (["--templates", "1"], "--templates: 1 is less than the minimum of 2")):
        r = subprocess.run([sys.executable, "-m", "earnest.cli", "power", "--baseline-acc", "0.8", "--ranef-var", "1",
                            "--engine", "laplace", *extra, "--out", str(out)], capture_output=True, text=True)
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not out.exists()
    sc = P.Scenario("s", 0.8, 1.0)
    with pytest.raises(P.PowerError, match="more than 1,000,000"):
        P.power_study([sc], [10, 100_000_000], [50], [1.0], n_sims=1, n_resamples=2, engine="laplace")
    with pytest.raises(P.PowerError, match="must be integers"):
        P.simulate_design(1e8, 50, odds_ratio=1.0, baseline_acc=0.8, ranef_var=1.0)


def test_cli_writes_power_and_mde_tables_and_the_figure(tmp_path):
    """The laplace engine makes a real (tiny) run fast enough for a unit test."""
    r = subprocess.run([sys.executable, "-m", "earnest.cli", "power", "--paper-scenario", "phi-2", "--templates", "12",
                        "--variants", "3", "--odds-ratios", "1", "0.05", "--sims", "3", "--resamples", "20",
                        "--effects", "variant", "gamma", "--gamma-sd", "2",
                        "--engine", "laplace", "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    power = pd.read_csv(tmp_path / "power.csv")
    assert list(power.odds_ratio) == [0.05, 1.0] * 2 and set(power.scenario) == {"phi-2"}
    assert (power.fits == 60).all() and power.engine.eq("laplace").all()
    assert power.loc[0, "power"] >= power.loc[1, "power"]
    # both effects carry the Wald power: alpha at OR 1
    assert list(power.effect) == ["variant"] * 2 + ["gamma"] * 2
    assert power.wald_power[power.odds_ratio == 1.0].tolist() == pytest.approx([0.05, 0.05])
    assert power.gamma_sd.isna().tolist() == [True, True, False, False] and (power.gamma_sd[2:] == 2.0).all()
    mde = pd.read_csv(tmp_path / "mde.csv")
    assert mde.effect.tolist() == ["variant", "gamma"]
    sc = D.published_scenarios(D.default_published_dir(), ["phi-2"])[0]
    want = [P.wald_mde(12, 3, baseline_acc=sc.baseline_acc, ranef_var=sc.ranef_var, effect=e, gamma_sd=2.0)
            for e in ("variant", "gamma")]
    assert mde.wald_mde_or.tolist() == pytest.approx(want, nan_ok=True)
    assert (tmp_path / "power_curves.png").stat().st_size > 10_000
    assert "GLMM fits" in r.stderr and "fits/s" in r.stderr


def test_the_eq4_test_level_depends_on_the_number_of_resamples():
    """Known answers: with an exact bootstrap the Eq. 4 test rejects when at most k = ceil(alpha B / 2)
    - 1 resamples lie beyond 0, so its level is about 2 (k + 1) / (B + 1): 0.0594 at B = 100 (the
    false-positive rate power_validity.py measures there), alpha at B = 200 and 2000; a direct
    simulation of the count agrees."""
    assert P.bootstrap_test_level(100) == pytest.approx(6 / 101, abs=2e-4)
    assert P.bootstrap_test_level(2000) == pytest.approx(0.05, abs=1e-3)
    assert P.bootstrap_test_level(200) == pytest.approx(0.05, abs=1e-3)
    assert P.bootstrap_test_level(20) == pytest.approx(2 / 21, abs=1e-3)
    rng = np.random.default_rng(0)
    q = rng.uniform(0, 0.5, 200_000)
    sim = np.mean(2 * rng.binomial(100, q) / 100 < 0.05)
    assert sim == pytest.approx(P.bootstrap_test_level(100), abs=0.003)


def test_cli_takes_scenarios_and_design_from_a_runs_summaries_table(tmp_path):
    """`earnest power --from-summary`: one scenario per GLMM 1 variant result (its GSM-Base accuracy
    and mean template variance), the grid's design from the first result (templates = GSM-Base
    answers, variants per template); a result with no correct base answer is skipped, saying why."""
    s = pd.DataFrame([
        {"analysis": "all", "glmm": 1, "model": "m", "prompt": "gsm", "term": "variant", "n_base": 14,
         "n_variants": 42, "acc_base": 40.0, "ranef_var_mean": 3.0},
        {"analysis": "all", "glmm": 2, "model": "m", "prompt": "gsm", "term": "variant", "n_base": 14,
         "n_variants": 42, "acc_base": 40.0, "ranef_var_mean": 9.0},
        {"analysis": "all", "glmm": 1, "model": "z", "prompt": "gsm", "term": "variant", "n_base": 14,
         "n_variants": 42, "acc_base": 0.0, "ranef_var_mean": float("nan")},
    ])
    s.to_csv(tmp_path / "summaries.csv", index=False)
    r = subprocess.run([sys.executable, "-m", "earnest.cli", "power", "--from-summary", str(tmp_path / "summaries.csv"),
                        "--odds-ratios", "1", "0.2", "--sims", "2", "--resamples", "10", "--engine", "laplace",
                        "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    power = pd.read_csv(tmp_path / "out" / "power.csv")
    assert set(power.scenario) == {"m / gsm"} and len(power) == 2
    assert (power.n_templates == 14).all() and (power.n_variants == 3).all()
    assert power.baseline_acc.eq(0.4).all() and power.ranef_var.eq(3.0).all()
    assert "z / gsm" in r.stderr and "skipped" in r.stderr
    bad = tmp_path / "bad.csv"
    s.drop(columns="acc_base").to_csv(bad, index=False)
    r = subprocess.run([sys.executable, "-m", "earnest.cli", "power", "--from-summary", str(bad), "--out",
                        str(tmp_path / "o2")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "acc_base" in r.stderr


@pytest.mark.parametrize("change, message", [
    # NaN / text counts: "cannot convert float NaN to integer", "invalid literal for int()": no file, no column
    ({"n_base": float("nan")}, "column 'n_base' must hold integer counts, found nan in data row 1"),
    ({"glmm": "one"}, "column 'glmm' must hold integer ids, found 'one' in data row 1"),
    ({"n_base": -6}, "column 'n_base' is a count of answers, found -6 in data row 1"),
    # an accuracy of 150% was "skipped" as if it were 100%
    ({"acc_base": 150.0}, "column 'acc_base' must be a percentage (0 to 100), found 150.0 in data row 1"),
    # 2,000,000 variants: numpy's MemoryError (310 GiB at 10**12) computing the design's MDE
    ({"n_variants": 2_000_000}, "data row 1: 14 + 2,000,000 answers, more than 1,000,000 in one result"),
    ({"n_variants": 10**12}, "column 'n_variants' holds 1000000000000 in data row 1; counts must lie within"),
])
def test_from_summary_names_the_file_column_and_row_of_a_bad_design(tmp_path, capsys, change, message):
    from earnest.cli import main
    row = {"analysis": "all", "glmm": 1, "model": "m", "prompt": "gsm", "term": "variant", "n_base": 14,
           "n_variants": 42, "acc_base": 40.0, "ranef_var_mean": 3.0}
    path = tmp_path / "summaries.csv"
    pd.DataFrame([{**row, **change}]).to_csv(path, index=False)
    assert main(["power", "--from-summary", str(path), "--sims", "1", "--resamples", "2", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"earnest power: {path}: {message}" in err and "Traceback" not in err, err
    path.write_bytes(b"")
    assert main(["power", "--from-summary", str(path), "--out", str(tmp_path / "o")]) == 2
    assert f"earnest power: {path}: empty file" in capsys.readouterr().err


def test_the_power_table_explains_its_null_row(tmp_path):
    """Issue 50: the OR = 1 row is a false-positive rate, shown with its Wilson interval and the
    rate the Eq. 4 test should show at its B (not alpha), with whether the interval holds it."""
    t = _power_table([1.0, 0.6], [0.15, 0.6], n=20)
    for col, value in (("n_no_p", 0), ("clean_share", 1.0), ("n_engine_fallback", 0), ("wald_power", 0.05),
                       ("seconds", 1.0), ("fits", 2000), ("gamma_sd", float("nan"))):
        t[col] = value
    notes = [P.null_row_note(r) for r in t.itertuples()]
    assert notes[0] == ("false-positive rate: 3/20, expected at most 0.059 (Eq. 4's exact level at B = 100, alpha "
                        "0.05); within Monte Carlo error") and notes[1] == ""
    far = t.iloc[[0]].assign(n_p_below_alpha=12, power=0.6, power_ci_low=P.wilson(12, 20)[0],
                             power_ci_high=P.wilson(12, 20)[1])
    assert "ABOVE it beyond Monte Carlo error" in P.null_row_note(next(far.itertuples()))
    paths = P.write_power_tables(t, pd.DataFrame(columns=list(P.MDE_COLUMNS)), tmp_path)
    md = paths["power"]["md"].read_text()
    assert "wilson_95" in md and "[0.052, 0.360]" in md and "expected at most 0.059" in md
    assert "The OR = 1 rows are the test's false-positive rate" in md
