"""Appendix G: the bootstrapped GLMMs again without code errors, compared with the all-errors run."""

from __future__ import annotations

import pandas as pd

KEYS = ["glmm", "model", "prompt", "term"]


def reasoning_only_comparison(all_errors: pd.DataFrame, reasoning_only: pd.DataFrame) -> pd.DataFrame:
    """One row per (glmm, model, prompt, term) present in both analyses' rows of the summaries
    table (:mod:`earnest.stats.summaries`).

    Columns: delta_var and p_boot of each analysis (suffixes ``_all`` and ``_ro``); exclusion_rate
    (% of GSM-Variants rows dropped, as the paper defines it) and exclusion_rate_rows (% of all
    rows dropped); estimate_delta (reasoning-only minus all-errors median log-OR);
    significant_uncorrected_all / significant_uncorrected_ro (the summaries' significant_uncorrected)
    and significance_changed (the two calls differ).
    """
    cols = KEYS + ["delta_var", "p_boot", "median_log_or", "n_variants", "n_base", "n_clean", "significant_uncorrected"]
    a = all_errors[cols]
    r = reasoning_only[cols]
    m = a.merge(r, on=KEYS, suffixes=("_all", "_ro"), how="inner")
    m["exclusion_rate"] = 100.0 * (1.0 - m["n_variants_ro"] / m["n_variants_all"])
    m["exclusion_rate_rows"] = 100.0 * (1.0 - (m["n_variants_ro"] + m["n_base_ro"])
                                        / (m["n_variants_all"] + m["n_base_all"]))
    m["estimate_delta"] = m["median_log_or_ro"] - m["median_log_or_all"]
    m["significance_changed"] = (m["significant_uncorrected_all"].astype(bool)
                                  != m["significant_uncorrected_ro"].astype(bool))
    return m.reset_index(drop=True)
