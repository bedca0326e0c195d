"""Build the GLMM input of one model x prompt from its scored tables.

snakemake.input.scored: scored parquets of that model x prompt (gsm_base and gsm_variants);
snakemake.params.reasoning_only: bool: drop code-error rows (Appendix G);
snakemake.input.variant_templates (optional): [] or an items table whose templates alone keep variant rows
  (analysis variants_matched: Ex1 on the templates of GSM-Matched);
snakemake.params.covariate: GLMM 2's covariate (earnest.gsm.covariates), put in
  the gamma column from snakemake.input.item_tables (the datasets' items tables);
snakemake.output[0]: GLMM input parquet (model, prompt, template, variant, correct, gamma); reference
  mode's centre of gamma over every model of the prompt is a file of its own (workflow/scripts/gamma_centre.py);
snakemake.log[0]: log file.
"""

from earnest.gsm.glmm_input import glmm_input_from_scored, read_scored
from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "glmm_input")  # noqa: F821

try:
    paths = snakemake.input.scored  # noqa: F821
    paths = [paths] if isinstance(paths, str) else list(paths)
    reasoning_only = bool(snakemake.params.reasoning_only)  # noqa: F821
    scored = read_scored(paths)
    covariate = str(snakemake.params.covariate)  # noqa: F821
    if covariate != "gamma":   # GLMM 2's covariate, in the gamma column (centred where gamma is)
        import pandas as pd

        from earnest.gsm.covariates import item_values, with_covariate

        items = snakemake.input.item_tables  # noqa: F821
        items = [items] if isinstance(items, str) else list(items)
        tokenize = None
        if covariate == "number_tokens":     # counted with this model's own tokenizer
            from earnest.backends.hf import load_tokenizer

            tokenize = load_tokenizer(snakemake.wildcards.model, dict(snakemake.params.model_cfg))  # noqa: F821
        values = pd.concat([item_values(pd.read_parquet(x), covariate, x, tokenize) for x in items])
        scored = [with_covariate(s, values, covariate, p) for s, p in zip(scored, paths)]
        log.info("GLMM 2 covariate: %s (from %s)", covariate, items)
    df = glmm_input_from_scored(scored, reasoning_only=reasoning_only, source=", ".join(paths))
    restrict = list(getattr(snakemake.input, "variant_templates", []))  # noqa: F821
    if restrict:  # Ex1 on Ex4's templates: variant rows only of the templates GSM-Matched has
        import pandas as pd

        from earnest.gsm.glmm_input import restrict_variants

        templates = pd.read_parquet(restrict[0], columns=["template_id"])["template_id"].unique()
        df = restrict_variants(df, templates)
        log.info("variant rows restricted to the %d templates of %s", len(templates), restrict[0])
    log.info("%d rows (%d GSM-Base, %d GSM-Variants) from %s; reasoning_only=%s", len(df),
             int((df.variant == 0).sum()), int((df.variant == 1).sum()), paths, reasoning_only)
    df.to_parquet(snakemake.output[0], index=False)  # noqa: F821
except Exception:
    log.exception("building the GLMM input failed")
    raise
