"""StatFormBench data prep: validate the dataset and few-shot pool, resolve the taxonomy.

snakemake.input.dataset: local JSON/JSONL/Parquet in the released format (config statform.dataset);
snakemake.input.pool: few-shot pool file, disjoint from the dataset (config statform.fewshot_pool);
snakemake.input.taxonomy: the taxonomy YAML/JSON (config statform.taxonomy), or none: labels then come
  from the data only;
snakemake.params.limit: a seeded sample of n, stratified by source and category (0 or None: all);
snakemake.params.seed: its seed (statform.seed);
snakemake.output.samples, snakemake.output.pool: parquet tables (earnest.statform.data.SAMPLE_COLUMNS);
snakemake.output.taxonomy: resolved taxonomy YAML; snakemake.log[0]: log file.
"""

from earnest.statform.pipeline import prepare_data
from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "statform_data")  # noqa: F821

try:
    sm = snakemake  # noqa: F821
    taxonomy = sm.input.taxonomy
    taxonomy = taxonomy if isinstance(taxonomy, str) else next(iter(taxonomy), None)
    counts = prepare_data(sm.input.dataset, sm.input.pool, taxonomy, sm.output.samples,
                          sm.output.pool, sm.output.taxonomy, limit=sm.params.limit or None, seed=int(sm.params.seed))
    log.info("prepared %s", counts)
except Exception:
    log.exception("statform data prep failed")
    raise
