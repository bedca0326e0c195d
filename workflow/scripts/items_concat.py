"""GSM-Variants: join the per-template variant files.

snakemake.input: per-template items parquets; snakemake.output[0]: items parquet; snakemake.log[0].
"""

import pandas as pd

from earnest.joblog import job_logger  # noqa: E402

log = job_logger(snakemake.log[0], "items_concat")  # noqa: F821
from earnest.gsm.datasets import concat_items  # noqa: E402
from earnest.generation import write_parquet_atomic  # noqa: E402

items = concat_items([pd.read_parquet(p) for p in snakemake.input])  # noqa: F821
write_parquet_atomic(items, snakemake.output[0])  # noqa: F821
log.info("GSM-Variants: %d items from %d templates", len(items), items.template_id.nunique())
