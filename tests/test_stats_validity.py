"""Validity on simulated data with known effects: the bootstrap interval covers the true variant
effect and, with no effect, P < 0.05 stays rare. Small and tolerant (fixed seeds), so it is fast
and cannot flake; benchmarks/glmm_validity.py runs the larger version."""

import pytest

from earnest.stats.simulate import coverage_study


@pytest.mark.slow
def test_interval_covers_true_effect_and_false_positives_are_rare():
    # B = 50: Eq. 4's resolution 2/B must lie below alpha for any P to pass it (issue 50.4)
    effect = coverage_study(6, -0.8, n_resamples=50, seed=100, cores=2)
    null = coverage_study(6, 0.0, n_resamples=50, seed=200, cores=2)
    assert effect["covered"].sum() >= 5, effect
    assert null["covered"].sum() >= 5, null
    assert null["p_below_alpha"].sum() <= 1, null
    # the effect is large enough to be seen most of the time, with the right sign
    # (B = 50: every estimate below 0 reads P < 0.04; 30 templates x 8 variants see it in a third or more)
    assert (effect["median"] < 0).sum() >= 5 and effect["p_below_alpha"].sum() >= 2, effect


@pytest.mark.slow
def test_no_false_finding_at_the_accuracy_ceiling():
    """Issues 40.1 and 50.1: null data at ~99.6% accuracy with the laplace engine. Resamples that draw
    no wrong GSM-Base answer are separated; dropped as non-converged they took one tail with them and
    Eq. 4 read 0 ("significant", issue 40's 22 of 60). Now the penalised fits keep them, finite, and where
    the data hold no wrong GSM-Base answer at all the likelihood-ratio test carries the zero count: no
    false finding, and no refusal either (estimable wherever some answer is wrong)."""
    study = coverage_study(8, 0.0, n_resamples=100, seed=100, n_templates=60, n_variants=20, engine="laplace",
                           intercept=7.5)
    assert (study["accuracy"] > 0.99).all()
    assert not study["p_below_alpha"].any()
    assert (study["n_separated"] > 0).any() and not study.loc[study["accuracy"] < 1, "degenerate"].any()
