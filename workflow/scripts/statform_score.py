"""StatFormBench parse + score: the six per-sample metrics for one generations table.

snakemake.input.generations: generations parquet (one or a list);
snakemake.input.samples, snakemake.input.taxonomy: outputs of statform_data;
snakemake.params.fidelity: whose rules the metric columns follow (both are kept, reference_* and earnest_*);
snakemake.params.max_chars: the longest answer read (statform.max_answer_chars);
snakemake.output[0]: scored parquet (generation columns + source, category_cg, category_fg,
  parse_status, n_malformed_variables, pred_category, pred_cg, pred_fg, correct_cg, correct_fg,
  n_pred, n_ref, n_matched, n_role_correct, jcv, pv, rv, vri); snakemake.log[0]: log file.
"""

from earnest.statform.pipeline import score
from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "statform_score")  # noqa: F821

try:
    sm = snakemake  # noqa: F821
    gens = sm.input.generations
    scored = score(gens if isinstance(gens, str) else list(gens), sm.input.samples, sm.input.taxonomy, sm.output[0],
                   fidelity=sm.params.fidelity, max_chars=int(sm.params.max_chars))
    log.info("scored %d rows; parse status %s", len(scored), scored["parse_status"].value_counts().to_dict())
except Exception:
    log.exception("statform scoring failed")
    raise
