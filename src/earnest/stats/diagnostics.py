"""Diagnostics of Appendix E: Wald-versus-bootstrap disagreement (Table 16), non-convergent full-data
fits (Tables 17-18) and the separation-like pattern check (Table 19).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from earnest import fidelity as F
from earnest.stats.summary import DIVERGED_LOG_OR, accuracies
from earnest.wording import VARIANT

LARGE_SPLIT_PP = 80.0


def separation_check(df: pd.DataFrame, threshold_pp: float = LARGE_SPLIT_PP) -> dict:
    """Table 19 for one model x prompt of GLMM input.

    large_split: % of templates whose GSM-Variants and GSM-Base accuracies differ by more than
    ``threshold_pp`` percentage points; constancy: % of templates answered all correctly or all
    wrongly (GSM-Base and GSM-Variants pooled). Plus the accuracies of :func:`accuracies`.
    """
    per = df.groupby(["template", "variant"])["correct"].mean().unstack("variant")
    both = per.dropna(subset=[c for c in (0, 1) if c in per.columns])
    if 0 in both.columns and 1 in both.columns and len(both):
        split = 100.0 * np.mean(np.abs(both[1] - both[0]) * 100.0 > threshold_pp)
    else:
        split = float("nan")
    pooled = df.groupby("template")["correct"].mean()
    constancy = 100.0 * np.mean((pooled == 0) | (pooled == 1)) if len(pooled) else float("nan")
    return {**accuracies(df), "large_split": float(split), "constancy": float(constancy),
            "n_templates": int(len(pooled))}


def separation_table(glmm_input: pd.DataFrame, threshold_pp: float = LARGE_SPLIT_PP) -> pd.DataFrame:
    """Table 19 rows for every model x prompt of a GLMM input, sorted as the paper: by constancy, descending."""
    rows = []
    for (model, prompt), sub in glmm_input.groupby(["model", "prompt"], sort=False):
        rows.append({"model": model, "prompt": prompt, **separation_check(sub, threshold_pp)})
    out = pd.DataFrame(rows)
    if len(out):
        out = out.sort_values(["prompt", "constancy"], ascending=[True, False], kind="stable")
    return out.reset_index(drop=True)


def wald_mismatches(summaries: pd.DataFrame) -> pd.DataFrame:
    """Table 16: every (GLMM, effect, prompt, model) of the summaries table
    (:mod:`earnest.stats.summaries`) whose bootstrap and Wald significance calls differ (its
    ``wald_mismatch`` column).

    Columns glmm, term, prompt, model, bootstrap_significant, wald_significant, wald_converged,
    p_boot, wald_p. Uses the uncorrected P values, as the paper's tables mark them.
    """
    s = summaries[summaries["wald_mismatch"].astype(bool)].copy()
    s["bootstrap_significant"] = s["significant_uncorrected"].astype(bool)
    out = s
    cols = ["analysis", "glmm", "term", "prompt", "model", "bootstrap_significant", "wald_significant",
            "wald_converged", "p_boot", "wald_p"]
    # the paper lists bootstrap-significant cases first, convergent ones before non-convergent
    out = out.sort_values(["bootstrap_significant", "wald_converged"], ascending=[False, False], kind="stable")
    return out[cols].reset_index(drop=True)


def nonconvergent_fits(summaries: pd.DataFrame, glmm: int) -> pd.DataFrame:
    """Tables 17-18: full-data fits of ``glmm`` that raised convergence warnings, one row per fit."""
    s = summaries[(summaries["glmm"] == glmm) & (summaries["wald_converged"] == False)]  # noqa: E712
    s = s.drop_duplicates(["analysis", "model", "prompt"])
    out = s[["analysis", "model", "prompt", "wald_max_grad", "wald_tol", "wald_singular", "wald_messages"]].copy()
    out["diagnostics"] = [_diagnostic_text(m) for m in out["wald_messages"]]
    return out.reset_index(drop=True)


def _diagnostic_text(messages: str) -> str:
    # lme4 writes "Model failed to converge with max|grad| = 0.16 (tol = 0.002, component 1)";
    # the paper quotes the part from max|grad| on
    for m in str(messages).split(" | "):
        i = m.find("max|grad|")
        if i >= 0:
            return m[i:]
    return str(messages)


# a fit whose clean resamples are fewer than this share of B rests on a selected subset
MIN_CLEAN_SHARE = 0.5
def diverged_statement(median, low, high, limit: float = DIVERGED_LOG_OR, *, built_from: bool = False,
                       n_diverged=None) -> str:
    """'' unless the median or an end of the interval (log-odds) lies beyond +-``limit``, or
    ``built_from`` (summary column ``diverged``: one of the estimates they interpolate between does,
    :func:`earnest.stats.summary.diverged_order_statistics`); else the statement that makes the fit
    degenerate (one rule for the GLMM summaries and comparisons alike)."""
    parts = [(name, float(v)) for name, v in (("median", median), ("interval's lower end", low),
                                               ("interval's upper end", high))
             if v is not None and np.isfinite(float(v)) and abs(float(v)) > limit]
    if not parts and not built_from:
        return ""
    what = ", ".join(f"{name} {v:.2f}" for name, v in parts) or (
        f"median {float(median):.2f}, interval [{float(low):.2f}, {float(high):.2f}] interpolated from them")
    count = None if n_diverged is None or pd.isna(n_diverged) else int(n_diverged)
    many = "bootstrap estimates" if count is None else f"{count} bootstrap estimate{'' if count == 1 else 's'}"
    return (f"built from {many} beyond +-{limit:g} log-odds ({what}): resamples with "
            f"(quasi-)separation whose estimates diverge, so the median, interval and p value carry no information")


def fit_problems(row, labels: tuple[str, str] = ("GSM-Base", "GSM-Variants")) -> tuple[str, list[str]]:
    """Say in words what is wrong with one summary row (one analysis x GLMM x model x prompt x effect).

    Returns (verdict, statements): verdict "degenerate" when the effect cannot be estimated from the
    data at all (no correct or no wrong answers, complete separation on the variant indicator, or a
    median or interval built from estimates beyond +-:data:`DIVERGED_LOG_OR` log-odds), "caution"
    when the estimate stands on a weak footing (few clean resamples, resamples that did not converge,
    singular resamples, a non-convergent full-data fit), else "ok".

    The one degenerate/separation rule: the GLMM summaries (:mod:`earnest.stats.summaries`) and the
    paired comparisons (:mod:`earnest.stats.compare`, whose condition b is "variant 0" and a
    "variant 1") both call it. ``labels`` names the two conditions (variant 0, variant 1) in the
    statements. Columns read: n_base, n_variants, acc_base, acc_variants (%), term, n_resamples,
    n_clean and, when present, median_log_or, ci_low_log, ci_high_log, diverged, n_diverged,
    n_not_converged, n_singular, wald_converged, wald_messages; and for a paired comparison with
    item intercepts (item_effects) its discordant counts n_ab, n_ba: all of them on one side is
    separation of the item-conditional OR.
    """
    out: list[str] = []
    verdict = "ok"
    l0, l1 = labels
    nb, nv = int(row["n_base"]), int(row["n_variants"])
    cb = round(row["acc_base"] * nb / 100) if nb else 0
    cv = round(row["acc_variants"] * nv / 100) if nv else 0
    if nb + nv == 0:
        return "degenerate", ["no items left to fit (in a reasoning-only analysis: every item was excluded as a "
                              "code error)"]
    if cb + cv == 0:
        verdict = "degenerate"
        out.append(f"no correct answer at all ({cb}/{nb} {l0}, {cv}/{nv} {l1}): no effect can be estimated")
    elif cb + cv == nb + nv:
        verdict = "degenerate"
        out.append(f"every answer correct ({nb + nv}): no effect can be estimated")
    elif row["term"] == VARIANT and (cb in (0, nb) or cv in (0, nv)):
        penalised = bool(str(row.get("prior", "") or ""))
        # a penalised fit estimates it (a caution); an unpenalised one diverges (the reference's
        # verdict is its procedure's whatever this says: earnest.stats.verdict)
        verdict = "caution" if penalised else "degenerate"
        out.append(f"complete separation: {l0} {cb}/{nb} correct, {l1} {cv}/{nv}; "
                   + ("the penalised fit's estimate is finite, and the P value and interval include the "
                      "likelihood-ratio test's, which carries the zero count" if penalised else
                      "the unpenalised odds ratio diverges (the reference's procedure reports it as it comes)"))
    elif row["term"] == VARIANT and bool(row.get("item_effects", False)) and "n_ab" in row:
        # a paired comparison with item intercepts: its OR is conditional on the item, and only the
        # discordant items (n_ab: right under variant 1 and wrong under 0; n_ba: the reverse) inform it
        n_ab, n_ba = int(row["n_ab"]), int(row["n_ba"])
        if n_ab == 0 or n_ba == 0:
            verdict = "degenerate"
            out.append(f"no discordant item ({l1} right and {l0} wrong on as many items as the reverse: 0:0); the "
                       f"item-conditional odds ratio is not identified" if n_ab == n_ba == 0 else
                       f"complete separation in the pairs: every discordant item favours "
                       f"{l1 if n_ab else l0} ({n_ab}:{n_ba}); the item-conditional odds ratio diverges, so its "
                       f"estimate, interval and p value carry no information (McNemar's test still stands)")
    built = row.get("diverged")
    diverged = diverged_statement(row.get("median_log_or"), row.get("ci_low_log"), row.get("ci_high_log"),
                                  built_from=bool(built) if built is not None and not pd.isna(built) else False,
                                  n_diverged=row.get("n_diverged"))
    if diverged and not str(row.get("prior", "") or ""):
        # unpenalised fits only (a penalised fit stays finite); in reference mode a note beside the
        # authors' verdict, which earnest.stats.verdict decides by their procedure alone
        verdict = "degenerate"
        out.append(diverged)
    reason = str(row.get("not_estimable_reason", "") or "")
    if reason and verdict != "degenerate":
        verdict = "degenerate"
        out.append(reason)
    B, clean = int(row["n_resamples"]), int(row["n_clean"])
    if clean == 0:
        if verdict != "degenerate":
            out.append(f"none of the {B} bootstrap resamples converged cleanly")
        verdict = "degenerate"
    elif clean < MIN_CLEAN_SHARE * B:
        verdict = "caution" if verdict == "ok" else verdict
        out.append(f"only {clean} of {B} bootstrap resamples converged cleanly; the summary rests on that subset")
    n_nc = row.get("n_not_converged")
    if n_nc is not None and not pd.isna(n_nc) and int(n_nc) > 0:
        verdict = "caution" if verdict == "ok" else verdict
        out.append(f"{int(n_nc)} of {B} resamples did not converge (clean under no rule, left out)")
    if int(row.get("n_singular", 0) or 0) > 0:
        verdict = "caution" if verdict == "ok" else verdict
        kept = ("counted: a fit of the model" if str(row.get("fidelity", "") or F.DEFAULT) != F.REFERENCE
                else "left out, as the authors do")
        out.append(f"{int(row['n_singular'])} of {B} resamples were singular fits (template variance estimated at 0; "
                   f"{kept})")
    if row.get("wald_converged") is False or row.get("wald_converged") == 0:
        verdict = "caution" if verdict == "ok" else verdict
        msg = _diagnostic_text(str(row.get("wald_messages") or "")) or "no message"
        tight = row.get("wald_tight_converged")
        why = ""
        if tight is True or tight == 1:
            why = ("; with lme4's PIRLS converged (tolPwrss = 1e-12) it converges: the message is lme4's check firing "
                   "on its inexact deviance")
        out.append(f"the full-data (Wald) fit did not converge ({msg}){why}")
    return verdict, out


def judge_effect(shards: pd.DataFrame, data: pd.DataFrame, glmm: int, term: str, *, engine=None,
                 fidelity: str = F.DEFAULT, alpha: float | None = None) -> tuple[pd.Series, bool]:
    """(the summary row of ``term`` with the verdict's columns, whether it is not estimable) of one
    simulated model x prompt, as the workflow judges a real one: the full-data fit, earnest mode's
    profile likelihood and the summary (:func:`earnest.stats.run.summarise_group`, fitted by ``engine``:
    the shards' own by default), then the verdict of a family of one
    (:func:`earnest.stats.verdict.decide`; ``significant_uncorrected`` is its call): what the power
    study and the validity studies count. ``shards`` should be fitted with the mode's prior
    (:func:`earnest.stats.glmm.prior_for`)."""
    from earnest.stats.defaults import ALPHA
    from earnest.stats.run import summarise_group
    from earnest.stats.verdict import NOT_ESTIMABLE, decide

    if engine is None:                  # the engine that fitted the shards (lme4's glmer fallback is lme4)
        from earnest.stats.glmm import engine_name
        engine = engine_name(str(shards["engine"].iloc[0])) if "engine" in shards.columns and len(shards) else None
        if engine is None:
            raise ValueError("judge_effect: shards without an engine column; name the engine")
    rows, _ = summarise_group(data, shards, glmm, fidelity=fidelity, engine=engine, refit_nonconvergent=False,
                              model="sim", prompt="sim")
    row = decide(rows[rows["term"] == term], None, alpha=ALPHA if alpha is None else alpha,
                 fidelity=fidelity).iloc[0]
    return row, row["verdict"] == NOT_ESTIMABLE


def fit_problems_table(summaries: pd.DataFrame) -> pd.DataFrame:
    """One row per summary row with its verdict and a plain-language statement of its problems."""
    rows = []
    for _, r in summaries.iterrows():
        verdict, statements = fit_problems(r)
        rows.append({"analysis": r["analysis"], "glmm": int(r["glmm"]), "model": r["model"], "prompt": r["prompt"],
                     "term": r["term"], "verdict": verdict,
                     "statement": "; ".join(statements) if statements else "no problem found"})
    return pd.DataFrame(rows, columns=["analysis", "glmm", "model", "prompt", "term", "verdict", "statement"])
