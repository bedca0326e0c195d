"""The lme4 engine through R: agreement with a direct glmer call, aggregation, resampling, shards,
diagnostics capture and input errors. Needs R with lme4 and rpy2."""

import numpy as np
import pandas as pd
import pytest

from earnest.stats import engines as E
from earnest.stats import glmm as G
from earnest.stats.engines import lme4 as L4
from earnest.stats import rbridge
from earnest.stats.simulate import simulate_glmm_input


@pytest.fixture(scope="module")
def data():
    raw = simulate_glmm_input(40, 10, variant_effect=-0.7, gamma_effect=-0.3, seed=11)
    return G.validate_glmm_input(raw, 2)


def _direct_glmer(df, formula):
    """Fixed effects of a plain lme4::glmer call written here, on the rows as given."""
    ro = rbridge.r()
    d = df.assign(gamma_c=df.gamma - df.gamma.mean())[["template", "variant", "correct", "gamma_c"]]
    ro.globalenv["d_test"] = rbridge.to_r_frame(d)
    res = ro.r(f"""local({{ d <- d_test; d$template <- factor(d$template)
        f <- glmer({formula}, data = d, family = binomial)
        c(fixef(f), ranef_var = as.numeric(VarCorr(f)$template[1, 1])) }})""")
    return dict(zip(res.names, list(res)))


@pytest.mark.parametrize("glmm,formula", [(1, "correct ~ variant + (1 | template)"),
                                          (2, "correct ~ variant + gamma_c + (1 | template)")])
def test_wald_fit_equals_direct_glmer(data, glmm, formula):
    direct = _direct_glmer(data, formula)
    w = L4.wald_fit(data, glmm)
    est = w.coefs.set_index("term")["estimate"]
    for term in G.TERMS[glmm]:
        assert est[term] == pytest.approx(direct[term], abs=1e-6)
    assert w.ranef_var == pytest.approx(direct["ranef_var"], rel=1e-5)
    assert w.converged and w.singular is False and w.max_grad < w.tol == 0.002
    c = w.coefs.set_index("term").loc["variant"]
    assert c["z"] == pytest.approx(c["estimate"] / c["se"])


@pytest.mark.parametrize("glmm", [1, 2])
def test_aggregated_rows_give_the_row_level_estimates(data, glmm):
    agg = G.model_frame(data, glmm, aggregate=True)
    rows = G.model_frame(data, glmm, aggregate=False)
    assert len(rows) == len(data) and agg["succ"].sum() == data["correct"].sum()
    if glmm == 1:
        assert len(agg) == 2 * data["template"].nunique()
    a = E.run_bootstrap(agg, glmm, [3, 4], base_seed=5)
    r = E.run_bootstrap(rows, glmm, [3, 4], base_seed=5)
    assert np.allclose(a["estimate"], r["estimate"], atol=2e-3)
    assert np.allclose(a["ranef_var"], r["ranef_var"], rtol=1e-2)


def test_resample_makes_duplicate_templates_distinct_clusters(data):
    ro = rbridge.r()
    frame = G.model_frame(data, 1)
    ro.globalenv["d_test"] = rbridge.to_r_frame(frame)
    out = rbridge.from_r_frame(ro.r("earnest_resample(d_test, earnest_template_rows(d_test), 123L)"))
    per_cluster = out.groupby("cluster")["template"].nunique()
    assert (per_cluster == 1).all()                       # a cluster is one draw of one template
    assert out["cluster"].nunique() == frame["template"].nunique()   # T draws -> T clusters
    drawn = out.drop_duplicates("cluster")["template"]
    assert drawn.duplicated().any()                       # with replacement: some template twice
    assert len(out) == 2 * out["cluster"].nunique()
    # the authors' labels: the same clusters named "<template>_<k>", levels in R's string order
    ref = ro.r('local({ x <- earnest_resample(d_test, earnest_template_rows(d_test), 123L, "reference"); '
               'list(cluster = as.character(x$cluster), levels = levels(x$cluster), '
               'sorted = sort(unique(as.character(x$cluster)))) })')
    labels = list(ref.rx2("cluster"))
    k = out["cluster"].astype(int).to_numpy() - 1          # draw labels are 1..T in draw order
    assert labels == [f"{t}_{i}" for t, i in zip(out["template"], k)]
    assert list(ref.rx2("levels")) == list(ref.rx2("sorted"))
    assert list(ref.rx2("levels")) != list(dict.fromkeys(labels))   # not draw order


def test_shards_do_not_change_results(data):
    whole = E.run_shard(data, 1, 9, base_seed=42, cores=2)
    parts = pd.concat([E.run_shard(data, 1, 9, base_seed=42, shard=i, n_shards=3, cores=1) for i in range(3)])
    assert sorted(parts["resample"].unique()) == list(range(9))
    m = whole.merge(parts, on=["resample", "term"])
    assert len(m) == 18
    assert (m["seed_x"] == m["seed_y"]).all()
    assert np.array_equal(m["estimate_x"].to_numpy(), m["estimate_y"].to_numpy())
    assert list(whole.columns) == list(G.SHARD_COLUMNS) + ["engine"]
    assert (whole["engine"] == "lme4").all()
    assert whole["estimate"].nunique() > 2                 # different resamples, different data
    other = E.run_shard(data, 1, 3, base_seed=43)
    assert not np.allclose(other["estimate"], whole["estimate"].iloc[:6])


def test_seeds_and_slices():
    assert G.resample_seed(1, 5) == G.resample_seed(1, 5) != G.resample_seed(1, 6)
    assert G.resample_seed(1, 5) != G.resample_seed(2, 5)
    slices = [G.shard_resamples(10, i, 3).tolist() for i in range(3)]
    assert slices == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    with pytest.raises(ValueError):
        G.shard_resamples(10, 3, 3)


def test_convergence_warnings_are_captured(data):
    ro = rbridge.r()
    frame = G.model_frame(data, 1, aggregate=False)
    ro.globalenv["d_test"] = rbridge.to_r_frame(frame)
    # an absurdly strict gradient tolerance makes lme4 warn; the engine must record, not print, it
    res = rbridge.from_r_list(ro.r(
        'earnest_wald(d_test, 1L, glmerControl(check.conv.grad = .makeCC("warning", tol = 1e-12, relTol = NULL)))'))
    assert not res["converged"]
    assert any("max|grad|" in m for m in res["messages"])
    assert res["tol"] == 1e-12


def test_refit_optimisers_listing6(data):
    out = L4.refit_optimisers(data, 1)
    assert list(dict.fromkeys(out["optimiser"])) == list(L4.OPTIMISERS)
    v = out[out["term"] == "variant"]["estimate"]
    assert v.max() - v.min() < 0.05        # all optimisers find the same optimum on clean data


def test_bad_input_names_column():
    df = simulate_glmm_input(3, 2, seed=1)
    with pytest.raises(G.GLMMInputError, match=r"f\.csv: missing column 'gamma'"):
        G.validate_glmm_input(df.drop(columns="gamma"), 2, source="f.csv")
    bad = df.assign(correct=df["correct"].astype(float))
    bad.loc[4, "correct"] = 0.5
    with pytest.raises(G.GLMMInputError, match=r"'correct' must be 0/1, found 0.5 in data row 5"):
        G.validate_glmm_input(bad, 1, source="f.csv")
    G.validate_glmm_input(df.drop(columns="gamma"), 1)     # GLMM 1 does not need gamma


# Every resample fitted with glmer() itself, record by record: what the fast path must reproduce.
_GLMER_PATH = """function(d, glmm, resamples, seeds, labels = "draw") {
  index <- earnest_template_rows(d)
  do.call(rbind, lapply(seq_along(resamples), function(k) earnest_record(
    earnest_fit_outcome(earnest_fit(earnest_resample(d, index, seeds[k], labels), glmm), glmm),
    glmm, resamples[k], seeds[k])))
}"""


def _both_paths(frame, glmm, resamples, base_seed, cores=1, labels="draw"):
    ro = rbridge.r()
    seeds = [G.resample_seed(base_seed, b) for b in resamples]
    args = (rbridge.to_r_frame(frame), glmm, ro.IntVector(resamples), ro.IntVector(seeds))
    fast = rbridge.from_r_frame(ro.globalenv["earnest_bootstrap"](*args, cores, labels)).drop(columns="path")
    slow = rbridge.from_r_frame(ro.r(_GLMER_PATH)(*args, labels))
    return fast, slow


@pytest.mark.parametrize("glmm", [1, 2])
@pytest.mark.parametrize("hard", [False, True])
@pytest.mark.parametrize("labels", G.CLUSTER_LABELS)
def test_bootstrap_fast_path_is_glmer_exactly(data, glmm, hard, labels):
    """The bootstrap builds the model frame once and takes glmer()'s steps per resample; estimates,
    variances, singular flags, warnings and errors must be bit-identical to glmer() on each resample,
    also where fits are singular or do not converge (few templates, near-separated data)."""
    df = data
    if hard:
        df = G.validate_glmm_input(simulate_glmm_input(6, 3, variant_effect=-1.0, gamma_effect=-0.3,
                                                       intercept=2.5, ranef_sd=0.2, seed=3), 2)
    frame = G.model_frame(df, glmm, aggregate=True)
    fast, slow = _both_paths(frame, glmm, list(range(8)), base_seed=17, labels=labels)
    pd.testing.assert_frame_equal(fast, slow, check_exact=True)
    assert fast["estimate"].notna().any()
    if hard:   # the hard data really exercise the warning paths
        assert (fast["messages"] != "").any() and not fast["converged"].all()


@pytest.mark.parametrize("cores", [1, 2])
def test_bootstrap_falls_back_to_glmer_when_the_fast_path_differs(data, cores):
    """With an lme4 whose glmer() takes other steps the fast path would drift: the shard's first
    resample is checked against glmer() (by whichever worker fits it) and the whole shard is then
    fitted by glmer()."""
    ro = rbridge.r()
    frame = G.model_frame(data, 1, aggregate=True)
    forget = "rm(list = ls(earnest_fast_path_checked), envir = earnest_fast_path_checked)"
    ro.r("earnest_design_fit_saved <- earnest_design_fit")
    ro.r(forget)
    try:
        # a fast path that is off by a little, as a changed glmer() would make it
        ro.r("""earnest_design_fit <- function(des, rows, ...) {
                  out <- earnest_design_fit_saved(des, rows, ...); out$estimate <- out$estimate + 1e-9; out }""")
        fast, slow = _both_paths(frame, 1, [0, 1, 2], base_seed=5, cores=cores)
        # the verdict is kept for the session: the next shard goes straight to glmer()
        assert not ro.r("earnest_fast_path_checked$glmm1")[0]
        again, again_glmer = _both_paths(frame, 1, [3, 4], base_seed=5, cores=cores)
        # the shard says so: engine "lme4 (glmer fallback)", counted in the summary
        table = E.run_bootstrap(frame, 1, [5, 6], base_seed=5, cores=cores)
        assert (table["engine"] == G.GLMER_FALLBACK).all()
        from earnest.stats.summary import summarise
        s = summarise(table, data, 1, model="m", prompt="p")
        assert s["n_glmer_fallback"].iloc[0] == 2 and s["engine"].iloc[0] == "lme4"
    finally:
        ro.r("earnest_design_fit <- earnest_design_fit_saved; rm(earnest_design_fit_saved)")
        ro.r(forget)
    pd.testing.assert_frame_equal(fast, slow, check_exact=True)
    pd.testing.assert_frame_equal(again, again_glmer, check_exact=True)


def test_workers_share_resamples_and_return_them_in_order(data):
    """On several cores, workers take resamples as they go; the shard must still hold every
    resample once, in order, bit-identical to fitting them on one core."""
    frame = G.model_frame(data, 2, aggregate=True)
    resamples = [7, 3, 11, 0, 5, 9, 1]
    one = E.run_bootstrap(frame, 2, resamples, base_seed=23, cores=1)
    two = E.run_bootstrap(frame, 2, resamples, base_seed=23, cores=2)
    three = E.run_bootstrap(frame, 2, resamples, base_seed=23, cores=3)
    assert two["resample"].drop_duplicates().tolist() == resamples
    pd.testing.assert_frame_equal(one, two, check_exact=True)
    pd.testing.assert_frame_equal(one, three, check_exact=True)


def test_a_failing_worker_is_an_error_not_a_short_shard(data):
    """A worker that fails outside a fit must fail the shard with its reason, never return a
    shard with resamples missing."""
    ro = rbridge.r()
    frame = G.model_frame(data, 1, aggregate=True)
    ro.r("earnest_record_saved <- earnest_record")
    try:
        ro.r("""earnest_record <- function(out, glmm, resample, seed) {
                  if (resample == 4L) stop("disk full while recording resample 4")
                  earnest_record_saved(out, glmm, resample, seed) }""")
        with pytest.raises(rbridge.RError, match=r"bootstrap worker \d of 2 failed: disk full while recording resample 4"):
            E.run_bootstrap(frame, 1, [2, 3, 4, 5], base_seed=5, cores=2)
    finally:
        ro.r("earnest_record <- earnest_record_saved; rm(earnest_record_saved)")
