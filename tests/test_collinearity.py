"""Issue 50 (collinearity): a fixed-effect design that is rank deficient (GLMM 2's covariate
identical to, or a linear function of, variant; a constant covariate) is "not estimable" with its
reason, from both engines, checked once in the model frame before either engine runs; the other
fits of the same job are written as usual. A near-collinear covariate gets a warning naming the
correlation (summary column and log)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from earnest.stats import glmm as G
from earnest.stats import run
from earnest.stats.defaults import COLLINEARITY_THRESHOLD
from earnest.stats.simulate import simulate_glmm_input

COLLINEAR = "not estimable: gamma is collinear with variant"


def _two_models(gamma_of_bad) -> pd.DataFrame:
    """GLMM input of two models: 'good' with an ordinary gamma, 'bad' whose gamma is
    ``gamma_of_bad(variant, gamma)``."""
    good = simulate_glmm_input(12, 6, variant_effect=-0.8, gamma_effect=-0.3, seed=5, model="good")
    bad = simulate_glmm_input(12, 6, variant_effect=-0.8, gamma_effect=-0.3, seed=6, model="bad")
    bad["gamma"] = gamma_of_bad(bad["variant"].to_numpy(float), bad["gamma"].to_numpy(float))
    return G.validate_glmm_input(pd.concat([good, bad], ignore_index=True), 2)


@pytest.mark.parametrize("gamma_of, reason", [
    (lambda v, g: v, COLLINEAR),
    (lambda v, g: 3.5 - 2.0 * v, COLLINEAR),
    (lambda v, g: np.full_like(g, 4.0), "not estimable: gamma is constant (4 in every row the GLMM fits), so it is "
                                        "collinear with the intercept"),
])
def test_model_frame_refuses_a_rank_deficient_design(gamma_of, reason):
    df = _two_models(gamma_of)
    bad = df[df["model"] == "bad"].reset_index(drop=True)
    with pytest.raises(G.NotEstimable) as exc:
        G.model_frame(bad, 2)
    assert exc.value.reason == reason
    assert isinstance(exc.value, G.GLMMInputError)
    G.model_frame(bad, 1)                                  # GLMM 1 has no covariate: estimable
    G.model_frame(df[df["model"] == "good"].reset_index(drop=True), 2)


def test_a_constant_variant_is_not_estimable_in_glmm1():
    df = _two_models(lambda v, g: g)
    one = df[(df["model"] == "good") & (df["variant"] == 1)].reset_index(drop=True)
    with pytest.raises(G.NotEstimable, match="variant is constant .1 in every row"):
        G.model_frame(one, 1)


def test_an_almost_collinear_covariate_is_estimable_and_warned():
    rng = np.random.default_rng(0)
    df = _two_models(lambda v, g: 2.0 * v + rng.normal(0, 0.3, v.size))
    bad = df[df["model"] == "bad"].reset_index(drop=True)
    G.model_frame(bad, 2)                                  # full rank
    warning, r = G.collinearity_warning(bad, 2, threshold=COLLINEARITY_THRESHOLD)
    assert r == pytest.approx(np.corrcoef(bad["gamma"], bad["variant"])[0, 1])
    assert r > 0.9 and f"correlation {r:.3f}" in warning and "stats.collinearity_threshold 0.9" in warning
    assert G.collinearity_warning(bad, 2, threshold=0.99)[0] == ""
    assert G.collinearity_warning(bad, 1) == ("", pytest.approx(np.nan, nan_ok=True))
    good = df[df["model"] == "good"].reset_index(drop=True)
    assert G.collinearity_warning(good, 2)[0] == ""


@pytest.mark.parametrize("engine", ["laplace", "lme4"])
def test_both_engines_say_not_estimable_and_fit_the_others(engine, tmp_path):
    df = _two_models(lambda v, g: v)
    lines = []
    summaries, _, _ = run.run_glmm(df, 2, 6, 3, tmp_path, engine=engine, check_resamples=1, cores=1,
                                   log=lines.append)
    bad = summaries[summaries["model"] == "bad"]
    good = summaries[summaries["model"] == "good"]
    assert list(bad["not_estimable_reason"]) == [COLLINEAR, COLLINEAR]
    assert bad[["p_boot", "odds_ratio", "ci_low", "ci_high", "wald_p", "wald_se"]].isna().all().all()
    assert (bad["n_clean"] == 0).all() and (bad["n_resamples"] == 6).all()
    assert (good["not_estimable_reason"] == "").all()
    assert good["wald_se"].notna().all() and good["p_boot"].notna().all() and (good["n_clean"] > 0).all()
    assert any(COLLINEAR in line and "bad" in line for line in lines)
    shard = pd.read_parquet(run.shard_path(tmp_path, 2, "bad", "gsm", 0))
    assert set(shard["error"]) == {COLLINEAR} and shard["estimate"].isna().all()


def test_the_near_collinear_warning_reaches_the_summary_and_the_log(tmp_path):
    rng = np.random.default_rng(1)
    df = _two_models(lambda v, g: 2.0 * v + rng.normal(0, 0.3, v.size))
    lines = []
    summaries, _, _ = run.run_glmm(df, 2, 4, 3, tmp_path, engine="laplace", check_resamples=0, cores=1,
                                   log=lines.append)
    bad = summaries[summaries["model"] == "bad"]
    assert (bad["collinearity_warning"].str.startswith("gamma is nearly collinear with variant (correlation")).all()
    assert (bad["covariate_correlation"] > 0.9).all() and (bad["not_estimable_reason"] == "").all()
    assert (summaries.loc[summaries["model"] == "good", "collinearity_warning"] == "").all()
    assert sum("nearly collinear" in line for line in lines) == 1
