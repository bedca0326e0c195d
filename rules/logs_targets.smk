# Optional logging (rules/logs.smk): the Inspect logs of the answers and the MLflow run.

INSPECT_DIR = "results/inspect"
MLFLOW_RECORD = "results/mlflow/run.json"


def inspect_log_targets():
    """One Inspect log per model x prompt x dataset of Ex1 and Ex2 (config inspect_logs.enabled)."""
    if not config["inspect_logs"]["enabled"]:
        return []
    return [f"{INSPECT_DIR}/{m}/{p}/{d}.eval" for m, p in model_prompts() for d in DATASETS]


def mlflow_inputs(wildcards=None):
    """Every table and figure of the run (the targets of rule all, less the generations and the
    Inspect logs, which are answers, not results)."""
    answers = {gen_path(m, p, d) for m, p in model_prompts() for d in DATASETS}
    answers |= set(inspect_log_targets())
    return [t for t in run_targets() if t not in answers]


def mlflow_targets():
    return [MLFLOW_RECORD] if config["mlflow"]["enabled"] else []
