"""The verdict, decided once (issue 50): earnest.stats.verdict is the only module that compares a P
value with alpha; its rules on small simulated data sets with known truth, both engines."""

import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from earnest.stats import verdict as V

SRC = Path(__file__).resolve().parents[1] / "src" / "earnest"


def _alpha_operand(node) -> bool:
    return (isinstance(node, ast.Name) and node.id in ("alpha", "ALPHA")) or \
        (isinstance(node, ast.Attribute) and node.attr == "alpha")


def comparisons_with_alpha(source: str) -> list[int]:
    """Lines of comparisons of alpha with anything but a literal number (a range check such as
    0 < alpha < 1 compares alpha with constants only)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_alpha_operand(o) for o in operands) and any(
                    not _alpha_operand(o) and not isinstance(o, ast.Constant) for o in operands):
                out.append(node.lineno)
    return out


def test_the_scan_finds_a_comparison_and_leaves_a_range_check():
    assert comparisons_with_alpha("x = p < alpha\n") == [1]
    assert comparisons_with_alpha("y = 1\nif row['p_holm'] >= cfg.alpha:\n    pass\n") == [2]
    assert comparisons_with_alpha("ok = 0 < alpha < 1\n") == []


def test_no_module_but_the_verdict_compares_a_p_value_with_alpha():
    offenders = {}
    for path in sorted(SRC.rglob("*.py")):
        if path == SRC / "stats" / "verdict.py":
            continue
        lines = comparisons_with_alpha(path.read_text(encoding="utf-8"))
        if lines:
            offenders[str(path.relative_to(SRC))] = lines
    assert offenders == {}, f"compare P with alpha through earnest.stats.verdict.below / decide: {offenders}"


def test_the_bootstrap_resolution_is_two_over_n():
    # one estimate on the far side of 0 of n gives Eq. 4 = 2/n: the smallest non-zero value
    assert V.bootstrap_p(np.r_[np.full(99, -1.0), 0.5]) == pytest.approx(0.02)
    assert V.p_resolution(100) == pytest.approx(0.02)
    assert V.p_resolution(1) == 1.0                 # one estimate: P below 1, never "below 2"
    rec = V.fit_p(np.full(100, -1.0), fidelity="earnest", p_lr=1e-6)
    assert rec["p_boot"] == 0 and rec["p_value"] == pytest.approx(0.02) and rec["p_source"] == "bootstrap bound"
    ref = V.fit_p(np.full(100, -1.0), fidelity="reference", p_lr=1e-6)
    assert ref["p_value"] == 0 and ref["p_source"] == "bootstrap"          # the authors keep 0


def test_where_the_data_separate_p_is_the_larger_of_bootstrap_and_likelihood_ratio_and_the_interval_their_hull():
    theta = np.random.default_rng(1).normal(-1.0, 0.3, 200)              # bootstrap: P = 0 -> 0.01
    rec = V.fit_p(theta, fidelity="earnest", p_lr=0.3, pl_low=-2.5, pl_high=0.4, rarer=0)
    assert rec["p_value"] == pytest.approx(0.3) and rec["p_source"] == "likelihood ratio"
    assert rec["separated_data"] and rec["sparse_data"] and rec["rarer_count"] == 0
    assert rec["ci_low_log"] == pytest.approx(-2.5) and rec["ci_high_log"] == pytest.approx(0.4)
    assert rec["ci_low_log"] < 0 < rec["ci_high_log"]                     # consistent with P >= 0.05
    # an unbounded end is written as unbounded, never as an odds ratio of 0
    rec = V.fit_p(theta, fidelity="earnest", p_lr=0.3, pl_low=-np.inf, pl_high=0.4, rarer=0)
    assert rec["ci_low_unbounded"] and rec["ci_low"] == 0.0 and not rec["ci_high_unbounded"]
    # where no count is zero the bootstrap decides alone (the likelihood-ratio test stands beside it)
    rec = V.fit_p(theta, fidelity="earnest", p_lr=0.3, pl_low=-2.5, pl_high=0.4)
    assert rec["p_value"] == pytest.approx(0.01) and rec["p_source"] == "bootstrap bound" and rec["p_lr"] == 0.3
    assert rec["ci_high_log"] < 0


def test_sparse_data_take_the_larger_p_up_to_the_threshold_and_the_bootstrap_alone_above_it():
    """Sparse data (issue 50's closing note): a condition with 1..SPARSE_EVENTS answers of its rarer
    outcome decides as separated data do (the larger of bootstrap and likelihood-ratio P, the hull of
    the intervals); one more and the bootstrap decides alone. The reference keeps Eq. 4 throughout."""
    k = V.SPARSE_EVENTS
    assert V.rarer_count([(1, 60), (6, 60)]) == 1                         # the issue-40 pair: a right on 1
    assert V.rarer_count([(97, 100), (880, 1000)]) == 3                   # 3 wrong GSM-Base answers
    assert V.rarer_count([(0, 0), (7, 60)]) == 7 and np.isnan(V.rarer_count([(0, 0)]))
    assert V.is_sparse(0) and V.is_sparse(k) and not V.is_sparse(k + 1) and not V.is_sparse(np.nan)
    theta = np.random.default_rng(1).normal(-1.0, 0.3, 200)              # bootstrap: P = 0 -> 0.01
    at = V.fit_p(theta, fidelity="earnest", p_lr=0.08, pl_low=-2.5, pl_high=0.1, rarer=k)
    assert at["p_value"] == pytest.approx(0.08) and at["p_source"] == "likelihood ratio"
    assert at["sparse_data"] and not at["separated_data"] and at["rarer_count"] == k
    assert at["ci_low_log"] == pytest.approx(-2.5) and at["ci_high_log"] == pytest.approx(0.1)
    above = V.fit_p(theta, fidelity="earnest", p_lr=0.08, pl_low=-2.5, pl_high=0.1, rarer=k + 1)
    assert above["p_value"] == pytest.approx(0.01) and above["p_source"] == "bootstrap bound"
    assert not above["sparse_data"] and above["ci_high_log"] < 0
    ref = V.fit_p(theta, fidelity="reference", p_lr=0.08, pl_low=-2.5, pl_high=0.1, rarer=1)
    assert ref["p_value"] == 0 and ref["p_source"] == "bootstrap" and ref["ci_high_log"] < 0


def _records(ps, bounds=None, reasons=None):
    n = len(ps)
    bounds = bounds or [np.nan] * n
    return pd.DataFrame({"p_value": ps, "p_bound": bounds,
                         "p_source": ["bootstrap bound" if not np.isnan(b) else "bootstrap" for b in bounds],
                         "not_estimable_reason": reasons or [""] * n})


def test_unresolved_at_this_b_names_the_b_that_resolves_it():
    # ten strong effects, every resample below 0, B = 200: 2/200 = 0.01 > 0.05/10; B >= 401 resolves it
    d = V.decide(_records([0.01] * 10, [0.01] * 10), None, alpha=0.05)
    assert set(d["verdict"]) == {V.UNRESOLVED} and set(d["resolving_resamples"]) == {401}
    assert not d["significant_holm"].any()
    # at B = 2000 (bound 0.001) Holm passes: significant
    d = V.decide(_records([0.001] * 10, [0.001] * 10), None, alpha=0.05)
    assert set(d["verdict"]) == {V.SIGNIFICANT}
    assert V.resolving_resamples(10, 0.05) * 0.05 / 10 > 2       # 2/B < alpha/m


def test_a_fit_that_is_not_estimable_has_no_p_and_no_place_in_its_family():
    d = V.decide(_records([0.01, 0.02, 0.001], reasons=["", "", "every answer correct (60)"]), None, alpha=0.05)
    assert d["verdict"].tolist() == [V.SIGNIFICANT, V.SIGNIFICANT, V.NOT_ESTIMABLE]
    assert d["holm_m"].tolist() == [2, 2, 2] and np.isnan(d["p_holm"].iloc[2])
    assert d["verdict_reason"].iloc[2] == "every answer correct (60)"


def test_singular_resamples_count_in_earnest_mode_so_a_strong_effect_is_found_where_templates_do_not_differ():
    """Templates of equal difficulty: most resamples estimate the template variance at 0 (singular).
    Such a fit is a fit of the model, and earnest keeps it, so a strong drop (90% -> 50%) is found;
    the reference drops singular fits as the authors do, and is left with the few others."""
    from earnest.stats.diagnostics import judge_effect
    from earnest.stats.engines import run_shard
    from earnest.stats.glmm import prior_for
    from earnest.stats.summary import clean_mask

    rng = np.random.default_rng(3)
    t = np.repeat(np.arange(40), 11)
    v = np.tile(np.r_[0, np.ones(10, dtype=int)], 40)
    y = (rng.random(t.size) < np.where(v == 0, 0.9, 0.5)).astype(int)
    df = pd.DataFrame({"model": "m", "prompt": "p", "template": t, "variant": v, "correct": y})
    shards = run_shard(df, 1, 60, 8, engine="laplace", prior=prior_for("earnest"))
    per = shards[shards["term"] == "variant"]
    assert per["singular"].astype(bool).sum() >= 30                    # most resamples are singular
    assert clean_mask(per, "earnest").sum() > clean_mask(per, "reference").sum() + 25
    row, not_estimable = judge_effect(shards, df, 1, "variant", engine="laplace")
    assert not not_estimable and int(row["n_clean"]) >= 57
    assert bool(row["significant_uncorrected"]) and row["median_log_or"] < -1


def test_the_prior_gives_a_language_level_the_intercept_sd_and_every_effect_the_effect_sd():
    """A language's main effect is a baseline (the intercept's weak prior): shrinking a language at 98%
    towards the reference's 62% would bias its interaction; effects get the effect prior. Both engines
    read the same per-term list."""
    from earnest.stats import crosslingual as X
    from earnest.stats.glmm import Prior

    prior = Prior(intercept_sd=10, effect_sd=2.5)
    terms = X.terms_for(["en", "fr", "de"])
    assert terms == ["(Intercept)", "variant", "language[fr]", "language[de]", "variant:language[fr]",
                     "variant:language[de]"]
    assert prior.sd(terms) == [10, 2.5, 10, 10, 2.5, 2.5]
    assert prior.sd(3) == [10, 2.5, 2.5]                                 # GLMM 2: intercept, variant, gamma
    df = X.simulate(12, ["en", "fr", "de"], n_variants=3, seed=1)
    cross = X.CrossData(df, languages=None, reference="en", random="template_language")
    assert cross.terms == terms
    assert cross.design().design.with_prior(prior).prior_sd.tolist() == [10, 2.5, 10, 10, 2.5, 2.5]


def _ceiling(seed, pb, pv, templates=60, variants=20):
    rng = np.random.default_rng(seed)
    u = rng.normal(0, 0.5, templates)
    t = np.repeat(np.arange(templates), 1 + variants)
    v = np.tile(np.r_[0, np.ones(variants, dtype=int)], templates)
    lo = lambda p: np.log(p / (1 - p))  # noqa: E731
    eta = np.where(v == 0, lo(pb), lo(pv)) + u[t]
    y = (rng.random(t.size) < 1 / (1 + np.exp(-eta))).astype(int)
    y[v == 0] = 1                                   # no wrong GSM-Base answer
    return pd.DataFrame({"model": "m", "prompt": "p", "template": t, "variant": v, "correct": y})


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["laplace", "lme4"])
def test_at_the_ceiling_a_real_drop_is_found_and_no_wrong_base_answer_is_no_finding(engine):
    """No wrong GSM-Base answer at all: a real drop to 85% is significant (Fisher's exact test agrees);
    99.5% on both sides with no wrong GSM-Base answer is not (the old rule called the first degenerate
    and the bootstrap alone calls the second significant: every resample is separated the same way)."""
    from scipy.stats import fisher_exact

    from earnest.stats.diagnostics import judge_effect
    from earnest.stats.engines import run_shard
    from earnest.stats.glmm import prior_for

    for pv, want in ((0.85, True), (0.995, False)):
        df = _ceiling(11, 0.995, pv)
        assert df.loc[df["variant"] == 0, "correct"].all()                 # no wrong GSM-Base answer
        shards = run_shard(df, 1, 60, 5, engine=engine, prior=prior_for("earnest"))
        row, not_estimable = judge_effect(shards, df, 1, "variant", engine=engine)
        assert not not_estimable and np.isfinite(row["median_log_or"])
        tab = df.groupby("variant")["correct"].agg(["sum", "count"])
        fisher = fisher_exact([[tab.loc[0, "sum"], tab.loc[0, "count"] - tab.loc[0, "sum"]],
                               [tab.loc[1, "sum"], tab.loc[1, "count"] - tab.loc[1, "sum"]]])[1]
        assert bool(row["significant_uncorrected"]) is want and bool(fisher < 0.05) is want
        if want:
            assert row["p_boot"] == 0 and row["p_source"] == "bootstrap bound"   # every resample below 0
        else:
            assert row["p_value"] >= row["p_lr"] > 0.05                  # the zero count's uncertainty
