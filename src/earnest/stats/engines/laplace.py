"""The laplace engine: GLMM 1 and GLMM 2 fitted for many bootstrap resamples at once, in numpy,
behind :class:`earnest.stats.engines.base.Engine` (:class:`LaplaceEngine`, with its check against
lme4, :func:`cross_check`, and its process pool of forked fitting processes, :func:`fit_arrays`).

For a binomial GLMM with one random intercept per cluster, lme4's Laplace deviance (nAGQ = 1) is a
sum of one-dimensional terms, one per cluster. With u ~ N(0, 1), b = theta * u and
eta_i = x_i' beta + theta * u for the rows i of template t,

    d_t(beta, theta) = min_u [ -2 sum_i log dbinom(y_i; n_i, mu_i) + u^2 ] + log(1 + theta^2 W_t)

with W_t = sum_i n_i mu_i (1 - mu_i) at the minimising u (the conditional mode). A bootstrap
resample that draws template t k_t times has deviance sum_t k_t d_t(beta, theta): every resample
shares the per-template terms and differs only in the weights k. This module therefore fits a whole
matrix of weights (resamples x templates) at once:

* the conditional modes by Newton's method, vectorised over resamples x templates;
* (beta, theta) by Newton's method with exact gradients (implicit differentiation through the
  modes) and a Hessian from differences of those gradients, with a line search. The deviance is
  even in theta, so theta is optimised freely and reported as |theta| (theta >= 0 as in lme4);
* at the optimum, what lme4's ``checkConv`` computes: the singular check (theta < 1e-4 -> the
  message "boundary (singular) fit", no derivative checks), and otherwise the finite-difference
  gradient and Hessian of ``lme4:::deriv12`` (step 1e-4, the same evaluation points), the scaled
  gradient test (tol 0.002) and ``checkHess`` on the fixed-effect block and on the whole Hessian
  (negative or zero eigenvalues, "very large eigenvalue" above 1e6, eigenvalue ratio below 1e-6),
  with lme4's message texts; plus lme4's ``checkScaleX`` warning. Newton's method that does not
  converge (iteration limit, no decrease found away from an optimum) is reported in lme4's own
  convergence channel (``lme4_messages``, :data:`NO_CONVERGENCE`) as well as among the warnings, so
  no clean rule keeps a fit that is not at an optimum (on separated resamples there is none: the
  estimates drift to +-17..20); conditional modes that cannot be found are an error
  (:data:`MODES_FAILED`), as lme4's PIRLS failure is. A fit is clean when it has no message and no
  error, as with lme4.
  ``checks="screened"`` (the default of the bootstrap and the power analysis; ``"deriv12"`` runs
  it everywhere, and the full-data fit always does, its Hessian gives the Wald SEs) first decides
  checkConv from the exact gradient and Hessian at the optimum, which Newton's method has anyway:
  where a bound on deriv12's rounding and truncation error leaves every test's outcome certain,
  that outcome is deriv12's, and deriv12's 2q^2 extra deviance evaluations are skipped; anywhere
  closer to a threshold deriv12 runs as before (see :func:`_screened_verdicts`). Same messages by
  construction, checked on every fit in tests/test_stats_laplace.py and benchmarks/bootstrap.py.
  Above :data:`LARGE_N` (10,000) answers the absolute "very large eigenvalue" test is left out
  (see :func:`check_conv`): the deviance Hessian grows with n, so that test flags every fit of a
  large data set whether or not it converged.

lme4 itself stops its inner PIRLS iterations at a relative change of 1e-7 (``tolPwrss``), so its
deviance carries an error of about 1e-3 that moves its optimum by up to ~1e-2; with
``glmerControl(tolPwrss = 1e-12)`` lme4 and this engine agree within 1e-5 (tests/test_stats_laplace.py).

Library API (what ``run.py``, the CLI and the power analysis call):

``Design.from_input(df, glmm)``
    The per-template design of one model x prompt from validated GLMM input (rows aggregated to
    binomial counts per template x variant [x gamma_c]; the likelihood is unchanged).
``fit_weighted(data, glmm, weights, *, y=None, resamples=None, seeds=None, chunk=None, workers=1) -> DataFrame``
    Fit every row of ``weights`` (shape (B, T): how often each template, in ascending template
    order, is in resample b; a row of ones is the full data) and return shard records with the
    columns of :data:`earnest.stats.glmm.SHARD_COLUMNS`. ``data`` is validated GLMM input or a
    :class:`Design`. ``y`` (shape (B, rows of the design)) replaces the successes per resample:
    simulated outcomes on the same design, e.g. for a power analysis (``Design.rows`` gives the
    design's rows; ``Design.trials`` the trials per row).
``fit_arrays(design, weights, *, y=None, workers=1, checks="screened") -> Fits``
    The same as arrays (``par`` (B, 1 + p): theta then beta; ``clean``, ``singular``, ``messages``,
    ``lme4_messages``, ``errors``, deriv12's ``gradient`` and ``hessian``).
``bootstrap(data, glmm, resamples, base_seed, *, workers=1) -> DataFrame``
    The shard of a template bootstrap: the resamples' template draws are R's (see
    :mod:`earnest.stats.rdraws`), so the lme4 engine fits exactly the same resamples.
``full_fit(data, glmm) -> WaldFit``
    The full-data fit with Wald statistics from the finite-difference Hessian, as lme4's
    ``vcov()`` computes them for glmer fits.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from math import erf, sqrt

import numpy as np
import pandas as pd

from earnest import fidelity
from earnest.stats import glmm as G
from earnest.stats.engines.base import CHECK_COLUMNS, CHECK_MAX_ROWS, Engine, empty_check, register
from earnest.stats.engines.lme4 import check_fits
from earnest.stats.rdraws import template_counts
from earnest.stats.summary import clean_mask
from earnest.wording import GAMMA_C, TERMS as _TERMS

SINGULAR_TOL = 1e-4          # check.conv.singular
BOUNDARY_TOL = 1e-5          # glmerControl's boundary.tol
# Above this many observations (answers) the absolute "very large eigenvalue" Hessian test is not
# applied (see check_conv); lme4 >= 1.1-38 skips all its derivative checks above the same number.
LARGE_N = 10_000
GRAD_TOL = 0.002             # check.conv.grad
HESS_TOL = 1e-6              # check.conv.hess
DERIV_DELTA = 1e-4           # lme4:::deriv12's step
SCALE_TOL = 1000             # lme4:::checkScaleX
SINGULAR_MSG = "boundary (singular) fit: see help('isSingular')"
SCALE_MSG = "Some predictor variables are on very different scales: consider rescaling"
NO_CONVERGENCE = "laplace: Newton's method did not converge in {n} iterations (optimiser not converged)"
# the inner (PIRLS) iterations failing is an error in lme4 ("pwrssUpdate did not converge"): no fit
MODES_FAILED = "laplace: the conditional modes did not converge (no fit, as lme4's pwrssUpdate error)"
DERIV12 = "deriv12"          # checkConv on deriv12's finite differences at every fit
SCREENED = "screened"        # ... only where the exact derivatives leave its verdict in doubt
CHECKS = (DERIV12, SCREENED)
# deriv12's rounding error, bounded by this multiple of eps * |f| / delta (gradient) and
# eps * |f| / delta^2 (Hessian), |f| the deviance's magnitude (see _screened_verdicts)
SCREEN_ROUND = 1e4
SCREEN_TRUNC = 1.0           # ... and its truncation error by this multiple of delta^2 max|x|^(k-2) max|H_jj|
MAX_STEP = 5.0               # longest outer Newton step in any coordinate (log-odds, theta)
ONE_LEVEL = "grouping factors must have > 1 sampled level"
ENGINE = "laplace"
_CACHE_ELEMENTS = 120_000     # rows x parameter points per numpy batch: arrays of ~1 MB stay in cache



@dataclass
class Design:
    """The fixed-effect rows of one model x prompt, sorted by template.

    ``X`` (rows, p) with the intercept first; ``y`` successes and ``trials`` per row; ``tix`` the
    template position (0..T-1) of each row; ``starts`` the first row of each template;
    ``templates`` the template ids in ascending order (the column order of weight matrices).
    """
    glmm: int
    X: np.ndarray
    y: np.ndarray
    trials: np.ndarray
    tix: np.ndarray
    starts: np.ndarray
    templates: np.ndarray
    terms: tuple
    lchoose: np.ndarray = field(repr=False, default=None)
    binary1: bool = field(repr=False, default=False)
    cell: np.ndarray = field(repr=False, default=None)
    #: the normal prior's standard deviation per fixed-effect column (earnest mode's penalised fit,
    #: :class:`earnest.stats.glmm.Prior`): the deviance gains sum_j (beta_j / sd_j)^2, -2 log of the
    #: prior's density up to a constant, as blme's ``bglmer(fixef.prior = normal(...))`` adds it;
    #: None: no penalty (the paper's glmer fit)
    prior_sd: np.ndarray = field(repr=False, default=None)
    #: a fixed part of the linear predictor per row (the profile likelihood's fixed coefficient), or None
    offset: np.ndarray = field(repr=False, default=None)

    @classmethod
    def from_input(cls, df: pd.DataFrame, glmm: int) -> "Design":
        """From validated GLMM input of one model x prompt (see glmm.validate_glmm_input)."""
        from earnest.stats.glmm import model_frame
        return cls.from_frame(model_frame(df, glmm, aggregate=True), glmm)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, glmm: int) -> "Design":
        """From a model frame (template, variant[, gamma_c], succ, fail) as glmm.model_frame builds."""
        f = frame.sort_values("template", kind="stable").reset_index(drop=True)
        templates, tix = np.unique(f["template"].to_numpy(), return_inverse=True)
        cols = [np.ones(len(f)), f["variant"].to_numpy(float)]
        if glmm == 2:
            cols.append(f[GAMMA_C].to_numpy(float))
        succ = f["succ"].to_numpy(float)
        trials = succ + f["fail"].to_numpy(float)
        starts = np.flatnonzero(np.r_[True, tix[1:] != tix[:-1]])
        d = cls(glmm=int(glmm), X=np.column_stack(cols), y=succ, trials=trials, tix=tix.astype(np.int64),
                starts=starts, templates=templates, terms=_TERMS[int(glmm)])
        d.lchoose = _lchoose(trials, succ)
        d.binary1 = bool(np.all(np.isin(d.X[:, 1], (0.0, 1.0))))
        if d.binary1:
            d.cell = d.tix + len(templates) * d.X[:, 1].astype(np.int64)
        return d

    def with_prior(self, prior) -> "Design":
        """This design fitted with ``prior`` (:class:`earnest.stats.glmm.Prior`, or None: unpenalised)."""
        from dataclasses import replace
        sd = None if prior is None else np.asarray(prior.sd(self.terms), dtype=float)
        return replace(self, prior_sd=sd)

    def fixing(self, j: int, value: float) -> "Design":
        """This design with fixed-effect column ``j`` (1..p-1) held at ``value``: the column leaves X
        and enters the offset (its prior term is then the caller's: (value / sd_j)^2)."""
        from dataclasses import replace
        keep = [c for c in range(self.X.shape[1]) if c != j]
        off = value * self.X[:, j] + (0.0 if self.offset is None else self.offset)
        X = self.X[:, keep]
        binary1 = X.shape[1] > 1 and bool(np.all(np.isin(X[:, 1], (0.0, 1.0))))
        return replace(self, X=X, terms=tuple(t for c, t in enumerate(self.terms) if c != j), offset=off,
                       prior_sd=None if self.prior_sd is None else self.prior_sd[keep], binary1=binary1,
                       cell=(self.tix + self.n_templates * X[:, 1].astype(np.int64)) if binary1 else None)

    @property
    def n_templates(self) -> int:
        return len(self.templates)

    @property
    def rows(self) -> pd.DataFrame:
        """The design's rows: template, the fixed-effect columns, successes and trials."""
        out = pd.DataFrame(self.X[:, 1:], columns=list(self.terms[1:]))
        out.insert(0, "template", self.templates[self.tix])
        out["succ"], out["trials"] = self.y, self.trials
        return out


def _lchoose(n, k):
    from scipy.special import gammaln
    n, k = np.asarray(n, dtype=float), np.asarray(k, dtype=float)
    return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)


def _partitions(idx):
    """Set partitions of the index tuple ``idx`` into singletons and {theta, u} pairs (the only
    non-zero second derivative of eta), for Faa di Bruno's formula."""
    if not idx:
        yield []
        return
    first, rest = idx[0], idx[1:]
    for sub in _partitions(rest):
        yield [(first,)] + sub
    partner = "u" if first == "t" else ("t" if first == "u" else None)
    if partner is not None:
        for k, other in enumerate(rest):
            if other == partner:
                for sub in _partitions(rest[:k] + rest[k + 1:]):
                    yield [(first, other)] + sub


def _template_const(des: Design, y):
    """-2 sum log C(n, y) per template: the deviance's constant, (1 or N, T)."""
    lch = des.lchoose[None, :] if y is None else _lchoose(des.trials[None, :], y)
    return -2.0 * np.add.reduceat(lch, des.starts, axis=1)


class _Batch:
    """Per-template sums for a batch of parameter rows P = (theta, beta) at modes U.

    ``y`` is None (the design's successes) or (N, rows) successes per parameter row."""

    def __init__(self, des: Design, y):
        self.des = des
        self.y = des.y[None, :] if y is None else y
        self.ntr = des.trials[None, :]
        self.const = _template_const(des, y)
        m = des.X.shape[1]
        self.pairs = [(j, l) for j in range(m) for l in range(j, m)]
        self.unit = bool(np.all(des.trials == 1))
        self.ymn = self.y - self.ntr
        self.ysum = np.add.reduceat(self.y, des.starts, axis=1)
        self.nsum = np.add.reduceat(des.trials, des.starts)[None, :]
        self.xx = {(j, l): des.X[:, j] * des.X[:, l] for (j, l) in self.pairs}

    def _eta(self, P, U):
        # eta = (beta_0 + theta u_t) [+ beta_1 for variant rows] + the other columns: one gather
        # from a (N, 2T) table instead of a thin matrix product, which is slow in BLAS
        des = self.des
        a = P[:, 1:2] + P[:, :1] * U
        if des.binary1:
            eta = np.concatenate([a, a + P[:, 2:3]], axis=1)[:, des.cell]
            rest = range(2, des.X.shape[1])
        else:
            eta = a[:, des.tix]
            rest = range(1, des.X.shape[1])
        for j in rest:
            eta += P[:, 1 + j: 2 + j] * des.X[:, j]
        if des.offset is not None:
            eta += des.offset
        return eta

    def light(self, P, U):
        """S1 = sum(y - n mu) and W = sum(n mu (1 - mu)) per template (Newton for the modes)."""
        st = self.des.starts
        mu = self._eta(P, U)
        np.negative(mu, out=mu)
        with np.errstate(over="ignore"):
            np.exp(mu, out=mu)
        mu += 1.0
        np.reciprocal(mu, out=mu)                         # mu
        nmu = mu if self.unit else self.ntr * mu
        S1 = self.ysum - np.add.reduceat(nmu, st, axis=1)
        nmu *= (1.0 - mu) if self.unit else (1.0 - mu)
        return S1, np.add.reduceat(nmu, st, axis=1)

    def deviance_terms(self, P, U):
        """ll = -2 sum log-lik (without the binomial coefficients), S1, W and S = sum n w (1 - 2 mu)."""
        st = self.des.starts
        eta = self._eta(P, U)
        with np.errstate(over="ignore"):
            e = np.exp(-eta)
        ll = eta
        ll *= self.ymn                                    # (y - n) eta
        if self.unit:
            ll -= np.log1p(e)
        else:
            ll -= self.ntr * np.log1p(e)
        ra = lambda a: np.add.reduceat(a, st, axis=1)  # noqa: E731
        llsum = -2.0 * ra(ll)
        e += 1.0
        mu = np.reciprocal(e, out=e)
        nmu = mu.copy() if self.unit else self.ntr * mu
        S1 = self.ysum - ra(nmu)
        nmu *= 1.0 - mu                                   # n w
        W = ra(nmu)
        mu *= -2.0
        mu += 1.0
        nmu *= mu                                         # n w (1 - 2 mu)
        return llsum, S1, W, ra(nmu)

    def full(self, P, U):
        """Per-template deviance and the row moments M[k][(j, l)] = sum l^(k) x_j x_l, k = 1..4."""
        st = self.des.starts
        eta = self._eta(P, U)
        with np.errstate(over="ignore"):
            e = np.exp(-eta)
        mu = 1.0 / (1.0 + e)
        n = self.ntr
        ll = -2.0 * ((self.y - n) * eta - n * np.log1p(e))
        w = mu * (1.0 - mu)
        d = [None, 2.0 * (n * mu - self.y), 2.0 * n * w, 2.0 * n * w * (1.0 - 2.0 * mu), 2.0 * n * w * (1.0 - 6.0 * w)]
        M = {k: {} for k in range(1, 5)}
        for k in range(1, 5):
            for jl in self.pairs:
                M[k][jl] = np.add.reduceat(d[k] if jl == (0, 0) else d[k] * self.xx[jl], st, axis=1)
        dev_t = np.add.reduceat(ll, st, axis=1) + U ** 2 + np.log(1.0 + P[:, :1] ** 2 * M[2][(0, 0)] / 2.0) + self.const
        return dev_t, M


def _fderiv(M, P, U, idx):
    """f_idx per template: a partial derivative of f = sum l(eta) + u^2 over the symbols "t"
    (theta), "u" and column numbers j (beta_j), from the row moments M (Faa di Bruno)."""
    theta = P[:, :1]
    total = 0.0
    for part in _partitions(tuple(idx)):
        coef = 1.0
        cols = []
        for block in part:
            if len(block) == 2:
                continue                                  # eta_{theta u} = 1
            a = block[0]
            if a == "t":
                coef = coef * U                           # eta_theta = u
            elif a == "u":
                coef = coef * theta                       # eta_u = theta
            elif a != 0:
                cols.append(a)                            # eta_beta_j = x_j
        if len(cols) > 2:
            raise ValueError("moment of more than two columns")
        key = tuple(sorted(cols)) if len(cols) == 2 else ((0, cols[0]) if cols else (0, 0))
        total = total + coef * M[len(part)][key]
    if list(idx) == ["u", "u"]:
        total = total + 2.0
    return total


def _derivatives(M, P, U, K):
    """Gradient (N, q), Hessian (N, q, q) of the Laplace deviance sum_t K_t d_t over (theta, beta),
    and dU/d(theta, beta) (N, T, q), by implicit differentiation through the conditional modes."""
    q = P.shape[1]
    syms = ["t"] + list(range(q - 1))
    f = lambda *i: _fderiv(M, P, U, i)  # noqa: E731
    fuu, fuuu, fuuuu = f("u", "u"), f("u", "u", "u"), f("u", "u", "u", "u")
    fup = [f("u", a) for a in syms]
    fuup = [f("u", "u", a) for a in syms]
    fuuup = [f("u", "u", "u", a) for a in syms]
    up = [-v / fuu for v in fup]
    Lu = fuuu / fuu
    Luu = fuuuu / fuu - fuuu ** 2 / fuu ** 2
    G = np.empty(U.shape + (q,))
    H = np.empty(U.shape + (q, q))
    for i, a in enumerate(syms):
        Fa = f(a) + fuup[i] / fuu
        G[..., i] = Fa + Lu * up[i]
    Fuu = fuu + Luu
    for i, a in enumerate(syms):
        Fau = fup[i] + fuuup[i] / fuu - fuup[i] * fuuu / fuu ** 2
        for j in range(i, q):
            b = syms[j]
            Fbu = fup[j] + fuuup[j] / fuu - fuup[j] * fuuu / fuu ** 2
            Fab = f(a, b) + f("u", "u", a, b) / fuu - fuup[i] * fuup[j] / fuu ** 2
            uab = -(f("u", a, b) + fuup[i] * up[j] + fuup[j] * up[i] + fuuu * up[i] * up[j]) / fuu
            H[..., i, j] = H[..., j, i] = Fab + Fau * up[j] + Fbu * up[i] + Fuu * up[i] * up[j] + Lu * uab
    dU = np.stack(up, axis=-1)
    return np.einsum("nt,ntq->nq", K, G), np.einsum("nt,ntqr->nqr", K, H), dU


def _solve_modes(batch: _Batch, P, U, *, tol: float = 1e-10, maxit: int = 300):
    """Newton's method for the conditional modes, safeguarded by bisection: f is strictly convex
    in u, so the sign of f'(u) brackets the mode and a Newton step leaving the bracket is replaced
    by its midpoint (plain Newton can cycle on logistic terms).

    The mode solves u = theta * S1(u) with S1 = sum(y - n mu) between sum(y) - sum(n) and sum(y),
    so it lies in theta times that interval: the bracket starts finite, and bisection alone would
    reach the tolerance within ~60 halvings, however far out a line search probes (theta in the
    thousands, every mu saturated)."""
    theta = P[:, :1]
    U = U.copy()
    ends = (theta * batch.ysum, theta * (batch.ysum - batch.nsum))
    lo = np.minimum(*ends) - 1e-12
    hi = np.maximum(*ends) + 1e-12
    U = np.clip(U, lo, hi)
    old2 = old1 = np.full(U.shape, np.inf)              # the last two step lengths
    for _ in range(maxit):
        S1, W = batch.light(P, U)
        fu = U - theta * S1                               # f'(u) / 2
        pos = fu > 0
        hi = np.where(pos, np.minimum(hi, U), hi)
        lo = np.where(pos, lo, np.maximum(lo, U))
        new = U - fu / (1.0 + theta ** 2 * W)
        # bisect where Newton leaves the bracket, or where a step above the tolerance is hardly
        # shorter than the step before last: Newton can cycle between two points inside the bracket
        dx = np.abs(new - U)
        bis = ((new <= lo) | (new >= hi) | ((dx > 0.9 * old2) & (dx > tol))) & (new != U)
        if bis.any():
            new = np.where(bis, 0.5 * (lo + hi), new)
        step = U - new
        old2, old1 = old1, np.abs(step)
        U = new
        if np.max(np.abs(step), initial=0.0) < tol:
            return U
    raise FloatingPointError("conditional modes did not converge")  # pragma: no cover


def _deviance_near(batch: _Batch, P, U):
    """Deviance terms per template from modes U predicted to within ~1e-6: one Newton step, with
    the deviance corrected to second order in it (the error is then far below deriv12's noise)."""
    theta = P[:, :1]
    ll, S1, W, S = batch.deviance_terms(P, U)
    A = 1.0 + theta ** 2 * W
    fu = 2.0 * (U - theta * S1)
    step = fu / (2.0 * A)
    Lu = theta ** 3 * S / A
    return ll + U ** 2 - fu * step / 2.0 + np.log(A) - Lu * step + batch.const, np.max(np.abs(step), initial=0.0)


@dataclass
class Fits:
    """Results of :func:`fit_arrays`, one entry per weight row."""
    par: np.ndarray            # (B, q): theta >= 0, then beta
    deviance: np.ndarray       # (B,)
    singular: np.ndarray       # (B,) bool
    messages: list             # per row: list of message texts (lme4's where lme4 has one)
    errors: list               # per row: error text or ""
    hessian: np.ndarray        # (B, q, q) deriv12's finite-difference Hessian (NaN when not computed)
    gradient: np.ndarray       # (B, q) deriv12's finite-difference gradient
    iterations: np.ndarray     # (B,) Newton iterations
    lme4_messages: list = None  # per row: lme4's convergence channel (optinfo$conv$lme4$messages): checkConv's
                                # messages and, where Newton's method did not converge, NO_CONVERGENCE
    exact_gradient: np.ndarray = None  # (B, q) the exact gradient at the optimum
    exact_hessian: np.ndarray = None   # (B, q, q) the exact Hessian at the optimum
    screened: np.ndarray = None        # (B,) bool: checkConv's verdict certain from the exact derivatives
                                       # (checks="screened"), deriv12 not evaluated (hessian/gradient NaN)

    @property
    def clean(self) -> np.ndarray:
        return np.array([not m and not e for m, e in zip(self.messages, self.errors)])

    @property
    def ranef_var(self) -> np.ndarray:
        return self.par[:, 0] ** 2


def _penalty(des, P):
    """The prior's part of the deviance at the parameter rows P (N, q): sum_j (beta_j / sd_j)^2 (N,),
    or None without a prior (:attr:`Design.prior_sd`)."""
    if des.prior_sd is None:
        return None
    return np.einsum("nj,j->n", P[:, 1:] ** 2, 1.0 / des.prior_sd ** 2)


def _evaluate(des, y, P, U0, K, derivs: bool = True):
    """Deviance (N,), gradient (N, q), Hessian (N, q, q), modes U and dU/dP at P (with the prior's
    penalty where the design has one)."""
    b = _Batch(des, y)
    U = _solve_modes(b, P, U0)
    dev_t, M = b.full(P, U)
    D = np.einsum("nt,nt->n", K, dev_t)
    pen = _penalty(des, P)
    if pen is not None:
        D = D + pen
    if not derivs:
        return D, U, None, None, None
    G, H, dU = _derivatives(M, P, U, K)
    if pen is not None:
        w = 2.0 / des.prior_sd ** 2
        G[:, 1:] += P[:, 1:] * w
        H[:, np.arange(1, P.shape[1]), np.arange(1, P.shape[1])] += w
    return D, U, G, H, dU


def _take(y, idx):
    return None if y is None else y[idx]


def _newton(des, y, K, P, U, *, maxit=60):
    """Newton over (theta, beta) with exact gradient and Hessian for every row of K. The last value
    returned says per row whether it converged: a tiny step, or no decrease left with a tiny step;
    not within ``maxit`` iterations, or stopped with a step that is not tiny (adrift), it did not."""
    N, q = P.shape
    D, U, G, H, dU = _evaluate(des, y, P, U, K)
    its = np.zeros(N, dtype=np.int64)
    done = np.zeros(N, dtype=bool)
    adrift = np.zeros(N, dtype=bool)
    for _ in range(maxit):
        act = np.flatnonzero(~done)
        if act.size == 0:
            break
        Pa, Ua, Ka, Ga, Ha, dUa, Da, ya = P[act], U[act], K[act], G[act], H[act], dU[act], D[act], _take(y, act)
        # theta = 0 (a singular fit): the deviance is even in theta, so its theta-gradient is 0
        # there and theta stays 0 while beta is optimised, unless theta = 0 is a maximum
        at0 = Pa[:, 0] == 0.0
        if at0.any():
            Ha = Ha.copy()
            Ga = Ga.copy()
            Ga[at0, 0] = 0.0
            Ha[at0, 0, :] = 0.0
            Ha[at0, :, 0] = 0.0
            Ha[at0, 0, 0] = 1.0
        ev, V = np.linalg.eigh(Ha)
        floor = 1e-8 * np.maximum(1.0, np.abs(ev).max(axis=1, keepdims=True))
        ev = np.maximum(np.abs(ev), floor)
        step = -np.einsum("nij,nj,nkj,nk->ni", V, 1.0 / ev, V, Ga)
        # a step longer than MAX_STEP (an almost flat direction, e.g. near separation) is shortened
        # to it: the line search then probes no absurd points (theta in the thousands)
        step *= np.minimum(1.0, MAX_STEP / np.maximum(np.abs(step).max(axis=1, keepdims=True), 1e-300))
        dec = -np.einsum("ni,ni->n", Ga, step)          # Newton decrement (>= 0)
        small = (np.abs(step) <= 1e-10 * np.maximum(1.0, np.abs(Pa))).all(axis=1) | (dec < 1e-15 * np.maximum(1.0, np.abs(Da)))
        alpha = np.ones(act.size)
        new = [Pa.copy(), Ua.copy(), Da.copy(), Ga.copy(), Ha.copy(), dUa.copy()]
        trying = np.flatnonzero(~small)
        for _ls in range(40):
            if trying.size == 0:
                break
            a = alpha[trying][:, None]
            Pt = Pa[trying] + a * step[trying]
            Ut = Ua[trying] + np.einsum("ntq,nq->nt", dUa[trying], a * step[trying])
            out = _evaluate(des, _take(ya, trying), Pt, Ut, Ka[trying])
            ok = out[0] <= Da[trying] - 1e-4 * alpha[trying] * dec[trying] + 1e-13 * np.abs(Da[trying])
            acc = trying[ok]
            for arr, val in zip(new, (Pt, out[1], out[0], out[2], out[3], out[4])):
                arr[acc] = val[ok]
            alpha[trying[~ok]] *= 0.5
            trying = trying[~ok]
        stuck = np.zeros(act.size, dtype=bool)
        stuck[trying] = True                               # no decrease found: at the optimum numerically
        # theta within 1e-5 of the boundary: at the boundary if the deviance is no larger there
        # (lme4's check.boundary with boundary.tol = 1e-5), and a minimum in theta there
        near = np.flatnonzero((np.abs(new[0][:, 0]) < BOUNDARY_TOL) & (new[0][:, 0] != 0.0))
        if near.size:
            P0 = new[0][near].copy()
            P0[:, 0] = 0.0
            out = _evaluate(des, _take(ya, near), P0, np.zeros_like(new[1][near]), Ka[near])
            keep = (out[0] <= new[2][near] + 1e-12 * np.abs(new[2][near])) & (out[3][:, 0, 0] >= 0)
            for arr, val in zip(new, (P0, out[1], out[0], out[2], out[3], out[4])):
                arr[near[keep]] = val[keep]
        P[act], U[act], D[act], G[act], H[act], dU[act] = new
        its[act] += 1
        # a full Newton step below 1e-5: the error left is of the order of its square
        tiny = (np.abs(step) <= 1e-5 * np.maximum(1.0, np.abs(Pa))).all(axis=1)
        done[act[small | stuck | ((alpha == 1.0) & tiny)]] = True
        # no decrease found although Newton's step is not tiny: the deviance is flat to rounding
        # along a direction the step still follows (separation: the estimate would drift on to
        # infinity). The iterations stop there, but not at an optimum
        adrift[act[stuck & ~small & ~tiny]] = True
    return P, U, D, G, H, dU, its, done & ~adrift


def _deriv12_points(x, delta=DERIV_DELTA):
    """lme4:::deriv12's evaluation points around x (q,): returns (points (m, q), plan)."""
    q = x.size
    pts = []
    for j in range(q):
        for sgn in (1.0, -1.0):
            p = x.copy()
            p[j] += sgn * delta
            pts.append(p)
    for j in range(q):
        for i in range(j):
            for si, sj in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
                p = x.copy()
                p[i] += si * delta
                p[j] += sj * delta
                pts.append(p)
    return np.array(pts)


def _deriv12_combine(fx, f, q, delta=DERIV_DELTA):
    """gradient (N, q) and Hessian (N, q, q) from the values f (N, m) at _deriv12_points."""
    N = f.shape[0]
    g = np.empty((N, q))
    H = np.empty((N, q, q))
    for j in range(q):
        fadd, fsub = f[:, 2 * j], f[:, 2 * j + 1]
        H[:, j, j] = fadd / delta ** 2 - 2 * fx / (delta * delta) + fsub / delta ** 2
        g[:, j] = (fadd - fsub) / (2 * delta)
    k = 2 * q
    for j in range(q):
        for i in range(j):
            faa, fas, fsa, fss = f[:, k], f[:, k + 1], f[:, k + 2], f[:, k + 3]
            k += 4
            d2 = (2 * delta) ** 2
            H[:, i, j] = H[:, j, i] = faa / d2 - fas / d2 - fsa / d2 + fss / d2
    return g, H


def _check_hess(H, tol, hesstype="", absolute: bool = True):
    """lme4:::checkHess: messages for one Hessian."""
    try:
        evd = np.sort(np.linalg.eigvalsh(H))[::-1]
    except np.linalg.LinAlgError:
        return ["Problem with Hessian check (infinite or missing values?)"]
    if not np.all(np.isfinite(evd)):
        return ["Problem with Hessian check (infinite or missing values?)"]
    negative = int(np.sum(evd < -tol))
    if negative:
        return [f"Model failed to converge: degenerate {hesstype} Hessian with {negative} negative eigenvalues"]
    zero = int(np.sum(np.abs(evd) < tol))
    try:
        np.linalg.cholesky(H)
        chol_ok = True
    except np.linalg.LinAlgError:
        chol_ok = False
    if zero or not chol_ok:
        return [f"{hesstype} Hessian is numerically singular: parameters are not uniquely determined"]
    out = []
    if absolute and evd.max() * tol > 1:
        out.append("Model is nearly unidentifiable: very large eigenvalue\n - Rescale variables?")
    if evd.min() / evd.max() < tol:
        out.append("Model is nearly unidentifiable: large eigenvalue ratio\n - Rescale variables?")
    return out


def _r_g(x: float) -> str:
    """R's gettextf('%g')."""
    return "%g" % x


def check_conv(g, H, par, *, grad_tol=GRAD_TOL, hess_tol=HESS_TOL, absolute_eigen: bool = True) -> list[str]:
    """lme4's checkConv messages (one random-effect parameter first in ``par``) for a non-singular fit.

    ``absolute_eigen=False`` leaves out checkHess's "very large eigenvalue" test (largest eigenvalue
    of the deviance Hessian above 1/tol = 1e6). That test is not scale-free: the Hessian grows in
    proportion to the number of observations, so beyond some 10^5-10^6 answers it flags every fit,
    converged or not. The other tests (scaled gradient, negative or zero eigenvalues, eigenvalue
    ratio) do not depend on n."""
    msgs = []
    if np.any(np.isnan(g)):
        return ["Gradient contains NAs"]
    try:
        R = np.linalg.cholesky(H).T                      # R's chol(): upper triangular, H = R'R
        scgrad = np.linalg.solve(R, g)
        bad = np.any(np.isnan(scgrad))
    except np.linalg.LinAlgError:
        bad = True
    if bad:
        msgs.append("unable to evaluate scaled gradient")
    else:
        maxmingrad = float(np.max(np.minimum(np.abs(scgrad), np.abs(g))))
        if maxmingrad > grad_tol:
            msgs.append(f"Model failed to converge with max|grad| = {_r_g(maxmingrad)} (tol = {_r_g(grad_tol)}, component 1)")
    if len(par) > 1:
        msgs += _check_hess(H[1:, 1:], hess_tol, "fixed-effect", absolute_eigen)
    msgs += _check_hess(H, hess_tol, absolute=absolute_eigen)
    return list(dict.fromkeys(msgs))


def _screened_verdicts(g, H, par, fabs, xmax, absolute_eigen):
    """checkConv's messages on deriv12's finite differences, where they are certain from the exact
    gradients ``g`` (N, q) and Hessians ``H`` (N, q, q) at the optima: (sure (N,) bool, messages:
    a list per row, None where not sure and deriv12 must be evaluated).

    deriv12's results differ from the exact derivatives by rounding (about eps * |f| / delta for
    the gradient, eps * |f| / delta^2 for the Hessian, |f| = ``fabs`` (N,) the magnitude of the
    deviance's terms) and truncation (delta^2 / 6 times third derivatives for the gradient,
    delta^2 / 12 times fourth ones for the Hessian; a k-th derivative of these logistic sums is at
    most about max|x|^(k-2) times the largest second derivative, x the columns of the design and
    the modes, ``xmax`` (N,)). With bounds E_g and E_H on those errors (scaled by SCREEN_ROUND and
    SCREEN_TRUNC: measured errors stay far below them, see tests/test_stats_laplace.py and
    benchmarks/bootstrap.py --paper-scale) the Hessian's eigenvalues move by at most q * E_H (Weyl),
    so a verdict holds for deriv12 too when every test it makes is decided with that margin:
    |g| + E_g below the gradient tolerance, the smallest eigenvalue above the tolerance by E_H,
    and the large-eigenvalue and eigenvalue-ratio tests clear of their thresholds either way.
    Anything closer goes to deriv12."""
    N, q = g.shape
    eps, d = np.finfo(float).eps, DERIV_DELTA
    finite = np.isfinite(g).all(axis=1) & np.isfinite(H).all(axis=(1, 2))
    g = np.where(finite[:, None], g, 0.0)
    H = np.where(finite[:, None, None], H, np.eye(q))
    hmax = np.abs(np.diagonal(H, axis1=1, axis2=2)).max(axis=1)
    e_g = SCREEN_ROUND * eps * fabs / d + SCREEN_TRUNC * d ** 2 * xmax * hmax
    e_h = q * (SCREEN_ROUND * eps * fabs / d ** 2 + SCREEN_TRUNC * d ** 2 * xmax ** 2 * hmax)
    sure = finite & (np.abs(g).max(axis=1) + e_g < GRAD_TOL)
    flagged = np.zeros(N, dtype=bool)                     # a Hessian message certain
    for block in ([H[:, 1:, 1:], H] if q > 1 else [H]):
        ev = np.linalg.eigvalsh(block)
        lo, hi = ev[:, 0], ev[:, -1]
        sure &= lo - e_h > HESS_TOL                       # negative, zero or Cholesky in doubt
        with np.errstate(divide="ignore", invalid="ignore"):
            big_doubt = (hi - e_h) * HESS_TOL <= 1.0
            big_doubt &= 1.0 < (hi + e_h) * HESS_TOL
            sure &= ~(absolute_eigen & big_doubt)
            sure &= ~(((lo - e_h) / (hi + e_h) <= HESS_TOL) & (HESS_TOL <= (lo + e_h) / (hi - e_h)))
        flagged |= (absolute_eigen & (hi * HESS_TOL > 1.0)) | (lo / hi < HESS_TOL)
    # where sure: no gradient message and no negative or zero eigenvalue; the large-eigenvalue and
    # ratio messages (rare) in check_conv's words and order
    out = [None] * N
    for i in np.flatnonzero(sure):
        out[i] = check_conv(g[i], H[i], par[i], absolute_eigen=bool(absolute_eigen[i])) if flagged[i] else []
    return sure, out


def _scale_messages(des: Design, K) -> list:
    """lme4:::checkScaleX on each resample's rows: one list of messages per weight row."""
    cont = [j for j in range(des.X.shape[1]) if not np.all(np.isin(des.X[:, j], (0.0, 1.0)))]
    if not cont:
        return [[] for _ in range(K.shape[0])]
    w = K[:, des.tix].astype(float)                       # rows of the resample: each template's rows k times
    nrow = w.sum(axis=1)
    out = []
    sds = []
    for j in cont:
        x = des.X[:, j]
        m = (w @ x) / nrow
        var = (w @ (x ** 2) - nrow * m ** 2) / np.maximum(nrow - 1, 1)
        sds.append(np.sqrt(np.maximum(var, 0)))
    sds = np.array(sds).T                                 # (B, ncont)
    with np.errstate(divide="ignore"):
        logsd = np.abs(np.log(sds))
        big = (logsd > np.log(SCALE_TOL)).any(axis=1)
        if sds.shape[1] > 1:
            lr = np.abs(np.log(sds[:, :, None] / sds[:, None, :]))
            big |= (lr > np.log(SCALE_TOL)).any(axis=(1, 2))
    for bflag in big:
        out.append([SCALE_MSG] if bflag else [])
    return out


def _glm_start(des: Design, y=None):
    """Logistic-regression estimates on all rows (the start of the full-data fit)."""
    yy = des.y if y is None else y
    beta = np.zeros(des.X.shape[1])
    off = 0.0 if des.offset is None else des.offset
    p = np.clip((yy.sum() + 0.5) / (des.trials.sum() + 1.0), 1e-6, 1 - 1e-6)
    beta[0] = np.log(p / (1 - p)) - float(np.mean(off))
    for _ in range(25):
        with np.errstate(over="ignore"):
            mu = 1.0 / (1.0 + np.exp(-(des.X @ beta + off)))
        w = des.trials * mu * (1 - mu) + 1e-10
        g = des.X.T @ (yy - des.trials * mu)
        H = des.X.T @ (des.X * w[:, None]) + 1e-8 * np.eye(des.X.shape[1])
        step = np.linalg.solve(H, g)
        step = np.clip(step, -5, 5)
        beta += step
        if np.max(np.abs(step)) < 1e-10:
            break
    return beta


def _check_design(des: Design) -> str:
    if np.linalg.matrix_rank(des.X) < des.X.shape[1]:
        return "fixed-effect model matrix is rank deficient"
    return ""


def _full_data_start(des: Design):
    P0 = np.r_[1.0, _glm_start(des)][None, :]
    try:
        U0 = _solve_modes(_Batch(des, None), P0, np.zeros((1, des.n_templates)))
        return _newton(des, None, np.ones((1, des.n_templates)), P0, U0)[0][0]
    except FloatingPointError:                            # the resamples' own fits say what fails
        return P0[0]


def _boundary_minimum(des, y, K, P, U, D, G, H, dU, conv):
    """Replace, in place, the rows whose best fit at theta = 0 (beta optimised, a logistic
    regression) has a lower deviance than their interior optimum. Screened by the Newton decrement
    at theta = 0 from the interior beta: the deviance there is convex in beta and its quadratic
    model falls by g' H^-1 g / 2; rows whose value minus twice that (a margin for the model's error)
    stays above their optimum get no logistic fit (at the paper's designs almost all: the boundary
    lies far above the interior minimum)."""
    rows = np.flatnonzero((P[:, 0] >= SINGULAR_TOL) & np.isfinite(D))
    if rows.size == 0:
        return
    P0 = P[rows].copy()
    P0[:, 0] = 0.0
    Tz = np.zeros((rows.size, K.shape[1]))
    D0, _, G0, H0, _ = _evaluate(des, _take(y, rows), P0, Tz, K[rows])
    g, Hb = G0[:, 1:], H0[:, 1:, 1:]
    try:
        dec = np.einsum("ni,ni->n", g, np.linalg.solve(Hb, g[..., None])[..., 0])
    except np.linalg.LinAlgError:
        dec = np.full(rows.size, np.inf)
    dec = np.where(np.isfinite(dec) & (dec >= 0), dec, np.inf)
    doubt = np.flatnonzero(D0 - dec <= D[rows])
    if doubt.size == 0:
        return
    r = rows[doubt]
    out = _newton(des, _take(y, r), K[r], P0[doubt], Tz[doubt])
    better = np.flatnonzero((out[2] < D[r] - 1e-10 * np.abs(D[r])) & (out[0][:, 0] == 0.0))
    for arr, val in zip((P, U, D, G, H, dU, conv), (out[0], out[1], out[2], out[3], out[4], out[5], out[7])):
        arr[r[better]] = val[better]


def _newton_guarded(des, y, K, start, Ustart):
    """_newton for the rows of K from ``start``, plus ``failed`` (N,): rows where the conditional
    modes could not be found at some point (their results are NaN). The whole batch first; only
    if a mode search fails anywhere, row by row."""
    N = K.shape[0]

    def run(Kr, yr):
        P = np.repeat(start[None, :], Kr.shape[0], axis=0)
        U = np.repeat(Ustart, Kr.shape[0], axis=0)
        if yr is not None:
            U = _solve_modes(_Batch(des, yr), P, U)
        return _newton(des, yr, Kr, P, U)

    try:
        return (*run(K, y), np.zeros(N, dtype=bool))
    except FloatingPointError:
        pass
    q, T = start.size, K.shape[1]
    out = [np.full((N, q), np.nan), np.full((N, T), np.nan), np.full(N, np.nan), np.full((N, q), np.nan),
           np.full((N, q, q), np.nan), np.full((N, T, q), np.nan), np.zeros(N, dtype=np.int64),
           np.zeros(N, dtype=bool)]
    failed = np.zeros(N, dtype=bool)
    for i in range(N):
        try:
            res = run(K[i:i + 1], _take(y, slice(i, i + 1)))
        except FloatingPointError:
            failed[i] = True
            continue
        for arr, val in zip(out, res):
            arr[i] = val[0]
    return (*out, failed)


def _fit_part(args):
    des, K, y, chunk, start, deriv_checks, checks = args
    return _fit_serial(des, K, y=y, chunk=chunk, start=start, deriv_checks=deriv_checks, checks=checks)


def fit_arrays(data, weights, *, glmm: int | None = None, y=None, chunk: int | None = None,
               start=None, deriv_checks: bool = True, workers: int = 1, checks: str = SCREENED) -> Fits:
    """Fit every weight row (see the module docstring). ``start``: (theta, beta...) to start all
    rows from (default: the full-data optimum, itself started from a logistic regression);
    ``workers``: forked processes sharing the rows (results do not depend on it)."""
    des = data if isinstance(data, Design) else Design.from_input(data, glmm)
    K = np.atleast_2d(np.asarray(weights, dtype=float))
    workers = max(1, min(int(workers), K.shape[0] // 16))
    if workers == 1:
        return _fit_serial(des, K, y=y, chunk=chunk, start=start, deriv_checks=deriv_checks, checks=checks)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    if start is None and _check_design(des) == "":
        start = _full_data_start(des)
    parts = np.array_split(np.arange(K.shape[0]), workers)
    jobs = [(des, K[p], None if y is None else np.atleast_2d(y)[p], chunk, start, deriv_checks, checks) for p in parts]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                             initializer=_die_with_parent, initargs=(os.getpid(),)) as ex:
        outs = list(ex.map(_fit_part, jobs))
    # every field joined in row order: lists (messages, errors) by concatenation, arrays along rows
    return Fits(**{f.name: (sum(parts, []) if isinstance(parts[0], list) else np.concatenate(parts))
                   for f in fields(Fits) for parts in [[getattr(o, f.name) for o in outs]]})


def _die_with_parent(parent: int) -> None:
    """A forked fitting process ends with the process that started it: were that one killed while
    the fits ran, it would otherwise fit its whole share for nobody (Linux's parent-death signal;
    elsewhere nothing changes)."""
    import ctypes
    import signal

    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # gone before the signal was asked for
        os._exit(1)


def _fit_serial(des: Design, weights, *, y=None, chunk=None, start=None, deriv_checks=True,
                checks: str = SCREENED) -> Fits:
    if checks not in CHECKS:
        raise ValueError(f"checks must be one of {', '.join(CHECKS)}, not {checks!r}")
    K = np.atleast_2d(np.asarray(weights, dtype=float))
    B, T = K.shape
    if T != des.n_templates:
        raise ValueError(f"weights have {T} columns but the data have {des.n_templates} templates")
    if y is not None:
        y = np.atleast_2d(np.asarray(y, dtype=float))
        if y.shape != (B, len(des.y)):
            raise ValueError(f"y must have shape {(B, len(des.y))}, not {y.shape}")
        if np.any(y < 0) or np.any(y > des.trials[None, :]):
            raise ValueError("y must lie between 0 and the trials of each row")
    q = 1 + des.X.shape[1]
    par = np.full((B, q), np.nan)
    dev = np.full(B, np.nan)
    sing = np.zeros(B, dtype=bool)
    msgs = [[] for _ in range(B)]
    conv_msgs = [[] for _ in range(B)]
    errs = [""] * B
    hess = np.full((B, q, q), np.nan)
    grads = np.full((B, q), np.nan)
    its = np.zeros(B, dtype=np.int64)
    exact_g = np.full((B, q), np.nan)
    screened = np.zeros(B, dtype=bool)
    exact_h = np.full((B, q, q), np.nan)
    err = _check_design(des)
    clusters = K.sum(axis=1)
    yy = (des.y[None, :] if y is None else y)
    succ_in = (K[:, des.tix] > 0) * yy
    fail_in = (K[:, des.tix] > 0) * (des.trials[None, :] - yy)
    for b in range(B):
        if err:
            errs[b] = err
        elif clusters[b] < 2:
            errs[b] = ONE_LEVEL
        elif succ_in[b].sum() == 0 or fail_in[b].sum() == 0:
            errs[b] = "Response is constant"
    ok = np.array([e == "" for e in errs])
    if start is None and ok.any():
        start = _full_data_start(des)
    if not ok.any():
        return Fits(par, dev, sing, msgs, errs, hess, grads, its, conv_msgs, exact_g, exact_h, screened)
    start = np.asarray(start, dtype=float).copy()
    start[0] = max(abs(start[0]), 0.1)                   # theta = 0 is a stationary point: start off it
    R = len(des.y)
    chunk = chunk or max(1, min(256, int(_CACHE_ELEMENTS // R)))
    scale_msgs = _scale_messages(des, K)
    nobs = K @ np.add.reduceat(des.trials, des.starts)     # answers per resample
    idx_all = np.flatnonzero(ok)
    try:
        Ustart = _solve_modes(_Batch(des, None), start[None, :], np.zeros((1, T)))
    except FloatingPointError:                            # each row's search starts from 0 then
        Ustart = np.zeros((1, T))
    for lo in range(0, idx_all.size, chunk):
        idx = idx_all[lo: lo + chunk]
        Kc, yc = K[idx], _take(y, idx)
        P, U, D, Gx, Hx, dU, it, conv, failed = _newton_guarded(des, yc, Kc, start, Ustart)
        if failed.any():                                  # no mode found at some point: no fit, as in lme4
            for b in idx[failed]:
                errs[b] = MODES_FAILED
            keep = ~failed
            idx, Kc, yc = idx[keep], Kc[keep], _take(yc, np.flatnonzero(keep))
            P, U, D, Gx, Hx, dU, it, conv = (a[keep] for a in (P, U, D, Gx, Hx, dU, it, conv))
            if idx.size == 0:
                continue
        neg = P[:, 0] < 0                                 # the deviance is even in theta: u -> -u
        P[neg, 0] *= -1
        U[neg] *= -1
        dU[neg, :, 1:] *= -1
        Gx[neg, 0] *= -1
        Hx[neg, 0, 1:] *= -1
        Hx[neg, 1:, 0] *= -1
        # the boundary theta = 0 may hold a lower deviance than the interior minimum Newton found
        # (the profile in theta can have two minima); lme4, whose optimiser starts from the nAGQ = 0
        # fit, then ends there and calls the fit singular
        _boundary_minimum(des, yc, Kc, P, U, D, Gx, Hx, dU, conv)
        exact_g[idx], exact_h[idx] = Gx, Hx
        par[idx], dev[idx], its[idx] = P, D, it
        for k, b in enumerate(idx):
            msgs[b] = scale_msgs[b]
            if not conv[k]:
                # not at an optimum: a convergence failure in lme4's own channel too, so that no
                # clean rule keeps it (lme4's gradient check flags a point that is not an optimum)
                msgs[b] = msgs[b] + [NO_CONVERGENCE.format(n=it[k])]
                conv_msgs[b].append(NO_CONVERGENCE.format(n=it[k]))
        s = P[:, 0] < SINGULAR_TOL
        sing[idx] = s
        for b in idx[s]:
            msgs[b].append(SINGULAR_MSG)
            conv_msgs[b].append(SINGULAR_MSG)
        if not deriv_checks:
            continue
        todo = np.flatnonzero(~s)
        if checks == SCREENED and todo.size:
            # the verdict deriv12 would reach, where the exact derivatives and a bound on deriv12's
            # error leave no doubt about it; deriv12 itself for the rest
            fabs = np.abs(D) + 2.0 * np.abs(_template_const(des, yc) * Kc).sum(axis=1)
            xmax = np.maximum(np.abs(des.X).max(), np.abs(U).max(axis=1))
            sure, verdicts = _screened_verdicts(Gx[todo], Hx[todo], P[todo], fabs[todo], xmax[todo],
                                                nobs[idx[todo]] <= LARGE_N)
            for k in np.flatnonzero(sure):
                b = idx[todo[k]]
                screened[b] = True
                msgs[b] += verdicts[k]
                conv_msgs[b] += verdicts[k]
            todo = todo[~sure]
        if todo.size == 0:
            continue
        # lme4:::deriv12 at the optimum: its points, each mode predicted linearly and refined
        # the centre first: deriv12's fx, computed the same way as the other points
        offs = np.vstack([np.zeros((1, q)), _deriv12_points(np.zeros(q))])
        m = offs.shape[0]
        Pp = (P[todo][:, None, :] + offs[None]).reshape(-1, q)
        Up = (U[todo][:, None, :] + np.einsum("ntq,mq->nmt", dU[todo], offs)).reshape(-1, T)
        yp = None if yc is None else np.repeat(yc[todo], m, axis=0)
        Kp = np.repeat(Kc[todo], m, axis=0)
        f = np.empty(Pp.shape[0])
        sub = max(1, _CACHE_ELEMENTS // R)                # batches small enough to stay in cache
        for s0 in range(0, Pp.shape[0], sub):
            sl = slice(s0, s0 + sub)
            batch = _Batch(des, None if yp is None else yp[sl])
            dev_t, worst = _deviance_near(batch, Pp[sl], Up[sl])
            if worst > 1e-6:                              # prediction not close enough: solve fully
                dev_t, _ = _deviance_near(batch, Pp[sl], _solve_modes(batch, Pp[sl], Up[sl]))
            f[sl] = np.einsum("nt,nt->n", Kp[sl], dev_t)
            pen = _penalty(des, Pp[sl])
            if pen is not None:
                f[sl] += pen
        f = f.reshape(-1, m)
        g, H = _deriv12_combine(f[:, 0], f[:, 1:], q)
        for k, j in enumerate(todo):
            b = idx[j]
            hess[b], grads[b] = H[k], g[k]
            cm = check_conv(g[k], H[k], P[j], absolute_eigen=nobs[b] <= LARGE_N)
            msgs[b] += cm
            conv_msgs[b] += cm
    msgs = [list(dict.fromkeys(m)) for m in msgs]
    return Fits(par, dev, sing, msgs, errs, hess, grads, its, conv_msgs, exact_g, exact_h, screened)


def records(fits: Fits, terms, resamples, seeds) -> pd.DataFrame:
    """Shard records (glmm.SHARD_COLUMNS) of :class:`Fits`, one row per resample and term."""
    B, nt = fits.par.shape[0], len(terms)
    clean = fits.clean
    rows = {
        "resample": np.repeat(np.asarray(resamples, dtype=np.int64), nt),
        "seed": np.repeat(np.asarray(seeds, dtype=np.int64), nt),
        "term": np.tile(np.array(terms, dtype=object), B),
        "estimate": fits.par[:, 1:].reshape(-1),
        "ranef_var": np.repeat(fits.ranef_var, nt),
        "converged": np.repeat(clean, nt),
        "singular": np.repeat(np.array([None if e else bool(s) for s, e in zip(fits.singular, fits.errors)],
                                       dtype=object), nt),
        "messages": np.repeat(np.array([" | ".join(m) for m in fits.messages], dtype=object), nt),
        "lme4_messages": np.repeat(np.array([" | ".join(m) for m in fits.lme4_messages], dtype=object), nt),
        "error": np.repeat(np.array(fits.errors, dtype=object), nt),
    }
    return pd.DataFrame(rows)


def fit_weighted(data, glmm: int, weights, *, y=None, resamples=None, seeds=None,
                 chunk: int | None = None, workers: int = 1, checks: str = SCREENED) -> pd.DataFrame:
    """Shard records for every row of ``weights`` (B, T); see the module docstring."""
    des = data if isinstance(data, Design) else Design.from_input(data, glmm)
    K = np.atleast_2d(np.asarray(weights))
    B = K.shape[0]
    resamples = np.arange(B) if resamples is None else np.asarray(resamples)
    seeds = np.full(B, -1) if seeds is None else np.asarray(seeds)
    fits = fit_arrays(des, K, y=y, chunk=chunk, workers=workers, checks=checks)
    return records(fits, des.terms, resamples, seeds)


def resample_weights(n_templates: int, resamples, base_seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(seeds, weights (B, T)) of the listed resamples: R's draws for glmm.resample_seed(base_seed, b)."""
    from earnest.stats.glmm import resample_seed
    seeds = np.array([resample_seed(base_seed, int(b)) for b in resamples], dtype=np.int64)
    return seeds, template_counts(seeds, n_templates)


def separated_resamples(data, resamples, base_seed: int) -> np.ndarray:
    """Per listed resample (GLMM 1): whether GSM-Base or GSM-Variants is all right or all wrong
    among the drawn templates, so that the variant effect has no finite estimate (the summaries'
    :func:`earnest.stats.summary.separation_sides`, any side)."""
    from earnest.stats.summary import separation_sides

    des = data if isinstance(data, Design) else Design.from_input(data, 1)
    seeds, _ = resample_weights(des.n_templates, resamples, base_seed)
    rows = des.rows
    frame = pd.DataFrame({"template": rows["template"], "variant": rows["variant"].astype(np.int64),
                          "succ": rows["succ"], "fail": rows["trials"] - rows["succ"]})
    return separation_sides(frame, seeds) != 0


def bootstrap(data, glmm: int, resamples, base_seed: int, *, chunk: int | None = None,
              workers: int = 1, checks: str = SCREENED) -> pd.DataFrame:
    """A bootstrap shard (records of glmm.SHARD_COLUMNS) for the listed resamples."""
    des = data if isinstance(data, Design) else Design.from_input(data, glmm)
    resamples = np.asarray([int(b) for b in resamples], dtype=np.int64)
    seeds, K = resample_weights(des.n_templates, resamples, base_seed)
    return records(fit_arrays(des, K, chunk=chunk, workers=workers, checks=checks), des.terms, resamples, seeds)


def fixed_deviance(des: Design, term: str | None = None, value: float = 0.0) -> float:
    """The profile likelihood's deviance: the (penalised, where ``des`` has a prior) Laplace deviance
    minimised with fixed effect ``term`` held at ``value`` (None: the full fit's minimum). NaN when
    the fit fails. Differences of two such values are likelihood-ratio statistics."""
    if term is None:
        fits = fit_arrays(des, np.ones((1, des.n_templates)), deriv_checks=False)
        return float(fits.deviance[0]) if not fits.errors[0] else float("nan")
    j = list(des.terms).index(term)
    if j == 0:
        raise ValueError("the intercept is not profiled")
    fixed = des.fixing(j, float(value))
    fits = fit_arrays(fixed, np.ones((1, des.n_templates)), deriv_checks=False)
    if fits.errors[0]:
        return float("nan")
    extra = 0.0 if des.prior_sd is None else (float(value) / des.prior_sd[j]) ** 2
    return float(fits.deviance[0]) + extra


def _norm_sf2(z: float) -> float:
    return float(2.0 * (1.0 - 0.5 * (1.0 + erf(abs(z) / sqrt(2.0)))))


def full_fit(data, glmm: int):
    """The full-data fit as glmm.WaldFit: Wald z and P from 2 * solve(Hessian) of the deviance
    (lme4's vcov() for glmer fits with the finite-difference Hessian)."""
    from earnest.stats.glmm import WaldFit
    des = data if isinstance(data, Design) else Design.from_input(data, glmm)
    fits = fit_arrays(des, np.ones((1, des.n_templates)), checks=DERIV12)   # vcov needs deriv12's Hessian
    terms = list(des.terms)
    est = fits.par[0, 1:]
    se = np.full(len(terms), np.nan)
    H = fits.hessian[0]
    if np.all(np.isfinite(H)):
        try:
            V = np.linalg.inv(H)[1:, 1:]
            V = V + V.T
            if np.all(np.linalg.eigvalsh(V) > 0):
                se = np.sqrt(np.diag(V))
        except np.linalg.LinAlgError:
            pass
    z = est / se
    coefs = pd.DataFrame({"term": terms, "estimate": est, "se": se, "z": z,
                          "p": [_norm_sf2(v) if np.isfinite(v) else np.nan for v in z]})
    g = fits.gradient[0]
    max_grad = float("nan")
    if np.all(np.isfinite(H)) and np.all(np.isfinite(g)):
        try:
            sc = np.linalg.solve(np.linalg.cholesky(H).T, g)
            max_grad = float(np.max(np.minimum(np.abs(sc), np.abs(g))))
        except np.linalg.LinAlgError:
            pass
    err = fits.errors[0]
    return WaldFit(glmm=des.glmm, coefs=coefs, converged=bool(fits.clean[0]), messages=fits.messages[0],
                   error=err, lme4_messages=fits.lme4_messages[0], ranef_var=float(fits.ranef_var[0]),
                   singular=None if err else bool(fits.singular[0]), max_grad=max_grad, tol=GRAD_TOL)


# ---------------------------------------------------------------------------- the engine
class LaplaceEngine(Engine):
    """This module's engine: lme4's Laplace deviance and convergence checks in numpy, every
    resample of a shard at once; aggregated rows only; checked against lme4 in every shard."""

    name = ENGINE
    rows = ("aggregated",)
    # laplace evaluates lme4's deviance exactly, so its verdicts are lme4's with PIRLS converged, on
    # whatever rows (earnest: faithful); the reference keeps what lme4 on per-answer rows keeps, checks
    # that fire on lme4's inexact deviance, which no exact engine reproduces resample by resample
    faithful_rows = {fidelity.EARNEST: ("aggregated",), fidelity.REFERENCE: ()}
    has_cross_check = True
    fits_cross_language = True
    fallback = G.LME4

    def bootstrap(self, frame, glmm, resamples, base_seed, cores=1, labels="draw", prior=None):
        des = Design.from_frame(frame, glmm).with_prior(prior)
        table = bootstrap(des, glmm, resamples, base_seed, workers=max(1, int(cores)))
        table["engine"] = self.name
        return table

    def full_fit(self, data, glmm, prior=None):
        return full_fit(Design.from_input(data, glmm).with_prior(prior), glmm)

    def fixed_deviance(self, data, glmm, prior, term=None, value=0.0):
        return fixed_deviance(Design.from_input(data, glmm).with_prior(prior), term, value)

    def cross_check(self, data, glmm, shard, n_check, base_seed, prior=None):
        return cross_check(data, glmm, shard, n_check, base_seed, prior=prior)

    def cross_bootstrap(self, cross, resamples, base_seed, *, full=False, workers=1, prior=None):
        if full:
            raise ValueError("the laplace engine's full-data fit is cross_full_fit")
        seeds, K = cross.resample_weights(resamples, base_seed)
        cd = cross.design()
        out = records(fit_arrays(cd.design.with_prior(prior), K, workers=workers), cd.terms, resamples, seeds)
        out["engine"] = self.name
        return out

    def cross_full_fit(self, cross, prior=None):
        return full_fit(cross.design().design.with_prior(prior), 1)

    def cross_fixed_deviance(self, cross, prior, term=None, value=0.0):
        return fixed_deviance(cross.design().design.with_prior(prior), term, value)

    def unfaithful_note(self, rows, fidelity_mode):
        return (f"fidelity {fidelity_mode!r} with stats.engine laplace is not the reference's fit: the reference fits "
                f"one row per answer with lme4, whose convergence checks fire on its inexact deviance (PIRLS "
                f"tolerance) and so keep other resamples than the laplace engine's exact ones (which are lme4's "
                f"with tolPwrss = 1e-12); the estimates are the same fit. Use stats.engine: lme4 for the "
                f"reference's clean set")

    def rows_refusal(self, rows, fidelity_mode):
        return (f"stats.engine: laplace fits aggregated rows only, but the bootstrap is to fit one row "
                f"per answer (fidelity {fidelity_mode!r}, stats.rows {rows!r}); use stats.engine: lme4 "
                f"(the faithful path) or stats.rows: aggregated (the labelled speed path, whose clean set is "
                f"not the reference's)")


#: the laplace engine, registered after lme4
LAPLACE_ENGINE = register(LaplaceEngine())


# ---------------------------------------------------------------------------- the check against lme4
def cross_check(df: pd.DataFrame, glmm: int, shard: pd.DataFrame, n_check: int, base_seed: int,
                prior=None) -> pd.DataFrame:
    """Refit the first ``n_check`` resamples of a laplace ``shard`` with lme4, twice: as the lme4
    engine fits them (glmer's defaults) and with lme4's inner PIRLS iterated to convergence
    (``tolPwrss = 1e-12``: the same Laplace deviance evaluated exactly, as the laplace engine does).

    One row per checked resample and term (:data:`CHECK_COLUMNS`); ``abs_diff`` is the difference
    from the converged-PIRLS lme4 fit where both are clean (NaN otherwise). Use
    :func:`check_summary` for the verdict.
    """
    glmm = G._check_glmm(glmm)
    if n_check <= 0 or len(df) == 0 or len(shard) == 0:
        return empty_check()
    resamples = sorted(shard["resample"].unique())[:n_check]
    frame = G.model_frame(df, glmm, aggregate=True)
    if len(frame) > CHECK_MAX_ROWS:
        # glmer() takes many minutes per fit at this size; no check (check_summary: 0 checked)
        return empty_check()
    seeds = [G.resample_seed(base_seed, b) for b in resamples]

    def by_rule(t: pd.DataFrame, prefix: str = "") -> pd.DataFrame:
        # each fit's verdict under both clean rules, whichever the run uses
        return t.assign(**{f"{prefix}clean_{m}": clean_mask(t, m).to_numpy() for m in fidelity.MODES})

    outs = {}
    for name, tol in (("default", 0.0), ("tight", 1e-12)):
        res = check_fits(frame, glmm, resamples, seeds, tol, prior=prior)
        res["converged"] = res["converged"].astype(bool)
        res = by_rule(res, f"{name}_")
        outs[name] = res.drop(columns="lme4_messages", errors="ignore").rename(columns={
            "estimate": f"{name}_estimate", "converged": f"{name}_converged", "messages": f"{name}_messages",
            "ranef_var": f"{name}_ranef_var"})[
            ["resample", "term", f"{name}_estimate", f"{name}_converged", f"{name}_messages", f"{name}_ranef_var"]
            + [f"{name}_clean_{m}" for m in fidelity.MODES]]
    lap = by_rule(shard[shard["resample"].isin(resamples)])[
        ["resample", "term", "estimate", "converged", "messages", "ranef_var"] + [f"clean_{m}" for m in fidelity.MODES]]
    out = lap.merge(outs["default"], on=["resample", "term"]).merge(outs["tight"], on=["resample", "term"])
    for c in ("converged", "default_converged", "tight_converged"):
        out[c] = out[c].astype(bool)
    both = out["converged"] & out["tight_converged"]
    out["abs_diff"] = np.where(both, (out["estimate"] - out["tight_estimate"]).abs(), np.nan)
    # the Laplace deviance at lme4's optimum minus at laplace's: >= 0 means lme4's optimiser stopped
    # at a point no better than laplace's (its Nelder-Mead tolerance), not at another optimum
    des = Design.from_frame(frame, glmm).with_prior(prior)
    _, K = resample_weights(des.n_templates, resamples, base_seed)
    gaps = {}
    for k, b in enumerate(resamples):
        rows = out[out["resample"] == b].set_index("term").reindex(list(G.TERMS[glmm]))
        P = np.array([[rows["ranef_var"].iloc[0]] + rows["estimate"].tolist(),
                      [rows["tight_ranef_var"].iloc[0]] + rows["tight_estimate"].tolist()], dtype=float)
        # a failed fit's values are R's NA (a NaN that numpy's sqrt warns about): compare only two fits
        if np.all(np.isfinite(P)) and np.all(P[:, 0] >= 0):
            P[:, 0] = np.sqrt(P[:, 0])
            D = _evaluate(des, None, P, np.zeros((2, des.n_templates)), np.repeat(K[k:k + 1], 2, 0), False)[0]
            gaps[b] = float(D[1] - D[0])
    out["deviance_gap"] = out["resample"].map(gaps).astype(float)
    return out[list(CHECK_COLUMNS)].reset_index(drop=True)
