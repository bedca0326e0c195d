"""Simulated GLMM input with known effects, for validity tests and benchmarks.

Each template has one GSM-Base item and ``n_variants`` GSM-Variants items; correctness follows
logit P(correct) = intercept + u_template + variant_effect * variant + gamma_effect * gamma_c with
u_template ~ N(0, ranef_sd^2). gamma is continuous (no two items share it) and GSM-Variants items
carry ``gamma_shift`` more of it, as the paper found for the real datasets.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from earnest.stats.glmm import centre_gamma
from earnest.wording import VARIANT
from earnest.stats.defaults import ALPHA, ENGINE


def simulate_glmm_input(n_templates: int = 100, n_variants: int = 50, *, variant_effect: float = -0.5,
                        gamma_effect: float = 0.0, intercept: float = 0.5, ranef_sd: float = 2.0,
                        gamma_shift: float = 0.5, seed: int = 0, model: str = "sim",
                        prompt: str = "gsm") -> pd.DataFrame:
    """GLMM input rows (model, prompt, template, variant, correct, gamma) drawn with ``seed``."""
    rng = np.random.default_rng(seed)
    n_items = 1 + n_variants
    template = np.repeat(np.arange(n_templates), n_items)
    variant = np.tile(np.r_[0, np.ones(n_variants, dtype=int)], n_templates)
    gamma = rng.normal(5.0, 1.5, template.size) + gamma_shift * variant
    gamma_c = centre_gamma(pd.DataFrame({"gamma": gamma})).to_numpy()
    u = rng.normal(0.0, ranef_sd, n_templates)
    eta = intercept + u[template] + variant_effect * variant + gamma_effect * gamma_c
    correct = (rng.random(template.size) < 1.0 / (1.0 + np.exp(-eta))).astype(np.int64)
    return pd.DataFrame({"model": model, "prompt": prompt, "template": template.astype(np.int64),
                         "variant": variant.astype(np.int64), "correct": correct, "gamma": gamma})


def coverage_study(n_datasets: int, variant_effect: float, *, n_resamples: int, seed: int, glmm: int = 1,
                   n_templates: int = 30, n_variants: int = 8, gamma_effect: float = 0.0, cores: int = 1,
                   alpha: float = ALPHA, engine: str = ENGINE, intercept: float = 0.5) -> pd.DataFrame:
    """Bootstrap ``n_datasets`` simulated data sets with a known variant effect.

    One row per data set, as the summaries judge it (:func:`earnest.stats.summary.summarise`,
    earnest mode: separated resamples counted at their bound; :func:`earnest.stats.diagnostics.fit_problems`):
    median estimate, 95% percentile interval (log-odds), bootstrap P value, clean and separated
    counts, accuracy, whether the fit is degenerate, whether the interval covers the true effect and
    whether the effect is significant (P < ``alpha`` and not degenerate). ``p_clean_only``: Eq. 4 over
    the clean fits alone (the rule before separated resamples counted), for comparison.
    """
    from earnest.stats.diagnostics import judge_effect
    from earnest.stats.engines import run_shard
    from earnest.stats.glmm import prior_for, validate_glmm_input
    from earnest.stats.summary import bootstrap_p, clean_mask

    rows = []
    for k in range(n_datasets):
        df = validate_glmm_input(simulate_glmm_input(n_templates, n_variants, variant_effect=variant_effect,
                                                     gamma_effect=gamma_effect, intercept=intercept,
                                                     seed=seed + k), glmm)
        shards = run_shard(df, glmm, n_resamples, base_seed=seed + 1000 + k, cores=cores, engine=engine,
                           prior=prior_for("earnest"))
        s, degenerate = judge_effect(shards, df, glmm, "variant", engine=engine, alpha=alpha)
        clean_only = shards[clean_mask(shards) & (shards["term"] == VARIANT)]["estimate"].to_numpy()
        lo, hi = float(s["ci_low_log"]), float(s["ci_high_log"])
        rows.append({"dataset": k, "true_effect": variant_effect, "median": float(s["median_log_or"]),
                     "ci_low": lo, "ci_high": hi, "p_boot": float(s["p_boot"]), "n_clean": int(s["n_clean"]),
                     "n_separated": int(s["n_separated"]), "accuracy": float(df["correct"].mean()),
                     "degenerate": degenerate, "covered": bool(lo <= variant_effect <= hi),
                     "p_below_alpha": bool(s["significant_uncorrected"]),
                     "p_clean_only": bootstrap_p(clean_only)})
    return pd.DataFrame(rows)


def simulate_number_matched(n_templates: int = 60, n_variants: int = 20, *, variant_effect: float = 0.0,
                            number_effect: float = 0.0, intercept: float = 0.5, ranef_sd: float = 2.0,
                            matched_templates: int | None = None, seed: int = 0, model: str = "sim",
                            prompt: str = "gsm") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two GLMM inputs sharing their GSM-Base rows (variant 0): (base + variants, base + matched).

    Variants' log-odds are the base's + ``variant_effect`` + ``number_effect`` (their numbers are
    larger); number-matched variants' the base's + ``variant_effect`` alone. So the true difference
    of the two variant effects is ``number_effect``. ``matched_templates``: only the first so many
    templates have matched variants (the rest have none: their variant rows are left out of both,
    as Ex4 pairs them); the default, all."""
    rng = np.random.default_rng(seed)
    k = n_templates if matched_templates is None else int(matched_templates)
    u = rng.normal(0.0, ranef_sd, n_templates)
    base_t = np.arange(n_templates)
    base = (rng.random(n_templates) < 1.0 / (1.0 + np.exp(-(intercept + u)))).astype(np.int64)
    t = np.repeat(np.arange(k), n_variants)
    frames = []
    for shift in (variant_effect + number_effect, variant_effect):
        eta = intercept + u[t] + shift
        correct = (rng.random(t.size) < 1.0 / (1.0 + np.exp(-eta))).astype(np.int64)
        frames.append(pd.DataFrame({"model": model, "prompt": prompt,
                                    "template": np.r_[base_t, t].astype(np.int64),
                                    "variant": np.r_[np.zeros(n_templates), np.ones(t.size)].astype(np.int64),
                                    "correct": np.r_[base, correct], "gamma": 1.0}))
    return frames[0], frames[1]
