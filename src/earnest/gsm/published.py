"""This run's GSM-Symbolic accuracies next to the published ones (Appendix D.1, Tables 4 and 5 of
the GSM-Symbolic re-evaluation): the figures reported by Mirzadeh et al. (2025, "/ M") and the
re-evaluation's own reproduction ("/ O"), for the models this run shares with the paper.

A local model matches a paper model by its config key, or by its optional ``paper_name``
(``models.<name>.paper_name`` in the config). Only the GSM prompt (Ex1) has published figures.
Accuracies are in %, deltas in percentage points. The published Table 5 prints the *drop*
Ā(GSM-Base) − Ā(GSM-Variants) (positive = worse on the variants), the opposite sign of
Section 3.1's Δvar; the comparison keeps Table 5's sign so the columns line up with it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from earnest.gsm.datasets import BASE_LABEL, VARIANTS_LABEL
from earnest.gsm.failure_classes import judged
from earnest.gsm.prompts import prompt_noun
from earnest.tables import read_table, require_columns
from earnest.wording import VARIANT

TABLE4_COLUMNS = ("model", "gsm_base_m", "gsm_variants_m", "gsm_variants_m_sd", "gsm_base_o",
                  "gsm_variants_o", "gsm_variants_o_sd")
TABLE5_COLUMNS = ("model", "delta_var_mirzadeh", "delta_var_ours")
#: Columns of the summaries table (:mod:`earnest.stats.summaries`) the comparison reads.
SUMMARY_COLUMNS = ("analysis", "glmm", "model", "prompt", "term", "acc_base", "acc_variants", "delta_var")

COMPARISON_COLUMNS = [
    "model", "paper_model", "n_base", "n_variants",
    "gsm_base_m", "gsm_variants_m", "gsm_variants_m_sd",
    "gsm_base_o", "gsm_variants_o", "gsm_variants_o_sd",
    "gsm_base_run", "gsm_variants_run", "gsm_variants_run_sd",
    "drop_m", "drop_o", "drop_run", "drop_run_minus_m", "drop_run_minus_o",
]


#: The languages with published GSM-Symbolic numbers: English only (Mirzadeh et al. 2025 and the
#: re-evaluation evaluate the English templates; the multilingual templates have no published figures).
PUBLISHED_LANGUAGES = ("eng",)


def published_note(language: str) -> str:
    """"" for a language with published numbers; else the sentence that says none exist."""
    if language in PUBLISHED_LANGUAGES:
        return ""
    return (f"No published GSM-Symbolic numbers exist for language {language!r}: the GSM-Symbolic study "
            "(Mirzadeh et al., 2025) and the re-evaluation report English only, so this run's "
            f"{language} accuracies have nothing to be compared with.")


def load_published(directory: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Tables 4 and 5 from ``directory`` (``table4_accuracy.csv``, ``table5_variant_delta.csv``),
    checked for their columns."""
    directory = Path(directory)
    return (read_table(directory / "table4_accuracy.csv", TABLE4_COLUMNS),
            read_table(directory / "table5_variant_delta.csv", TABLE5_COLUMNS))


def variant_sd(scored: pd.DataFrame, source: str = "scored tables") -> pd.DataFrame:
    """Per model: the standard deviation (ddof=1) over GSM-Variants instance sets of the accuracy
    (%) within each set, as GSM-Symbolic's "± sd". Columns model, gsm_variants_run_sd."""
    require_columns(scored, ("model", "dataset", "instance", "correct"), source)
    scored = judged(scored)     # an answer the machine failed to run is neither right nor wrong
    v = scored[scored["dataset"].astype(str) == "gsm_variants"]
    if v.empty:
        return pd.DataFrame({"model": [], "gsm_variants_run_sd": []})
    per_set = v.groupby(["model", "instance"])["correct"].mean() * 100.0
    sd = per_set.groupby(level="model").std(ddof=1)
    return pd.DataFrame({"model": sd.index.astype(str), "gsm_variants_run_sd": sd.to_numpy(dtype=float)})


def compare_published(summaries: pd.DataFrame, table4: pd.DataFrame, table5: pd.DataFrame, *,
                      prompt: str = "gsm", paper_names: Mapping[str, str] | None = None,
                      sd: pd.DataFrame | None = None, analysis: str = "all", language: str = "eng") -> pd.DataFrame:
    """One row per model of this run that is also a paper model, in the paper's row order.

    ``language``: only English has published numbers (:data:`PUBLISHED_LANGUAGES`); for another
    language the comparison is empty (:func:`published_note` says why). Summaries with a
    ``language`` column contribute their English rows only.

    ``summaries``: bootstrap summaries (GLMM 1, term variant, ``prompt`` rows give the accuracies);
    ``paper_names``: local model name -> paper model name (identity where absent);
    ``sd``: optional :func:`variant_sd` result. Columns: :data:`COMPARISON_COLUMNS`; the
    ``drop_*`` columns are Ā(GSM-Base) − Ā(GSM-Variants) (Table 5's sign); an empty frame when
    no model is shared.
    """
    require_columns(summaries, SUMMARY_COLUMNS, "summaries")
    require_columns(table4, TABLE4_COLUMNS, "table4_accuracy.csv")
    require_columns(table5, TABLE5_COLUMNS, "table5_variant_delta.csv")
    names = dict(paper_names or {})
    if language not in PUBLISHED_LANGUAGES:
        return pd.DataFrame({c: [] for c in COMPARISON_COLUMNS})
    if "language" in summaries.columns:
        summaries = summaries[summaries["language"].astype(str) == language]
    run = summaries[(summaries["analysis"].astype(str) == analysis) & (summaries["glmm"].astype(int) == 1)
                    & (summaries["term"].astype(str) == VARIANT) & (summaries["prompt"].astype(str) == prompt)]
    run = run.drop_duplicates("model").copy()
    run["model"] = run["model"].astype(str)
    run["paper_model"] = [names.get(m, m) for m in run["model"]]
    dup = run["paper_model"][run["paper_model"].duplicated()]
    if len(dup):
        raise ValueError(f"paper_name {dup.iloc[0]!r} is given to more than one model of this run")
    published = table4.merge(table5, on="model", how="outer", validate="one_to_one")
    published["_order"] = np.arange(len(published))
    m = run.merge(published.rename(columns={"model": "paper_model"}), on="paper_model", how="inner")
    if sd is not None and len(sd):
        m = m.merge(sd[["model", "gsm_variants_run_sd"]].astype({"model": str}), on="model", how="left")
    else:
        m["gsm_variants_run_sd"] = np.nan
    for c in ("n_base", "n_variants"):
        if c not in m.columns:
            m[c] = np.nan
    m = m.sort_values("_order")
    out = pd.DataFrame({
        "model": m["model"], "paper_model": m["paper_model"], "n_base": m["n_base"], "n_variants": m["n_variants"],
        "gsm_base_m": m["gsm_base_m"], "gsm_variants_m": m["gsm_variants_m"], "gsm_variants_m_sd": m["gsm_variants_m_sd"],
        "gsm_base_o": m["gsm_base_o"], "gsm_variants_o": m["gsm_variants_o"], "gsm_variants_o_sd": m["gsm_variants_o_sd"],
        "gsm_base_run": m["acc_base"], "gsm_variants_run": m["acc_variants"],
        "gsm_variants_run_sd": m["gsm_variants_run_sd"],
        "drop_m": m["delta_var_mirzadeh"], "drop_o": m["delta_var_ours"],
        "drop_run": -m["delta_var"].astype(float),
    })
    out["drop_run_minus_m"] = out["drop_run"] - out["drop_m"]
    out["drop_run_minus_o"] = out["drop_run"] - out["drop_o"]
    return out[COMPARISON_COLUMNS].reset_index(drop=True)


def _f(x, digits=1) -> str:
    return "" if x is None or pd.isna(x) else f"{float(x):.{digits}f}"


def _with_sd(v, sd) -> str:
    return _f(v) + (f" (± {_f(sd, 2)})" if not pd.isna(sd) else "")


def write_comparison(comparison: pd.DataFrame, stem: str | Path, prompt_label: str = "GSM",
                     language: str = "eng") -> dict[str, Path]:
    """Write the comparison with :func:`earnest.tables.write_table` (CSV raw columns; Markdown
    and LaTeX in Table 4/5 form). With no shared model the table is empty and the caption says so;
    for a language without published numbers (all but English) the table is empty and the caption
    says that none exist."""
    from earnest.tables import write_table

    if language not in PUBLISHED_LANGUAGES:
        empty = pd.DataFrame({"Model": [], "Note": []})
        return write_table(empty, stem, published_note(language),
                           csv=pd.DataFrame({c: [] for c in COMPARISON_COLUMNS}))

    display = pd.DataFrame({
        "Model": comparison["model"],
        f"{BASE_LABEL} / M": [_f(x) for x in comparison["gsm_base_m"]],
        f"{VARIANTS_LABEL} / M": [_with_sd(v, s) for v, s in zip(comparison["gsm_variants_m"], comparison["gsm_variants_m_sd"])],
        f"{BASE_LABEL} / O": [_f(x) for x in comparison["gsm_base_o"]],
        f"{VARIANTS_LABEL} / O": [_with_sd(v, s) for v, s in zip(comparison["gsm_variants_o"], comparison["gsm_variants_o_sd"])],
        f"{BASE_LABEL} / run": [_f(x) for x in comparison["gsm_base_run"]],
        f"{VARIANTS_LABEL} / run": [_with_sd(v, s) for v, s in zip(comparison["gsm_variants_run"], comparison["gsm_variants_run_sd"])],
        "Drop / M": [_f(x) for x in comparison["drop_m"]],
        "Drop / O": [_f(x) for x in comparison["drop_o"]],
        "Drop / run": [_f(x) for x in comparison["drop_run"]],
    })
    display["Model"] = [m if m == p else f"{m} (= {p})" for m, p in zip(comparison["model"], comparison["paper_model"])]
    caption = (f"Accuracies (%) with the {prompt_noun(prompt_label)} (8-shot) reported in the GSM-Symbolic study "
               "(Mirzadeh et al., 2025; '/ M'), in the re-evaluation's reproduction ('/ O'; Tables 4 and 5 of "
               "the re-evaluation) and in this run ('/ run'). '(± …)' is the standard deviation of the "
               "accuracy over the GSM-Variants instance sets. Drop = Ā(GSM-Base) − Ā(GSM-Variants) in "
               "percentage points, the sign of Table 5 (the negative of Δvar).")
    if comparison.empty:
        caption += (" No model of this run is among the paper's models (match by config key, or map one "
                    "with models.<name>.paper_name), so there is nothing to compare.")
    else:
        nb = comparison["n_base"].dropna().unique()
        nv = comparison["n_variants"].dropna().unique()
        if len(nb) == 1 and len(nv) == 1:
            caption += (f" This run scored {int(nb[0])} GSM-Base and {int(nv[0])} GSM-Variants questions per "
                        "model (the paper: 100 and 5000).")
    return write_table(display, stem, caption, csv=comparison)
