"""One effect compared between two analyses fitted on the same bootstrap resamples of the same templates.

Two GLMMs whose inputs hold the same templates, bootstrapped with the same seed, draw exactly the
same templates in resample b (the draws depend only on the sorted template ids and the resample's
seed: :mod:`earnest.stats.rdraws`). The difference of their estimates of one effect in resample b is
then a draw of the bootstrap distribution of the difference: its median, percentile interval and
Eq. 4 P value test "the effect in analysis a minus the effect in analysis b" directly, where reading
two separate significances (one significant, the other not) tests nothing (the difference of a
significant and a non-significant effect need not be significant itself).

Which resamples count is decided as the summaries decide it (:func:`earnest.stats.summary.clean_mask`
under the fidelity mode; in earnest mode a separated resample counts at +-``SEPARATED_LOG_OR`` on its
side, :func:`earnest.stats.summary.with_separated`). A resample counts in the difference where both
analyses have it; one separated side gives the difference that side's bound; both separated on the
same side carry no information on the difference and are left out (counted in ``n_uninformative``).
The contrast is degenerate where either analysis is (its fit says nothing about the effect), or where
its own median or interval is built from bounds (:func:`earnest.stats.diagnostics.diverged_statement`):
it is then never significant. The package knows no benchmark: GSM's use is :mod:`earnest.gsm.ex4`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from earnest import fidelity as F
from earnest.stats.diagnostics import diverged_statement
from earnest.stats.summary import (SEPARATED_LOG_OR, check_shards, clean_mask, diverged_order_statistics,
                                   glmm_frame, separation_sides)
from earnest.stats.glmm import prior_for
from earnest.stats.verdict import fit_p
from earnest.wording import VARIANT


def resample_estimates(shards: pd.DataFrame, data: pd.DataFrame, glmm: int, term: str = VARIANT,
                       fidelity: str = F.DEFAULT) -> pd.Series:
    """Per resample (index: resample number): the estimate of ``term`` that the summary counts, the
    bound +-SEPARATED_LOG_OR of a separated resample (earnest mode, the variant term), NaN where the
    resample does not count (not clean, or without information on the effect)."""
    check_shards(shards)
    per = shards.drop_duplicates("resample").set_index("resample")
    out = pd.Series(np.nan, index=per.index.astype(int), dtype=float)
    rows = shards[(shards["term"] == term) & clean_mask(shards, fidelity)]
    out.loc[rows["resample"].astype(int).to_numpy()] = rows["estimate"].astype(float).to_numpy()
    if fidelity != F.REFERENCE and term == VARIANT and prior_for(fidelity) is None:
        # unpenalised fits in earnest mode (never made now; kept for the rule's sake): separated resamples at their bound
        sides = pd.Series(separation_sides(glmm_frame(data, glmm), per["seed"].to_numpy()), index=out.index)
        out[sides.isna()] = np.nan                       # no information on the effect
        separated = sides.isin((-1.0, 1.0))
        out[separated] = sides[separated] * SEPARATED_LOG_OR
    return out


def _same_draws(shards_a: pd.DataFrame, data_a: pd.DataFrame, shards_b: pd.DataFrame, data_b: pd.DataFrame,
                names: tuple[str, str]) -> None:
    ta = np.unique(data_a["template"].to_numpy())
    tb = np.unique(data_b["template"].to_numpy())
    if not np.array_equal(ta, tb):
        only = sorted(set(ta.tolist()) ^ set(tb.tolist()))[:5]
        raise ValueError(f"{names[0]} and {names[1]} hold different templates (e.g. {only}): their resamples "
                         "draw different templates, so their estimates cannot be paired")
    sa = shards_a.drop_duplicates("resample").set_index("resample")["seed"]
    sb = shards_b.drop_duplicates("resample").set_index("resample")["seed"]
    common = sa.index.intersection(sb.index)
    if len(common) == 0 or not (sa.loc[common].to_numpy() == sb.loc[common].to_numpy()).all():
        raise ValueError(f"{names[0]} and {names[1]} were not bootstrapped with the same seeds "
                         "(stats.seed): their resamples cannot be paired")


def paired_contrast(shards_a: pd.DataFrame, data_a: pd.DataFrame, shards_b: pd.DataFrame, data_b: pd.DataFrame, *,
                    glmm: int = 1, term: str = VARIANT, fidelity: str = F.DEFAULT, level: float = 0.95,
                    degenerate_a: bool = False, degenerate_b: bool = False,
                    names: tuple[str, str] = ("a", "b")) -> dict:
    """The bootstrap distribution of (``term`` in a) - (``term`` in b) over the resamples both have.

    ``shards_*``: the two analyses' bootstrap shards (same seeds), ``data_*``: their GLMM inputs
    (same templates; ValueError otherwise), ``degenerate_*``: the summaries' verdict on each. Returns
    the difference on the log-odds scale (median, interval, P, its bound), as a ratio of odds
    ratios (``ratio``, ``ci_low``, ``ci_high``), the counts, ``degenerate`` and the reason."""
    F.check_mode(fidelity)
    _same_draws(shards_a, data_a, shards_b, data_b, names)
    ea = resample_estimates(shards_a, data_a, glmm, term, fidelity)
    eb = resample_estimates(shards_b, data_b, glmm, term, fidelity)
    both = pd.concat([ea.rename("a"), eb.rename("b")], axis=1, join="inner").dropna()
    a, b = both["a"].to_numpy(), both["b"].to_numpy()
    bound_a, bound_b = np.abs(a) >= SEPARATED_LOG_OR, np.abs(b) >= SEPARATED_LOG_OR
    diff = a - b
    one = bound_a ^ bound_b
    diff[one] = np.sign(diff[one]) * SEPARATED_LOG_OR
    same = bound_a & bound_b & (np.sign(a) == np.sign(b))
    diff[bound_a & bound_b & ~same] = np.sign(a[bound_a & bound_b & ~same]) * SEPARATED_LOG_OR
    diff = diff[~same]
    rec = fit_p(diff, fidelity=fidelity, level=level)      # the verdict's P and interval (bootstrap alone here)
    lo, hi = rec["ci_low_log"], rec["ci_high_log"]
    med = float(np.median(diff)) if diff.size else float("nan")
    p = rec["p_boot"]
    reasons = [f"{name}: not estimable" for name, bad in zip(names, (degenerate_a, degenerate_b)) if bad]
    if diff.size == 0:
        reasons.append("no resample has both estimates")
    n_bounds = int(np.sum(np.abs(diff) >= SEPARATED_LOG_OR))
    built = diverged_order_statistics(diff, level)
    diverged = diverged_statement(med, lo, hi, built_from=built, n_diverged=n_bounds)
    if diverged and prior_for(fidelity) is None:
        reasons.append(diverged)
    with np.errstate(over="ignore"):
        ratio, ci_low, ci_high = (float(np.exp(x)) for x in (med, lo, hi))
    return {"n_resamples": int(len(ea.index.union(eb.index))), "n_pairs": int(diff.size),
            "n_separated": n_bounds, "n_uninformative": int(same.sum()),
            "median_log_diff": med, "ci_low_log": lo, "ci_high_log": hi, "ratio": ratio, "ci_low": ci_low,
            "ci_high": ci_high, "p_boot": p, "p_bound": rec["p_bound"], "p_value": rec["p_value"],
            "p_source": rec["p_source"], "degenerate": bool(reasons), "problems": "; ".join(reasons)}
