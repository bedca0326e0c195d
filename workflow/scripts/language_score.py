"""Score one language's generations table (earnest.gsm.scoring.score_table, language=...).

snakemake.input.generations, snakemake.input.dataset_items; snakemake.params.language, style,
fidelity; snakemake.output[0]: scored parquet; snakemake.log[0].
"""

import pandas as pd

from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "language_score")  # noqa: F821

from earnest.gsm.scoring import score_table  # noqa: E402

sm = snakemake  # noqa: F821
try:
    scored = score_table(pd.read_parquet(sm.input.generations), pd.read_parquet(sm.input.dataset_items),
                         sm.params.style, fidelity=sm.params.fidelity, language=sm.params.language)
    log.info("%s: accuracy %.4f; classes %s", sm.params.language, scored["correct"].mean(),
             scored["error_class"].replace("", "correct").value_counts().to_dict())
    scored.to_parquet(sm.output[0], index=False)
except Exception:
    log.exception("scoring failed")
    raise
