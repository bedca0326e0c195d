"""The laplace engine against lme4: R's template draws, the Laplace deviance at the same parameters,
lme4's checkConv messages, estimates and clean flags on the same resamples (GLMM 1 and 2, high and
low accuracy, near-separation, singular fits, one template, no correct answers), and the shard and
summary plumbing. Needs R with lme4 and rpy2 (the comparisons are with lme4 itself)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from earnest.stats import engines as E
from earnest.stats import glmm as G
from earnest.stats.engines import laplace as L
from earnest.stats import rbridge
from earnest.stats.rdraws import r_sample_draws, template_counts
from earnest.stats.simulate import simulate_glmm_input
from earnest.stats.summary import summarise


def _data(glmm, **kw):
    args = dict(n_templates=24, n_variants=6, variant_effect=-0.7, gamma_effect=-0.3, seed=11)
    args.update(kw)
    return G.validate_glmm_input(simulate_glmm_input(**args), glmm)


@pytest.mark.parametrize("n", [1, 2, 7, 100, 70_000])
def test_template_draws_are_rs(n):
    ro = rbridge.r()
    seeds = [1, 12345, 2 ** 31 - 1, G.resample_seed(5, 3)]
    ours = r_sample_draws(seeds, n)
    for s, row in zip(seeds, ours):
        got = ro.r(f'set.seed({s}L, kind = "Mersenne-Twister", normal.kind = "Inversion", '
                   f'sample.kind = "Rejection"); sample.int({n}L, {n}L, replace = TRUE) - 1L')
        assert row.tolist() == list(got)
    counts = template_counts(seeds, n)
    assert (counts.sum(axis=1) == n).all()


def _lme4_deviance(frame, glmm, seed, points):
    """lme4's Laplace deviance (PIRLS iterated to convergence) of the resample with ``seed`` at each
    parameter point (theta, beta...)."""
    ro = rbridge.r()
    ro.globalenv["d_test"] = rbridge.to_r_frame(frame)
    f = ro.r(f"""local({{ d <- earnest_resample(d_test, earnest_template_rows(d_test), {seed}L)
        glmer(earnest_formula({glmm}L), data = d, family = binomial, devFunOnly = TRUE,
              control = glmerControl(tolPwrss = 1e-13)) }})""")
    return np.array([f(ro.FloatVector(p))[0] for p in points])


@pytest.mark.parametrize("glmm", [1, 2])
def test_deviance_equals_lme4s_at_the_same_parameters(glmm):
    """sum_t k_t d_t on a resample with duplicated templates is lme4's deviance of that resample
    (every draw its own cluster) at any parameters: same function, constants included."""
    df = _data(glmm)
    frame = G.model_frame(df, glmm)
    des = L.Design.from_frame(frame, glmm)
    seed = G.resample_seed(5, 3)
    K = template_counts([seed], des.n_templates).astype(float)
    assert K.max() >= 2                                  # some template is drawn twice
    fit = L.fit_arrays(des, K)
    points = [fit.par[0], fit.par[0] + 0.3, np.r_[0.2, -0.5 * np.ones(des.X.shape[1])]]
    ours = np.array([L._evaluate(des, None, np.asarray(p)[None], np.zeros((1, des.n_templates)), K, False)[0][0]
                     for p in points])
    theirs = _lme4_deviance(frame, glmm, seed, points)
    assert np.allclose(ours, theirs, rtol=1e-6, atol=0)
    assert ours[0] < ours[1] and ours[0] < ours[2]       # and ours is at the minimum


@pytest.mark.parametrize("g,H", [
    ([1e-5, 2e-5, 1e-5], [[4.0, 0.5, 0.1], [0.5, 3.0, 0.2], [0.1, 0.2, 2.0]]),      # clean
    ([0.05, 0.01, 0.0], [[4.0, 0.5, 0.1], [0.5, 3.0, 0.2], [0.1, 0.2, 2.0]]),       # gradient
    ([1e-5, 1e-5, 1e-5], [[4.0, 0.5, 0.1], [0.5, 3e6, 0.2], [0.1, 0.2, 2.0]]),      # large eigenvalue
    ([1e-5, 1e-5, 1e-5], [[4.0, 0.5, 0.1], [0.5, -3.0, 0.2], [0.1, 0.2, 2.0]]),     # negative eigenvalue
    ([1e-5, 1e-5, 1e-5], [[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 2.0]]),      # singular Hessian
])
def test_check_conv_gives_lme4s_messages(g, H):
    ro = rbridge.r()
    par = [1.2, 0.4, -0.3]
    fn = ro.r("""function(g, H, par) {
        H <- matrix(H, 3, 3, byrow = TRUE)
        res <- suppressWarnings(lme4:::checkConv(list(gradient = g, Hessian = H), par,
                                                 ctrl = glmerControl()$checkConv, lbound = 0))
        unique(as.character(unlist(res$messages))) }""")
    theirs = list(fn(ro.FloatVector(g), ro.FloatVector(np.ravel(H)), ro.FloatVector(par)))
    ours = L.check_conv(np.array(g), np.array(H, dtype=float), np.array(par))
    assert ours == theirs


def test_very_large_eigenvalue_test_is_left_out_above_ten_thousand_answers():
    """The absolute eigenvalue test grows with n; above 10,000 answers only the scale-free tests run."""
    H = np.diag([4.0, 1.5e6, 2.0])
    g = np.array([1e-5, 1e-5, 1e-5])
    assert any("very large eigenvalue" in m for m in L.check_conv(g, H, np.ones(3)))
    assert L.check_conv(g, H, np.ones(3), absolute_eigen=False) == []
    H[0, 0] = 1e-3                                       # the ratio test still runs
    assert any("large eigenvalue ratio" in m for m in L.check_conv(g, H, np.ones(3), absolute_eigen=False))


SCENARIOS = {
    "high accuracy": dict(intercept=2.0),
    "low accuracy": dict(intercept=-1.8),
    # many templates answered all correctly (their random intercepts far out), effects identified
    "near separation": dict(intercept=2.5, ranef_sd=1.5),
    "singular": dict(ranef_sd=0.0, n_templates=10, n_variants=4, intercept=0.3, seed=5),
}


@pytest.mark.parametrize("glmm", [1, 2])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_estimates_and_clean_flags_agree_with_lme4(glmm, scenario):
    """On the same resamples: where both call a fit clean, estimates within 1e-4 of lme4 with its
    inner PIRLS converged (the same deviance), and the same clean and singular calls."""
    df = _data(glmm, **SCENARIOS[scenario])
    shard = E.run_shard(df, glmm, 5, base_seed=9, engine="laplace")
    check = E.cross_check(df, glmm, shard, 5, base_seed=9)
    verdict = E.check_summary(check)
    assert verdict["checked"] == 5
    assert verdict["warning"] == "", (scenario, check.to_string())
    per = check.drop_duplicates("resample")
    assert (per["converged"] == per["tight_converged"]).all()
    both = check["converged"] & check["tight_converged"]
    if scenario == "singular":
        assert shard["singular"].astype(bool).any()
        assert (shard.loc[shard["singular"].astype(bool), "lme4_messages"].str.contains("singular")).all()
    else:
        assert both.any()
        far = check["abs_diff"] > 1e-4                   # only where lme4 stopped at a worse point
        assert (check.loc[far, "deviance_gap"] > 0).all()


@pytest.mark.parametrize("glmm", [1, 2])
def test_one_template_and_no_correct_answers_fail_as_in_lme4(glmm):
    one = _data(glmm, n_templates=1)
    none = _data(glmm)
    none["correct"] = 0
    for df in (one, none):
        lap = E.run_shard(df, glmm, 2, base_seed=1, engine="laplace")
        lme = E.run_shard(df, glmm, 2, base_seed=1, engine="lme4")
        assert lap["estimate"].isna().all() and not lap["converged"].any()
        assert lap["error"].tolist() == lme["error"].tolist() != ["", ""]


def test_weights_are_duplicated_clusters():
    """A weight of 2 is the same fit as the template's rows twice under two cluster ids."""
    df = _data(2, n_templates=10)
    des = L.Design.from_input(df, 2)
    K = np.ones((1, 10))
    K[0, 3], K[0, 7] = 2, 0
    a = L.fit_arrays(des, K)
    frame = G.model_frame(df, 2)
    dup = pd.concat([frame[frame["template"] != 7], frame[frame["template"] == 3].assign(template=99)])
    b = L.fit_arrays(L.Design.from_frame(dup, 2), np.ones((1, 10)))
    assert np.allclose(a.par, b.par, atol=1e-7)
    assert a.clean[0] and b.clean[0]


def test_many_fits_at_once_api_for_power_analysis():
    """fit_weighted fits simulated outcomes on one design (power analysis) in one call; workers
    do not change the results."""
    df = _data(1, n_templates=12)
    des = L.Design.from_input(df, 1)
    rng = np.random.default_rng(0)
    S = 20
    p = 1 / (1 + np.exp(-(0.5 - 0.8 * des.X[:, 1])))
    y = rng.binomial(des.trials.astype(int)[None, :].repeat(S, 0), p[None, :])
    W = np.ones((S, des.n_templates))
    one = L.fit_weighted(des, 1, W, y=y)
    two = L.fit_weighted(des, 1, W, y=y, workers=2)
    pd.testing.assert_frame_equal(one, two)
    assert list(one.columns) == list(G.SHARD_COLUMNS)
    v = one[one["term"] == "variant"]["estimate"]
    assert v.nunique() == S and abs(v.median() + 0.8) < 0.5
    # the same outcomes as the design's own data: the same fit as without y
    same = L.fit_weighted(des, 1, W[:1], y=des.y[None, :].repeat(1, 0))
    plain = L.fit_weighted(des, 1, W[:1])
    assert np.allclose(same["estimate"], plain["estimate"])


def test_laplace_shards_summaries_and_tables_name_the_engine(tmp_path):
    from earnest.gsm import paper_tables
    from earnest.stats.run import run_glmm

    df = _data(1, n_templates=12)
    summaries, refits, checks = run_glmm(df, 1, 6, 3, tmp_path / "shards", n_shards=2, cores=1,
                                         engine="laplace", check_resamples=2, log=lambda m: None)
    assert (summaries["engine"] == "laplace").all() and len(refits) == 0
    assert len(checks) == 2 and (checks["checked"] == 2).all() and (checks["warning"] == "").all()
    shard = pd.read_parquet(tmp_path / "shards" / "glmm1" / "sim" / "gsm" / "shard-0.parquet")
    assert (shard["engine"] == "laplace").all()
    from earnest.stats.summaries import build_summaries
    paths = paper_tables.write_stats_tables(build_summaries(summaries), tmp_path / "tables")
    text = (tmp_path / "tables" / "glmm1_variant_gsm.md").read_text()
    # the summary carries the shards' cross-check (engine_check_*) as the workflow's does, so the
    # tables say so on both paths
    assert (summaries["engine_check_resamples"] == 4).all()
    assert "Fitted by GLMM 1: the laplace engine, checked against lme4 on 4 resamples" in text and paths
    # a rerun with the other engine does not reuse the laplace shards
    s2, _, c2 = run_glmm(df, 1, 6, 3, tmp_path / "shards", n_shards=2, cores=1, engine="lme4",
                         log=lambda m: None)
    assert (s2["engine"] == "lme4").all() and len(c2) == 0


def test_lme4_versions_refused_with_a_reason():
    assert rbridge.lme4_supported("1.1-31") and rbridge.lme4_supported("1.1-35.5")
    assert not rbridge.lme4_supported("1.1-38") and not rbridge.lme4_supported("2.0-1")
    assert rbridge.check_lme4() == rbridge.lme4_version()      # the installed one runs


def test_earnest_glmm_engine_laplace(tmp_path, capsys):
    from earnest.cli import main

    path = tmp_path / "in.csv"
    _data(2, n_templates=15).to_csv(path, index=False)
    out = tmp_path / "out"
    assert main(["glmm", str(path), "--glmm", "2", "--resamples", "6", "--seed", "2", "--out", str(out),
                 "--engine", "laplace", "--check-resamples", "2", "--cores", "1"]) == 0
    err = capsys.readouterr().err
    assert "(laplace engine)" in err and "checked against lme4 on 2 resamples" in err
    check = pd.read_csv(out / "engine_check_glmm2.csv", keep_default_na=False)
    assert check["checked"].tolist() == [2] and check["warning"].tolist() == [""]
    # where the estimates differ by more than 1e-4, lme4's point has the higher deviance
    assert check["max_abs_diff"].iloc[0] < 1e-4 or check["lme4_short"].iloc[0] >= 1
    assert (pd.read_csv(out / "summary_glmm2.csv")["engine"] == "laplace").all()
    assert "the laplace engine" in (out / "tables" / "glmm2_variant.md").read_text()


SEPARATION_CASE = Path(__file__).parent / "data" / "laplace" / "power_sim_30x10_or1.csv"


def test_modes_converge_far_out_and_a_power_data_set_that_stopped_the_engine_fits():
    """A simulated power data set (30 templates x 10 variants, OR = 1) whose bootstrap stopped the
    engine with "conditional modes did not converge": a line search probed theta ~ -1e4, where every
    mu saturates and the modes moved 3 per step. Every resample now fits, and a sample of them
    agrees with lme4 (PIRLS converged)."""
    df = G.validate_glmm_input(pd.read_csv(SEPARATION_CASE), 1)
    des = L.Design.from_input(df, 1)
    P = np.array([[-10205.1, -1618.7, 19.97]])
    U = L._solve_modes(L._Batch(des, None), P, np.zeros((1, des.n_templates)))
    S1, _ = L._Batch(des, None).light(P, U)
    assert np.abs(U - P[:, :1] * S1).max() < 1e-6          # the mode equation holds
    shard = E.run_shard(df, 1, 100, 1985460996, engine="laplace")
    assert (shard["error"] == "").all()
    verdict = E.check_summary(E.cross_check(df, 1, shard, 6, 1985460996))
    assert verdict["checked"] == 6 and verdict["warning"] == "", verdict


def _screening_designs():
    """Small and paper-like designs across accuracies, template variances (0 = singular) and effects:
    clean fits, singular ones, near-separation and fits lme4's checks flag."""
    rng = np.random.default_rng(8)
    for glmm in (1, 2):
        for k in range(8):
            raw = simulate_glmm_input(int(rng.choice([5, 10, 30, 100])), int(rng.choice([3, 10, 50])),
                                      variant_effect=float(rng.uniform(-2, 1)),
                                      gamma_effect=float(rng.uniform(-1, 0.5)) if glmm == 2 else 0.0,
                                      intercept=float(rng.uniform(-4, 4.5)),
                                      ranef_sd=float(rng.choice([0.0, 0.05, 0.5, 1.5, 3.0])), seed=100 + k)
            yield glmm, k, raw


def test_screened_checks_give_deriv12s_messages():
    """checks="screened" decides checkConv from the exact derivatives where deriv12's error bound
    leaves no doubt and runs deriv12 elsewhere: the same messages as deriv12 at every fit, most
    clean fits screened, and where deriv12 was skipped its measured error is far inside the bound."""
    eps = np.finfo(float).eps
    fits = screened = clean = 0
    for glmm, k, raw in _screening_designs():
        des = L.Design.from_input(G.validate_glmm_input(raw, glmm), glmm)
        _, K = L.resample_weights(des.n_templates, np.arange(40), 99 + k)
        full = L.fit_arrays(des, K, checks=L.DERIV12)
        fast = L.fit_arrays(des, K, checks=L.SCREENED)
        assert fast.messages == full.messages, (glmm, k)
        np.testing.assert_array_equal(fast.par, full.par)
        assert not full.screened.any()
        fits += len(K)
        screened += int(fast.screened.sum())
        clean += int(full.clean.sum())
        sc = fast.screened
        assert np.isnan(fast.hessian[sc]).all() and np.isfinite(full.hessian[sc]).all()
        if sc.any():                                      # deriv12's actual error, against the bound
            fabs = np.abs(full.deviance[sc]) + 2 * np.abs(L._Batch(des, None).const * K[sc]).sum(axis=1)
            err_g = np.abs(full.gradient - full.exact_gradient)[sc].max(axis=1)
            assert (err_g < 0.1 * L.SCREEN_ROUND * eps * fabs / L.DERIV_DELTA
                    + 0.1 * L.SCREEN_TRUNC * L.DERIV_DELTA ** 2 * np.abs(des.X).max()
                    * np.abs(np.diagonal(full.exact_hessian[sc], axis1=1, axis2=2)).max(axis=1)).all()
    assert fits == 640 and screened > 0.8 * clean, (screened, clean)


def test_checks_mode_is_validated():
    des = L.Design.from_input(_data(1), 1)
    with pytest.raises(ValueError, match="checks must be one of deriv12, screened"):
        L.fit_arrays(des, np.ones((1, des.n_templates)), checks="exact")


# Hard designs (issues 24.7 and 25), each fitted by both engines on the same resamples.
def _hard(name):
    sim = lambda **kw: simulate_glmm_input(40, 20, **kw)  # noqa: E731
    if name == "variants 99.5%, GSM-Base all right":
        raw = sim(variant_effect=-0.7, intercept=6.0, ranef_sd=0.5, seed=3)
    elif name == "GSM-Base 97.5%: one answer wrong":
        raw = sim(variant_effect=-2.0, intercept=5.0, ranef_sd=0.5, seed=3)
        raw.loc[raw.index[raw["variant"] == 0][:1], "correct"] = 0
    elif name == "2%: one GSM-Base answer right":
        raw = sim(variant_effect=-0.3, intercept=-3.9, ranef_sd=0.5, seed=5)
        raw.loc[raw.index[raw["variant"] == 0][:1], "correct"] = 1
    elif name == "GSM-Base all wrong":
        raw = sim(variant_effect=0.5, intercept=0.0, ranef_sd=1.0, seed=5)
        raw.loc[raw["variant"] == 0, "correct"] = 0
    else:                                                 # "a template always right"
        raw = sim(variant_effect=-0.5, intercept=0.0, ranef_sd=1.0, seed=5)
        raw.loc[raw["template"] == 0, "correct"] = 1
    return G.validate_glmm_input(raw, 1)


HARD = ["variants 99.5%, GSM-Base all right", "GSM-Base 97.5%: one answer wrong", "2%: one GSM-Base answer right",
        "GSM-Base all wrong", "a template always right"]


@pytest.mark.parametrize("name", HARD)
def test_hard_designs_resample_by_resample_against_lme4(name):
    """A separated resample has no optimum: laplace's Newton does not converge there and says so in
    lme4's own channel, so it is clean under neither rule; lme4's defaults stop wherever the deviance
    turns flat and call some of those fits clean at |estimate| > 10 (lme4 errs there; the summaries'
    degenerate rule catches it). Elsewhere the verdicts are lme4's, and where only lme4 flags a fit it
    is its gradient check on its inexact deviance: lme4 with PIRLS converged calls it clean too."""
    from earnest.stats.summary import clean_mask, not_converged_mask
    df = _hard(name)
    B, seed = 20, 5
    lap = E.run_shard(df, 1, B, seed, engine="laplace")
    lme = E.run_shard(df, 1, B, seed, engine="lme4")
    v = lambda s: s[s["term"] == "variant"].reset_index(drop=True)  # noqa: E731
    a, b = v(lap), v(lme)
    sep = L.separated_resamples(df, range(B), seed)
    nc = not_converged_mask(a).to_numpy()
    laplace_clean = {m: clean_mask(a, m).to_numpy() for m in ("reference", "earnest")}
    lme4_clean = {m: clean_mask(b, m).to_numpy() for m in ("reference", "earnest")}
    for m in laplace_clean:
        assert not (laplace_clean[m] & (nc | sep)).any(), m          # never clean where not converged
    flagged = nc | a["singular"].fillna(False).astype(bool).to_numpy() | (a["error"] != "").to_numpy()
    assert flagged[sep].all()                                        # every separated resample
    assert a.loc[nc, "lme4_messages"].str.contains("did not converge").all()
    # lme4's clean fits on separated resamples: estimates beyond +-10 (no optimum; lme4 stopped)
    assert (b.loc[lme4_clean["reference"] & sep, "estimate"].abs() > 10).all()
    assert not sep.all() or not lme4_clean["reference"].any() or summarise(
        lme, df, 1, model="m", prompt="p", fidelity="reference")["median_log_or"].abs().iloc[0] > 10
    both = laplace_clean["reference"] & lme4_clean["reference"]
    assert (np.abs(a["estimate"] - b["estimate"])[both] < 2e-3).all()
    only_laplace = np.flatnonzero(laplace_clean["earnest"] & ~lme4_clean["earnest"])
    if only_laplace.size:
        assert b.loc[only_laplace, "messages"].str.contains("max|grad|", regex=False).all()
        check = E.cross_check(df, 1, lap[lap["resample"].isin(only_laplace)], len(only_laplace), seed)
        assert check.drop_duplicates("resample")["tight_converged"].all()
    assert not (~laplace_clean["reference"] & lme4_clean["reference"] & ~sep).any()
    # the summaries count the fits that did not converge, and judge as a statistician would
    from earnest.stats.summaries import build_summaries
    s = build_summaries(summarise(lap, df, 1, model="m", prompt="p", fidelity="reference"))
    assert s["n_not_converged"].iloc[0] == nc.sum()
    assert s["n_clean_reference"].iloc[0] == laplace_clean["reference"].sum() == s["n_clean"].iloc[0]
    assert s["n_clean_earnest"].iloc[0] == laplace_clean["earnest"].sum()
    assert s["degenerate"].iloc[0] == (sep.all() or name == "variants 99.5%, GSM-Base all right")
    if not s["degenerate"].iloc[0]:
        assert abs(s["median_log_or"].iloc[0]) < 10 and s["ci_low_log"].iloc[0] > -10 and s["ci_high_log"].iloc[0] < 10


def test_boundary_against_an_interior_minimum_either_way():
    """Near-perfect GSM-Variants with some GSM-Base answers wrong: the Laplace deviance's profile in
    theta has a minimum at theta = 0 and one inside. On resamples 2 and 15 lme4 (defaults and PIRLS
    converged alike) stops at theta = 0 and calls the fit singular though the inside is lower by
    > 0.1: laplace's interior fit is clean, lme4 errs, and the engine check says so
    (lme4_stopped_short) instead of warning. On resample 60 theta = 0 is the lower one (by 0.03):
    laplace finds it too and gives lme4's singular verdict and estimate."""
    raw = simulate_glmm_input(100, 50, variant_effect=1.5, intercept=4.0, ranef_sd=0.5, seed=10)
    df = G.validate_glmm_input(raw, 1)
    lap = L.bootstrap(df, 1, [2, 15, 60], 77)
    check = E.cross_check(df, 1, lap, 3, 77)
    per = check.drop_duplicates("resample").set_index("resample")
    assert not per["default_converged"].any() and not per["tight_converged"].any()
    assert per["default_messages"].str.contains("singular").all()
    assert per.loc[[2, 15], "converged"].all() and (per.loc[[2, 15], "deviance_gap"] > 0.1).all()
    assert not per.loc[60, "converged"] and "singular" in per.loc[60, "messages"]
    v = check[check["term"] == "variant"].set_index("resample")
    assert abs(v.loc[60, "estimate"] - v.loc[60, "tight_estimate"]) < 1e-4
    verdict = E.check_summary(check)
    assert verdict["lme4_stopped_short"] == 2 and verdict["warning"] == ""
    # the reference drops singular fits: the engines agree on resample 60 only (both singular); earnest
    # counts them, so lme4's singular stops on 2 and 15 are clean fits too and all three agree
    assert verdict["clean_agree_tight_reference"] == 1 and verdict["clean_agree_tight_earnest"] == 3


def test_full_data_fit_flagged_only_by_lme4s_inexact_deviance():
    """2% accuracy, 100 templates x 51 answers: lme4's default full-data fit on per-answer rows fails
    its gradient check (max|grad| 0.027); with its PIRLS converged it is clean, at laplace's clean
    estimate. The summary says so (wald_tight_converged, in fit_problems' words). The paper's unpenalised
    glmer (reference mode; earnest mode's penalised fit is another fit)."""
    from earnest.stats.diagnostics import fit_problems
    from earnest.stats.run import summarise_group
    raw = simulate_glmm_input(100, 50, variant_effect=-0.3, intercept=-3.9, ranef_sd=0.5, seed=3)
    df = G.validate_glmm_input(raw, 1)
    shards = L.bootstrap(df, 1, range(4), 3)
    s, refits = summarise_group(df, shards, 1, refit_nonconvergent=False, engine="lme4", fidelity="reference")
    row = s.iloc[0]
    assert row["wald_converged"] is False or row["wald_converged"] == 0
    assert "max|grad|" in row["wald_messages"] and bool(row["wald_tight_converged"])
    verdict, words = fit_problems(row.to_dict() | {"n_not_converged": 0})
    assert "with lme4's PIRLS converged (tolPwrss = 1e-12) it converges" in "; ".join(words)
    lap = L.full_fit(df, 1)
    assert lap.converged and abs(lap.coefs["estimate"].iloc[1] - row["wald_estimate"]) < 1e-3
