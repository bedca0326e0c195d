"""The penalised profile likelihood of a fixed effect on the full data: earnest mode's likelihood-ratio
test and profile interval (:mod:`earnest.stats.verdict` combines them with the template bootstrap).

For term j, LR(b) = D(beta_j held at b) - D(free), D the Laplace deviance plus the prior's penalty
(:class:`earnest.stats.glmm.Prior`), each minimised over the other parameters by the engine
(:meth:`earnest.stats.engines.base.Engine.fixed_deviance`). The test's P value is
P(chi2_1 > LR(0)); the interval is {b : LR(b) <= chi2_1 quantile(level)}, found by stepping out from
the estimate and bisecting (Brent). With a prior the profile always rises past the critical value
(the penalty alone grows as (b / sd)^2), so the interval is finite; without one (reference mode's
unpenalised fit, never used for its verdict) an end the profile does not reach within
:data:`REACH` log-odds of the estimate is unbounded (-inf / inf).
"""

from __future__ import annotations

import math

import numpy as np

#: how far (log-odds) from the estimate the profile is followed before an end is called unbounded
REACH = 40.0


def _chi2_sf1(x: float) -> float:
    """P(chi2_1 > x)."""
    return math.erfc(math.sqrt(max(x, 0.0) / 2.0))


def _chi2_ppf1(level: float) -> float:
    from scipy.stats import chi2
    return float(chi2.ppf(level, 1))


def _end(lr, est: float, side: float, crit: float, step: float) -> float:
    """The interval's end on ``side`` (-1, +1) of ``est``: where lr crosses ``crit``."""
    from scipy.optimize import brentq

    inner, h = est, step
    while h <= REACH:
        b = est + side * h
        v = lr(b)
        if math.isnan(v):             # a fit that failed at b (lme4 far out): once more a little inside
            b = est + side * h * 0.97
            v = lr(b)
        if math.isnan(v):
            return float("nan")
        if v > crit:
            a, c = (b, inner) if side < 0 else (inner, b)
            return float(brentq(lambda x: lr(x) - crit, a, c, xtol=1e-4))
        inner, h = b, 2.0 * h
    return -math.inf if side < 0 else math.inf


def profile_term(engine, data, glmm: int, prior, term: str, estimate: float, *, level: float = 0.95,
                 full: float | None = None, dev=None) -> dict:
    """{p_lr, pl_low_log, pl_high_log, lr} of ``term`` (log-odds), by ``engine``'s fits. ``estimate``:
    the full fit's estimate (the profile's minimum); ``full``: its deviance, when known; ``dev``:
    a function (term, value) -> deviance replacing ``engine.fixed_deviance`` (the cross-lingual model)."""
    if dev is None:
        def dev(t, v):
            return engine.fixed_deviance(data, glmm, prior, t, v)
    if full is None:
        full = dev(None, 0.0)
    nan = {"p_lr": float("nan"), "pl_low_log": float("nan"), "pl_high_log": float("nan"), "lr": float("nan")}
    if not (math.isfinite(full) and math.isfinite(estimate)):
        return nan
    cache: dict[float, float] = {}

    def lr(b: float) -> float:
        if b not in cache:
            cache[b] = dev(term, float(b)) - full
        return cache[b]

    at0 = lr(0.0)
    if math.isnan(at0):
        return nan
    crit = _chi2_ppf1(level)
    step = 0.25
    lo = _end(lr, estimate, -1.0, crit, step)
    hi = _end(lr, estimate, 1.0, crit, step)
    return {"p_lr": _chi2_sf1(at0), "pl_low_log": lo, "pl_high_log": hi, "lr": max(at0, 0.0)}


def profile_terms(engine, data, glmm: int, prior, estimates: dict, terms, *, level: float = 0.95) -> dict:
    """:func:`profile_term` of each of ``terms`` (a dict term -> record); ``estimates``: term -> the
    full fit's estimate."""
    full = engine.fixed_deviance(data, glmm, prior)
    return {t: profile_term(engine, data, glmm, prior, t, float(estimates.get(t, np.nan)), level=level, full=full)
            for t in terms}
