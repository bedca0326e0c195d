"""The cross-lingual GLMM and the per-language GLMM 1s of every Ex1 model (earnest.gsm.languages).

snakemake.input.scored: scored tables, one per params.scored_keys entry [model, language, dataset];
snakemake.input.glmm1: each language's GLMM 1 of each model (workflow/scripts/language_glmm1.py);
snakemake.input.excluded: each other language's failing items (<dataset>.excluded.tsv of
language_items); snakemake.input.english_items: the English study's items (checked here);
snakemake.params: languages (the reference first: English), resamples, seed, alpha, fidelity,
keep_invalid, engine (stats.engine: a language GLMM 1 refitted here uses the run's engine); snakemake.output: table (Markdown; CSV and LaTeX beside it), csv, glmm1, excluded,
figure; snakemake.log[0].
"""

from pathlib import Path

import pandas as pd

from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "cross_lingual")  # noqa: F821

from earnest.gsm.datasets import check_items  # noqa: E402
from earnest.gsm.languages import (answer_language_rates, cross_lingual_input, exclusions,  # noqa: E402
                                   run_cross_lingual, write_cross_lingual)

sm = snakemake  # noqa: F821
try:
    by_language: dict[str, list] = {}
    for path, (model, language, dataset) in zip(sm.input.scored, sm.params.scored_keys):
        by_language.setdefault(language, []).append(pd.read_parquet(path))
    problems = [pd.read_csv(p, sep="\t") for p in sm.input.excluded]
    problems += [check_items(pd.read_parquet(p), "eng", keep_invalid=bool(sm.params.keep_invalid))
                 for p in sm.input.english_items]
    excluded, drop = exclusions(problems)
    data = cross_lingual_input(by_language)
    fitted = pd.concat([pd.read_parquet(p) for p in sm.input.glmm1], ignore_index=True)
    summary, glmm1 = run_cross_lingual(data, int(sm.params.resamples), int(sm.params.seed),
                                       alpha=float(sm.params.alpha), fidelity=sm.params.fidelity,
                                       workers=int(sm.threads), glmm1=fitted, exclude=drop, log=log,
                                       engine=str(sm.params.engine))
    compared = sorted(set(data["template"].astype(int)) - set(drop))
    out = write_cross_lingual(summary, glmm1, Path(sm.output.table).parent, Path(sm.output.figure).parent,
                              list(sm.params.languages), excluded=excluded, rates=answer_language_rates(by_language),
                              summary_templates=compared, modes=dict(sm.params.modes))
    log.info("cross-lingual GLMM: %s", {k: str(v) for k, v in out.items()})
except Exception:
    log.exception("cross-lingual analysis failed")
    raise
