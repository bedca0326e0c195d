"""GLMM 1 of one language and model (earnest.gsm.languages.language_glmm1_from_scored): the paper's
model bootstrapped on that language's scored GSM-Base and GSM-Variants, no Holm (the cross-lingual
job's, across the languages).

snakemake.input.scored: the language's scored tables of one model; snakemake.params: language,
resamples, seed, fidelity, engine (stats.engine: the run's GLMM 1 engine), prior (stats.prior, earnest
mode's); snakemake.output[0]: the summary (parquet); snakemake.log[0].
"""

import pandas as pd

from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "language_glmm1")  # noqa: F821

from earnest.gsm.languages import language_glmm1_from_scored  # noqa: E402

sm = snakemake  # noqa: F821
try:
    summary = language_glmm1_from_scored([pd.read_parquet(p) for p in sm.input.scored], sm.params.language,
                                         int(sm.params.resamples), int(sm.params.seed),
                                         fidelity=sm.params.fidelity, workers=int(sm.threads),
                                         engine=str(sm.params.engine), prior=dict(sm.params.prior))
    log.info("%s: GLMM 1 on templates %s", sm.params.language, sorted(set(summary["fit_templates"])))
    summary.to_parquet(sm.output[0], index=False)
except Exception:
    log.exception("GLMM 1 of %s failed", sm.params.language)
    raise
