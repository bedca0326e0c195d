"""Score one generations table: extract answers, compare with gold answers
(earnest.gsm.scoring.score_generations, which runs code answers in a sandbox of its own); in another
language (rule language_score, `use rule score`), read by its locale.

snakemake.input.generations: generations parquet; snakemake.input.dataset_items: this dataset's
items (Snakemake reserves the name ``items`` for input, so it cannot be used);
snakemake.params.style: "text" | "code"; snakemake.params.fidelity: the fidelity mode of extraction
and classification; snakemake.params.sandbox_python: the interpreter that runs model code ("" = this
one); for another language (wildcards.language) snakemake.params.english_rules; snakemake.output[0]: scored
parquet; snakemake.log[0]: log file.
"""

import pandas as pd

from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "score")  # noqa: F821

from earnest.gsm.failure_classes import judged  # noqa: E402
from earnest.gsm.scoring import score_generations  # noqa: E402

try:
    sm = snakemake  # noqa: F821
    # the language rule (use rule score as language_score) has a language wildcard; English none
    language = sm.wildcards.get("language", "eng")
    generations = pd.read_parquet(sm.input.generations)
    items = pd.read_parquet(sm.input.dataset_items)
    log.info("scoring %s (%d rows, style %s, fidelity %s, language %s)", sm.input.generations, len(generations),
             sm.params.style, sm.params.fidelity, language)
    # code answers: scoring's own sandbox on sandbox.python, closed when done (earnest.gsm.scoring)
    scored = score_generations(generations, items, sm.params.style, fidelity=sm.params.fidelity,
                               python=sm.params.sandbox_python, language=language,
                               english_rules=language != "eng" and bool(sm.params.english_rules))
    counts = scored["error_class"].replace("", "correct").value_counts().to_dict()
    log.info("accuracy %.4f; classes %s", judged(scored)["correct"].mean(), counts)
    scored.to_parquet(sm.output[0], index=False)
except Exception:
    log.exception("scoring failed")
    raise
