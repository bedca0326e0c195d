"""One language's items of one dataset (earnest.gsm.datasets.checked_language_items), its report and
the items that failed their check (earnest.gsm.item_validation).

wildcards.language, wildcards.dataset (gsm_base | gsm_variants); snakemake.params.templates, variants
(N), seed, keep_invalid; snakemake.output.variants: the items parquet (Snakemake reserves the name
"items"), with the columns language and numbers besides the English ones; snakemake.output.report: TSV,
one row per template (numbers shared / own and why, the check); snakemake.output.excluded: TSV, one row
per item that failed its check (left out unless keep_invalid); snakemake.log[0].
"""
import time

from earnest.joblog import job_logger  # noqa: E402

log = job_logger(snakemake.log[0], "language_items")  # noqa: F821
from earnest.generation import write_parquet_atomic  # noqa: E402
from earnest.gsm.datasets import checked_language_items  # noqa: E402

sm = snakemake  # noqa: F821
t0 = time.time()
items, report, problems = checked_language_items(sm.wildcards.dataset, sm.wildcards.language, sm.params.templates,
                                                 int(sm.params.variants), int(sm.params.seed),
                                                 keep_invalid=bool(sm.params.keep_invalid))
for r in report[report.status != "ok"].itertuples():
    log.warning("template %d: %s", r.template_id, r.reason)
for r in report[report.numbers == "own"].itertuples():
    log.info("template %d draws its own numbers: %s", r.template_id, r.alignment)
for r in problems.itertuples():
    log.warning("%s %s: %s (%s)", r.item_id, "kept" if r.kept else "left out", r.reason, r.detail)
if items.empty:
    raise SystemExit(f"{sm.wildcards.language} {sm.wildcards.dataset}: no items")
report.to_csv(sm.output.report, sep="\t", index=False)
problems.to_csv(sm.output.excluded, sep="\t", index=False)
write_parquet_atomic(items, sm.output.variants)
log.info("%s %s: %d items, %d templates (%d with the English numbers), %d failed their check, in %.1f s",
         sm.wildcards.language, sm.wildcards.dataset, len(items), items.template_id.nunique(),
         int((report.numbers == "shared").sum()), len(problems), time.time() - t0)
