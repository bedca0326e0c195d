"""Paired model comparisons on classification correctness with a binomial GLMM (lme4 through rpy2).

Model: ``correct ~ model + (1 | sample)``, binomial with logit link, fitted by ``lme4::glmer``
through the engine interface (:meth:`earnest.stats.engines.Engine.pairwise`, the lme4 engine's).
The random intercept per sample absorbs how hard each sample is, so the model effects compare
models on the same samples (paired). Every pair of models is contrasted on the log-odds scale
(difference of fixed effects, Wald z with the fit's covariance), and the p-values of all pairs are
Holm-corrected across all pairs by the verdict (:func:`earnest.stats.verdict.decide`, the record
every GSM-Symbolic fit ends in: ``p_value`` (Wald), ``p_holm``, ``verdict`` and its reason; a
degenerate pair is "not estimable" and leaves the family). The paper reports no such test.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from earnest.stats import engines as E
from earnest.stats.summary import ALPHA, DIVERGED_LOG_OR


class GLMMError(RuntimeError):
    """R, lme4 or rpy2 failed; the message carries R's text."""


def pairwise_glmm(scored: pd.DataFrame, outcome: str = "correct_fg", strategy: str | None = None, *,
                  engine: E.Engine | str = E.lme4.LME4_ENGINE) -> pd.DataFrame:
    """All model pairs compared on ``outcome`` (``correct_cg`` or ``correct_fg``) by the GLMM above.

    Returns one row per pair: outcome, prompt, model_a, model_b, estimate (log-odds of a minus b),
    se, z, p, p_holm, odds_ratio, sample_sd (random-intercept SD), singular, messages, n_samples,
    degenerate and fit_problems: a pair where either model answered every sample right or every
    sample wrong (complete separation: the model effect has no finite estimate and its Wald P no
    meaning), or whose estimate lies beyond +-10 log-odds, is degenerate and never significant, the
    rule of the GSM-Symbolic summaries (:func:`earnest.stats.diagnostics.fit_problems`).
    Fewer than two models gives an empty table. Only samples answered by every model enter.
    """
    cols = ["outcome", "prompt", "model_a", "model_b", "estimate", "se", "z", "p", "p_holm", "odds_ratio",
            "ci_low", "ci_high", "sample_sd", "singular", "messages", "n_samples", "degenerate", "fit_problems",
            "p_value", "p_source", "holm_m", "significant_uncorrected", "significant_holm", "verdict", "verdict_reason"]
    if outcome not in ("correct_cg", "correct_fg"):
        raise ValueError("outcome must be correct_cg or correct_fg")
    sub = scored if strategy is None else scored[scored["prompt"] == strategy]
    models = sorted(sub["model"].unique())
    if len(models) < 2:
        return pd.DataFrame(columns=cols)
    per_sample = sub.groupby("item_id")["model"].nunique()
    complete = per_sample.index[per_sample == len(models)]
    sub = sub[sub["item_id"].isin(complete)]
    if sub.duplicated(["model", "item_id"]).any():
        raise ValueError("several rows per (model, item_id): give one strategy")
    eng = E.get_engine(engine)
    try:
        get = eng.pairwise(sub[outcome].astype(int).tolist(), sub["model"].astype(str).tolist(),
                           sub["item_id"].astype(str).tolist())
    except E.EngineUnavailable as exc:
        raise GLMMError(f"R could not set up the paired GLMM: {exc}") from exc
    except Exception as exc:
        raise GLMMError(f"glmer failed for {outcome}: {str(exc).strip()}") from exc
    out = pd.DataFrame({
        "model_a": list(get["model_a"]), "model_b": list(get["model_b"]),
        "estimate": np.array(get["estimate"], dtype=float), "se": np.array(get["se"], dtype=float),
        "z": np.array(get["z"], dtype=float), "p": np.array(get["p"], dtype=float),
        })
    out.insert(0, "prompt", strategy if strategy is not None else "")
    out.insert(0, "outcome", outcome)
    out["odds_ratio"] = np.exp(out["estimate"])
    out["sample_sd"] = float(get["sample_sd"][0])
    out["singular"] = bool(get["singular"][0])
    out["messages"] = str(get["messages"][0])
    out["n_samples"] = len(complete)
    acc = sub.groupby("model")[outcome].agg(["sum", "size"])
    problems = []
    for a, b, est in zip(out["model_a"], out["model_b"], out["estimate"]):
        said = [f"{m} answered every sample {'right' if acc.loc[m, 'sum'] else 'wrong'} "
                f"({int(acc.loc[m, 'sum'])}/{int(acc.loc[m, 'size'])}): complete separation, the odds ratio diverges"
                for m in (a, b) if acc.loc[m, "sum"] in (0, acc.loc[m, "size"])]
        if not said and np.isfinite(est) and abs(est) > DIVERGED_LOG_OR:
            said.append(f"estimate {est:.2f} beyond +-{DIVERGED_LOG_OR:g} log-odds (quasi-separation)")
        problems.append("; ".join(said))
    out["fit_problems"] = problems
    out["degenerate"] = out["fit_problems"] != ""
    return _decided(out)[cols]


def _decided(out: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """The pairs as verdict records: the Wald P and interval, Holm across the pairs and the verdict
    (:func:`earnest.stats.verdict.decide`; a degenerate pair not estimable, outside the family)."""
    from scipy.stats import norm

    from earnest.stats.verdict import decide

    half = norm.ppf(0.975) * out["se"].astype(float)
    with np.errstate(over="ignore"):
        rec = out.assign(p_value=out["p"].astype(float), p_source="Wald", p_bound=np.nan,
                         ci_low=np.exp(out["estimate"] - half), ci_high=np.exp(out["estimate"] + half),
                         not_estimable_reason=out["fit_problems"])
    return decide(rec, None, alpha=alpha)


def significance(p_holm, degenerate, alpha: float = ALPHA) -> pd.Series:
    """Whether each Holm-corrected P value is significant: the one place StatFormBench decides it
    (through the verdict's one comparison, :func:`earnest.stats.verdict.below`); a degenerate
    (not estimable) comparison never is."""
    from earnest.stats.verdict import below

    p = pd.Series(p_holm, dtype=float)
    return pd.Series(below(p.to_numpy(), alpha), index=p.index) & ~pd.Series(degenerate, index=p.index).astype(bool)


def constant_outcome(sub: pd.DataFrame, outcome: str) -> str | None:
    """Why ``outcome`` cannot be modelled in ``sub`` (every answer scored the same), or None."""
    values = sub[outcome].astype(int)
    if len(values) and values.nunique() == 1:
        return (f"not estimable: every answer of every model scores {outcome} = {int(values.iloc[0])} "
                f"({len(values)} answers), so there is no difference to model")
    return None


def write_not_estimable(outcome: str, strategy: str, reason: str, stem):
    """The table of an outcome the GLMM cannot fit: one row saying why (the other outcomes are fitted)."""
    from earnest.tables import write_table

    frame = pd.DataFrame([{"outcome": outcome, "prompt": strategy, "result": reason}])
    return write_table(frame, stem, caption=f"Paired model comparison on {outcome}: {reason}.",
                       label=f"tab:statform-glmm-{outcome}")


def write_pairwise_table(pairs: pd.DataFrame, stem, alpha: float = ALPHA):
    """The pairwise comparisons through the project's table writer; Holm p below ``alpha`` in bold."""
    from earnest.tables import default_format, write_table
    from earnest.wording import format_p

    from earnest.wording import DEGENERATE_MARK, format_estimate

    shown = pairs[["outcome", "prompt", "model_a", "model_b", "odds_ratio", "estimate", "se", "z", "p", "p_holm"]].copy()
    degenerate = (pairs["degenerate"] if "degenerate" in pairs.columns
                  else pd.Series(False, index=pairs.index)).astype(bool)
    shown["odds_ratio"] = [format_estimate(x, d) for x, d in zip(pairs["odds_ratio"], degenerate)]
    # nor its log odds ratio or z: a degenerate pair's numbers carry no information
    for col in ("estimate", "z"):
        shown[col] = [DEGENERATE_MARK if d else default_format(float(x)) for x, d in zip(pairs[col], degenerate)]
    bold = pd.DataFrame(False, index=shown.index, columns=shown.columns)
    bold["p_holm"] = (pairs["significant_holm"].astype(bool) if "significant_holm" in pairs.columns
                      else significance(pairs["p_holm"], degenerate, alpha))
    fmt_p = lambda v: format_p(v, alpha)  # noqa: E731
    return write_table(shown, stem, caption=(
        "Paired model comparisons: binomial GLMM correct ~ model + (1|sample) (lme4); estimate = log-odds "
        f"of model_a minus model_b, Wald z; p Holm-corrected over all pairs; bold: Holm p < {alpha} and the pair "
        f"not degenerate; {DEGENERATE_MARK} in place of the odds ratio: a degenerate pair (a model right or wrong "
        "on every sample, or an estimate beyond +-10 log-odds), never significant."),
        formatters={"p": fmt_p, "p_holm": fmt_p}, bold=bold, csv=pairs, label="tab:statform-glmm")
