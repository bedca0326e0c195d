"""A number-controlled variant set (gsm_matched, gsm_shifted<k>) and its per-template report.

wildcards.cset; snakemake.params.templates, variants (N), seed, window, balance;
snakemake.output.variants: items parquet; snakemake.output.report: TSV (one row per template);
snakemake.log[0].
"""
import time

from earnest.joblog import job_logger  # noqa: E402

log = job_logger(snakemake.log[0], "items_controlled")  # noqa: F821
from earnest.gsm.datasets import controlled_variant_items  # noqa: E402
from earnest.generation import write_parquet_atomic  # noqa: E402

sm = snakemake  # noqa: F821
t0 = time.time()
items, report = controlled_variant_items(sm.wildcards.cset, sm.params.templates, int(sm.params.variants),
                                         int(sm.params.seed), window=float(sm.params.window),
                                         balance=int(sm.params.balance))
bad = report[report.status != "ok"]
for r in bad.itertuples():
    log.warning("template %d not in %s: %s", r.template_id, sm.wildcards.cset, r.reason)
if items.empty:
    raise SystemExit(f"{sm.wildcards.cset}: no template can be matched ({len(bad)} reported in the log)")
report.to_csv(sm.output.report, sep="\t", index=False)
write_parquet_atomic(items, sm.output.variants)
log.info("%s: %d items from %d templates (%d unmatchable) in %.1f s", sm.wildcards.cset, len(items),
         items.template_id.nunique(), len(bad), time.time() - t0)
