"""Ex4: the variant effect when the variants' numbers are as large as the originals', by construction.

GLMM 1 is fitted on GSM-Base vs GSM-Matched (``analysis`` = ``matched`` in the summaries; variants
whose number variables stay within a factor of the original's values, earnest.gsm.instantiate) with
the same bootstrap, Holm correction and diagnostics as Ex1. :func:`side_by_side` sets, per model,
Ex1 (GLMM 1, original variants), Ex3 (GLMM 2's variant term: statistical control by gamma) and Ex4
(design control) next to each other.

Whether the drop depends on the numbers is tested directly, not read from two significances:
:func:`contrasts` pairs GLMM 1 on GSM-Base + GSM-Variants restricted to the templates GSM-Matched has
(analysis ``variants_matched``) with GLMM 1 on GSM-Base + GSM-Matched, resample by resample (the same
templates drawn in each: :func:`earnest.stats.contrast.paired_contrast`), and tests the difference of
the two variant log odds ratios, "the drop with the original variants minus the drop with matched
ones", with its interval and Holm-corrected P across models. ``differs`` reads that test.
:func:`dose_response` plots the variant effect over the ``shifted<k>`` sets (k digits added to every
number variable).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from earnest import fidelity as F
from earnest.stats.defaults import COVARIATE
from earnest.stats.contrast import paired_contrast
from earnest.stats.summaries import build_summaries
from earnest.stats.summary import ALPHA, HOLM_FAMILY
from earnest.stats.verdict import decide
from earnest.wording import DEGENERATE_MARK, DEGENERATE_TEXT, format_estimate, format_p, holm_family_text, VARIANT

COLUMNS = {"ex1": ("all", 1), "ex3": ("all", 2), "ex4": ("matched", 1)}
LABELS = {"ex1": "Ex1 (GSM-Variants)", "ex3": "Ex3 (GLMM 2, gamma)", "ex4": "Ex4 (GSM-Matched)"}


def _pick(summaries: pd.DataFrame, analysis: str, glmm: int, prompt: str) -> pd.DataFrame:
    s = summaries[(summaries["analysis"] == analysis) & (summaries["glmm"].astype(int) == glmm)
                  & (summaries["prompt"] == prompt) & (summaries["term"] == VARIANT)]
    return s.set_index("model")


#: the analyses the contrast pairs: Ex1 on Ex4's templates, and Ex4
CONTRAST = ("variants_matched", "matched")
CONTRAST_LABEL = "Ex1 − Ex4 (ratio of ORs)"


def contrasts(groups: dict, summaries: pd.DataFrame, prompt: str, alpha: float = ALPHA,
              fidelity: str = F.DEFAULT) -> pd.DataFrame:
    """One row per model: the variant effect with GSM-Variants minus the one with GSM-Matched, on the
    same templates and resamples (:func:`earnest.stats.contrast.paired_contrast`), as a ratio of odds
    ratios with its interval, P, Holm-corrected P across the models (the Ex1 family's rule, under
    ``fidelity``) and whether it is significant (never where degenerate).

    ``groups``: model -> {analysis: (shards, GLMM input)} for both analyses of :data:`CONTRAST`;
    ``summaries``: their summary rows, whose ``degenerate`` verdict (build_summaries) carries over."""
    s = summaries
    if "degenerate" not in s.columns:
        s = build_summaries(s, alpha=alpha)
    s = s[(s["prompt"] == prompt) & (s["glmm"].astype(int) == 1) & (s["term"] == VARIANT)]
    verdict = {(r["analysis"], r["model"]): bool(r["degenerate"]) for _, r in s.iterrows()}
    rows = []
    for model, parts in groups.items():
        (sv, dv), (sm, dm) = parts[CONTRAST[0]], parts[CONTRAST[1]]
        c = paired_contrast(sv, dv, sm, dm, glmm=1, fidelity=fidelity,
                            degenerate_a=verdict.get((CONTRAST[0], model), False),
                            degenerate_b=verdict.get((CONTRAST[1], model), False),
                            names=("GSM-Variants on GSM-Matched's templates", "GSM-Matched"))
        rows.append({"model": model, **{f"contrast_{k}": v for k, v in c.items()}})
    out = pd.DataFrame(rows)
    if not len(out):
        return out
    # the verdict's one rule (earnest.stats.verdict.decide), Holm across the models
    rec = pd.DataFrame({"p_value": out["contrast_p_value"], "p_bound": out["contrast_p_bound"],
                        "p_source": out["contrast_p_source"],
                        "reason": out["contrast_problems"].where(out["contrast_degenerate"].astype(bool), "")})
    decided = decide(rec, None, alpha=alpha, fidelity=fidelity, estimable="reason")
    out["contrast_p_holm"] = decided["p_holm"].to_numpy()
    out["contrast_significant_holm"] = decided["significant_holm"].to_numpy()
    out["contrast_verdict"] = decided["verdict"].to_numpy()
    out["contrast_unresolved"] = decided["unresolved"].to_numpy()
    out["contrast_resolving_resamples"] = decided["resolving_resamples"].to_numpy()
    return out


def side_by_side(summaries: pd.DataFrame, prompt: str, alpha: float = ALPHA,
                 contrast: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per model: odds ratio, 95% interval, Holm P and the decision of Ex1, Ex3, Ex4, the
    contrast Ex1 − Ex4 (``contrast``, :func:`contrasts`) and ``differs``: what the contrast says
    where it is significant (the drop larger or smaller with the original variants than with
    number-matched ones), '' where it is not, 'n/a' where no contrast was computed.

    The decisions are the summaries table's (:func:`earnest.stats.summaries.build_summaries`: Holm
    under the rows' fidelity mode, ``significant_holm``, never significant when ``degenerate``);
    per-group summary rows are built into that table first."""
    s = summaries
    if not {"significant_holm", "degenerate", "p_holm"} <= set(s.columns):
        s = build_summaries(s, alpha=alpha)
    parts = {k: _pick(s, a, g, prompt) for k, (a, g) in COLUMNS.items()}
    models = [m for m in parts["ex1"].index if m in parts["ex4"].index]
    by_model = contrast.set_index("model") if contrast is not None and len(contrast) else None
    rows = []
    for m in models:
        row = {"model": m}
        for k, part in parts.items():
            if m not in part.index:
                row.update({f"{k}_or": np.nan, f"{k}_ci_low": np.nan, f"{k}_ci_high": np.nan, f"{k}_p_holm": np.nan,
                            f"{k}_p_holm_below_alpha": None, f"{k}_degenerate": None})
                continue
            r = part.loc[m]
            row.update({f"{k}_or": r["odds_ratio"], f"{k}_ci_low": r["ci_low"], f"{k}_ci_high": r["ci_high"],
                        f"{k}_p_holm": r["p_holm"], f"{k}_p_holm_below_alpha": bool(r["significant_holm"]),
                        f"{k}_degenerate": bool(r["degenerate"]), f"{k}_p_source": r.get("p_source", "")})
        if by_model is None or m not in by_model.index:
            row["differs"] = "n/a"
        else:
            c = by_model.loc[m]
            row.update({k: c[k] for k in by_model.columns})
            row["differs"] = (("larger drop with GSM-Variants" if c["contrast_median_log_diff"] < 0
                               else "smaller drop with GSM-Variants") if bool(c["contrast_significant_holm"]) else "")
        rows.append(row)
    return pd.DataFrame(rows)


def _cell(r, k, alpha: float) -> str:
    if pd.isna(r[f"{k}_or"]):
        return "—"
    if bool(r.get(f"{k}_degenerate")):
        return DEGENERATE_MARK                            # not estimable: no number, no P (the display rule)
    star = " *" if r[f"{k}_p_holm_below_alpha"] else ""
    below = r.get(f"{k}_p_source", "") == "bootstrap bound"
    return (f"{format_estimate(r[f'{k}_or'])} [{format_estimate(r[f'{k}_ci_low'])}, "
            f"{format_estimate(r[f'{k}_ci_high'])}] p={format_p(r[f'{k}_p_holm'], alpha, missing='n/a', below=below)}"
            f"{star}")


def _contrast_cell(r, alpha: float) -> str:
    if "contrast_ratio" not in r or pd.isna(r.get("contrast_p_boot")):
        return "—"
    from_bound = r.get("contrast_p_source", "") == "bootstrap bound"          # Holm of the bound 2/n
    p = format_p(r["contrast_p_holm"], alpha, missing="n/a", below=bool(from_bound))
    if bool(r.get("contrast_degenerate")):
        return DEGENERATE_MARK                            # not estimable: no number, no P (the display rule)
    star = " *" if bool(r.get("contrast_significant_holm")) else ""
    return (f"{format_estimate(r['contrast_ratio'])} [{format_estimate(r['contrast_ci_low'])}, "
            f"{format_estimate(r['contrast_ci_high'])}] p={p}{star}")


def side_by_side_markdown(table: pd.DataFrame, alpha: float = ALPHA, ks: dict | None = None,
                          covariate: str = COVARIATE, shifts: dict | None = None) -> str:
    lines = ["# Ex4: the variant effect with number-matched variants", "",
             "Variant odds ratio (GSM-Variants / GSM-Matched vs GSM-Base) per model, 95% percentile bootstrap "
             f"interval, Holm-corrected bootstrap P (Ex1, Ex4: {holm_family_text(HOLM_FAMILY[1])}; Ex3, GLMM 2: "
             f"{holm_family_text(HOLM_FAMILY[2])}); * = Holm P < {alpha} and the fit not degenerate; "
             f"{DEGENERATE_MARK} = degenerate fit ({DEGENERATE_TEXT}), never significant. "
             f"Ex3 is the variant term of GLMM 2 (controlling for {covariate}). "
             f"{CONTRAST_LABEL}: the variant odds ratio with GSM-Variants divided by the one with GSM-Matched, both "
             "fitted on the templates GSM-Matched has and paired resample by resample (the same templates drawn), "
             "with its 95% interval and Holm-corrected P across the models; below 1: the drop is larger with "
             "the original numbers than with matched ones. `differs` reads this test alone (not the two "
             "columns' significance: a significant drop beside a non-significant one is no evidence that they "
             "differ).", ""]
    if ks:
        lines += [f"Integers of GSM-Matched vs GSM-Base: K-S D = {ks['statistic']:.4f}, p = {format_p(ks['pvalue'])} "
                  f"({ks['n_base']} and {ks['n_variants']} integers).", ""]
    for name, sh in (shifts or {}).items():
        lines += [f"Numbers per template ({name} vs its own GSM-Base question; sum of log10(1 + |n|) over a "
                  f"question's integers, paired over {sh['n_templates']} templates): mean shift {sh['mean']:+.3f} "
                  f"[{sh['ci_low']:+.3f}, {sh['ci_high']:+.3f}], larger in {sh['n_larger']}, smaller in "
                  f"{sh['n_smaller']}, Wilcoxon signed-rank p = {format_p(sh['pvalue'])}.", ""]
    labels = dict(LABELS)
    if covariate:
        labels["ex3"] = f"Ex3 (GLMM 2, {covariate})"
    lines += ["| Model | " + " | ".join(labels.values()) + f" | {CONTRAST_LABEL} | differs |",
              "|---|---|---|---|---|---|"]
    for r in table.to_dict("records"):
        lines.append(f"| {r['model']} | {_cell(r, 'ex1', alpha)} | {_cell(r, 'ex3', alpha)} | {_cell(r, 'ex4', alpha)} "
                     f"| {_contrast_cell(r, alpha)} | {r['differs'] or '—'} |")
    return "\n".join(lines) + "\n"


_SHIFT = re.compile(r"^shifted(\d+)$")


def dose_rows(summaries: pd.DataFrame, prompt: str) -> pd.DataFrame:
    """The variant term of GLMM 1 on matched (0 digits added) and shifted<k> (k digits) sets."""
    s = summaries[(summaries["glmm"].astype(int) == 1) & (summaries["term"] == VARIANT)
                  & (summaries["prompt"] == prompt)]
    digits = s["analysis"].map(lambda a: 0 if a == "matched" else (int(_SHIFT.match(a).group(1))
                                                                   if _SHIFT.match(str(a)) else None))
    out = s[digits.notna()].assign(digits_added=digits[digits.notna()].astype(int))
    return out[["model", "digits_added", "odds_ratio", "ci_low", "ci_high", "p_boot"]].sort_values(
        ["model", "digits_added"]).reset_index(drop=True)


def dose_response(rows: pd.DataFrame, stem: str | Path) -> list[Path]:
    """Variant odds ratio (log scale) against digits added, one line per model, written as
    ``stem.png``, ``stem.pdf`` and ``stem.svg`` (:func:`earnest.plotting.save_figure`; the report
    shows the SVG). Returns the paths."""
    from earnest.plotting import pyplot, save_figure

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for model, part in rows.groupby("model", sort=True):
        x = part["digits_added"].to_numpy()
        y = part["odds_ratio"].to_numpy()
        err = np.vstack([y - part["ci_low"].to_numpy(), part["ci_high"].to_numpy() - y])
        ax.errorbar(x, y, yerr=err, marker="o", capsize=3, label=str(model))
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_yscale("log")
    ax.set_xlabel("digits added to every number variable (0 = GSM-Matched)")
    ax.set_ylabel("variant odds ratio vs GSM-Base (95% CI)")
    ax.set_title("Dose-response of the large-number effect")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return save_figure(fig, stem)
