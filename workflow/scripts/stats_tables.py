"""Write every statistics table across models and prompts (Tables 2, 3, 6-23 of the GSM-Symbolic
re-evaluation) as CSV, Markdown and LaTeX, plus the combined summary.

snakemake.input.summaries: summary parquets (all GLMMs, models, prompts, analyses);
snakemake.input.refits: optimiser-refit parquets (optional); snakemake.input.glmm_inputs: GLMM
  input parquets of the all-errors analysis (optional; for the separation check, Table 19);
snakemake.params: models (display order), prompts (display order), prompt_labels (optional dict
  prompt -> label), code_prompts (prompts with a reasoning-only analysis), alpha (default 0.05);
snakemake.output[0]: directory of tables (summaries.csv inside); snakemake.log[0]: log file.
"""

import logging
from pathlib import Path

import pandas as pd

from earnest.stats.diagnostics import fit_problems
from earnest.stats.paper_tables import write_stats_tables

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO,  # noqa: F821
                    format="%(asctime)s %(levelname)s %(message)s", force=True)
log = logging.getLogger("stats_tables")


def _paths(name):
    value = snakemake.input.get(name, [])  # noqa: F821
    return [value] if isinstance(value, str) else list(value)


def _concat(paths):
    frames = [pd.read_parquet(p) for p in paths]
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


try:
    p = snakemake.params  # noqa: F821
    out = Path(snakemake.output[0])  # noqa: F821
    out.mkdir(parents=True, exist_ok=True)
    summaries = _concat(_paths("summaries"))
    refits = _concat(_paths("refits"))
    inputs = _concat(_paths("glmm_inputs"))
    if len(summaries):  # the figures mark what the tables mark
        summaries["fit_verdict"] = [fit_problems(r)[0] for _, r in summaries.iterrows()]
        summaries["degenerate"] = summaries["fit_verdict"] == "degenerate"
    summaries.to_csv(out / "summaries.csv", index=False)
    written = write_stats_tables(
        summaries, out, refits=refits if len(refits) else None, glmm_input=inputs if len(inputs) else None,
        models=list(p.get("models", []) or []), prompts=list(p.get("prompts", []) or []),
        prompt_labels=dict(p.get("prompt_labels", {}) or {}), code_prompts=list(p.get("code_prompts", []) or []),
        alpha=float(p.get("alpha", 0.05)))
    log.info("wrote %d table files to %s", len(written), out)
except Exception:
    log.exception("writing the statistics tables failed")
    raise
