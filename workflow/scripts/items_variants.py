"""GSM-Variants instances of one template, drawn from a per-template seed by the package's
generator or earnest.gsm.instantiate (snakemake.params.instantiator: package | earnest).

wildcards.template; snakemake.params.variants (N), snakemake.params.seed (base seed);
snakemake.output[0]: items parquet of that template; snakemake.log[0].
"""
import time

from earnest.joblog import job_logger  # noqa: E402

log = job_logger(snakemake.log[0], "items_variants")  # noqa: F821
from earnest.gsm.datasets import package_variant_items  # noqa: E402
from earnest.generation import write_parquet_atomic  # noqa: E402

t0 = time.time()
tid = int(snakemake.wildcards.template)  # noqa: F821
items = package_variant_items(tid, int(snakemake.params.variants), int(snakemake.params.seed),  # noqa: F821
                              instantiator=snakemake.params.instantiator)  # noqa: F821
write_parquet_atomic(items, snakemake.output[0])  # noqa: F821
log.info("template %d: %d variants in %.1f s", tid, len(items), time.time() - t0)
