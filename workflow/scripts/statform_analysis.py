"""StatFormBench analysis: tables (CSV/Markdown/LaTeX/HTML) and figures (PNG/PDF/SVG).

snakemake.input.scored: list of scored parquets (all models x strategies);
snakemake.params (config statform, defaults in config/schema.yaml): main_strategy, baseline, n_boot
  (bootstrap resamples), seed, min_category_n (categories with at most this many samples left out of
  the category tables), top_fine (fine labels per confusion matrix), glmm (bool: pairwise GLMMs),
  fidelity (the scoring the tables read), strategies (statform.strategies, for figure 5);
snakemake.input.samples: the samples table (figure 3);
snakemake.output.tables: directory (main, by_source, category_coarse, category_fine, strategies,
  strategy_tests, truncation, fidelity_sensitivity, glmm_cg, glmm_fg as .csv/.md/.tex, parse_status.csv);
  snakemake.output.figures: directory (confusion_coarse_<model>, confusion_fine_<model>, dataset_statistics,
  category_accuracy, fewshot as .png/.pdf/.svg); snakemake.log[0]: log file.
"""

from earnest.statform.pipeline import analyse
from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "statform_analysis")  # noqa: F821

try:
    sm = snakemake  # noqa: F821
    p = sm.params
    files = analyse(list(sm.input.scored), sm.output.tables, sm.output.figures,
                    main_strategy=p.main_strategy, baseline=p.baseline, n_boot=int(p.n_boot), seed=int(p.seed),
                    min_category_n=int(p.min_category_n), top_fine=int(p.top_fine), glmm=bool(p.glmm),
                    fidelity=p.fidelity, samples_path=sm.input.samples, strategies=dict(p.strategies))
    log.info("wrote %d files", len(files))
except Exception:
    log.exception("statform analysis failed")
    raise
