"""Sensitivity of the paper's conclusions to the fidelity mode (beyond the paper).

The same models and prompts analysed under both fidelity modes (``earnest.fidelity``): by default
from the same generations, with extraction, correctness, gamma and the GLMM fits (rows, clean-fit
rule) recomputed under each mode; with ``sensitivity.regenerate`` from generations made with each
mode's own prompt bytes and stop strings. One row per model x prompt x effect (GLMM 1 variant,
GLMM 2 gamma_c and variant) with accuracy, odds ratio, bootstrap P (and Holm-corrected P, in the
families of :data:`earnest.stats.summary.HOLM_FAMILY`) and significance under each mode, and the
conclusions that change between them. Labels, P values and caption texts: :mod:`earnest.wording`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from earnest import fidelity as F
from earnest.stats.summary import ALPHA, HOLM_FAMILY
from earnest.wording import (DEGENERATE_MARK, DEGENERATE_TEXT, HOLM_MISSING_TEXT, effect_label, effect_rank,
                             format_estimate, format_p, holm_family_text, significance_text)

KEYS = ["glmm", "term", "model", "prompt"]
#: Per-mode columns of the comparison (suffixed ``_<mode>``).
MODE_COLUMNS = ["acc_base", "acc_variants", "delta_var", "odds_ratio", "median_log_or", "p_boot", "p_bound", "p_holm",
                "significant_uncorrected", "significant_holm", "degenerate", "n_clean", "n_resamples", "rows"]
#: What counts as a changed conclusion, in the order the table names them.
CHANGES = ("significance", "significance after Holm", "direction")


def _per_mode(summaries: pd.DataFrame, mode: str, analysis: str) -> pd.DataFrame:
    # the summaries table's own Holm families, degenerate flags and significance (earnest.stats.summaries)
    s = summaries[summaries["analysis"] == analysis].copy()
    s["glmm"] = s["glmm"].astype(int)
    if "rows" not in s.columns:
        s["rows"] = ""
    if "p_bound" not in s.columns:       # summaries written before the bound existed
        s["p_bound"] = np.nan
    out = s[KEYS + MODE_COLUMNS].rename(columns={c: f"{c}_{mode}" for c in MODE_COLUMNS})
    return out.reset_index(drop=True)


def _changes(row, a: str, b: str) -> str:
    if pd.isna(row[f"p_boot_{a}"]) and pd.isna(row[f"p_boot_{b}"]):
        return ""
    if pd.isna(row[f"odds_ratio_{a}"]) != pd.isna(row[f"odds_ratio_{b}"]):
        return f"estimated in {a if pd.isna(row[f'odds_ratio_{b}']) else b} only"
    out = []
    if bool(row[f"significant_uncorrected_{a}"]) != bool(row[f"significant_uncorrected_{b}"]):
        out.append(CHANGES[0])
    if bool(row[f"significant_holm_{a}"]) != bool(row[f"significant_holm_{b}"]):
        out.append(CHANGES[1])
    la, lb = row[f"median_log_or_{a}"], row[f"median_log_or_{b}"]
    if np.isfinite(la) and np.isfinite(lb) and la != 0 and lb != 0 and np.sign(la) != np.sign(lb):
        out.append(CHANGES[2])
    return "; ".join(out)


def compare_modes(summaries: Mapping[str, pd.DataFrame], analysis: str = "all") -> pd.DataFrame:
    """Side-by-side comparison of the bootstrap summaries of two fidelity modes.

    ``summaries`` maps each mode (the run's first) to its summaries table
    (:func:`earnest.stats.summaries.build_summaries`, whose ``significant_uncorrected`` and ``significant_holm``
    are the conclusions compared). Returns one row
    per glmm x term x model x prompt found in either, with :data:`MODE_COLUMNS` suffixed by mode and
    ``changed``: the conclusions that differ (:data:`CHANGES`; empty when none does).
    """
    modes = list(summaries)
    if len(modes) != 2 or set(modes) != set(F.MODES):
        raise ValueError(f"compare_modes needs the summaries of both modes ({', '.join(F.MODES)}), got {modes}")
    a, b = modes
    t = _per_mode(summaries[a], a, analysis).merge(_per_mode(summaries[b], b, analysis), on=KEYS, how="outer")
    for m in modes:
        for c in ("significant_uncorrected", "significant_holm"):
            t[f"{c}_{m}"] = t[f"{c}_{m}"].astype("boolean").fillna(False).astype(bool)
    t["changed"] = [_changes(r, a, b) for _, r in t.iterrows()] if len(t) else []
    t["_e"] = [effect_rank(g, term) for g, term in zip(t["glmm"], t["term"])]
    return t.sort_values(["_e", "prompt", "model"], kind="stable").drop(columns="_e").reset_index(drop=True)


def _fmt(x, digits: int) -> str:
    return "" if x is None or pd.isna(x) else f"{float(x):.{digits}f}"


def _significance(p, significant: bool, holm: bool, degenerate: bool) -> str:
    if pd.isna(p):
        return ""
    if bool(degenerate):
        return "no (degenerate)"
    return "yes, also after Holm" if holm else "yes" if significant else "no"


def _p(p, p_holm, alpha: float | None, bound=None) -> str:
    if pd.isna(p):
        return ""
    shown = format_p(p, alpha, bound=bound)
    bounded = p == 0 and bound is not None and not pd.isna(bound)      # the Holm value is a bound too
    return f"{shown} ({format_p(p_holm, alpha, below=bounded)})" if not pd.isna(p_holm) else shown


def sensitivity_display(table: pd.DataFrame, modes: Sequence[str],
                        prompt_labels: Mapping[str, str] | None = None,
                        models: Sequence[str] | None = None,
                        alpha: float | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(display, bold) of :func:`compare_modes`: per mode Ā GSM-Base / GSM-Variants (%), OR, P
    (Holm-corrected P; :func:`earnest.wording.format_p` at ``alpha``) and significance ("yes",
    "yes, also after Holm", "no"); changed conclusions last, in bold."""
    labels = dict(prompt_labels or {})
    t = table
    if models:
        rank = {m: i for i, m in enumerate(models)}
        t = t.assign(_m=t["model"].map(lambda m: rank.get(m, len(rank)))).sort_values(
            ["glmm", "term", "prompt", "_m"], kind="stable").drop(columns="_m")
        t = t.assign(_e=[effect_rank(g, x) for g, x in zip(t["glmm"], t["term"])]).sort_values(
            "_e", kind="stable").drop(columns="_e")
    cols = {"Effect": [effect_label(g, x) for g, x in zip(t["glmm"], t["term"])],
            "Prompt": [labels.get(p, p) for p in t["prompt"]], "Model": list(t["model"])}
    for m in modes:
        cols[f"Ā Base / Var ({m})"] = [f"{_fmt(x, 1)} / {_fmt(y, 1)}" if not pd.isna(x) else ""
                                       for x, y in zip(t[f"acc_base_{m}"], t[f"acc_variants_{m}"])]
        cols[f"OR ({m})"] = [format_estimate(x, bool(d)) for x, d in zip(t[f"odds_ratio_{m}"], t[f"degenerate_{m}"])]
        cols[f"P (Holm) ({m})"] = [_p(p, h, alpha, b) for p, h, b in zip(t[f"p_boot_{m}"], t[f"p_holm_{m}"],
                                                                          t[f"p_bound_{m}"])]
        cols[f"Significant ({m})"] = [_significance(p, s, h, d) for p, s, h, d in zip(
            t[f"p_boot_{m}"], t[f"significant_uncorrected_{m}"], t[f"significant_holm_{m}"], t[f"degenerate_{m}"])]
    cols["Changed"] = list(t["changed"])
    display = pd.DataFrame(cols)
    bold = pd.DataFrame(False, index=display.index, columns=display.columns)
    bold["Changed"] = display["Changed"] != ""
    return display, bold


def write_sensitivity(table: pd.DataFrame, stem: str | Path, modes: Sequence[str], *, regenerated: bool,
                      alpha: float = ALPHA, prompt_labels: Mapping[str, str] | None = None,
                      models: Sequence[str] | None = None) -> dict[str, Path]:
    """Write the comparison as CSV (every raw column), Markdown and LaTeX with a caption that says
    what differs between the two columns of each mode and how many conclusions change."""
    from earnest.tables import write_table

    display, bold = sensitivity_display(table, modes, prompt_labels, models, alpha)
    n = int((table["changed"] != "").sum()) if len(table) else 0
    same = ("from the same generations: answers extracted and judged, gamma computed and the GLMMs fitted "
            "(rows and clean-fit rule) under each mode" if not regenerated else
            "from generations made under each mode's own prompt bytes and stop strings, then extracted, judged "
            "and fitted under that mode")
    caption = (f"Sensitivity of the conclusions to the fidelity mode (not in the paper): {modes[0]} (this run's "
               f"mode) and {modes[1]}, {same}. Ā: accuracy in % on GSM-Base / GSM-Variants; OR: median bootstrap "
               f"odds ratio; P: bootstrap P value (Eq. 4) with the Holm-Bonferroni-corrected value in parentheses "
               f"(GLMM 1 {holm_family_text(HOLM_FAMILY[1])}, GLMM 2 {holm_family_text(HOLM_FAMILY[2])}; "
               + "; ".join(f"{m}: {HOLM_MISSING_TEXT[m]}" for m in modes)
               + f"); significant: {significance_text(alpha)}; {DEGENERATE_MARK}: a degenerate fit's odds ratio "
               f"({DEGENERATE_TEXT}). Changed (bold): a conclusion that differs between the modes "
               f"(significance, significance after Holm, or the direction of the effect); {n} of {len(table)} "
               f"rows change.")
    return write_table(display, stem, caption, bold=bold, csv=table)
