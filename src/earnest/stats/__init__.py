"""The statistics engine: bootstrapped binomial GLMMs fitted with lme4 in R (through rpy2), Wald
fits and their diagnostics, separation checks, summaries. (The K-S test, the reasoning-only analysis
and the paper's tables are GSM-Symbolic's: earnest.gsm.ks, earnest.gsm.reasoning, earnest.gsm.paper_tables.)

Importing this package does not start R; the first fit does.
"""

from earnest.stats.glmm import (EFFECTS, GLMMInputError, OPTIMISERS, SHARD_COLUMNS, TERMS, WaldFit,
                                model_frame, read_glmm_input, refit_optimisers, resample_seed, run_bootstrap,
                                run_shard, shard_resamples, validate_glmm_input, wald_fit)
from earnest.stats.diagnostics import nonconvergent_fits, separation_check, separation_table, wald_mismatches
from earnest.stats.inputs import code_error_mask, glmm_input_from_scored
from earnest.stats.run import read_shards, run_glmm, shard_path, summarise_group, write_shard
from earnest.stats.summary import accuracies, add_holm, bootstrap_p, holm, percentile_interval, summarise

__all__ = [
    "EFFECTS", "GLMMInputError", "OPTIMISERS", "SHARD_COLUMNS", "TERMS", "WaldFit", "accuracies", "add_holm",
    "bootstrap_p", "code_error_mask", "glmm_input_from_scored", "holm", "model_frame", "percentile_interval",
    "read_glmm_input", "refit_optimisers", "resample_seed", "run_bootstrap", "run_shard", "shard_resamples",
    "summarise", "validate_glmm_input", "wald_fit", "nonconvergent_fits", "separation_check", "separation_table",
    "wald_mismatches", "read_shards", "run_glmm", "shard_path", "summarise_group", "write_shard",
]
