"""Power of the project's test and the minimum detectable odds ratio (MDE) of a design.

The test is the one the project runs on real results (section 3.5 of the GSM-Symbolic
re-evaluation) as earnest mode decides it: B bootstrap resamples of templates, each fitted with the
GLMM penalised by earnest mode's prior; Eq. 4 over the clean estimates together with the penalised
likelihood-ratio test on the full data; significant when the verdict
(:func:`earnest.stats.verdict.decide`, one test: no Holm) says so at ``alpha``. Its power is estimated
by simulation:

1. Draw a data set from a binomial GLMM with template intercepts: ``n_templates`` templates, each
   with one GSM-Base item and ``n_variants`` GSM-Variants items;
   logit P(correct) = b0 + u_template + log(OR) * variant (variant effect, GLMM 1), or
   b0 + u_template + log(OR) * gamma_c (number effect, GLMM 2; OR per unit of gamma, whose spread
   is ``gamma_sd``), u ~ N(0, ranef_var). b0 is chosen so that the expected GSM-Base accuracy,
   averaged over templates, is ``baseline_acc`` (:func:`intercept_for_accuracy`).
2. Run the bootstrap test on it with the workflow's own code (``earnest.stats.engines.run_shard``),
   engine ``lme4`` (glmer through R) or ``laplace`` (the batched numpy engine, checked against lme4,
   30-40x faster here; the same resamples, drawn by R's generator from the same seeds).
3. Power = share of simulated data sets with a significant effect; its Monte Carlo standard error
   is sqrt(power (1 - power) / n_sims). A data set with no clean bootstrap estimate has no P value
   and counts as not significant (it is counted in ``n_no_p``).

Data sets of one design share their random numbers across the odds ratios of the grid (common
random numbers: simulation k of every OR uses the same template intercepts and uniforms), so the
simulated power curve is smooth in the OR and the differences between its points are estimated
more precisely than the points themselves.

The minimum detectable OR at ``target`` power (80%) is read off the grid
(:func:`minimum_detectable_or`): the simulated power over |log OR| (ORs on one side of 1, with
OR = 1 as the anchor) is made monotone by isotonic regression (pool adjacent violators, weighted
by n_sims), then interpolated linearly in log OR where it crosses ``target``. The same
interpolation on the ends of each point's 95% Wilson interval gives the MDE's Monte Carlo range. An MDE
outside the grid is reported as a bound, never extrapolated.

:func:`wald_power` is the large-sample approximation of the same test: a Wald test with the
expected Fisher information of the likelihood at the design. For the variant effect (GLMM 1) it
is exact (outcomes per template enumerated, random intercept integrated by Gauss-Hermite
quadrature); for the number effect (GLMM 2, gamma drawn per answer) the information lost to the
unknown intercept is averaged over simulated templates (:func:`gamma_template_information`).
It costs milliseconds, so it also gives the MDE of every model x prompt of a run
(:func:`design_mde_table`); the simulation checks it where it matters
(``benchmarks/power_validity.py``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from earnest.stats import engines as E
from earnest.stats import glmm as G
from earnest.stats.defaults import ALPHA, POWER_EFFECTS, POWER_ENGINE, POWER_SEED
from earnest.wording import GAMMA_C, VARIANT


class _OnFirstUse:
    """A scipy module imported when first used: the workflow's every Snakemake start (each job's own
    too, on a cluster) imports this module to plan the power study, and scipy alone took 1.3 s of it."""

    def __init__(self, name: str):
        self._name, self._module = name, None

    def __getattr__(self, attr):
        if self._module is None:
            import importlib

            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)


optimize, special, stats = _OnFirstUse("scipy.optimize"), _OnFirstUse("scipy.special"), _OnFirstUse("scipy.stats")

#: effect -> (GLMM, term tested)
EFFECT_TERMS = {"variant": (1, VARIANT), "gamma": (2, GAMMA_C)}
TARGET_POWER = 0.8
#: Monte Carlo band of the MDE: power +- MC_Z standard errors
MC_Z = 1.96

#: the spread (sd) of gamma the number effect is simulated with (config power.gamma_sd)
GAMMA_SD = 1.5
POWER_COLUMNS = ("scenario", "effect", "n_templates", "n_variants", "baseline_acc", "ranef_var", "gamma_sd",
                 "odds_ratio", "log_or", "n_sims", "n_resamples", "alpha", "engine", "n_p_below_alpha",
                 "power", "mc_se", "power_ci_low", "power_ci_high", "n_no_p", "clean_share", "n_engine_fallback",
                 "wald_power", "seconds", "fits")
MDE_COLUMNS = ("scenario", "effect", "n_templates", "n_variants", "baseline_acc", "ranef_var", "gamma_sd",
               "n_sims", "n_resamples", "alpha", "target_power", "mde_or", "mde_or_mc_low",
               "mde_or_mc_high", "mde_bound", "wald_mde_or", "note")


class PowerError(ValueError):
    """A power-study input is unusable; the message names the field."""


#: answers in one simulated data set (templates x (1 + variants)) at most: the paper's design has
#: 5,100; each data set is held in memory and fitted n_sims x n_resamples times.
MAX_ANSWERS = 1_000_000


def design_problem(n_templates, n_variants) -> str | None:
    """Why ``n_templates`` x ``n_variants`` (GSM-Variants items per template) is not a design to
    simulate, or None: fewer than 2 templates or 1 variant, or more than :data:`MAX_ANSWERS` answers."""
    if isinstance(n_templates, bool) or isinstance(n_variants, bool) or \
            not isinstance(n_templates, (int, np.integer)) or not isinstance(n_variants, (int, np.integer)):
        return f"template and variant counts must be integers, not {n_templates!r} x {n_variants!r}"
    if n_templates < 2 or n_variants < 1:
        return f"a design needs >= 2 templates and >= 1 variant per template, not {n_templates} x {n_variants}"
    answers = int(n_templates) * (1 + int(n_variants))
    if answers > MAX_ANSWERS:
        return (f"{n_templates} templates x (1 + {n_variants} variants) = {answers:,} answers per simulated data "
                f"set, more than {MAX_ANSWERS:,} (the paper's design: 100 x (1 + 50) = 5,100)")
    return None


def check_design(n_templates, n_variants) -> None:
    """PowerError with :func:`design_problem`'s reason."""
    problem = design_problem(n_templates, n_variants)
    if problem:
        raise PowerError(problem)


# ---------------------------------------------------------------------------- the model
_GH_NODES, _GH_WEIGHTS = np.polynomial.hermite_e.hermegauss(60)
_GH_WEIGHTS = _GH_WEIGHTS / _GH_WEIGHTS.sum()          # E[f(Z)], Z ~ N(0, 1)


def marginal_accuracy(intercept: float, ranef_var: float) -> float:
    """E over templates of expit(intercept + u), u ~ N(0, ranef_var)."""
    return float(np.sum(_GH_WEIGHTS * special.expit(intercept + math.sqrt(ranef_var) * _GH_NODES)))


def intercept_for_accuracy(baseline_acc: float, ranef_var: float) -> float:
    """The b0 whose expected accuracy over templates (u ~ N(0, ranef_var)) is ``baseline_acc``."""
    if not 0.0 < baseline_acc < 1.0:
        raise PowerError(f"baseline accuracy must lie strictly between 0 and 1, not {baseline_acc!r}")
    if not ranef_var >= 0.0 or not math.isfinite(ranef_var):
        raise PowerError(f"template-intercept variance must be finite and >= 0, not {ranef_var!r}")
    if ranef_var == 0.0:
        return float(special.logit(baseline_acc))
    f = lambda b: marginal_accuracy(b, ranef_var) - baseline_acc  # noqa: E731
    lo, hi = -60.0, 60.0
    if not f(lo) < 0.0 < f(hi):   # brentq's own complaint ("f(a) and f(b) must have different signs") names neither
        raise PowerError(f"template-intercept variance {ranef_var!r} with baseline accuracy {baseline_acc!r}: no intercept "
                         f"in [{lo:g}, {hi:g}] gives that accuracy (with this variance it lies between "
                         f"{marginal_accuracy(lo, ranef_var):.4g} and {marginal_accuracy(hi, ranef_var):.4g}); "
                         "a variance on the log-odds scale is at most tens")
    return float(optimize.brentq(f, lo, hi, xtol=1e-12))


def simulate_design(n_templates: int, n_variants: int, *, odds_ratio: float, baseline_acc: float,
                    ranef_var: float, effect: str = "variant", gamma_sd: float = GAMMA_SD, seed=0,
                    model: str = "sim", prompt: str = "sim") -> pd.DataFrame:
    """One simulated GLMM input (model, prompt, template, variant, correct, gamma).

    ``seed`` (one data set's seed, not the study's ``power.seed``: :func:`power_point` derives one per
    data set from that) is an int or a :class:`numpy.random.SeedSequence`. The random numbers drawn do not
    depend on ``odds_ratio`` (common random numbers across a power curve).
    """
    _check_effect(effect)
    check_design(n_templates, n_variants)
    if not odds_ratio > 0 or not math.isfinite(odds_ratio):
        raise PowerError(f"odds ratio must be positive and finite, not {odds_ratio!r}")
    rng = np.random.default_rng(seed)
    b0 = intercept_for_accuracy(baseline_acc, ranef_var)
    n_items = 1 + n_variants
    template = np.repeat(np.arange(n_templates), n_items)
    variant = np.tile(np.r_[0, np.ones(n_variants, dtype=np.int64)], n_templates)
    u = rng.normal(0.0, math.sqrt(ranef_var), n_templates)
    gamma = rng.normal(0.0, gamma_sd, template.size)
    uniforms = rng.random(template.size)
    beta = math.log(odds_ratio)
    eta = b0 + u[template]
    if effect == VARIANT:
        eta = eta + beta * variant
    else:
        eta = eta + beta * (gamma - gamma.mean())
    correct = (uniforms < special.expit(eta)).astype(np.int64)
    return pd.DataFrame({"model": model, "prompt": prompt, "template": template.astype(np.int64),
                         "variant": variant.astype(np.int64), "correct": correct, "gamma": gamma})


def _check_effect(effect: str) -> None:
    if effect not in EFFECT_TERMS:
        raise PowerError(f"effect must be one of {', '.join(EFFECT_TERMS)}, not {effect!r}")


def check_engine(engine: E.Engine | str) -> str:
    """engines.check_engine, its refusal as a PowerError."""
    return resolve_engine(engine).name


def resolve_engine(engine: E.Engine | str) -> E.Engine:
    """engines.get_engine, its refusal as a PowerError: where a name comes in (:func:`power_study`,
    :func:`power_point`), once; the :class:`earnest.stats.engines.Engine` goes down from there."""
    try:
        return E.get_engine(engine)
    except ValueError as exc:
        raise PowerError(str(exc)) from None


# ---------------------------------------------------------------------------- the test
def bootstrap_table(df: pd.DataFrame, glmm: int, n_resamples: int, seed: int, *, engine: E.Engine | str = POWER_ENGINE,
                    cores: int = 1) -> pd.DataFrame:
    """The bootstrap shard table (``SHARD_COLUMNS``) of one model x prompt, by ``engine``."""
    return E.run_shard(df, glmm, n_resamples, seed, cores=cores, engine=resolve_engine(engine),
                       prior=G.prior_for("earnest"))


def test_p(shards: pd.DataFrame, term: str, df: pd.DataFrame, glmm: int, alpha: float = ALPHA,
           engine=None) -> tuple[float, int, bool, bool]:
    """(the verdict's P value of ``term``, the bootstrap estimates it stands on, whether the fit is not
    estimable, whether the verdict calls it significant) as the workflow judges a real model x prompt
    (:func:`earnest.stats.diagnostics.judge_effect`: earnest mode's penalised fits, the template
    bootstrap with the profile likelihood, :func:`earnest.stats.verdict.decide`), so that a simulated
    rejection is what the workflow's tables would call significant."""
    from earnest.stats.diagnostics import judge_effect

    row, not_estimable = judge_effect(shards, df, glmm, term, engine=engine, alpha=alpha)
    return float(row["p_value"]), int(row["n_clean"]), not_estimable, bool(row["significant_uncorrected"])


def _seed(base_seed: int, *key: int) -> np.random.SeedSequence:
    return np.random.SeedSequence(entropy=int(base_seed), spawn_key=tuple(int(k) for k in key))


def bootstrap_test_level(n_resamples: int, alpha: float = ALPHA) -> float:
    """The level of the Eq. 4 test with ``n_resamples`` resamples when the bootstrap distribution
    is exact (normal, centred on an estimate whose sampling distribution it equals): P(Eq. 4
    p < alpha) under no effect, from the binomial count of resamples on the far side of 0. Only
    the B resamples' Monte Carlo error moves it from ``alpha`` (B = 40: 0.049, 50: 0.079,
    100: 0.060, 200: 0.050), so a simulated false-positive rate is judged against it."""
    if n_resamples < 1 or not 0 < alpha < 1:
        raise PowerError(f"n_resamples must be positive and alpha in (0, 1), not {n_resamples} and {alpha}")
    k_max = math.ceil(alpha / 2 * n_resamples) - 1          # 2 k / B < alpha
    if k_max < 0:
        return 0.0
    nodes, weights = np.polynomial.legendre.leggauss(200)
    q = 0.25 * (nodes + 1)                                   # far-side share, uniform on (0, 1/2) under H0
    return float(np.sum(0.5 * weights * stats.binom.cdf(k_max, n_resamples, q)))


# ---------------------------------------------------------------------------- Wald approximation
def _template_loglik(b0: float, b1: float, sd: float, n_variants: int) -> np.ndarray:
    """log P(y_base, s_variants) for every outcome (2 x (n_variants+1)), u integrated out."""
    u = sd * _GH_NODES                                          # K nodes
    eta0, eta1 = b0 + u, b0 + b1 + u
    # log expit(x) = -log(1 + e^-x), log(1 - expit(x)) = -log(1 + e^x), exact in the tails
    lp0, lq0 = -np.logaddexp(0.0, -eta0), -np.logaddexp(0.0, eta0)
    lp1, lq1 = -np.logaddexp(0.0, -eta1), -np.logaddexp(0.0, eta1)
    s = np.arange(n_variants + 1)[:, None]                      # (S, 1)
    log_binom = (special.gammaln(n_variants + 1) - special.gammaln(s + 1) - special.gammaln(n_variants - s + 1)
                 + s * lp1[None, :] + (n_variants - s) * lq1[None, :])  # (S, K)
    out = np.empty((2, n_variants + 1))
    for y, py in ((0, lq0), (1, lp0)):
        terms = log_binom + py[None, :] + np.log(_GH_WEIGHTS)[None, :]
        out[y] = special.logsumexp(terms, axis=1)
    return out


def template_information(b0: float, b1: float, ranef_var: float, n_variants: int) -> np.ndarray:
    """Expected Fisher information of one template for (b0, b1, sd) under GLMM 1.

    Outcomes are enumerated (the base answer and the number of correct variants are sufficient
    given the intercept); scores are central differences of the exact marginal log-likelihood.
    """
    sd = max(math.sqrt(ranef_var), 1e-3)
    par = np.array([b0, b1, sd])
    h = np.array([1e-4, 1e-4, 1e-4 * max(1.0, sd)])
    ll = _template_loglik(*par, n_variants)
    prob = np.exp(ll)
    scores = []
    for i in range(3):
        up, dn = par.copy(), par.copy()
        up[i] += h[i]
        dn[i] -= h[i]
        scores.append((_template_loglik(*up, n_variants) - _template_loglik(*dn, n_variants)) / (2 * h[i]))
    sc = np.stack([s.ravel() for s in scores])                  # (3, outcomes)
    return (sc * prob.ravel()[None, :]) @ sc.T


#: Templates drawn to average GLMM 2's missing information over the number covariate (fixed seed:
#: the Wald power of the number effect is deterministic and smooth in the OR, common random numbers)
GAMMA_INFO_TEMPLATES = 2_000
GAMMA_INFO_SEED = 20261130
_AGQ_NODES, _AGQ_WEIGHTS = np.polynomial.hermite_e.hermegauss(20)
_AGQ_WEIGHTS = _AGQ_WEIGHTS / _AGQ_WEIGHTS.sum()


def _gamma_complete_information(b0: float, b_gamma: float, sd: float, n_variants: int, gamma_sd: float) -> np.ndarray:
    """E over (z, gamma) of one template's complete-data information (z known): a logistic
    regression on (1, variant, gamma, z) with coefficients (b0, b_variant = 0, b_gamma, sd); every
    answer's term has the same expectation, so 2-D Gauss-Hermite quadrature over (gamma, z) gives it."""
    g = gamma_sd * _GH_NODES[:, None]                          # (K, 1): gamma
    z = _GH_NODES[None, :]                                     # (1, K): z
    wgt = _GH_WEIGHTS[:, None] * _GH_WEIGHTS[None, :]
    p = special.expit(b0 + b_gamma * g + sd * z)
    w = wgt * p * (1 - p)
    e = {k: float(np.sum(w * f)) for k, f in (("1", 1.0), ("g", g), ("z", z), ("gg", g * g), ("gz", g * z),
                                              ("zz", z * z))}
    n, nv = 1 + int(n_variants), float(n_variants)             # all answers; GSM-Variants answers
    return np.array([[n * e["1"], nv * e["1"], n * e["g"], n * e["z"]],
                     [nv * e["1"], nv * e["1"], nv * e["g"], nv * e["z"]],
                     [n * e["g"], nv * e["g"], n * e["gg"], n * e["gz"]],
                     [n * e["z"], nv * e["z"], n * e["gz"], n * e["zz"]]])


def gamma_template_information(b0: float, b_gamma: float, ranef_var: float, n_variants: int, *,
                               gamma_sd: float = GAMMA_SD, n_draws: int = GAMMA_INFO_TEMPLATES,
                               seed: int = GAMMA_INFO_SEED) -> np.ndarray:
    """Expected Fisher information of one template for (b0, b_variant, b_gamma, sd) under GLMM 2,
    logit P = b0 + b_variant * variant + b_gamma * gamma + sd * z, z ~ N(0, 1), at b_variant = 0,
    in the design :func:`simulate_design` draws: every answer of the template (its GSM-Base item and
    ``n_variants`` GSM-Variants items) has its own gamma ~ N(0, gamma_sd^2), independent of the
    template and of the other answers. (Gamma has no between-template part there; a gamma shared by
    a template's answers would be compared against the template intercepts and carry less.)

    Louis' identity with the template intercept z as the missing data: the observed information
    of a template is E_post[complete information] - Var_post[complete score], the posterior being
    that of z given the template's answers (the complete data are a logistic regression on
    (1, variant, gamma, z)). A continuous gamma leaves no finite set of outcomes to enumerate, so
    the expected information is the average of the observed one over ``n_draws`` simulated
    templates (fixed seed), each posterior integrated by adaptive Gauss-Hermite quadrature around
    its mode (with 50 answers per template it is far narrower than the prior). The slope's own
    element then uses the exact expectation of its complete information (2-D quadrature,
    :func:`_gamma_complete_information`) as a control variate: only the small lost part (a few %)
    stays Monte Carlo, which moves the slope's standard error by about 0.1%.
    """
    sd = max(math.sqrt(ranef_var), 1e-3)
    n_items = 1 + int(n_variants)
    m = int(n_draws)
    rng = np.random.default_rng(seed)
    v = np.r_[0.0, np.ones(n_items - 1)]
    x = rng.normal(0.0, gamma_sd, (m, n_items))
    z_true = rng.normal(0.0, 1.0, m)
    unif = rng.random((m, n_items))
    fixed = b0 + b_gamma * x                                   # (m, n); b_variant = 0
    y = (unif < special.expit(fixed + sd * z_true[:, None])).astype(float)
    # posterior mode of z: h(z) = sum_j [y eta - log(1 + e^eta)] - z^2 / 2 is concave
    z = np.zeros(m)
    for _ in range(60):
        p = special.expit(fixed + sd * z[:, None])
        step = np.clip((sd * (y - p).sum(1) - z) / ((sd * sd) * (p * (1 - p)).sum(1) + 1.0), -2.0, 2.0)
        z = z + step
        if np.max(np.abs(step)) < 1e-10:
            break
    p = special.expit(fixed + sd * z[:, None])
    scale = 1.0 / np.sqrt((sd * sd) * (p * (1 - p)).sum(1) + 1.0)
    zk = z[:, None] + scale[:, None] * _AGQ_NODES[None, :]    # (m, K)
    eta = fixed[:, :, None] + sd * zk[:, None, :]              # (m, n, K)
    ll = (y[:, :, None] * eta - np.logaddexp(0.0, eta)).sum(1) - 0.5 * zk ** 2 + 0.5 * _AGQ_NODES[None, :] ** 2
    lw = ll + np.log(_AGQ_WEIGHTS)[None, :]
    post = np.exp(lw - special.logsumexp(lw, axis=1, keepdims=True))  # (m, K)
    pk = special.expit(eta)
    r = y[:, :, None] - pk                                     # (m, n, K)
    w = pk * (1 - pk)
    # per node: sums over the answers of r * covariate and w * covariate products
    rs, rv, rx = r.sum(1), np.einsum("mnk,n->mk", r, v), np.einsum("mnk,mn->mk", r, x)
    w1, wv, wx = w.sum(1), np.einsum("mnk,n->mk", w, v), np.einsum("mnk,mn->mk", w, x)
    wxx, wvx = np.einsum("mnk,mn->mk", w, x * x), np.einsum("mnk,mn->mk", w, v[None, :] * x)
    score = np.stack([rs, rv, rx, rs * zk])                    # (4, m, K)
    comp = np.array([[w1, wv, wx, w1 * zk], [wv, wv, wvx, wv * zk], [wx, wvx, wxx, wx * zk],
                     [w1 * zk, wv * zk, wx * zk, w1 * zk * zk]])  # (4, 4, m, K); v * v = v
    e_comp = np.einsum("abmk,mk->abm", comp, post)
    centred = score - np.einsum("amk,mk->am", score, post)[:, :, None]
    var_score = np.einsum("amk,bmk,mk->abm", centred, centred, post)
    info = (e_comp - var_score).mean(axis=2)
    exact = _gamma_complete_information(b0, b_gamma, sd, n_variants, gamma_sd)
    info[2, 2] += exact[2, 2] - e_comp[2, 2].mean()
    return info


def wald_se(n_templates: int, n_variants: int, *, odds_ratio: float, baseline_acc: float,
            ranef_var: float, effect: str = "variant", gamma_sd: float = GAMMA_SD) -> float:
    """Large-sample standard error of the effect's log OR at the design: the variant effect in
    GLMM 1 (exact expected information, :func:`template_information`) or the number effect, the
    log OR per unit of gamma in GLMM 2 (:func:`gamma_template_information`)."""
    _check_effect(effect)
    b0 = intercept_for_accuracy(baseline_acc, ranef_var)
    if effect == VARIANT:
        info, k = n_templates * template_information(b0, math.log(odds_ratio), ranef_var, n_variants), 1
    else:
        if not gamma_sd > 0 or not math.isfinite(gamma_sd):
            raise PowerError(f"gamma_sd must be positive and finite, not {gamma_sd!r}")
        info = n_templates * gamma_template_information(b0, math.log(odds_ratio), ranef_var, n_variants,
                                                        gamma_sd=gamma_sd)
        k = 2
    try:
        cov = np.linalg.inv(info)
    except np.linalg.LinAlgError:
        return float("inf")
    return float(math.sqrt(max(cov[k, k], 0.0)))


def wald_power(n_templates: int, n_variants: int, *, odds_ratio: float, baseline_acc: float,
               ranef_var: float, alpha: float = ALPHA, effect: str = "variant", gamma_sd: float = GAMMA_SD) -> float:
    """Power of a two-sided Wald test of the effect at level ``alpha``: the variant effect (GLMM 1)
    or the number effect (GLMM 2, OR per unit of gamma, gamma's spread ``gamma_sd``)."""
    se = wald_se(n_templates, n_variants, odds_ratio=odds_ratio, baseline_acc=baseline_acc, ranef_var=ranef_var,
                 effect=effect, gamma_sd=gamma_sd)
    if not math.isfinite(se) or se == 0:
        return float("nan")
    z = stats.norm.ppf(1 - alpha / 2)
    shift = abs(math.log(odds_ratio)) / se
    return float(stats.norm.cdf(shift - z) + stats.norm.cdf(-shift - z))


def wald_mde(n_templates: int, n_variants: int, *, baseline_acc: float, ranef_var: float,
             alpha: float = ALPHA, target: float = TARGET_POWER, direction: str = "below",
             effect: str = "variant", gamma_sd: float = GAMMA_SD) -> float:
    """The OR (below 1 by default, else above) nearest 1 at which :func:`wald_power` reaches
    ``target``; NaN when no OR up to 1/1000 (or 1000) does."""
    sign = -1.0 if direction == "below" else 1.0
    g = lambda L: wald_power(n_templates, n_variants, odds_ratio=math.exp(sign * L),  # noqa: E731
                             baseline_acc=baseline_acc, ranef_var=ranef_var, alpha=alpha, effect=effect,
                             gamma_sd=gamma_sd) - target
    # the Wald test's power need not grow without bound in |log OR| (with an extreme OR the
    # variants' answers carry no information; Hauck and Donner), so the first crossing is searched
    # on a grid, then refined
    # (the number effect's information costs a simulation, ~0.1 s: a coarser, geometric grid)
    grid = (np.linspace(1e-3, math.log(1000.0), 120) if effect == VARIANT
            else np.geomspace(1e-3, math.log(1000.0), 30))
    vals = [g(L) for L in grid]
    for i, v in enumerate(vals):
        if v == v and v >= 0:
            if i == 0:
                return float(math.exp(sign * grid[0]))
            return float(math.exp(sign * optimize.brentq(g, grid[i - 1], grid[i], xtol=1e-8)))
    return float("nan")


# ---------------------------------------------------------------------------- simulation
@dataclass(frozen=True)
class Scenario:
    """Where a design's data come from: GSM-Base accuracy (a fraction) and the template-intercept
    variance on the log-odds scale; ``name`` labels it in tables and figures."""
    name: str
    baseline_acc: float
    ranef_var: float


def wilson(successes: int, n: int, z: float = MC_Z) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (honest at 0 and 1, where the MC standard
    error is 0)."""
    if n <= 0:
        return float("nan"), float("nan")
    p = successes / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, centre - half), min(1.0, centre + half)


def power_point(n_templates: int, n_variants: int, odds_ratio: float, scenario: Scenario, *,
                effect: str = "variant", n_sims: int, n_resamples: int, alpha: float = ALPHA, seed: int = POWER_SEED,
                engine: E.Engine | str = POWER_ENGINE, cores: int = 1, scenario_index: int = 0,
                gamma_sd: float = GAMMA_SD) -> dict:
    """Simulated power of the bootstrap test at one design point: one row of :data:`POWER_COLUMNS`."""
    eng = resolve_engine(engine)
    _check_effect(effect)
    if n_sims < 1 or n_resamples < 1:
        raise PowerError(f"n_sims and n_resamples must be positive, not {n_sims} and {n_resamples}")
    glmm, term = EFFECT_TERMS[effect]
    effect_key = list(EFFECT_TERMS).index(effect)
    t0 = time.perf_counter()
    data, boot_seeds = [], []
    for k in range(n_sims):
        data_seed = _seed(seed, 1, scenario_index, effect_key, n_templates, n_variants, k)
        df = simulate_design(n_templates, n_variants, odds_ratio=odds_ratio, baseline_acc=scenario.baseline_acc,
                             ranef_var=scenario.ranef_var, effect=effect, seed=data_seed, gamma_sd=gamma_sd)
        data.append(G.validate_glmm_input(df, glmm, source="simulated data"))
        boot_seeds.append(int(_seed(seed, 2, scenario_index, effect_key, n_templates, n_variants, k)
                              .generate_state(1, dtype=np.uint32)[0] & 0x7FFFFFFF))
    # (fitting every data set's resamples in one laplace batch was measured no faster: the fits dominate)
    n_sig = n_no_p = clean = n_fallback = 0
    for df, s in zip(data, boot_seeds):
        used = eng
        try:
            table = bootstrap_table(df, glmm, n_resamples, s, engine=eng, cores=cores)
        except (FloatingPointError, np.linalg.LinAlgError) as exc:
            fallback = eng.fallback
            if fallback is None:
                raise
            # the engine (laplace) gave up on this data set (numerically): its fallback (lme4) fits
            # the same resamples (R's draws from the same seed), and the row counts it
            n_fallback += 1
            import logging
            logging.getLogger("earnest.stats.power").warning(
                "%s engine failed on a simulated data set (%s); refitted with %s", eng.name, exc, fallback)
            used = resolve_engine(fallback)
            table = bootstrap_table(df, glmm, n_resamples, s, engine=used, cores=cores)
        p, n_clean, degenerate, called = test_p(table, term, df, glmm, alpha, engine=used)
        clean += n_clean
        if math.isnan(p):
            n_no_p += 1
        n_sig += int(called)
    seconds = time.perf_counter() - t0
    power = n_sig / n_sims
    wp = wald_power(n_templates, n_variants, odds_ratio=odds_ratio, baseline_acc=scenario.baseline_acc,
                    ranef_var=scenario.ranef_var, alpha=alpha, effect=effect, gamma_sd=gamma_sd)
    return {"scenario": scenario.name, "effect": effect, "n_templates": int(n_templates),
            "n_variants": int(n_variants), "baseline_acc": scenario.baseline_acc, "ranef_var": scenario.ranef_var,
            "gamma_sd": float(gamma_sd) if effect == "gamma" else float("nan"),
            "odds_ratio": float(odds_ratio), "log_or": math.log(odds_ratio), "n_sims": int(n_sims),
            "n_resamples": int(n_resamples), "alpha": float(alpha), "engine": eng.name, "n_p_below_alpha": n_sig,
            "power": power, "mc_se": math.sqrt(power * (1 - power) / n_sims),
            **dict(zip(("power_ci_low", "power_ci_high"), wilson(n_sig, n_sims))), "n_no_p": n_no_p,
            "clean_share": clean / (n_sims * n_resamples), "n_engine_fallback": n_fallback,
            "wald_power": wp, "seconds": seconds,
            "fits": n_sims * n_resamples}


def power_study(scenarios: Sequence[Scenario], templates: Iterable[int], variants: Iterable[int],
                odds_ratios: Iterable[float], *, effects: Sequence[str] = POWER_EFFECTS, n_sims: int,
                n_resamples: int, alpha: float = ALPHA, seed: int = POWER_SEED, engine: E.Engine | str = POWER_ENGINE,
                cores: int = 1,
                gamma_sd: float = GAMMA_SD, log: Callable[[str], None] | None = None,
                on_point: Callable[[str], None] | None = None) -> pd.DataFrame:
    """Power over the grid scenarios x effects x templates x variants x odds ratios
    (:data:`POWER_COLUMNS`, one row per point). Each point's result is said by ``on_point(message)``
    (a step of :class:`earnest.progress.Progress`), else by ``log(message)``. ``engine`` is resolved
    here, once, and every point gets the :class:`earnest.stats.engines.Engine`."""
    engine = resolve_engine(engine)
    for e in effects:
        _check_effect(e)
    templates, variants, odds_ratios = list(templates), list(variants), sorted(set(float(o) for o in odds_ratios))
    if not (scenarios and templates and variants and odds_ratios):
        raise PowerError("the power grid is empty: give at least one scenario, template count, "
                         "variant count and odds ratio")
    for nt in templates:   # the whole grid before the first fit
        for nv in variants:
            check_design(nt, nv)
    rows = []
    for si, sc in enumerate(scenarios):
        for effect in effects:
            for nt in templates:
                for nv in variants:
                    for orr in odds_ratios:
                        row = power_point(nt, nv, orr, sc, effect=effect, n_sims=n_sims, n_resamples=n_resamples,
                                          alpha=alpha, seed=seed, engine=engine, cores=cores, scenario_index=si,
                                          gamma_sd=gamma_sd)
                        rows.append(row)
                        say = on_point or log
                        if say:
                            say(f"{sc.name} {effect} {nt}x{nv} OR {orr:.3g}: power {row['power']:.3f} "
                                f"(MC se {row['mc_se']:.3f}; Wald {row['wald_power']:.3f}), "
                                f"{row['fits']} fits in {row['seconds']:.1f} s")
    return pd.DataFrame(rows, columns=list(POWER_COLUMNS))


# ---------------------------------------------------------------------------- the MDE
def isotonic(y: Sequence[float], w: Sequence[float] | None = None) -> np.ndarray:
    """Non-decreasing least-squares fit to ``y`` (pool adjacent violators) with weights ``w``."""
    y = np.asarray(y, dtype=float)
    w = np.ones_like(y) if w is None else np.asarray(w, dtype=float)
    blocks = []  # [value, weight, count]
    for yi, wi in zip(y, w):
        blocks.append([yi, wi, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            v2, w2, c2 = blocks.pop()
            v1, w1, c1 = blocks.pop()
            blocks.append([(v1 * w1 + v2 * w2) / (w1 + w2), w1 + w2, c1 + c2])
    return np.concatenate([[v] * c for v, _, c in blocks])


def _crossing(x: np.ndarray, y: np.ndarray, target: float) -> float:
    """First x where the piecewise-linear (x, y) reaches ``target``; NaN if it never does."""
    if y[0] >= target:
        return float(x[0])
    for i in range(1, len(x)):
        if y[i] >= target:
            if y[i] == y[i - 1]:
                return float(x[i])
            return float(x[i - 1] + (target - y[i - 1]) * (x[i] - x[i - 1]) / (y[i] - y[i - 1]))
    return float("nan")


def minimum_detectable_or(power: pd.DataFrame, *, target: float = TARGET_POWER, direction: str = "below") -> pd.DataFrame:
    """The MDE at ``target`` power of every design of a :func:`power_study` table
    (:data:`MDE_COLUMNS`).

    ``direction`` "below" uses the grid's ORs < 1 (a decline, as the paper's effects), "above"
    those > 1. ``mde_bound`` is "" when the curve crosses ``target`` inside the grid, "beyond grid"
    when even the grid's largest effect has less power (the MDE is further from 1 than the grid
    reaches: ``mde_or`` then holds that largest effect's OR as a bound), "within grid" when its
    smallest effect already has that power (the MDE is closer to 1).
    """
    if direction not in ("below", "above"):
        raise PowerError(f"direction must be 'below' or 'above', not {direction!r}")
    keys = ["scenario", "effect", "n_templates", "n_variants"]
    rows = []
    for _, g in power.groupby(keys, sort=False):
        side = g[(g["odds_ratio"] < 1) if direction == "below" else (g["odds_ratio"] > 1)]
        anchor = g[g["odds_ratio"] == 1]
        pts = pd.concat([anchor, side]).assign(dist=lambda d: d["log_or"].abs()).sort_values("dist")
        first = g.iloc[0]
        row = {k: first[k] for k in ("scenario", "effect", "n_templates", "n_variants", "baseline_acc",
                                     "ranef_var", "n_sims", "n_resamples", "alpha")}
        gamma = first["effect"] == "gamma"
        row["gamma_sd"] = float(first.get("gamma_sd", GAMMA_SD)) if gamma else float("nan")
        row["target_power"] = target
        row["wald_mde_or"] = wald_mde(int(first["n_templates"]), int(first["n_variants"]),
                                      baseline_acc=first["baseline_acc"], ranef_var=first["ranef_var"],
                                      alpha=first["alpha"], target=target, direction=direction,
                                      effect=str(first["effect"]), gamma_sd=row["gamma_sd"] if gamma else GAMMA_SD)
        sign = -1.0 if direction == "below" else 1.0
        if side.empty:
            row.update(mde_or=np.nan, mde_or_mc_low=np.nan, mde_or_mc_high=np.nan, mde_bound="",
                       note=f"no odds ratio {direction} 1 in the grid")
            rows.append(row)
            continue
        x = pts["dist"].to_numpy(dtype=float)
        w = pts["n_sims"].to_numpy(dtype=float)
        pw = pts["power"].to_numpy(dtype=float)
        fit = isotonic(pw, w)
        d = _crossing(x, fit, target)
        # a higher power curve reaches the target at a smaller effect: the MC range's two ends
        d_near = _crossing(x, isotonic(pts["power_ci_high"].to_numpy(dtype=float), w), target)
        d_far = _crossing(x, isotonic(pts["power_ci_low"].to_numpy(dtype=float), w), target)
        to_or = lambda v: float(math.exp(sign * v)) if math.isfinite(v) else float("nan")  # noqa: E731
        bound, note = "", ""
        if math.isnan(d):
            bound = "beyond grid"
            d = float(x[-1])
            note = f"power {fit[-1]:.2f} < {target:.2f} even at the grid's largest effect"
        elif anchor.empty and fit[0] >= target:
            bound = "within grid"
            note = "power already reaches the target at the grid's smallest effect"
        if math.isnan(d_far):
            d_far = float(x[-1])
            note = "; ".join(filter(None, [note, f"Monte Carlo range open: the lower Wilson bound stays "
                                                 f"below {target:.2f} on the grid (more sims narrow it)"]))
        row.update(mde_or=to_or(d), mde_or_mc_low=to_or(d_near), mde_or_mc_high=to_or(d_far),
                   mde_bound=bound, note=note)
        if direction == "below":  # OR < 1: the "near" end is the larger OR
            row["mde_or_mc_low"], row["mde_or_mc_high"] = row["mde_or_mc_high"], row["mde_or_mc_low"]
        rows.append(row)
    return pd.DataFrame(rows, columns=list(MDE_COLUMNS))


# ---------------------------------------------------------------------------- designs of real results
DESIGN_COLUMNS = ("n_templates", "n_variants_per_template", "design_acc_base", "design_ranef_var",
                  "mde_or", "mde_method", "mde_note", "mde_or_observed")


def observed_mde(ci_low_log: float, ci_high_log: float, *, alpha: float = ALPHA, target: float = TARGET_POWER,
                 level: float = 0.95) -> float:
    """The OR below 1 a result's own bootstrap precision could detect with ``target`` power: the
    standard error implied by its percentile interval (width / 2 z_level) times
    (z_{1-alpha/2} + z_target). Unlike :func:`wald_mde` it carries the bootstrap's real spread,
    which on the paper's Table 3 is 0-33% wider than the Wald approximation's."""
    if not (math.isfinite(ci_low_log) and math.isfinite(ci_high_log)) or ci_high_log <= ci_low_log:
        return float("nan")
    se = (ci_high_log - ci_low_log) / (2 * stats.norm.ppf(0.5 + level / 2))
    return float(math.exp(-(stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(target)) * se))


def design_mde(n_templates: int, n_variants: float, acc_base_pct: float, ranef_var: float, *,
               alpha: float = ALPHA, target: float = TARGET_POWER) -> dict:
    """The Wald-approximation MDE (OR below 1) of one real result's design: its template count,
    variants per template, GSM-Base accuracy (%) and template-intercept variance."""
    out = {"n_templates": int(n_templates), "n_variants_per_template": float(n_variants),
           "design_acc_base": acc_base_pct, "design_ranef_var": ranef_var, "mde_or": float("nan"),
           "mde_method": "wald", "mde_note": ""}
    acc = acc_base_pct / 100.0 if acc_base_pct == acc_base_pct else float("nan")
    nv = int(round(n_variants)) if n_variants == n_variants else 0
    if not n_templates >= 2 or nv < 1:
        out["mde_note"] = "fewer than 2 templates or no variants: nothing to detect with"
    elif not (0.0 < acc < 1.0):
        out["mde_note"] = (f"GSM-Base accuracy {acc_base_pct:.0f}%: with no correct (or no wrong) base answer "
                           f"the variant effect has no finite estimate, so no OR is detectable")
    elif not (ranef_var == ranef_var and math.isfinite(ranef_var)):
        out["mde_note"] = "no template-intercept variance (no clean fit)"
    else:
        mde = wald_mde(int(n_templates), nv, baseline_acc=acc, ranef_var=float(ranef_var), alpha=alpha, target=target)
        out["mde_or"] = mde
        if math.isnan(mde):
            out["mde_note"] = f"power stays below {target:.0%} even at OR 1/1000"
    return out


def _checked_summaries(summaries: pd.DataFrame, source: str) -> pd.DataFrame:
    """The columns a design is read from, checked (PowerError naming ``source``, the column and the
    data row): glmm, n_base and n_variants integers (counts >= 0, a design of at most
    :data:`MAX_ANSWERS` answers), acc_base a percentage (empty where there are no GSM-Base answers)."""
    out = summaries.reset_index(drop=True).copy()
    for col in ("glmm", "n_base", "n_variants"):
        out[col] = G.integer_ids(out[col], col, source, PowerError, what="ids" if col == "glmm" else "counts")
        if col != "glmm" and (out[col] < 0).any():
            i = int(np.flatnonzero((out[col] < 0).to_numpy())[0])
            raise PowerError(f"{source}: column '{col}' is a count of answers, found {out[col].iloc[i]} in data row {i + 1}")
    big = (out["n_base"] + out["n_variants"]) > MAX_ANSWERS
    if big.any():
        i = int(np.flatnonzero(big.to_numpy())[0])
        raise PowerError(f"{source}: data row {i + 1}: {out['n_base'].iloc[i]:,} + {out['n_variants'].iloc[i]:,} answers, "
                         f"more than {MAX_ANSWERS:,} in one result (the paper's design: 5,100)")
    acc = pd.to_numeric(out["acc_base"], errors="coerce")
    # a result without GSM-Base answers (a reasoning-only analysis that excluded them all) has no accuracy
    no_answers = (out["n_base"] == 0) & out["acc_base"].isna()
    wrong = ~(((acc >= 0) & (acc <= 100)) | no_answers).to_numpy()
    if wrong.any():
        i = int(np.flatnonzero(wrong)[0])
        raise PowerError(f"{source}: column 'acc_base' must be a percentage (0 to 100), found "
                         f"{G.show_value(out['acc_base'].iloc[i])} in data row {i + 1}")
    out["acc_base"] = acc.astype(float)
    return out


def design_mde_table(summaries: pd.DataFrame, *, alpha: float = ALPHA, target: float = TARGET_POWER,
                     source: str = "summaries table") -> pd.DataFrame:
    """Every variant-effect row of a bootstrap summaries table (GLMM 1) with the MDE of its design.

    The design of a result: n_templates = its number of GSM-Base answers (one per template),
    variants per template = n_variants / n_base, baseline accuracy = its GSM-Base accuracy, template
    variance = the mean random-intercept variance of its clean resamples (the Wald fit's when none).
    ``mde_or`` is the Wald approximation at that design (:func:`design_mde`); ``mde_or_observed``
    the MDE implied by the result's own bootstrap interval (:func:`observed_mde`).
    """
    need = ("model", "prompt", "glmm", "term", "n_base", "n_variants", "acc_base", "ranef_var_mean")
    missing = [c for c in need if c not in summaries.columns]
    if missing:
        raise PowerError(f"{source}: missing columns {missing}")
    summaries = _checked_summaries(summaries, source)
    sel = summaries[(summaries["glmm"] == 1) & (summaries["term"] == VARIANT)]
    if "analysis" in sel.columns:
        sel = sel[sel["analysis"] == "all"]
    rows = []
    for r in sel.itertuples(index=False):
        rv = float(r.ranef_var_mean)
        if not math.isfinite(rv) and "wald_ranef_var" in sel.columns:
            rv = float(getattr(r, "wald_ranef_var"))
        nb = int(r.n_base)
        d = design_mde(nb, (r.n_variants / nb) if nb else float("nan"), float(r.acc_base), rv, alpha=alpha,
                       target=target)
        d["mde_or_observed"] = (observed_mde(float(r.ci_low_log), float(r.ci_high_log), alpha=alpha, target=target)
                                if "ci_low_log" in sel.columns else float("nan"))
        rows.append({**r._asdict(), **d})
    cols = list(sel.columns) + [c for c in DESIGN_COLUMNS if c not in sel.columns]
    return pd.DataFrame(rows, columns=cols)


# ---------------------------------------------------------------------------- outputs
#: What the power table says of its OR = 1 rows (issue 50; measured in benchmarks/README.md,
#: benchmarks/power_null.py): a false-positive rate judged against the test's exact level at B, with
#: the Monte Carlo interval of few data sets.
NULL_ROW_CAPTION = (
    "The OR = 1 rows are the test's false-positive rate. Judge them by their 95% Wilson interval (wilson_95), "
    "not by ± one standard error: with few data sets it is wide (3 of 20 = 15% has [5%, 36%]), and because every "
    "point of a curve reuses the same data sets (common random numbers) one unlucky draw of null data shows in "
    "the whole row, for a plain Wald test on the same data as well. Their expected value is not alpha but at most "
    "the Eq. 4 test's exact level with B resamples (note; 0.059 at B = 100 and alpha 0.05); over 400 null data "
    "sets at the paper's median model the rate was within Monte Carlo error of it (benchmarks/README.md).")


def null_row_note(row) -> str:
    """The power table's note for one point (:func:`write_power_tables`): for an OR = 1 point, the
    rate it should not exceed (the Eq. 4 test's exact level at its B, :func:`bootstrap_test_level`;
    a verdict that also asks the full-data test rejects less often) and whether its 95% Wilson
    interval is above it; '' for other points."""
    if float(row.odds_ratio) != 1.0:
        return ""
    level = bootstrap_test_level(int(row.n_resamples), float(row.alpha))
    above = float(row.power_ci_low) > level
    return (f"false-positive rate: {int(row.n_p_below_alpha)}/{int(row.n_sims)}, expected at most {level:.3f} (Eq. 4's "
            f"exact level at B = {int(row.n_resamples)}, alpha {float(row.alpha):g}); "
            + ("ABOVE it beyond Monte Carlo error: look at the data sets" if above
               else "within Monte Carlo error"))


def write_power_tables(power: pd.DataFrame, mde: pd.DataFrame, out_dir) -> dict:
    """``power.{csv,md,tex}`` and ``mde.{csv,md,tex}`` under ``out_dir``; returns the paths."""
    from pathlib import Path

    from earnest.tables import write_table

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if len(power):
        first = power.iloc[0]
        how = (f"{int(first['n_sims'])} simulated data sets per point, B = {int(first['n_resamples'])} template "
               f"resamples each, alpha = {first['alpha']:g}, engine {first['engine']}")
    else:
        how = "no simulations"
    shown = power.assign(
        baseline_acc=(100 * power["baseline_acc"]).map(lambda v: f"{v:.1f}%"),
        power=[f"{pw:.3f} ± {se:.3f}" for pw, se in zip(power["power"], power["mc_se"])],
        wilson_95=[f"[{lo:.3f}, {hi:.3f}]" for lo, hi in zip(power["power_ci_low"], power["power_ci_high"])],
        note=[null_row_note(r) for r in power.itertuples()],
    )[["scenario", "effect", "n_templates", "n_variants", "baseline_acc", "ranef_var", "odds_ratio", "power",
       "wilson_95", "wald_power", "n_no_p", "clean_share", "seconds", "note"]]
    paths = {"power": write_table(shown, out_dir / "power",
                                  f"Simulated power of the template-bootstrap test (Eq. 4 P value < alpha): "
                                  f"{how}. ± is one Monte Carlo standard error; wald_power is the large-sample "
                                  f"Wald approximation of the same effect (number effect: OR per unit of gamma, "
                                  f"gamma drawn per answer with sd gamma_sd). n_no_p: data sets on which the test "
                                  f"gave no P value (no clean bootstrap fit, as under separation, where every "
                                  f"answer of one arm is right or wrong), counted as not significant: at extreme "
                                  f"odds ratios both tests lose power. {NULL_ROW_CAPTION}", csv=power)}
    mshown = mde.assign(
        baseline_acc=(100 * mde["baseline_acc"]).map(lambda v: f"{v:.1f}%"),
        mde=[("n/a" if not math.isfinite(m) else (("< " if b == "beyond grid" else "> " if b == "within grid"
                                                    else "") + f"{m:.3f}"))
             for m, b in zip(mde["mde_or"], mde["mde_bound"])],
        mc_range=[f"[{lo:.3f}, {hi:.3f}]" if math.isfinite(lo) and math.isfinite(hi) else "n/a"
                  for lo, hi in zip(mde["mde_or_mc_low"], mde["mde_or_mc_high"])],
    )[["scenario", "effect", "n_templates", "n_variants", "baseline_acc", "ranef_var", "mde", "mc_range",
       "wald_mde_or", "note"]]
    paths["mde"] = write_table(mshown, out_dir / "mde",
                               f"Minimum detectable odds ratio at {TARGET_POWER:.0%} power (OR below 1), "
                               f"interpolated in log OR on the isotonic simulated power curve; mc_range: the same on "
                               f"the ends of each point's 95% Wilson interval; {how}.", csv=mde)
    return paths


def _scenario_from(name: str, acc_pct: float, rv: float, log) -> Scenario | None:
    if not (0.0 < acc_pct < 100.0):
        log(f"{name}: GSM-Base accuracy {acc_pct:.1f}%: no finite variant effect is estimable, skipped")
        return None
    if not (rv == rv and math.isfinite(rv)):
        log(f"{name}: no template-intercept variance (no clean fit), skipped")
        return None
    return Scenario(name, acc_pct / 100.0, float(rv))


def scenarios_from_results(*, summary=None, glmm_input: pd.DataFrame | None = None,
                           log: Callable[[str], None] = print) -> tuple[list[Scenario], tuple[int, int] | None]:
    """Scenarios from real results: every GLMM 1 variant row of a bootstrap summaries table
    (GSM-Base accuracy, mean template variance of the clean resamples), and/or every model x prompt
    of a GLMM input (its GSM-Base accuracy and the template variance of a full-data lme4 fit).
    Returns (scenarios, design of the first result as (templates, variants per template))."""
    from pathlib import Path
    scenarios, designs = [], []
    if summary is not None:
        path = Path(summary)
        s = G.read_input_table(path, "a summaries table", "analysis,glmm,model,prompt,term,...", PowerError)
        table = design_mde_table(s, source=str(path))
        for r in table.itertuples(index=False):
            sc = _scenario_from(f"{r.model} / {r.prompt}", float(r.acc_base), float(r.design_ranef_var), log)
            if sc:
                scenarios.append(sc)
            # the results' design stands even when their scenario is skipped (a stated scenario uses it)
            designs.append((int(r.n_templates), int(round(r.n_variants_per_template))))
    if glmm_input is not None:
        from earnest.stats.summary import accuracies
        data = G.validate_glmm_input(glmm_input, 1, source="harness samples")
        lme4 = E.get_engine(G.LME4)                       # the template variance of lme4's full-data fit
        for model, prompt, sub in G.groups(data):
            acc = accuracies(sub)
            # a GSM-Base accuracy of 0 or 100% gives no scenario: no fit is needed to say so
            fit_rv = lme4.full_fit(sub, 1).ranef_var if 0.0 < acc["acc_base"] < 100.0 else float("nan")
            sc = _scenario_from(f"{model} / {prompt}", acc["acc_base"], fit_rv, log)
            if sc:
                scenarios.append(sc)
            nt = int(sub["template"].nunique())
            designs.append((nt, max(1, int(round(acc["n_variants"] / nt)))))
    if designs and len(set(designs)) > 1:
        log(f"results have different designs {sorted(set(designs))}; the grid uses the first, {designs[0]}, "
            f"unless --templates/--variants are given")
    return scenarios, (designs[0] if designs else None)


def write_results_mde_table(summaries: pd.DataFrame, stem, *, target: float = TARGET_POWER) -> dict:
    """Every GLMM 1 variant result of a run beside the minimum detectable OR of its design, as
    ``stem.{csv,md,tex}``: a non-significant result then reads as "could not have detected an OR
    below X". ``summaries`` is the run's summaries table (``earnest.stats.summaries``); its
    ``significant_uncorrected`` / ``significant_holm`` verdicts and ``alpha`` are shown as they are."""
    from earnest.tables import write_table
    from earnest.wording import DEGENERATE_MARK, DEGENERATE_TEXT, format_or_interval, format_p

    need = ("alpha", "significant_uncorrected", "significant_holm", "p_holm", "prompt_label", "ci_low", "ci_high", "odds_ratio",
            "p_boot")
    missing = [c for c in need if c not in summaries.columns]
    if missing:
        raise PowerError(f"summaries table: missing columns {missing} (is it results/stats/summaries.parquet?)")
    alphas = summaries["alpha"].dropna().unique()
    alpha = float(alphas[0]) if len(alphas) else 0.05
    t = design_mde_table(summaries, alpha=alpha, target=target)

    def fmt(v, spec=".2f"):
        return "n/a" if not (isinstance(v, (int, float)) and math.isfinite(v)) else format(v, spec)

    def verdict(sig, sig_holm, degenerate):
        if degenerate:  # never a finding, whatever its P (the summaries' verdicts say the same)
            return f"no ({DEGENERATE_MARK} degenerate)"
        return ("yes" if bool(sig) else "no") + (" (Holm: yes)" if bool(sig_holm) else " (Holm: no)")

    degenerate = (t["degenerate"].fillna(False).astype(bool) if "degenerate" in t.columns
                  else pd.Series(False, index=t.index))
    shown = pd.DataFrame({
        "model": t["model"], "prompt": t["prompt_label"],
        "design": [f"{n} x {v:g}" for n, v in zip(t["n_templates"], t["n_variants_per_template"])],
        "acc_base": [fmt(v, ".1f") for v in t["acc_base"]],
        # the tables' one rule for an estimate: a degenerate fit's odds ratio is the mark alone
        "odds_ratio": [format_or_interval(o, lo, hi, d) for o, lo, hi, d in
                       zip(t["odds_ratio"], t["ci_low"], t["ci_high"], degenerate)],
        "p_boot": [format_p(p, alpha, missing="n/a") for p in t["p_boot"]],
        "significant (uncorrected; Holm)": [verdict(a, b, d) for a, b, d in zip(t["significant_uncorrected"],
                                                                         t["significant_holm"], degenerate)],
        "mde_wald": [fmt(v) for v in t["mde_or"]],
        # a degenerate fit's interval carries no information, nor does an MDE read from it
        "mde_observed": [DEGENERATE_MARK if d else fmt(v) for v, d in zip(t["mde_or_observed"], degenerate)],
        "note": t["mde_note"],
    })
    return write_table(shown, stem,
                       f"Variant effect (GLMM 1) of every model x prompt beside the minimum detectable odds ratio "
                       f"(OR below 1 detected with {target:.0%} power at alpha = {alpha:g}) of its design "
                       f"(templates x variants per template, its GSM-Base accuracy and template variance). "
                       f"mde_wald: large-sample Wald approximation at the design; mde_observed: from the result's "
                       f"own bootstrap interval (2.80 bootstrap standard errors); a non-significant OR between "
                       f"the MDE and 1 could not have been detected reliably. {DEGENERATE_MARK}: degenerate fit "
                       f"({DEGENERATE_TEXT}), never a finding.", csv=t)
