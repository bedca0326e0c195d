"""GSM-Base or GSM-Variants from the official GSM-Symbolic release (JSONL).

snakemake.input[0]: the release file; wildcards.dataset; snakemake.params.templates, variants (N);
snakemake.output[0]: items parquet; snakemake.log[0].
"""

from earnest.joblog import job_logger  # noqa: E402

log = job_logger(snakemake.log[0], "items_release")  # noqa: F821
from earnest.gsm.datasets import read_release_jsonl, release_items  # noqa: E402
from earnest.generation import write_parquet_atomic  # noqa: E402

records = read_release_jsonl(snakemake.input[0])  # noqa: F821
items = release_items(records, snakemake.wildcards.dataset, snakemake.params.templates,  # noqa: F821
                      snakemake.params.variants)  # noqa: F821
write_parquet_atomic(items, snakemake.output[0])  # noqa: F821
log.info("%s: %d items from %s", snakemake.wildcards.dataset, len(items), snakemake.input[0])  # noqa: F821
