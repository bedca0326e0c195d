"""GSM-Symbolic: items, prompts, extraction, scoring, gamma and covariates, K-S, the paper's tables,
the published comparison, error tables, figures, sensitivity, reasoning-only, Ex4."""
