"""Bootstrap summaries as defined in section 3.5 of the GSM-Symbolic re-evaluation.

Of B resamples only the clean ones count (:func:`clean_mask`, per fidelity mode). For each fixed
effect: the median of the clean estimates on the log-odds scale, reported as an odds ratio; the
95% interval as the 2.5th and 97.5th percentiles of the clean estimates; the bootstrap P value of
Eq. 4, twice the smaller tail proportion; the random-intercept variance as mean and standard
deviation over clean resamples (the full-data fit's variance and its square root are what the
paper's tables print, see :func:`ranef_column`); and the number of clean estimates. Accuracies on
GSM-Base and GSM-Variants and their difference Delta_var are in percent / percentage points.
Holm-Bonferroni runs within the families the published tables use (:data:`HOLM_FAMILY`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from earnest import fidelity as F
from earnest.stats.defaults import ALPHA  # re-exported: the significance level (stats.alpha)
from earnest.stats.glmm import GLMER_FALLBACK, LME4, SHARD_COLUMNS, WaldFit, engine_name
from earnest.stats.verdict import fit_p, rarer_count
from earnest.wording import EFFECTS, VARIANT


def clean_mask(shards: pd.DataFrame, fidelity: str = F.DEFAULT) -> pd.Series:
    """True for the rows of clean fits: the one place that decides which fits count.

    Both modes need a fit without error with an estimate for the term. ``reference``: no message
    from lme4's own convergence checks (``lme4_messages``; a singular fit's "boundary (singular)
    fit" is one of them) and not singular, exactly as the reference's ``bootstrap_fit_df`` keeps
    ``clean_estimates``. ``earnest``: no warning of any kind (``converged``), which also excludes
    optimiser warnings lme4 does not count among its convergence messages, except lme4's
    "boundary (singular) fit" (:data:`BOUNDARY_MESSAGE`): a template variance estimated at 0 is a fit
    of the model (a GLM in that resample, its fixed effects as well determined as any), and dropping
    those resamples conditions the bootstrap on a positive variance: where templates barely differ,
    most resamples are singular and a strong effect (Wald z ~ 6) kept 2 of 200 estimates, P "< 1"
    (benchmarks/README.md). The paired comparisons (R/compare.R) count them for the same reason.

    In both, a fit whose optimiser did not converge (:func:`not_converged_mask`) is never clean: the
    laplace engine reports its own non-convergence in lme4's channel, and an lme4 optimiser's
    "convergence code" warning without a checkConv message (rare; the authors' rule would keep it)
    is dropped too and counted in the summaries' ``n_not_converged``.
    """
    F.check_mode(fidelity)
    err = _as_text(shards["error"])
    ok = (err == "") & shards["estimate"].notna() & ~not_converged_mask(shards)
    if fidelity == F.REFERENCE:
        if "lme4_messages" not in shards.columns:
            raise ValueError("fits without the column 'lme4_messages' (written before it existed): "
                             "refit them to judge them as the reference does")
        conv = _as_text(shards["lme4_messages"])
        singular = shards["singular"].astype("boolean").fillna(True).astype(bool)
        return ok & (conv == "") & ~singular
    converged = shards["converged"].astype(bool)
    if "messages" in shards.columns:
        converged = converged | _as_text(shards["messages"]).map(_only_boundary).astype(bool)
    return ok & converged


#: how lme4 (and the laplace engine, in its words) says that a fit is singular: a variance at its
#: boundary 0; earnest mode counts such a fit (a fit of the model, reduced to a GLM in that resample)
BOUNDARY_MESSAGE = "boundary (singular) fit"


def _only_boundary(messages: str) -> bool:
    """True where a fit's messages (" | "-joined) are lme4's singular-fit message and nothing else."""
    parts = [m.strip() for m in str(messages).split(" | ") if m.strip()]
    return bool(parts) and all(m.startswith(BOUNDARY_MESSAGE) for m in parts)


def _as_text(values: pd.Series) -> pd.Series:
    """A text column of fits (errors, messages) as str, "" where empty (also when every value is
    missing and pandas reads the column as float)."""
    return values.astype(object).fillna("").astype(str)


#: Texts that say a fit's optimiser stopped away from an optimum: lme4's checkConv ("Model failed to
#: converge with max|grad| ...", "... degenerate Hessian"), its optimisers' "convergence code" warnings,
#: the laplace engine's Newton iterations (earnest.stats.engines.laplace.NO_CONVERGENCE).
NOT_CONVERGED_TEXTS = ("failed to converge", "convergence code", "did not converge")


def not_converged_mask(shards: pd.DataFrame) -> pd.Series:
    """True for the rows of fits (without error) whose optimiser did not converge, by any engine:
    never clean under any rule (:func:`clean_mask`), counted in the summaries (``n_not_converged``)."""
    column = lambda c: (_as_text(shards[c]) if c in shards.columns  # noqa: E731
                        else pd.Series("", index=shards.index))
    msgs = column("messages") + " | " + column("lme4_messages")
    err = column("error")
    hit = np.zeros(len(shards), dtype=bool)
    for text in NOT_CONVERGED_TEXTS:
        hit |= msgs.str.contains(text, regex=False).to_numpy()
    return pd.Series(hit, index=shards.index) & (err == "")


def wald_clean(wald: WaldFit, fidelity: str = F.DEFAULT) -> bool:
    """Whether a full-data fit is clean under ``fidelity``, by the rule of :func:`clean_mask`."""
    row = pd.DataFrame({"estimate": [0.0 if wald.coefs["estimate"].notna().all() else np.nan],
                        "error": [wald.error or ""], "converged": [bool(wald.converged)],
                        "singular": [wald.singular], "lme4_messages": [" | ".join(wald.lme4_messages)],
                        "messages": [" | ".join(wald.messages)]})
    return bool(clean_mask(row, fidelity).iloc[0])


# the P value, its bound and the percentile interval are the verdict's (earnest.stats.verdict)
from earnest.stats.verdict import bootstrap_p, p_bound, percentile_interval  # noqa: E402,F401


#: Estimates beyond this on the log-odds scale (an odds ratio beyond e^10 ~ 22,000) are diverging
#: fits of (quasi-)separated resamples: no finite estimate exists, and the optimiser stops wherever
#: the deviance turns flat (lme4 at -13..-30, laplace at +-17..20 when it does not converge).
DIVERGED_LOG_OR = 10.0


def diverged_order_statistics(estimates, level: float = 0.95, limit: float = DIVERGED_LOG_OR) -> bool:
    """Whether the median or the percentile interval (R's type 7, :func:`percentile_interval`) is
    built from an estimate beyond +-``limit``: one of the order statistics each interpolates between
    is one, even where the interpolated value itself lands inside."""
    theta = np.sort(np.asarray(estimates, dtype=float)[~np.isnan(np.asarray(estimates, dtype=float))])
    n = theta.size
    if n == 0:
        return False
    used = set()
    for q in (0.5, (1 - level) / 2, (1 + level) / 2):
        h = (n - 1) * q
        used |= {int(np.floor(h)), int(np.ceil(h))}
    return bool(np.any(np.abs(theta[sorted(used)]) > limit))


#: Where a separated resample's variant estimate is placed (earnest mode): beyond every finite fit
#: and beyond DIVERGED_LOG_OR, on the side its data put it. Such a resample has no finite estimate
#: (the optimiser stops wherever the deviance turns flat, or does not converge), but it is part of
#: the bootstrap distribution: dropping it drops one tail (at the accuracy ceiling, exactly the
#: resamples that draw no wrong GSM-Base answer) and makes Eq. 4 read 0 under no effect.
SEPARATED_LOG_OR = 1000.0


def glmm_frame(data: pd.DataFrame, glmm: int) -> pd.DataFrame:
    """GLMM input (template, variant, correct[, gamma]) as (template, variant, succ, fail) rows of
    GLMM ``glmm`` (GLMM 2 leaves out rows without gamma, as its fits do)."""
    df = data if int(glmm) == 1 else data[data["gamma"].notna()]
    succ = df["correct"].astype(float).to_numpy()       # a share where epochs were averaged per question
    return pd.DataFrame({"template": df["template"].astype(np.int64).to_numpy(),
                         "variant": df["variant"].astype(np.int64).to_numpy(), "succ": succ, "fail": 1 - succ})


def separation_sides(frame: pd.DataFrame, seeds) -> np.ndarray:
    """Per resample (its R seed, :func:`earnest.stats.glmm.resample_seed`) of the rows ``frame``
    (template, variant 0/1, succ, fail; a GLMM's or a paired comparison's): +1 or -1 where the
    templates it draws separate the variant effect (variant 0 or variant 1 all right or all wrong)
    so that the estimate runs to +inf or -inf; NaN where the resample holds no information on the
    effect (both conditions all right, or both all wrong, or no row of one condition); 0 where it is
    not separated. The draws are the engines' own (R's, :mod:`earnest.stats.rdraws`, over the
    sorted template ids)."""
    from earnest.stats.rdraws import template_counts

    f = frame.groupby(["template", "variant"], sort=True, as_index=False)[["succ", "fail"]].sum()
    templates, tix = np.unique(f["template"].to_numpy(), return_inverse=True)
    seeds = np.asarray(list(seeds), dtype=np.int64)
    if seeds.size == 0 or templates.size == 0:      # no rows (e.g. every item excluded): nothing to separate
        return np.zeros(seeds.size)
    weights = template_counts(seeds, len(templates))[:, tix].astype(float)   # (resamples, rows)
    succ_all = f["succ"].to_numpy(float)
    trials_all = succ_all + f["fail"].to_numpy(float)
    side = {}
    for v in (0, 1):
        rows = f["variant"].to_numpy() == v
        succ = weights[:, rows] @ succ_all[rows]
        trials = weights[:, rows] @ trials_all[rows]
        side[v] = np.where(trials == 0, np.nan, np.where(succ == trials, 1.0, np.where(succ == 0, -1.0, 0.0)))
    base, var = side[0], side[1]
    out = np.sign(var - base)
    out[(base == var) & (base != 0)] = np.nan
    out[np.isnan(base) | np.isnan(var)] = np.nan
    return out


def with_separated(clean: pd.DataFrame, sides: pd.Series) -> tuple[np.ndarray, int]:
    """The bootstrap distribution of the variant effect (earnest mode), one rule for the GLMM
    summaries and the paired comparisons: the clean estimates (``clean``: resample, estimate) of the
    resamples that are not separated, and each separated resample (``sides``: per resample, from
    :func:`separation_sides`) at +-:data:`SEPARATED_LOG_OR` on its side, whatever its fit gave;
    resamples without information (NaN side) are left out. Returns (estimates, number separated)."""
    gone = sides.index[sides.fillna(1.0) != 0]
    kept = clean.loc[~clean["resample"].isin(gone), "estimate"].astype(float).to_numpy()
    bound = sides[sides.isin((-1.0, 1.0))].to_numpy() * SEPARATED_LOG_OR
    return np.r_[kept, bound], int(bound.size)


def _exp(log_or: float) -> float:
    """An odds ratio from its log: inf or 0 for a separated resample's bound, without a warning."""
    with np.errstate(over="ignore"):
        return float(np.exp(log_or))


def accuracies(df: pd.DataFrame) -> dict:
    """Accuracy (%) on GSM-Base (variant 0) and GSM-Variants (variant 1), Delta_var (pp), row counts."""
    correct = df["correct"].astype(float)
    base = correct[df["variant"] == 0]
    var = correct[df["variant"] == 1]
    a_base = 100.0 * base.mean() if len(base) else float("nan")
    a_var = 100.0 * var.mean() if len(var) else float("nan")
    return {"acc_base": a_base, "acc_variants": a_var, "delta_var": a_var - a_base,
            "n_base": int(len(base)), "n_variants": int(len(var))}


def check_shards(shards: pd.DataFrame, n_resamples: int | None = None, source: str = "shards") -> None:
    """Raise ValueError when shard tables lack contract columns, repeat or miss resamples."""
    missing = [c for c in SHARD_COLUMNS if c not in shards.columns]
    if missing:
        raise ValueError(f"{source}: missing columns {missing}")
    dup = shards.duplicated(["resample", "term"])
    if dup.any():
        r = shards.loc[dup, "resample"].iloc[0]
        raise ValueError(f"{source}: resample {r} appears in more than one shard")
    if n_resamples is not None:
        got = set(shards["resample"].astype(int))
        want = set(range(n_resamples))
        if got != want:
            lost = sorted(want - got)[:5]
            extra = sorted(got - want)[:5]
            raise ValueError(f"{source}: resamples do not cover 0..{n_resamples - 1} "
                             f"(missing e.g. {lost}, unexpected e.g. {extra})")


def summarise(shards: pd.DataFrame, data: pd.DataFrame, glmm: int, *, model: str, prompt: str,
              wald: WaldFit | None = None, analysis: str = "all", level: float = 0.95,
              fidelity: str = F.DEFAULT, rows: str = "", profile: dict | None = None,
              prior=None, extra_reasons: dict | None = None) -> pd.DataFrame:
    """One row per effect of ``glmm`` (variant; and gamma_c for GLMM 2) for one model x prompt.

    ``shards`` is the concatenated bootstrap shard table, ``data`` the validated GLMM input of the
    same model x prompt (for accuracies), ``wald`` the optional full-data fit. ``fidelity``
    decides which fits are clean (:func:`clean_mask`); ``rows`` (answers | aggregated) only
    records what the shards were fitted on. ``profile``: term -> the penalised profile likelihood's
    record (:func:`earnest.stats.profile.profile_term`; earnest mode); ``prior``: the prior the fits
    used (:func:`earnest.stats.glmm.prior_for`; None: unpenalised, whose separated resamples are then
    placed at their bound); ``extra_reasons``: term -> why it is not estimable (e.g. collinearity).
    The P value and interval are :func:`earnest.stats.verdict.fit_p`'s.
    """
    penalised = prior is not None
    prior_label = prior.label() if penalised else ""
    check_shards(shards)
    fitted_rows = rows
    n_resamples = int(shards["resample"].nunique())
    clean = shards[clean_mask(shards, fidelity)]
    clean_resamples = clean.drop_duplicates("resample")
    rv = clean_resamples["ranef_var"].astype(float)
    acc = accuracies(data)
    engines = shard_engines(shards)
    per = shards.drop_duplicates("resample")
    # the clean count under each rule whichever decides (the chosen one's is n_clean), and the fits
    # whose optimiser did not converge, clean under no rule
    by_rule = {f"n_clean_{mode}": int(clean_mask(per, mode).sum()) for mode in F.MODES
               if mode != F.REFERENCE or "lme4_messages" in per.columns}
    n_not_converged = int(not_converged_mask(per).sum())
    # earnest mode: separated resamples count at the bound on their side (with_separated); the
    # reference keeps the authors' rule (clean fits only)
    sides = None
    if fidelity != F.REFERENCE:
        sides = pd.Series(separation_sides(glmm_frame(data, glmm), per["seed"].to_numpy()),
                          index=per["resample"].to_numpy())
    rows = []
    reason_all = not_estimable_reason(acc, glmm)
    for term in EFFECTS[glmm]:
        kept = clean[clean["term"] == term]
        n_separated = 0
        if term == VARIANT and sides is not None:
            n_separated = int(sides.isin((-1.0, 1.0)).sum())
            if not penalised:
                # unpenalised fits of separated resamples diverge: each placed at its bound, on its side
                theta, n_separated = with_separated(kept, sides)
            else:
                theta = kept["estimate"].astype(float).to_numpy()
        else:
            theta = kept["estimate"].astype(float).to_numpy()
        prof = (profile or {}).get(term, {})
        rec = fit_p(theta, fidelity=fidelity, level=level, p_lr=prof.get("p_lr", float("nan")),
                    pl_low=prof.get("pl_low_log", float("nan")), pl_high=prof.get("pl_high_log", float("nan")),
                    rarer=rarer_answers(acc) if term == VARIANT else float("nan"))
        med = float(np.median(theta)) if theta.size else float("nan")
        reason = reason_all or (extra_reasons or {}).get(term, "") or (
            "" if theta.size else f"none of the {n_resamples} bootstrap resamples gave a clean fit")
        row = {
            "analysis": analysis, "glmm": int(glmm), "model": model, "prompt": prompt, "term": term,
            "fidelity": fidelity, "rows": fitted_rows, "prior": prior_label,
            "n_resamples": n_resamples, "n_clean": int(theta.size),
            "n_errors": int((shards.drop_duplicates("resample")["error"].fillna("") != "").sum()),
            "n_singular": int(shards.drop_duplicates("resample")["singular"].fillna(False).astype(bool).sum()),
            "median_log_or": med, "odds_ratio": _exp(med), **rec,
            **by_rule, "n_not_converged": n_not_converged,
            "n_diverged": int(np.sum(np.abs(theta) > DIVERGED_LOG_OR)), "n_separated": n_separated,
            "diverged": diverged_order_statistics(theta, level),
            "not_estimable_reason": reason,
            "ranef_var_mean": float(rv.mean()) if len(rv) else float("nan"),
            "ranef_var_sd": float(rv.std(ddof=1)) if len(rv) > 1 else float("nan"),
            **acc, **engines,
        }
        row.update(wald_columns(wald, term, fidelity))
        rows.append(row)
    return pd.DataFrame(rows)


def rarer_answers(acc: dict) -> float:
    """The variant effect's :func:`earnest.stats.verdict.rarer_count`: the fewer of GSM-Base's right and
    wrong answers, or of GSM-Variants', whichever is smaller (from :func:`accuracies`; 0 where the data
    separate the effect: a count no template resample can vary; NaN where a condition has no answer)."""
    nb, nv = int(acc["n_base"]), int(acc["n_variants"])
    if not nb or not nv:
        return float("nan")
    cb, cv = round(acc["acc_base"] * nb / 100), round(acc["acc_variants"] * nv / 100)
    return rarer_count([(cb, nb), (cv, nv)])


def not_estimable_reason(acc: dict, glmm: int = 1) -> str:
    """Why no effect of a model x prompt can be estimated at all ('' when it can), from its accuracies
    (:func:`accuracies`): no rows, no correct answer, or every answer correct. (Separation of the
    variant effect alone, e.g. no wrong GSM-Base answer, is estimable in earnest mode: the penalised
    fit stays finite and the likelihood-ratio test carries the zero count: earnest.stats.verdict's
    sparse-data rule.)"""
    nb, nv = int(acc["n_base"]), int(acc["n_variants"])
    if nb + nv == 0:
        return "no items left to fit (in a reasoning-only analysis: every item was excluded as a code error)"
    cb = round(acc["acc_base"] * nb / 100) if nb else 0
    cv = round(acc["acc_variants"] * nv / 100) if nv else 0
    if cb + cv == 0:
        return f"no correct answer at all ({cb}/{nb} GSM-Base, {cv}/{nv} GSM-Variants): no effect can be estimated"
    if cb + cv == nb + nv:
        return f"every answer correct ({nb + nv}): no effect can be estimated"
    return ""


def shard_engines(shards: pd.DataFrame) -> dict:
    """engine: what fitted the resamples ("lme4", "laplace", or both joined by "+"; shards without
    an engine column are lme4's); n_glmer_fallback: resamples lme4 fitted with glmer() because its
    bootstrap fast path was refused (logged when it happens)."""
    if "engine" not in shards.columns:
        return {"engine": LME4, "n_glmer_fallback": 0}
    per = shards.drop_duplicates("resample")["engine"].fillna(LME4).astype(str)
    names = sorted({engine_name(e) for e in per})
    return {"engine": "+".join(names), "n_glmer_fallback": int((per == GLMER_FALLBACK).sum())}


def wald_columns(wald: WaldFit | None, term: str, fidelity: str = F.DEFAULT) -> dict:
    """The Wald fit's statistics for ``term`` as summary columns (NaN/empty without a fit).
    ``wald_converged`` is the fit's cleanness under ``fidelity`` (:func:`wald_clean`)."""
    if wald is None:
        return {"wald_estimate": np.nan, "wald_se": np.nan, "wald_z": np.nan, "wald_p": np.nan,
                "wald_converged": None, "wald_singular": None, "wald_max_grad": np.nan,
                "wald_tol": np.nan, "wald_messages": "", "wald_ranef_var": np.nan}
    c = wald.coefs.set_index("term").loc[term]
    return {"wald_estimate": float(c["estimate"]), "wald_se": float(c["se"]), "wald_z": float(c["z"]),
            "wald_p": float(c["p"]), "wald_converged": wald_clean(wald, fidelity),
            "wald_singular": wald.singular, "wald_max_grad": wald.max_grad, "wald_tol": wald.tol,
            "wald_messages": " | ".join(wald.messages) or wald.error, "wald_ranef_var": wald.ranef_var}


def ranef_column(summaries: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """What the paper's "Rand. eff. variance ± std. dev." column prints: the random-intercept
    variance of the full-data fit and its standard deviation, the square root of that variance
    (lme4's VarCorr "Variance" and "Std.Dev."; in all 52 published rows the second number is the
    square root of the first). NaN where there is no full-data fit."""
    var = summaries["wald_ranef_var"].astype(float)
    return var, np.sqrt(var.where(var >= 0))


# Holm-Bonferroni is the verdict's (earnest.stats.verdict.holm)
from earnest.stats.verdict import holm  # noqa: E402,F401


#: The Holm-Bonferroni family of each GLMM's tables, as the published tables correct (each one's
#: corrected column recomputes from its own P column, tests/test_published_holm.py): GLMM 1
#: (Tables 2, 6, 8, 10, 12) across the models of one prompt; GLMM 2 (Tables 14, 15) across the
#: five prompts of one model, per effect. (The paper's text says "across the evaluated LLMs" and
#: the captions of Tables 14-15 "column-wise"; the numbers printed, and the authors' code, are
#: row-wise.) Each family is also within one analysis (all errors / reasoning-only).
HOLM_FAMILY = {1: ("analysis", "glmm", "prompt", "term"), 2: ("analysis", "glmm", "model", "term")}
#: (In words, for captions: earnest.wording.holm_family_text(HOLM_FAMILY[glmm]).)


def add_holm(summaries: pd.DataFrame, column: str = "p_boot", out: str = "p_holm",
             fidelity: str = F.DEFAULT) -> pd.DataFrame:
    """``summaries`` with ``out``: Holm-corrected ``column`` within each family of :data:`HOLM_FAMILY`
    (the verdict's rule, :func:`earnest.stats.verdict.holm`; a P of 0 corrected as its bound)."""
    res = summaries.copy()
    res[out] = np.nan
    values = res[column].astype(float)
    bound = res["p_bound"].astype(float) if "p_bound" in res.columns else pd.Series(np.nan, index=res.index)
    for glmm, keys in HOLM_FAMILY.items():
        part = res[res["glmm"].astype(int) == glmm]
        for _, idx in part.groupby(list(keys), sort=False).groups.items():
            res.loc[idx, out] = holm_bounded(values.loc[idx], bound.loc[idx], fidelity)
    return res


def holm_bounded(p, bound, fidelity: str = F.DEFAULT) -> np.ndarray:
    """:func:`holm` of one family's bootstrap P values, where (earnest mode) a P of 0 with a bound
    (``p_bound``: 2/n) is corrected as its bound."""
    p = np.asarray(p, dtype=float)
    bound = np.asarray(bound, dtype=float)
    if fidelity != F.REFERENCE:
        p = np.where(np.isnan(bound) | (p != 0), p, bound)
    return holm(p, fidelity)


# the one comparison of a P value with alpha, and alpha's check, are the verdict's
from earnest.stats.verdict import below as significant, check_alpha  # noqa: E402,F401
