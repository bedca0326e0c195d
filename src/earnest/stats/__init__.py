"""Statistics of the GSM-Symbolic re-evaluation: bootstrapped binomial GLMMs (lme4 in R through
rpy2, or the laplace engine), Wald fits and their diagnostics, separation checks. The benchmark's
own analyses (K-S test, paper tables, reasoning-only comparison) are in :mod:`earnest.gsm`, which
this generic package does not import (importing it here made ``import earnest.gsm.paper_tables``
fail on the cycle).

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
