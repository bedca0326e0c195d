"""The run's tables, figures, config and headline numbers logged as one MLflow run
(earnest.mlflow_export).

snakemake.input.results: every table and figure of the run; snakemake.input.summaries: the summaries
table (its numbers become metrics); snakemake.params.settings: config mlflow (tracking_uri, experiment,
run_name); snakemake.params.config: the run's config (parameters and config.yaml);
snakemake.output[0]: JSON naming the MLflow run (tracking_uri, experiment, run_id); snakemake.log[0]: log file.
"""

import json

import yaml

from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "mlflow_log")  # noqa: F821

from earnest.mlflow_export import log_run, tracking_uri  # noqa: E402

sm = snakemake  # noqa: F821
settings = sm.params.settings
files = [str(p) for p in sm.input.results]
figures = [p for p in files if p.endswith((".png", ".svg", ".pdf"))]
tables = [p for p in files if p not in figures]
uri = tracking_uri(settings["tracking_uri"])
config = dict(sm.params.config)
run_id = log_run(uri, settings["experiment"], settings["run_name"] or None, config=config,
                 config_text=yaml.safe_dump(config, sort_keys=False), tables=tables, figures=figures,
                 summaries=sm.input.summaries)
log.info("MLflow run %s in experiment %r at %s: %d tables, %d figures", run_id, settings["experiment"], uri,
         len(tables), len(figures))
with open(sm.output[0], "w") as fh:
    json.dump({"tracking_uri": uri, "experiment": settings["experiment"], "run_id": run_id}, fh, indent=1)
