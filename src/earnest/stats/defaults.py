"""The statistics' defaults, named: each is read from config/schema.yaml, their one home (the
workflow's config gets the same values from the schema). Library functions default to these
names, never to literals of their own (tests/test_defaults.py scans every signature)."""

from __future__ import annotations

from earnest.schema import schema_default

#: significance level of every test (stats.alpha)
ALPHA = schema_default("stats.alpha")
#: the GLMM engine of earnest glmm and the workflow's fits (stats.engine)
ENGINE = schema_default("stats.engine")
#: the engine of the power study's simulated fits (power.engine)
POWER_ENGINE = schema_default("power.engine")
#: jobs the bootstrap resamples are split into (stats.shards)
SHARDS = schema_default("stats.shards")
#: laplace engine: resamples of each shard refitted with lme4 (stats.check_resamples)
CHECK_RESAMPLES = schema_default("stats.check_resamples")
#: GLMM 2's covariate (stats.covariate)
COVARIATE = schema_default("stats.covariate")
#: paired comparisons: item random intercepts, and their quadrature points (compare.item_effects, compare.agq)
ITEM_EFFECTS = schema_default("compare.item_effects")
AGQ = schema_default("compare.agq")
#: earnest mode's normal prior on the fixed effects (stats.prior.intercept_sd, stats.prior.effect_sd)
PRIOR_INTERCEPT_SD = schema_default("stats.prior.intercept_sd")
PRIOR_EFFECT_SD = schema_default("stats.prior.effect_sd")
