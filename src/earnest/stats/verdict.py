"""The verdict: the one place where a fit's P value, interval and significance are decided.

Every fit earnest reports (GLMM 1 and 2 per model x prompt, the per-language and cross-lingual
fits, the paired comparisons, Ex4's contrasts, StatFormBench's comparisons, the power study's and
the validity studies' simulated fits) ends in the same record, built here:

* :func:`fit_p` — the fit's P value and interval before any correction, per fidelity mode:

  ``reference`` (the paper authors' procedure, exactly): Eq. 4 over the clean bootstrap estimates
  of the unpenalised glmer fits, the percentile interval; nothing of earnest's changes it (no
  divergence rule, no bound for a P of 0, no caution: earnest's notes stand beside it).

  ``earnest``: the fits are penalised (:class:`earnest.stats.glmm.Prior`), so a resample whose
  templates separate the effect (at the accuracy ceiling: no wrong GSM-Base answer among its draws)
  has a finite estimate and the bootstrap keeps every resample; the P value is Eq. 4's, a P of 0
  read as its bound 2/n (the smallest non-zero value Eq. 4 takes), the interval the percentile
  interval. But a template bootstrap cannot express uncertainty about a count that is zero in the
  data: where the full data separate the effect (a condition with no wrong, or no right, answer:
  ``separated``), no resample can hold such an answer, and Eq. 4 says "0" whatever the truth. Nor
  can it about a count of one or two: a resample draws the condition's only wrong answer or not, and
  Eq. 4 over those draws rejects a true null in 7 of 17 simulated data sets with one such answer
  (benchmarks/README.md, "Sparse data"). Where the data are sparse (:func:`is_sparse`: some
  condition of the effect has at most :data:`SPARSE_EVENTS` answers of its rarer outcome, right or
  wrong; separated data are the case 0) the P value is the larger of the bootstrap's and the
  penalised likelihood-ratio test's on the full data (the profile likelihood, after Heinze &
  Schemper's treatment of separation), which carries the small count's uncertainty, and the interval
  is the hull of the percentile interval and the penalised profile-likelihood interval (it excludes
  0 exactly where both tests reject). Everywhere the likelihood-ratio test and its interval stand
  beside it (``p_lr``, ``pl_*``); the record says which rule applied (``separated_data``,
  ``sparse_data``, ``rarer_count``).
  ``benchmarks/glmm_validity.py --verdict`` and ``--sparse`` measure the rule against known truth, at
  the ceiling, on sparse data and away from both (benchmarks/README.md): requiring both tests
  everywhere would cost power the bootstrap has in ordinary designs, requiring the bootstrap alone
  rejects in half the ceiling-null data sets.

* :func:`decide` — the verdict of a table of such records within their Holm families: one of
  :data:`VERDICTS`, with its reason. ``not estimable`` (no rows, no correct or no wrong answer at
  all, a covariate collinear with the effect, no clean resample) never carries a number;
  ``unresolved`` says that the bootstrap's resolution (2/B) cannot pass the family's smallest Holm
  threshold (alpha/m) and names the B that would (:func:`resolving_resamples`).

No other module compares a P value with alpha (tests/test_verdict.py greps for it).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from earnest import fidelity as F
from earnest.stats.defaults import ALPHA

SIGNIFICANT = "significant"
SIGNIFICANT_UNCORRECTED = "significant before Holm only"
NOT_SIGNIFICANT = "not significant"
UNRESOLVED = "unresolved"
NOT_ESTIMABLE = "not estimable"
#: sparse data (:func:`is_sparse`): a condition of the effect with at most this many answers of its rarer
#: outcome. Measured (benchmarks/README.md, "Sparse data"): the template bootstrap alone rejects a true
#: null where a condition has one such answer (GLMM 1: 7 of 17 data sets; pairs: see there) and holds
#: from SPARSE_EVENTS + 1 up; where a condition has up to SPARSE_EVENTS the larger of the bootstrap's
#: and the likelihood-ratio test's P is calibrated and found every effect the bootstrap found.
SPARSE_EVENTS = 5
#: every verdict a fit can get, in order of display
VERDICTS = (SIGNIFICANT, SIGNIFICANT_UNCORRECTED, NOT_SIGNIFICANT, UNRESOLVED, NOT_ESTIMABLE)

#: the columns :func:`fit_p` adds to a fit's record
P_COLUMNS = ("p_boot", "p_bound", "p_lr", "p_value", "p_source", "separated_data", "sparse_data", "rarer_count",
             "boot_low_log", "boot_high_log",
             "pl_low_log", "pl_high_log", "ci_low_log", "ci_high_log", "ci_low", "ci_high",
             "ci_low_unbounded", "ci_high_unbounded")
#: the columns :func:`decide` adds to a table of records
VERDICT_COLUMNS = ("p_holm", "holm_m", "significant_uncorrected", "significant_holm", "unresolved",
                   "resolving_resamples", "verdict", "verdict_reason")


def bootstrap_p(estimates) -> float:
    """Eq. 4: 2 * min(share of estimates <= 0, share >= 0), capped at 1; NaN when there are none."""
    theta = np.asarray(estimates, dtype=float)
    theta = theta[~np.isnan(theta)]
    if theta.size == 0:
        return float("nan")
    return float(min(1.0, 2.0 * min(np.mean(theta <= 0), np.mean(theta >= 0))))


def p_resolution(n_estimates: int) -> float:
    """The smallest non-zero value of Eq. 4 from ``n_estimates`` estimates: one estimate on the far
    side of 0 gives 2 * 1/n (1 at most: one estimate). A P of 0 is below it, not 0."""
    return min(1.0, 2.0 / float(n_estimates)) if n_estimates > 0 else float("nan")


def p_bound(p_boot: float, n_estimates: int, fidelity: str = F.DEFAULT) -> float:
    """Earnest mode: where Eq. 4 gives 0, its resolution 2/n (:func:`p_resolution`): the P value is
    below it (displayed "<2/n", corrected as 2/n); NaN otherwise, and always in reference mode (the
    authors keep 0)."""
    F.check_mode(fidelity)
    if fidelity == F.REFERENCE or n_estimates <= 0 or not (p_boot == 0):
        return float("nan")
    return p_resolution(n_estimates)


def bounded_p(p_boot: float, bound: float, fidelity: str = F.DEFAULT) -> tuple[float, str]:
    """(P value, its source) of Eq. 4's ``p_boot`` with its :func:`p_bound`: earnest mode reads a P of 0
    as the bound ("bootstrap bound"); the reference keeps Eq. 4's value ("bootstrap")."""
    if F.check_mode(fidelity) != F.REFERENCE and p_boot == 0 and not math.isnan(bound):
        return float(bound), "bootstrap bound"
    return float(p_boot), "bootstrap"


def percentile_interval(estimates, level: float = 0.95) -> tuple[float, float]:
    """The (1-level)/2 and (1+level)/2 percentiles (linear interpolation, R's type 7)."""
    theta = np.asarray(estimates, dtype=float)
    theta = theta[~np.isnan(theta)]
    if theta.size == 0:
        return float("nan"), float("nan")
    lo, hi = np.percentile(theta, [50 * (1 - level), 50 * (1 + level)])
    return float(lo), float(hi)


def _exp(x: float) -> float:
    with np.errstate(over="ignore"):
        return float(np.exp(x)) if np.isfinite(x) else (0.0 if x == -np.inf else float("inf") if x == np.inf
                                                         else float("nan"))


def rarer_count(counts) -> float:
    """The smallest count of the rarer outcome over the conditions of an effect, from ``counts``:
    (right answers, answers) per condition (e.g. GSM-Base's and GSM-Variants'); conditions without an
    answer do not count; NaN where no condition has one."""
    rarer = [min(int(k), int(n) - int(k)) for k, n in counts if int(n) > 0]
    return float(min(rarer)) if rarer else float("nan")


def is_sparse(rarer: float) -> bool:
    """Whether an effect's data are sparse: some condition has at most :data:`SPARSE_EVENTS` answers of
    its rarer outcome (``rarer``: :func:`rarer_count`; 0 = separated; NaN = unknown: not sparse)."""
    return not math.isnan(float(rarer)) and float(rarer) <= SPARSE_EVENTS


def fit_p(estimates, *, fidelity: str = F.DEFAULT, level: float = 0.95, p_lr: float = float("nan"),
          pl_low: float = float("nan"), pl_high: float = float("nan"), rarer: float = float("nan")) -> dict:
    """A fit's P value and interval before correction (:data:`P_COLUMNS`), from its bootstrap
    ``estimates`` (the clean ones; log-odds) and, in earnest mode, its penalised likelihood-ratio test
    (``p_lr``) and profile interval (``pl_low``, ``pl_high``; -inf/inf where the profile never reaches
    the critical value), which decide with the bootstrap where the effect's data are sparse
    (``rarer``: :func:`rarer_count` of its conditions, 0 where they separate it: a count the bootstrap
    cannot vary; NaN where the fit has no such conditions, e.g. a covariate's slope). The rule is the
    module docstring's."""
    F.check_mode(fidelity)
    rarer = float(rarer)
    separated = rarer == 0
    sparse = is_sparse(rarer)
    theta = np.asarray(estimates, dtype=float)
    theta = theta[~np.isnan(theta)]
    p_boot = bootstrap_p(theta)
    lo, hi = percentile_interval(theta, level)
    bound = p_bound(p_boot, theta.size, fidelity)
    out = {"p_boot": p_boot, "p_bound": bound, "p_lr": float("nan"), "boot_low_log": lo, "boot_high_log": hi,
           "pl_low_log": float("nan"), "pl_high_log": float("nan")}
    if fidelity == F.REFERENCE:
        p, source, cl, ch = p_boot, "bootstrap", lo, hi
    else:
        pb, boot_source = bounded_p(p_boot, bound, fidelity)
        out.update(p_lr=float(p_lr), pl_low_log=float(pl_low), pl_high_log=float(pl_high))
        if math.isnan(pb):
            p, source = float("nan"), ""
        elif not sparse or math.isnan(p_lr) or pb >= p_lr:
            p, source = pb, boot_source
        else:
            p, source = float(p_lr), "likelihood ratio"
        cl, ch = lo, hi
        if sparse:
            cl = np.nanmin([lo, pl_low]) if not (math.isnan(lo) and math.isnan(pl_low)) else float("nan")
            ch = np.nanmax([hi, pl_high]) if not (math.isnan(hi) and math.isnan(pl_high)) else float("nan")
        if math.isnan(lo):          # no bootstrap estimate: no interval
            cl = ch = float("nan")
    out.update(p_value=p, p_source=source, separated_data=bool(separated), sparse_data=bool(sparse), rarer_count=rarer,
               ci_low_log=float(cl), ci_high_log=float(ch),
               ci_low=_exp(cl), ci_high=_exp(ch), ci_low_unbounded=bool(cl == -np.inf),
               ci_high_unbounded=bool(ch == np.inf))
    return out


def holm(pvalues, fidelity: str = F.DEFAULT) -> np.ndarray:
    """Holm-Bonferroni adjusted P values (step-down, monotone, capped at 1) of one family. A missing
    P value (NaN: no test) stays NaN; ``earnest``: it does not count in the family's size m (a fit
    without a P value tests nothing); ``reference``: it does, as the authors' statsmodels
    ``multipletests(..., method="holm")`` counts it ([0.01, 0.02, 0.03, NaN] -> 0.04, 0.06, 0.06, NaN
    against earnest's 0.03, 0.04, 0.04, NaN)."""
    F.check_mode(fidelity)
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    if ok.size == 0:
        return out
    m = p.size if fidelity == F.REFERENCE else ok.size
    order = ok[np.argsort(p[ok], kind="stable")]
    adj = np.minimum(1.0, (m - np.arange(ok.size)) * p[order])
    out[order] = np.maximum.accumulate(adj)
    return out


def family_size(pvalues, fidelity: str = F.DEFAULT) -> int:
    """m of :func:`holm` for one family."""
    p = np.asarray(pvalues, dtype=float)
    return int(p.size if F.check_mode(fidelity) == F.REFERENCE else np.sum(~np.isnan(p)))


def resolving_resamples(m: int, alpha: float = ALPHA) -> int:
    """The smallest B whose bootstrap resolution 2/B passes the first Holm threshold alpha/m of a
    family of m tests: 2/B < alpha/m, B > 2m/alpha."""
    return int(math.floor(2.0 * max(int(m), 1) / float(alpha))) + 1


def check_alpha(alpha, what: str = "alpha") -> float:
    """``alpha`` as a float in (0, 1); ValueError naming ``what`` (an option or config key) otherwise."""
    try:
        a = float(alpha)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number in (0, 1), not {alpha!r}") from None
    if isinstance(alpha, bool) or not 0 < a < 1:
        raise ValueError(f"{what} must lie in (0, 1), not {alpha!r}")
    return a


def below(p, alpha: float = ALPHA) -> np.ndarray:
    """p < alpha elementwise, False for NaN: the one comparison of a P value with alpha."""
    p = np.asarray(p, dtype=float)
    return np.where(np.isnan(p), False, p < alpha)


def decide(records: pd.DataFrame, families, *, alpha: float = ALPHA, fidelity: str = F.DEFAULT,
           estimable: str = "not_estimable_reason") -> pd.DataFrame:
    """``records`` (each with :data:`P_COLUMNS`, a ``not estimable`` reason column ``estimable``
    ('' where estimable) and the grouping columns) with :data:`VERDICT_COLUMNS`: Holm within each
    family (``families``: the grouping columns, or a list of row-index arrays, or None: one family),
    then the verdict of each fit.

    A fit that is not estimable has no P value in its family; a P of 0 is corrected as its bound
    (earnest). ``unresolved`` (earnest mode): the fit's P is the bootstrap's bound, which its family's
    Holm correction cannot pass at this B (``resolving_resamples`` names the B that could), so the
    fit is neither significant nor shown to be not significant."""
    check_alpha(alpha)
    F.check_mode(fidelity)
    res = records.copy()
    reason = (res[estimable].fillna("").astype(str) if estimable in res.columns
              else pd.Series("", index=res.index))
    p = res["p_value"].astype(float).where(reason == "")
    res["p_holm"] = np.nan
    res["holm_m"] = 0
    if families is None:
        groups = [res.index]
    elif isinstance(families, (list, tuple)) and families and not isinstance(families[0], str):
        groups = [pd.Index(g) for g in families]
    else:
        keys = list(families)
        groups = [idx for _, idx in res.groupby(keys, sort=False).groups.items()] if keys else [res.index]
    for idx in groups:
        res.loc[idx, "p_holm"] = holm(p.loc[idx], fidelity)
        res.loc[idx, "holm_m"] = family_size(p.loc[idx], fidelity)
    res["significant_uncorrected"] = below(p, alpha)
    res["significant_holm"] = below(res["p_holm"], alpha)
    bound = res["p_bound"].astype(float) if "p_bound" in res.columns else pd.Series(np.nan, index=res.index)
    at_bound = (fidelity != F.REFERENCE) & bound.notna() & (p.astype(float) == bound)
    res["unresolved"] = (at_bound & ~res["significant_holm"]).to_numpy()
    res["resolving_resamples"] = [resolving_resamples(m, alpha) if u else 0
                                  for m, u in zip(res["holm_m"], res["unresolved"])]
    verdicts, reasons = [], []
    for r, why in zip(res.itertuples(index=False), reason):
        if why:
            verdicts.append(NOT_ESTIMABLE)
            reasons.append(why)
        elif math.isnan(float(r.p_value)):
            verdicts.append(NOT_ESTIMABLE)
            reasons.append("no P value (no clean bootstrap estimate)")
        elif r.significant_holm:
            verdicts.append(SIGNIFICANT)
            reasons.append(f"Holm P < {alpha:g} ({r.p_source})")
        elif r.unresolved:
            verdicts.append(UNRESOLVED)
            reasons.append(f"every bootstrap estimate on one side of 0, but from {int(round(2 / r.p_bound))} clean "
                           f"estimates the bootstrap's resolution (2/n) cannot pass Holm's threshold across "
                           f"{int(r.holm_m)} tests; at least {r.resolving_resamples} clean estimates would resolve "
                           f"it (stats.resamples B >= {r.resolving_resamples}, more where resamples are not clean)")
        elif r.significant_uncorrected:
            verdicts.append(SIGNIFICANT_UNCORRECTED)
            reasons.append(f"P < {alpha:g} before Holm, not after ({r.p_source})")
        else:
            verdicts.append(NOT_SIGNIFICANT)
            reasons.append(f"P >= {alpha:g}" + (f" ({r.p_source})" if r.p_source else ""))
    res["verdict"] = verdicts
    res["verdict_reason"] = reasons
    return res


def wald_significant(wald_p, not_estimable, alpha: float = ALPHA) -> np.ndarray:
    """The full-data Wald test's call (Table 16), never for a fit that is not estimable."""
    return below(wald_p, alpha) & ~np.asarray(not_estimable, dtype=bool)
