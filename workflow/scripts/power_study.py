"""The power study of the template-bootstrap test at a design (the embedded default: the paper's
100 templates x 50 variants) with scenarios from the paper's Tables 2-3.

snakemake.input.tables: the published Tables 2-3 (resources/published); snakemake.params: scenarios, templates, variants,
  odds_ratios, effects, gamma_sd, sims, resamples, alpha, seed, engine, cores;
snakemake.output.power / .mde: CSV tables (Markdown and LaTeX beside them), .png / .pdf: the
  power-curve figure; snakemake.log[0]: log file.
"""

import time
from pathlib import Path

from earnest.stats.plots_power import figure_power_curves
from earnest.joblog import job_logger
from earnest.gsm import power_design as D
from earnest.stats import power as P

log = job_logger(snakemake.log[0], "power_study")  # noqa: F821

try:
    p = snakemake.params  # noqa: F821
    published = Path(snakemake.input.tables[0]).parent  # noqa: F821
    scenarios = D.published_scenarios(published, list(p.scenarios))
    t0 = time.perf_counter()
    power = P.power_study(scenarios, p.templates, p.variants, p.odds_ratios, effects=list(p.effects), gamma_sd=float(p.gamma_sd),
                          n_sims=int(p.sims), n_resamples=int(p.resamples), alpha=float(p.alpha), seed=int(p.seed),
                          engine=str(p.engine), cores=int(p.cores), log=log.info)
    seconds = time.perf_counter() - t0
    mde = P.minimum_detectable_or(power)
    out = Path(snakemake.output.power).parent  # noqa: F821
    P.write_power_tables(power, mde, out)
    png = Path(snakemake.output.png)  # noqa: F821
    figure_power_curves(power, mde, png.parent / png.stem,
                        title="Power at the paper's design, scenarios from its Tables 2-3")
    log.info("%d fits in %.1f s (%.1f fits/s, engine %s)", power["fits"].sum(), seconds,
             power["fits"].sum() / max(seconds, 1e-9), p.engine)
except Exception:
    log.exception("the power study failed")
    raise
