"""StatFormBench data prep: validate the dataset and few-shot pool, resolve the taxonomy.

snakemake.input.dataset: local JSON/JSONL/Parquet in the released format (config statform.dataset);
snakemake.input.pool: few-shot pool file, disjoint from the dataset (config statform.fewshot_pool);
snakemake.params.taxonomy: taxonomy YAML/JSON path or "" (labels then come from the data only);
snakemake.params.limit: keep the first n samples (0 or None: all);
snakemake.output.samples, snakemake.output.pool: parquet tables (earnest.statform.data.SAMPLE_COLUMNS);
snakemake.output.taxonomy: resolved taxonomy YAML; snakemake.log[0]: log file.
"""

import logging

from earnest.statform.pipeline import prepare_data

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO,  # noqa: F821
                    format="%(asctime)s %(levelname)s %(message)s", force=True)
try:
    sm = snakemake  # noqa: F821
    counts = prepare_data(sm.input.dataset, sm.input.pool, sm.params.taxonomy or None, sm.output.samples,
                          sm.output.pool, sm.output.taxonomy, limit=sm.params.get("limit") or None)
    logging.info("prepared %s", counts)
except Exception:
    logging.exception("statform data prep failed")
    raise
