"""The statistics tables of the GSM-Symbolic re-evaluation, built from the summaries table
(:mod:`earnest.stats.summaries`: its ``significant_uncorrected``, ``significant_holm``,
``degenerate``, ``wald_mismatch`` and ``prompt_label`` columns are the only definitions used here)
and written through :func:`earnest.tables.write_table` (CSV with raw numbers, Markdown and LaTeX
with the paper's formatting: bold significant P values, a double dagger where Wald disagrees).
Labels, marks, P-value display and the caption texts of Holm families and clean fits come from
:mod:`earnest.wording`.

Layouts: Tables 2, 6, 8, 10, 12 (variant effect per prompt, GLMM 1); Tables 3, 7, 9, 11, 13
(bootstrap statistics); Tables 14-15 (GLMM 2, effect x prompt grid); Table 16 (Wald mismatch);
Tables 17-18 (non-convergent fits); Listing 6 (optimiser refits); Table 19 (separation check);
Tables 20-23 (reasoning-only analysis).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from earnest.gsm.datasets import BASE_LABEL, VARIANTS_LABEL
from earnest.gsm.prompts import prompt_noun
from earnest.stats import diagnostics
from earnest.stats import glmm as G
from earnest.gsm import reasoning
from earnest.stats.summaries import table_fidelity
from earnest.stats.summary import HOLM_FAMILY, ranef_column
from earnest.tables import write_table
from earnest.wording import (CLEAN_RULE, DAGGER, DEGENERATE_MARK as DEGENERATE, DEGENERATE_TEXT, EFFECTS, GAMMA_C,
                             HOLM_MISSING_TEXT, TERMS, VARIANT, effect_name, format_estimate, format_fit_p, format_p,
                             holm_family_text, term_label, unresolved_text)

RANEF_NOTE = ("Rand. eff. variance ± std. dev.: the random-intercept variance of the full-data fit and "
              "its square root (lme4's Variance and Std.Dev.), as the paper prints them.")


# ---------------------------------------------------------------- formatting
def _alpha_of(rows: pd.DataFrame) -> float | None:
    """The significance level of summary rows (their ``alpha``), for :func:`format_p`."""
    values = sorted(set(rows["alpha"].dropna().astype(float))) if "alpha" in rows.columns else []
    return values[0] if values else None


def _f(x, digits: int) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return f"{x:.{digits}f}"


def _order(values: Sequence[str], preferred: Sequence[str] | None) -> list[str]:
    seen = list(dict.fromkeys(values))
    if not preferred:
        return seen
    head = [v for v in preferred if v in seen]
    return head + [v for v in seen if v not in head]


def _bounds(sub: pd.DataFrame) -> pd.Series:
    """Each row's bound on a bootstrap P of 0 (column p_bound; NaN in tables written before it)."""
    return sub["p_bound"] if "p_bound" in sub.columns else pd.Series(float("nan"), index=sub.index)


def _label(prompt: str, labels: Mapping[str, str] | None) -> str:
    return (labels or {}).get(prompt, prompt)


def _prompt_phrase(prompt: str, labels: Mapping[str, str] | None) -> str:
    """"the <label> prompt" for a caption (:func:`earnest.gsm.prompts.prompt_noun`)."""
    return f"the {prompt_noun(_label(prompt, labels))}"


# ---------------------------------------------------------------- Tables 2, 6, 8, 10, 12
def variant_effect_table(s: pd.DataFrame, prompt: str, models: Sequence[str] | None = None,
                         glmm: int = 1, analysis: str = "all"):
    """(display, raw, bold) of the variant-effect table of one prompt (Table 2 layout)."""
    sub = s[(s["analysis"] == analysis) & (s["glmm"] == glmm) & (s["prompt"] == prompt) & (s["term"] == VARIANT)]
    sub = sub.set_index("model").loc[_order(sub["model"].tolist(), models)].reset_index()
    alpha = _alpha_of(sub)
    display = pd.DataFrame({
        "Model": sub["model"],
        f"Ā {BASE_LABEL}": [_f(x, 1) for x in sub["acc_base"]],
        f"Ā {VARIANTS_LABEL}": [_f(x, 1) for x in sub["acc_variants"]],
        "Δvar": [_f(x, 2) for x in sub["delta_var"]],
        "P value": [format_fit_p(r, alpha) + (f" {DAGGER}" if r["wald_mismatch"] else "")
                    + (f" {DEGENERATE}" if r["degenerate"] else "") for _, r in sub.iterrows()],
        "Corrected P value": [format_fit_p(r, alpha, corrected=True) + unresolved_text(r) for _, r in sub.iterrows()],
    })
    raw = sub[["model", "prompt", "acc_base", "acc_variants", "delta_var", "p_boot", "p_holm", "wald_p",
               "wald_mismatch", "degenerate", "n_clean", "n_resamples"]]
    bold = pd.DataFrame(False, index=display.index, columns=display.columns)
    bold["P value"] = sub["significant_uncorrected"].astype(bool).to_numpy()
    bold["Corrected P value"] = sub["significant_holm"].astype(bool).to_numpy()
    return display, raw.reset_index(drop=True), bold


# ---------------------------------------------------------------- Tables 3, 7, 9, 11, 13
def bootstrap_stats_table(s: pd.DataFrame, prompt: str, term: str = VARIANT, glmm: int = 1,
                          models: Sequence[str] | None = None, analysis: str = "all"):
    """(display, raw) of the bootstrap statistics of one prompt and effect (Table 3 layout)."""
    sub = s[(s["analysis"] == analysis) & (s["glmm"] == glmm) & (s["prompt"] == prompt) & (s["term"] == term)]
    sub = sub.set_index("model").loc[_order(sub["model"].tolist(), models)].reset_index()
    var, sd = ranef_column(sub)
    sub = sub.assign(ranef_variance=var.to_numpy(), ranef_sd=sd.to_numpy())
    display = pd.DataFrame({
        "Model": sub["model"],
        "Odds ratio": [format_estimate(x, bool(d)) for x, d in zip(sub["odds_ratio"], sub["degenerate"])],
        "95% CI": [f"[{format_estimate(lo, bool(d))}, {format_estimate(hi, bool(d))}]" if not math.isnan(lo) else ""
                   for lo, hi, d in zip(sub["ci_low"], sub["ci_high"], sub["degenerate"])],
        "Rand. eff. variance ± std. dev.": [f"{_f(v, 2)} ± {_f(d, 2)}" if not math.isnan(v) else ""
                                            for v, d in zip(sub["ranef_variance"], sub["ranef_sd"])],
        "N estimates": [str(int(n)) for n in sub["n_clean"]],
    })
    raw = sub[["model", "prompt", "term", "odds_ratio", "median_log_or", "ci_low", "ci_high", "ci_low_log",
               "ci_high_log", "ranef_variance", "ranef_sd", "ranef_var_mean", "ranef_var_sd", "n_clean",
               "n_resamples"]]
    return display, raw.reset_index(drop=True)


# ---------------------------------------------------------------- Tables 14-15
def glmm2_grid_table(s: pd.DataFrame, term: str, prompts: Sequence[str] | None = None,
                     models: Sequence[str] | None = None, prompt_labels: Mapping[str, str] | None = None,
                     analysis: str = "all"):
    """(display, raw, bold) of GLMM 2's ``term`` across models (rows) and prompts (columns).

    A cell reads 'OR; p / p_holm' with a double dagger after p where Wald disagrees; Holm is
    row-wise (across the prompts of a model, :data:`earnest.stats.summary.HOLM_FAMILY`), as the
    numbers of Tables 14 and 15 are (their captions say "column-wise").
    """
    sub = s[(s["analysis"] == analysis) & (s["glmm"] == 2) & (s["term"] == term)]
    alpha = _alpha_of(sub)
    prompts = _order(sub["prompt"].tolist(), prompts)
    models = _order(sub["model"].tolist(), models)
    cells = sub.set_index(["model", "prompt"])
    display = {"Model": models}
    bold_cols = {"Model": [False] * len(models)}
    for prompt in prompts:
        col, b = [], []
        for model in models:
            if (model, prompt) not in cells.index:
                col.append("")
                b.append(False)
                continue
            c = cells.loc[(model, prompt)]
            dag = f" {DAGGER}" if c["wald_mismatch"] else ""
            dag += f" {DEGENERATE}" if c["degenerate"] else ""
            col.append(f"{format_estimate(c['odds_ratio'], bool(c['degenerate']))}; {format_fit_p(c, alpha)}{dag} / "
                       f"{format_fit_p(c, alpha, corrected=True)}{unresolved_text(c)}")
            b.append(bool(c["significant_uncorrected"]))
        display[_label(prompt, prompt_labels)] = col
        bold_cols[_label(prompt, prompt_labels)] = b
    raw = sub[["model", "prompt", "term", "odds_ratio", "median_log_or", "p_boot", "p_holm", "wald_p",
               "wald_mismatch", "n_clean", "n_resamples"]].reset_index(drop=True)
    return pd.DataFrame(display), raw, pd.DataFrame(bold_cols)


# ---------------------------------------------------------------- Table 16
def wald_mismatch_table(s: pd.DataFrame, prompt_labels: Mapping[str, str] | None = None,
                        analysis: str = "all"):
    """(display, raw) of Table 16: cases where Wald and bootstrap significance calls differ."""
    mm = diagnostics.wald_mismatches(s[s["analysis"] == analysis])
    tick = {True: "✓", False: "✘"}
    display = pd.DataFrame({
        "Test": [f"GLMM {g}" for g in mm["glmm"]],
        "Effect": [term_label(t) for t in mm["term"]],
        "Prompt": [_label(p, prompt_labels) for p in mm["prompt"]],
        "Model": mm["model"],
        "Bootstrap": [tick[bool(x)] for x in mm["bootstrap_significant"]],
        "Wald": [tick[bool(x)] for x in mm["wald_significant"]],
        "Convergent": [tick[bool(x)] for x in mm["wald_converged"]],
    })
    return display, mm


# ---------------------------------------------------------------- Tables 17-18
def nonconvergent_table(s: pd.DataFrame, glmm: int, prompt_labels: Mapping[str, str] | None = None,
                        analysis: str = "all"):
    """(display, raw) of Table 17 (GLMM 1) or 18 (GLMM 2): full-data fits with convergence warnings."""
    nc = diagnostics.nonconvergent_fits(s[s["analysis"] == analysis], glmm)
    display = pd.DataFrame({"Model": nc["model"], "Prompt": [_label(p, prompt_labels) for p in nc["prompt"]],
                            "Diagnostics": nc["diagnostics"]})
    return display, nc


# ---------------------------------------------------------------- Listing 6
def optimiser_table(refits: pd.DataFrame):
    """(display, raw): fixed effects of each optimiser refit, one row per (GLMM, model, prompt, optimiser)."""
    if refits is None or refits.empty:
        empty = pd.DataFrame(columns=["GLMM", "Model", "Prompt", "Optimiser", "Converged"])
        return empty, empty
    wide = refits.pivot_table(index=["glmm", "model", "prompt", "optimiser"], columns="term",
                              values="estimate", sort=False).reset_index()
    conv = refits.drop_duplicates(["glmm", "model", "prompt", "optimiser"]).set_index(
        ["glmm", "model", "prompt", "optimiser"])["converged"]
    terms = [t for t in dict.fromkeys(t for g in sorted(TERMS) for t in TERMS[g]) if t in wide.columns]
    display = pd.DataFrame({"GLMM": wide["glmm"].astype(int).astype(str), "Model": wide["model"],
                            "Prompt": wide["prompt"], "Optimiser": wide["optimiser"]})
    for t in terms:
        display[t] = [_f(x, 6) for x in wide[t]]
    display["Converged"] = ["✓" if conv.loc[tuple(k)] else "✘"
                            for k in wide[["glmm", "model", "prompt", "optimiser"]].itertuples(index=False)]
    return display, refits


# ---------------------------------------------------------------- Table 19
def separation_display(sep: pd.DataFrame):
    """(display, raw) of Table 19 for one prompt's rows of :func:`diagnostics.separation_table`."""
    display = pd.DataFrame({
        "Model": sep["model"],
        f"Ā {BASE_LABEL}": [_f(x, 1) for x in sep["acc_base"]],
        f"Ā {VARIANTS_LABEL}": [_f(x, 2) for x in sep["acc_variants"]],
        "Δvar": [_f(x, 2) for x in sep["delta_var"]],
        "Large split": [_f(x, 0) for x in sep["large_split"]],
        "Constancy": [_f(x, 0) for x in sep["constancy"]],
    })
    return display, sep


# ---------------------------------------------------------------- Tables 20-23
def reasoning_only_table(all_s: pd.DataFrame, ro_s: pd.DataFrame, prompt: str, glmm: int,
                         models: Sequence[str] | None = None):
    """(display, raw, bold) of Tables 20-21 (GLMM 1) or 22-23 (GLMM 2) for one code prompt."""
    cmp = reasoning.reasoning_only_comparison(all_s, ro_s)
    sub = cmp[(cmp["prompt"] == prompt) & (cmp["glmm"] == glmm)]
    model_order = _order(sub["model"].tolist(), models)
    term_order = {GAMMA_C: 0, VARIANT: 1}  # Tables 22-23 list γc first
    sub = sub.assign(_m=sub["model"].map({m: i for i, m in enumerate(model_order)}),
                     _t=sub["term"].map(term_order)).sort_values(["_m", "_t"]).drop(columns=["_m", "_t"])
    star = ["*" if c else "" for c in sub["significance_changed"]]
    alpha = _alpha_of(all_s)

    def est_delta(x):
        return "|·| < 0.001" if abs(x) < 0.0005 else _f(x, 3)

    if glmm == 1:
        display = pd.DataFrame({
            "Model": [f"{m} {st}".strip() for m, st in zip(sub["model"], star)],
            "Δvar (all errors)": [_f(x, 1) for x in sub["delta_var_all"]],
            "P value (all errors)": [format_p(p, alpha) for p in sub["p_boot_all"]],
            "Δvar (reasoning-only)": [_f(x, 1) for x in sub["delta_var_ro"]],
            "P value (reasoning-only)": [format_p(p, alpha) for p in sub["p_boot_ro"]],
            "Exclusion rate": [_f(x, 1) for x in sub["exclusion_rate"]],
            "Estimate Δ": [est_delta(x) for x in sub["estimate_delta"]],
        })
    else:
        display = pd.DataFrame({
            "Model": list(sub["model"]),
            "Metric": [f"{st} {term_label(t)}".strip() for t, st in zip(sub["term"], star)],
            "P value (all errors)": [format_p(p, alpha) for p in sub["p_boot_all"]],
            "P value (reasoning-only)": [format_p(p, alpha) for p in sub["p_boot_ro"]],
            "Exclusion rate": [_f(x, 1) for x in sub["exclusion_rate"]],
            "Estimate Δ": [est_delta(x) for x in sub["estimate_delta"]],
        })
    display = display.reset_index(drop=True)
    bold = pd.DataFrame(False, index=display.index, columns=display.columns)
    bold["P value (all errors)"] = sub["significant_uncorrected_all"].astype(bool).to_numpy()
    bold["P value (reasoning-only)"] = sub["significant_uncorrected_ro"].astype(bool).to_numpy()
    return display, sub.reset_index(drop=True), bold


# ---------------------------------------------------------------- everything
def caption_values(fidelity: str, engine: str) -> dict[str, str]:
    """The words the report caption of the statistics tables (report/stats_tables.rst, through the
    rule's params) takes from the code: the GLMM engine, the fidelity mode, its clean-fit rule, each
    GLMM's Holm family and how a missing P value counts in it."""
    return {"engine": str(engine), "fidelity": fidelity, "clean_rule": CLEAN_RULE[fidelity],
            "holm_glmm1": holm_family_text(HOLM_FAMILY[1]), "holm_glmm2": holm_family_text(HOLM_FAMILY[2]),
            "holm_missing": HOLM_MISSING_TEXT[fidelity]}


def engine_note(rows: pd.DataFrame) -> str:
    """The caption sentence naming the GLMM engine(s) that fitted ``rows`` ('' without an engine column)."""
    if "engine" not in rows.columns or not len(rows):
        return ""
    parts = []
    for glmm, sub in rows.groupby("glmm", sort=True):
        names = sorted({e for v in sub["engine"].astype(str) for e in v.split("+")})
        fb = int(sub.drop_duplicates(["analysis", "model", "prompt"])["n_glmer_fallback"].sum()) \
            if "n_glmer_fallback" in sub.columns else 0
        what = " and ".join(f"the {n} engine" for n in names)
        extra = f" ({fb} resamples by glmer() after lme4's fast path was refused)" if fb else ""
        if "engine_check_resamples" in sub.columns and sub["engine_check_resamples"].notna().any():
            chk = sub.drop_duplicates(["analysis", "model", "prompt"])
            n = int(chk["engine_check_resamples"].fillna(0).sum())
            extra += (f", checked against lme4 on {n} resamples (largest estimate difference "
                      f"{chk['engine_check_max_diff'].max():.1g}")
            bad = chk["engine_check_warning"].fillna("").astype(str)
            extra += f"; WARNING: {bad[bad != ''].iloc[0]})" if (bad != "").any() else ")"
        parts.append(f"GLMM {glmm}: {what}{extra}")
    return " Fitted by " + "; ".join(parts) + "."


def write_stats_tables(summaries: pd.DataFrame, out_dir: str | Path, *,
                       refits: pd.DataFrame | None = None,
                       glmm_input: pd.DataFrame | None = None,
                       models: Sequence[str] | None = None,
                       prompts: Sequence[str] | None = None,
                       code_prompts: Sequence[str] = ()) -> list[Path]:
    """Write every statistics table that ``summaries`` (and the optional inputs) allow into ``out_dir``.

    ``summaries``: the summaries table (:func:`earnest.stats.summaries.build_summaries`; analysis
    'all' and optionally 'reasoning_only'); ``refits``: optimiser refits with glmm/model/prompt columns;
    ``glmm_input``: the GLMM input rows for the separation check (Table 19); ``code_prompts``:
    prompts that get the reasoning-only tables when both analyses are present. Also writes
    ``summary.json``, one object per fit (:func:`earnest.stats.summaries.summary_records`). Returns the paths.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    s = summaries
    prompt_labels = dict(zip(s["prompt"], s["prompt_label"]))
    alphas = sorted(set(s["alpha"]))
    alpha = " / ".join(f"{a:g}" for a in alphas)
    allr = s[s["analysis"] == "all"]
    written: list[Path] = []

    # templates with GSM-Base rows but no GSM-Variants rows, or the reverse: every table says so
    unpaired = G.unpaired_note(glmm_input) if glmm_input is not None and len(glmm_input) else ""

    def emit(name, display, raw, caption, bold=None, rows=None):
        paths = write_table(display, out_dir / name, caption + engine_note(s if rows is None else rows)
                            + (" " + unpaired if unpaired else ""), bold=bold, csv=raw)
        written.extend(paths.values())

    fid = table_fidelity(s)
    holm_note = {g: f"Holm-Bonferroni {holm_family_text(HOLM_FAMILY[g])} ({HOLM_MISSING_TEXT[fid]})"
                 for g in HOLM_FAMILY}
    clean_note = (f"N estimates is the number of clean bootstrap resamples ({CLEAN_RULE[fid]}; fidelity {fid}) "
                  f"over which the statistics are calculated. {DEGENERATE} in place of an odds ratio: a degenerate "
                  f"fit ({DEGENERATE_TEXT}). ")
    dag_note = (f" Significant P values (below α = {alpha}, fit not degenerate) in bold; {DAGGER} marks cases where the Wald "
                f"significance call differs from the bootstrap; {DEGENERATE} marks degenerate fits ({DEGENERATE_TEXT}).")
    for prompt in _order(allr.loc[allr["glmm"] == 1, "prompt"].tolist(), prompts):
        lab = _prompt_phrase(prompt, prompt_labels)
        d, raw, bold = variant_effect_table(s, prompt, models)
        emit(f"glmm1_variant_{prompt}", d, raw,
             f"Variant effect testing with {lab}, as returned by GLMM 1 (layout of Tables 2, 6, 8, "
             f"10, 12). Accuracies in %, Δvar in percentage points; corrected P values by {holm_note[1]}."
             + dag_note, bold, rows=allr[allr["glmm"] == 1])
        d, raw = bootstrap_stats_table(s, prompt, VARIANT, 1, models)
        emit(f"glmm1_bootstrap_{prompt}", d, raw,
             f"Additional statistics for {lab}, GLMM 1 (layout of Tables 3, 7, 9, 11, 13). " + clean_note + RANEF_NOTE,
             rows=allr[(allr["glmm"] == 1) & (allr["prompt"] == prompt)])
    g2 = allr[allr["glmm"] == 2]
    # GLMM 2's covariate (stats.covariate; the summaries' column covariate): gamma unless named
    cov = sorted({c for c in g2.get("covariate", pd.Series(dtype=str)).fillna("").astype(str) if c} - {"gamma"})
    cov_what = (f"the covariate {', '.join(cov)} (centred; in the term {GAMMA_C})" if cov
                else f"the {effect_name(2, GAMMA_C)}")
    cov_note = f" (covariate {', '.join(cov)})" if cov else ""
    if len(g2):
        for term, name, what, tab in ((GAMMA_C, f"glmm2_{GAMMA_C}", cov_what, "14"),
                                      (VARIANT, f"glmm2_{VARIANT}", f"the {effect_name(2, VARIANT)}", "15")):
            d, raw, bold = glmm2_grid_table(s, term, prompts, models, prompt_labels)
            emit(name, d, raw,
                 f"Odds ratios and significance of {what} across models and prompt formats, as returned by "
                 f"GLMM 2 (layout of Table {tab}). Cells: odds ratio; raw P value / Holm-Bonferroni-corrected "
                 f"P value, corrected by {holm_note[2]}: row-wise, as the published numbers are; the "
                 f"paper's caption says column-wise." + dag_note, bold, rows=g2)
        for prompt in _order(g2["prompt"].tolist(), prompts):
            for term in EFFECTS[2]:
                d, raw = bootstrap_stats_table(s, prompt, term, 2, models)
                emit(f"glmm2_bootstrap_{term}_{prompt}", d, raw,
                     f"Bootstrap statistics of {term_label(term)}{cov_note if term == GAMMA_C else ''} with "
                     f"{_prompt_phrase(prompt, prompt_labels)}, GLMM 2. " + clean_note + RANEF_NOTE,
                     rows=g2[g2["prompt"] == prompt])
    problems = s[["analysis", "glmm", "model", "prompt", "term", "fit_verdict", "fit_problems"]].rename(
        columns={"fit_verdict": "verdict", "fit_problems": "statement"})
    problems = problems.assign(statement=[t or "no problem found" for t in problems["statement"]])
    shown = problems[problems["verdict"] != "ok"].rename(columns={
        "analysis": "Analysis", "glmm": "GLMM", "model": "Model", "prompt": "Prompt", "term": "Effect",
        "verdict": "Verdict", "statement": "What is wrong"})
    shown["Prompt"] = [_label(p, prompt_labels) for p in shown["Prompt"]]
    emit("fit_problems", shown, problems,
         "Fits whose numbers should not be read at face value, in words. 'degenerate': the data cannot "
         "identify the effect (no correct or no wrong answers, or complete separation on the variant "
         "indicator), so the odds ratio, interval and p value in the other tables carry no information; "
         "'caution': few clean bootstrap resamples, singular resamples or a non-convergent full-data fit. "
         "The CSV lists every fit, including those without problems.")
    if allr["wald_p"].notna().any():
        d, raw = wald_mismatch_table(s, prompt_labels)
        emit("wald_mismatch", d, raw,
             "Wald-to-bootstrap mismatch cases (layout of Table 16). Bootstrap and Wald columns indicate whether "
             "the respective estimate is statistically significant; Convergent marks whether the Wald fit "
             "converges cleanly.")
        for glmm, tab in ((1, "17"), (2, "18")):
            if (allr["glmm"] == glmm).any():
                d, raw = nonconvergent_table(s, glmm, prompt_labels)
                emit(f"nonconvergent_glmm{glmm}", d, raw,
                     f"Non-convergent full-data fits of GLMM {glmm} (layout of Table {tab}), quoting the "
                     f"fit's convergence diagnostics (lme4's, or the laplace engine's in lme4's terms; the engine "
                     f"is named below).", rows=allr[allr["glmm"] == glmm])
    if refits is not None and len(refits):
        d, raw = optimiser_table(refits)
        emit("optimiser_refits", d, raw,
             "Fixed-effect estimates of non-convergent full-data fits refitted with each lme4 optimiser "
             "(as in Listing 6).")
    if glmm_input is not None and len(glmm_input):
        sep = diagnostics.separation_table(glmm_input)
        for prompt in _order(sep["prompt"].tolist(), prompts):
            d, raw = separation_display(sep[sep["prompt"] == prompt].reset_index(drop=True))
            emit(f"separation_{prompt}", d, raw,
                 f"Separation-like patterns with {_prompt_phrase(prompt, prompt_labels)} (layout of Table 19). "
                 f"All values in % (Δvar in percentage points). Constancy: share of templates answered all "
                 f"correctly or all wrongly (GSM-Base and GSM-Variants pooled). Large split: share of templates "
                 f"whose GSM-Base and GSM-Variants accuracies differ by more than 80 pp.")
    ro = s[s["analysis"] == "reasoning_only"]
    for prompt in code_prompts:
        for glmm in (1, 2):
            if not ((ro["prompt"] == prompt) & (ro["glmm"] == glmm)).any():
                continue
            d, raw, bold = reasoning_only_table(allr, ro, prompt, glmm, models)
            emit(f"reasoning_only_glmm{glmm}_{prompt}", d, raw,
                 f"Reasoning-only-errors GLMM {glmm} analysis for {_prompt_phrase(prompt, prompt_labels)} "
                 f"(layout of Tables {'20-21' if glmm == 1 else '22-23'}). * marks cases where the all-errors "
                 f"and reasoning-only significance calls disagree; exclusion rate: % of GSM-Variants rows "
                 f"dropped as code errors; Estimate Δ: reasoning-only minus all-errors median log-OR.", bold)
    # beside the tables, every fit as one JSON object (earnest.stats.summaries.summary_records)
    from earnest.stats.summaries import write_summary_json
    written.append(write_summary_json(s, out_dir / "summary.json"))
    return written
