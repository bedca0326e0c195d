"""Draw a GLMM figure of the GSM-Symbolic re-evaluation from the bootstrap summaries table.

snakemake.input.tables: the statistics tables directory (``summaries.csv`` inside) or the CSV itself;
snakemake.params.figure: "variant_effect" (Figure 1 layout, one prompt: params.prompt),
  "prompts" (Figure 2) or "number_effect" (Figure 3), the latter two over params.prompts;
snakemake.params: alpha (default 0.05), models (display order, optional), prompt_labels (optional
  dict), ex2_prompts (Figures 2-3: the models shown are those with results on these prompts);
snakemake.output.png / .pdf: the figure (same stem); snakemake.log[0]: log file.
"""

import logging
from pathlib import Path

from earnest import plots

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO,  # noqa: F821
                    format="%(asctime)s %(levelname)s %(message)s", force=True)
log = logging.getLogger("figures")

try:
    p = snakemake.params  # noqa: F821
    png = Path(snakemake.output.png)  # noqa: F821
    stem = png.parent / png.stem
    summaries = plots.read_summaries(snakemake.input.tables)  # noqa: F821
    alpha = float(p.get("alpha", plots.ALPHA))
    models = list(p.get("models", []) or []) or None
    labels = dict(p.get("prompt_labels", {}) or {})
    figure = p.figure
    if figure == "variant_effect":
        paths = plots.figure_variant_effect(summaries, str(p.prompt), stem, models=models, alpha=alpha,
                                            prompt_label=labels.get(str(p.prompt)))
    elif figure in ("prompts", "number_effect"):
        prompts = [str(x) for x in p.prompts]
        shown = plots.ex2_models(summaries, list(p.get("ex2_prompts", []) or prompts[1:]), models)
        draw = plots.figure_prompt_comparison if figure == "prompts" else plots.figure_number_effect
        paths = draw(summaries, prompts, stem, models=shown, alpha=alpha, prompt_labels=labels)
    else:
        raise ValueError(f"params.figure must be variant_effect, prompts or number_effect, not {figure!r}")
    log.info("wrote %s", ", ".join(map(str, paths)))
except Exception:
    log.exception("drawing the figure failed")
    raise
