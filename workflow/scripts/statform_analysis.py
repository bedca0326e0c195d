"""StatFormBench analysis: tables (CSV/Markdown/LaTeX) and confusion-matrix figures (PNG/PDF).

snakemake.input.scored: list of scored parquets (all models x strategies);
snakemake.params: main_strategy (default "zero_shot"), baseline (default "zero_shot"),
  n_boot (bootstrap resamples, default 1000), seed (default 0), min_category_n (default 0),
  top_fine (fine labels per confusion matrix, default 15), glmm (bool, default True);
snakemake.output.tables: directory (main, by_source, category_coarse, category_fine, strategies,
  glmm_cg, glmm_fg as .csv/.md/.tex, parse_status.csv); snakemake.output.figures: directory
  (confusion_coarse_<model>, confusion_fine_<model> as .png/.pdf); snakemake.log[0]: log file.
"""

from earnest.statform.pipeline import analyse
from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "statform_analysis")  # noqa: F821

try:
    sm = snakemake  # noqa: F821
    p = sm.params
    files = analyse(list(sm.input.scored), sm.output.tables, sm.output.figures,
                    main_strategy=p.get("main_strategy", "zero_shot"), baseline=p.get("baseline", "zero_shot"),
                    n_boot=int(p.get("n_boot", 1000)), seed=int(p.get("seed", 0)),
                    min_category_n=int(p.get("min_category_n", 0)), top_fine=int(p.get("top_fine", 15)),
                    glmm=bool(p.get("glmm", True)))
    log.info("wrote %d files", len(files))
except Exception:
    log.exception("statform analysis failed")
    raise
