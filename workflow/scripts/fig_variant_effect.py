"""Figure 1 (and Figures 4-7): the variant effect of GLMM 1 for one prompt, from the summaries table
(earnest.gsm.plots.figure_variant_effect).

snakemake.input.summaries: results/stats/summaries.parquet; snakemake.wildcards.prompt;
snakemake.params.models: display order; snakemake.output.png / .pdf (same stem); snakemake.log[0].
"""

from pathlib import Path

from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "fig_variant_effect")  # noqa: F821

from earnest.gsm import plots  # noqa: E402
from earnest.stats.summaries import read_summaries  # noqa: E402

try:
    sm = snakemake  # noqa: F821
    png = Path(sm.output.png)
    paths = plots.figure_variant_effect(read_summaries(sm.input.summaries), sm.wildcards.prompt,
                                        png.parent / png.stem, models=list(sm.params.models))
    log.info("wrote %s", ", ".join(map(str, paths)))
except Exception:
    log.exception("drawing the figure failed")
    raise
