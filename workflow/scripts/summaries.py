"""The summaries table (earnest.stats.summaries): every per-group bootstrap summary in one table,
with Holm-Bonferroni P values, fit verdicts, significance, the Wald disagreement, prompt labels
and Ex2 membership. Rules summaries (all rows) and ex1_summaries (the Ex1 rows, for the checkpoint).

snakemake.input.summaries: per-group summary parquets (rule glmm_summary);
snakemake.params: prompt_labels (prompt -> label), alpha, ex2_models (list);
snakemake.output[0]: the summaries table (parquet); snakemake.log[0]: log file.
"""

from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "summaries")  # noqa: F821

from earnest.stats.summaries import build_summaries, read_summary_files, write_summaries  # noqa: E402

try:
    sm = snakemake  # noqa: F821
    paths = [sm.input.summaries] if isinstance(sm.input.summaries, str) else list(sm.input.summaries)
    table = build_summaries(read_summary_files(paths), dict(sm.params.prompt_labels), alpha=float(sm.params.alpha),
                            ex2_models=list(sm.params.ex2_models), source=f"{len(paths)} summary files")
    write_summaries(table, sm.output[0])
    log.info("%d rows from %d summary files: %d significant (uncorrected), %d degenerate, %d Wald mismatches",
             len(table), len(paths), int(table["significant_uncorrected"].sum()), int(table["degenerate"].sum()),
             int(table["wald_mismatch"].sum()))
except Exception:
    log.exception("building the summaries table failed")
    raise
