"""The lme4 engine: glmer through R (:mod:`earnest.stats.rbridge`), one fit per resample, the
paper's engine, behind :class:`earnest.stats.engines.base.Engine`.

Its fits: the bootstrap (:func:`lme4_bootstrap`, one R call per shard over forked R workers, its
process pool), the full-data Wald fit (:func:`wald_fit`), the optimiser refits of Listing 6
(:func:`refit_optimisers`), the refits of another engine's resamples that check it
(:func:`check_fits`), the paired comparison's bootstrap with item intercepts
(:meth:`Lme4Engine.bootstrap_items`, R/compare.R) and StatFormBench's pairwise model comparison
(:meth:`Lme4Engine.pairwise`). Every R call of the GLMMs goes through this module, but the
cross-lingual model's (:mod:`earnest.stats.crosslingual`, its own engine switch).
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from earnest import fidelity
from earnest.stats import glmm as G
from earnest.stats import rbridge
from earnest.stats.engines.base import Engine, EngineUnavailable, register
from earnest.stats.summary import wald_clean


def _prior_sd(prior, terms):
    """The R value of a prior's standard deviations for the fixed effects ``terms`` (names in R's
    column order; R's NULL without a prior)."""
    ro = rbridge.r()
    return ro.NULL if prior is None else ro.FloatVector(prior.sd(list(terms)))


def weighted_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as lme4 fits it: where its rows are per-question means over several epochs (column
    :data:`earnest.stats.glmm.EPOCHS`, succ and fail sums of means), the epochs' integer counts
    (succ and fail times epochs) with prior weight ``w`` = 1/epochs, which glmer() gives the
    likelihood of one answer per question (binomial's initialize makes the prior weight w * n and
    its aic() scales each row's log-likelihood by 1/epochs); the laplace engine fits the means
    themselves, the same likelihood up to a constant. Other frames are returned as they are."""
    if G.EPOCHS not in frame.columns:
        return frame
    e = frame[G.EPOCHS].astype(float)
    out = frame.drop(columns=[G.EPOCHS])
    out["succ"] = np.rint(frame["succ"].astype(float) * e).astype(np.int64)
    out["fail"] = np.rint(frame["fail"].astype(float) * e).astype(np.int64)
    out["w"] = 1.0 / e
    return out


def lme4_bootstrap(frame: pd.DataFrame, glmm: int, resamples, base_seed: int, cores: int = 1,
                   labels: str = "draw", prior=None) -> pd.DataFrame:
    """The lme4 engine's fits of each listed resample of ``frame`` (from
    :func:`earnest.stats.glmm.model_frame`), in one R call over ``cores`` forked R workers.

    Returns the bootstrap shard table: one row per resample and term with columns
    :data:`earnest.stats.glmm.SHARD_COLUMNS` plus ``engine`` (:data:`earnest.stats.glmm.LME4`, or :data:`earnest.stats.glmm.GLMER_FALLBACK`). A fit that fails
    gives NaN estimates and its error text; convergence warnings are kept in ``messages`` and make
    ``converged`` false. ``labels``: how the resamples label their clusters (:data:`earnest.stats.glmm.CLUSTER_LABELS`;
    :func:`earnest.stats.glmm.cluster_labels` gives a fidelity mode's).
    """
    glmm = G._check_glmm(glmm)
    G._check_labels(labels)
    resamples = [int(b) for b in resamples]
    if not resamples:
        return pd.DataFrame({c: [] for c in G.SHARD_COLUMNS + ("engine",)})
    rbridge.check_lme4()
    seeds = [G.resample_seed(base_seed, b) for b in resamples]
    ro = rbridge.r()
    out = rbridge.call("earnest_bootstrap", rbridge.to_r_frame(weighted_counts(frame)), glmm,
                       ro.IntVector(resamples), ro.IntVector(seeds), int(max(1, cores)), labels,
                       _prior_sd(prior, G.TERMS[glmm]))
    table = rbridge.from_r_frame(out)
    table["converged"] = table["converged"].astype(bool)
    fallback = table["path"] == "glmer"
    if fallback.any():
        import logging
        logging.getLogger("earnest.stats").warning(
            "GLMM %d: lme4's bootstrap fast path differs from glmer() with this lme4; %d resamples refitted "
            "with glmer() (counted in the summary as n_glmer_fallback)", glmm, int(table.loc[fallback, "resample"].nunique()))
    table["engine"] = np.where(fallback, G.GLMER_FALLBACK, G.LME4)
    return table[list(G.SHARD_COLUMNS) + ["engine"]]


#: lme4's inner PIRLS iterated to convergence (glmerControl(tolPwrss = TIGHT_PWRSS)): the Laplace
#: deviance evaluated exactly, the fit that shows whether a convergence message is lme4's own noise
TIGHT_PWRSS = 1e-12


def wald_fit(df: pd.DataFrame, glmm: int, *, tol_pwrss: float = 0.0, prior=None) -> G.WaldFit:
    """Fit ``glmm`` once on all rows of one model x prompt (row level, as the paper did); with
    ``tol_pwrss`` > 0 lme4's PIRLS iterates to that relative tolerance (e.g. :data:`TIGHT_PWRSS`)."""
    glmm = G._check_glmm(glmm)
    frame = weighted_counts(G.model_frame(df, glmm, aggregate=False))
    ro = rbridge.r()
    control = ro.r(f"glmerControl(tolPwrss = {float(tol_pwrss)!r})") if tol_pwrss > 0 else ro.r("glmerControl()")
    res = rbridge.from_r_list(rbridge.call("earnest_wald", rbridge.to_r_frame(frame), glmm, control,
                                           _prior_sd(prior, G.TERMS[glmm])))
    err = res["error"]
    err = err[0] if isinstance(err, list) and err else (err or "")
    singular = res["singular"]
    return G.WaldFit(glmm=glmm, coefs=res["coefs"], converged=bool(res["converged"]),
                   messages=list(res["messages"] or []), error=str(err),
                   lme4_messages=list(res.get("lme4_messages") or []),
                   ranef_var=float(res["ranef_var"]) if res["ranef_var"] is not None else float("nan"),
                   singular=None if singular is None else bool(singular),
                   max_grad=float(res["max_grad"]) if res["max_grad"] is not None else float("nan"),
                   tol=float(res["tol"]) if res["tol"] is not None else float("nan"))


OPTIMISERS = ("bobyqa", "Nelder_Mead", "nlminbwrap", "nloptwrap.NLOPT_LN_NELDERMEAD",
              "nloptwrap.NLOPT_LN_BOBYQA")


def refit_optimisers(df: pd.DataFrame, glmm: int) -> pd.DataFrame:
    """Listing 6: the full-data fit with each lme4 optimiser (:data:`OPTIMISERS`).

    One row per optimiser and term: optimiser, term, estimate, converged, singular, messages, error.
    """
    glmm = G._check_glmm(glmm)
    frame = weighted_counts(G.model_frame(df, glmm, aggregate=False))
    out = rbridge.from_r_frame(rbridge.call("earnest_refit_optimisers", rbridge.to_r_frame(frame), glmm))
    out["converged"] = out["converged"].astype(bool)
    return out


def check_fits(frame: pd.DataFrame, glmm: int, resamples, seeds, tol_pwrss: float = 0.0, prior=None) -> pd.DataFrame:
    """lme4's fits of the listed resamples (and their seeds) of ``frame`` (aggregated rows), with
    glmer's defaults (``tol_pwrss`` 0) or its PIRLS iterated to ``tol_pwrss``: what checks another
    engine (:func:`earnest.stats.engines.laplace.cross_check`)."""
    ro = rbridge.r()
    return rbridge.from_r_frame(rbridge.call("earnest_check_fits", rbridge.to_r_frame(weighted_counts(frame)), glmm,
                                             ro.IntVector([int(b) for b in resamples]), ro.IntVector(seeds),
                                             float(tol_pwrss), _prior_sd(prior, G.TERMS[glmm])))


class Lme4Engine(Engine):
    """glmer through R (:mod:`earnest.stats.rbridge`), one fit per resample: the paper's engine."""

    name = G.LME4
    rows = G.ROWS
    # lme4 + reference: answers (lme4's checks on the rows the paper's pymer4 fits); lme4 + earnest:
    # either (the earnest rule is its own, faithful on both)
    faithful_rows = {fidelity.REFERENCE: ("answers",), fidelity.EARNEST: ("answers", "aggregated")}
    uses_cluster_labels = True
    fits_item_effects = True
    fits_cross_language = True
    slow_rows = 100_000

    def bootstrap(self, frame, glmm, resamples, base_seed, cores=1, labels="draw", prior=None):
        return lme4_bootstrap(frame, glmm, resamples, base_seed, cores, labels, prior)

    def full_fit(self, data, glmm, prior=None):
        return wald_fit(data, glmm, prior=prior)

    def fixed_deviance(self, data, glmm, prior, term=None, value=0.0):
        frame = weighted_counts(G.model_frame(data, glmm, aggregate=True))
        ro = rbridge.r()
        out = rbridge.call("earnest_fixed_deviance", rbridge.to_r_frame(frame), int(glmm),
                           "" if term is None else str(term), float(value),
                           _prior_sd(prior, G.TERMS[glmm]))
        v = float(out[0])
        return v if np.isfinite(v) else float("nan")

    def diagnose(self, data, glmm, wald, fidelity_mode, *, refit=True):
        extra, refits = {}, pd.DataFrame()
        if not wald.error:
            # is the message lme4's own noise? The same fit with its PIRLS converged says (the paper's
            # "Convergent" column stays lme4's default verdict)
            tight = wald_fit(data, glmm, tol_pwrss=TIGHT_PWRSS, prior=G.prior_for(fidelity_mode))
            extra = {"wald_tight_converged": wald_clean(tight, fidelity_mode),
                     "wald_tight_messages": " | ".join(tight.messages) or tight.error}
        if refit:
            refits = refit_optimisers(data, glmm)
        return extra, refits

    def bootstrap_items(self, frame, resamples, base_seed, cores, agq):
        seeds = [G.resample_seed(base_seed, b) for b in resamples]
        ro = rbridge.r()
        out = rbridge.call("earnest_compare_bootstrap", rbridge.to_r_frame(frame), ro.IntVector(resamples),
                           ro.IntVector(seeds), int(max(1, cores)), agq)
        table = rbridge.from_r_frame(out)
        table["converged"] = table["converged"].astype(bool)
        return table[list(G.SHARD_COLUMNS)]

    def cross_bootstrap(self, cross, resamples, base_seed, *, full=False, workers=1, prior=None):
        rbridge.check_lme4()
        ro = rbridge.r()           # sources R/crosslingual.R with the other R files
        seeds = [0] if full else [G.resample_seed(base_seed, int(b)) for b in resamples]
        frame = cross.frame
        rframe = rbridge.to_r_frame(frame.assign(language=frame["language"].astype(str)))
        out = rbridge.from_r_frame(rbridge.call("earnest_cross_bootstrap", rframe, ro.StrVector(cross.languages),
                                                cross.random, ro.IntVector([int(b) for b in resamples]),
                                                ro.IntVector(seeds), bool(full),
                                                _prior_sd(prior, cross.terms)))
        out["converged"] = out["converged"].astype(bool)
        out["engine"] = self.name
        return out

    def cross_full_fit(self, cross, prior=None):
        shards = self.cross_bootstrap(cross, [-1], 0, full=True, prior=prior)
        ok = shards["error"].fillna("") == ""
        return G.WaldFit(glmm=1, coefs=shards[["term", "estimate", "se", "z", "p"]].reset_index(drop=True),
                         converged=bool(shards["converged"].all()),
                         messages=[m for m in shards["messages"].iloc[:1] if m],
                         error="" if ok.all() else str(shards["error"].iloc[0]), lme4_messages=[],
                         ranef_var=float(shards["ranef_var"].iloc[0]), singular=bool(shards["singular"].iloc[0]),
                         max_grad=float("nan"), tol=float("nan"))

    def pairwise(self, correct, group, cluster):
        ro, fn = _pairwise_function()
        res = rbridge.guarded(fn, ro.IntVector(list(correct)), ro.StrVector(list(group)), ro.StrVector(list(cluster)))
        return {name: res.rx2(name) for name in res.names}


@functools.lru_cache(maxsize=1)
def _pairwise_function():
    """The one embedded R session (with lme4 loaded) and the R function of :meth:`Lme4Engine.pairwise`;
    :class:`earnest.stats.engines.base.EngineUnavailable` with R's text when it cannot be set up."""
    try:
        ro = rbridge.r()
        return ro, ro.r(_PAIRWISE_R)
    except Exception as exc:  # rbridge.RError, rpy2's RRuntimeError
        raise EngineUnavailable(str(exc)) from exc


#: StatFormBench's model comparison (:meth:`Lme4Engine.pairwise`): correct ~ model + (1 | sample)
_PAIRWISE_R = r"""
function(correct, model, sample) {
  d <- data.frame(correct = as.integer(correct), model = factor(model), sample = factor(sample))
  msgs <- character(0)
  fit <- withCallingHandlers(
    lme4::glmer(correct ~ model + (1 | sample), data = d, family = binomial,
                control = lme4::glmerControl(optimizer = "bobyqa", optCtrl = list(maxfun = 1e5))),
    warning = function(w) { msgs <<- c(msgs, conditionMessage(w)); invokeRestart("muffleWarning") },
    message = function(m) { msgs <<- c(msgs, trimws(conditionMessage(m))); invokeRestart("muffleMessage") })
  b <- lme4::fixef(fit)
  V <- as.matrix(stats::vcov(fit))
  lev <- levels(d$model)
  k <- length(lev)
  # effect of each level relative to the first (treatment coding), with its covariance
  L <- cbind(0, diag(k - 1))
  eff <- c(0, as.vector(L %*% b))
  Ve <- matrix(0, k, k)
  Ve[2:k, 2:k] <- L %*% V %*% t(L)
  a <- character(0); bb <- character(0); est <- numeric(0); se <- numeric(0)
  for (i in 1:(k - 1)) for (j in (i + 1):k) {
    a <- c(a, lev[i]); bb <- c(bb, lev[j])
    est <- c(est, eff[i] - eff[j])
    se <- c(se, sqrt(Ve[i, i] + Ve[j, j] - 2 * Ve[i, j]))
  }
  z <- est / se
  p <- 2 * stats::pnorm(-abs(z))
  conv <- fit@optinfo$conv$lme4$messages
  list(model_a = a, model_b = bb, estimate = est, se = se, z = z, p = p,
       sample_sd = as.numeric(attr(lme4::VarCorr(fit)$sample, "stddev")),
       singular = lme4::isSingular(fit),
       messages = paste(unique(c(msgs, conv)), collapse = "; "))
}
"""


#: the lme4 engine, registered first: it fits every row kind and the item effects
LME4_ENGINE = register(Lme4Engine())
