"""GSM-Symbolic: items, prompts, extraction, scoring, gamma and covariates, the GLMM input of its
scored tables (glmm_input), K-S, the paper's tables, the published comparison, error tables, figures,
sensitivity, reasoning-only, Ex4."""
