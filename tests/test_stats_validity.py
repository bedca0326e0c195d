"""Validity on simulated data with known effects: the bootstrap interval covers the true variant
effect and, with no effect, P < 0.05 stays rare. Small and tolerant (fixed seeds), so it is fast
and cannot flake; benchmarks/glmm_validity.py runs the larger version."""

import pytest

from earnest.stats.simulate import coverage_study


@pytest.mark.slow
def test_interval_covers_true_effect_and_false_positives_are_rare():
    effect = coverage_study(6, -0.8, n_resamples=20, seed=100, cores=2)
    null = coverage_study(6, 0.0, n_resamples=20, seed=200, cores=2)
    assert effect["covered"].sum() >= 5, effect
    assert null["covered"].sum() >= 5, null
    assert null["p_below_alpha"].sum() <= 1, null
    # the effect is large enough to be seen most of the time, with the right sign
    assert (effect["median"] < 0).sum() >= 5 and effect["p_below_alpha"].sum() >= 3, effect
