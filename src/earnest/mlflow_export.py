"""A finished run's tables and figures logged to MLflow as one MLflow run (optional; the workflow's
``mlflow:`` config section, off by default).

What is logged: the run's config as parameters (flattened keys, MLflow's 6,000-character value cap
noted where a value is cut) and as the artifact ``config.yaml``; every table and figure as an artifact at its
path below ``results/`` (``tables/ks.csv``, ``figures/fig8_integers.png``); the summaries
table's numbers (odds ratio, its interval, Holm P value, the two accuracies) as metrics named
``<analysis>.glmm<g>.<model>.<prompt>.<term>.<column>``. Nothing is computed here: every number is
the summaries table's.

The tracking URI is the user's: a folder (``file:`` URI or a plain path) is MLflow's file store,
which MLflow 3 keeps only on request (``MLFLOW_ALLOW_FILE_STORE``, set here for such a URI);
``http(s)://`` is a tracking server. The ``mlflow-skinny`` package (requirements.txt) is enough
for both; a database URI (``sqlite:///...``) needs the full ``mlflow`` package.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Iterable

import pandas as pd

#: the summaries columns logged as metrics (CONTRACTS.md, "summaries table")
METRIC_COLUMNS = ("odds_ratio", "ci_low", "ci_high", "p_boot", "p_holm", "acc_base", "acc_variants")
MAX_PARAM_CHARS = 6000   # MLflow's cap on a parameter's value
_KEY_BAD = re.compile(r"[^A-Za-z0-9_\-. /]")


class MlflowExportError(ValueError):
    """A run that cannot be logged (the message names the file or setting and the fix)."""


def tracking_uri(uri: str, base: str | Path = ".") -> str:
    """``uri`` as MLflow takes it: a plain path (relative to ``base``) becomes a ``file:`` URI."""
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", uri) or uri.startswith("file:"):
        return uri
    return (Path(base) / uri).resolve().as_uri()


def _flatten(d: dict, prefix: str = "") -> dict[str, str]:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(_flatten(v, key + "."))
        else:
            text = str(v)
            out[_KEY_BAD.sub("_", key)] = text if len(text) <= MAX_PARAM_CHARS else text[:MAX_PARAM_CHARS - 12] + " [truncated]"
    return out


def summary_metrics(summaries: pd.DataFrame) -> dict[str, float]:
    """The summaries table's numbers as MLflow metrics (finite values only)."""
    out = {}
    for r in summaries.to_dict("records"):
        stem = f"{r['analysis']}.glmm{r['glmm']}.{r['model']}.{r['prompt']}.{r['term']}"
        for c in METRIC_COLUMNS:
            v = r.get(c)
            if v is not None and isinstance(v, (int, float)) and math.isfinite(v):
                out[_KEY_BAD.sub("_", f"{stem}.{c}")] = float(v)
    return out


def log_run(uri: str, experiment: str, run_name: str, *, config: dict, config_text: str,
            tables: Iterable[str | Path], figures: Iterable[str | Path], summaries: str | Path | None = None,
            results_dir: str | Path = "results") -> str:
    """Log one run (see the module docstring); returns the MLflow run id."""
    try:
        import mlflow
    except ImportError:
        raise MlflowExportError("mlflow: logging is on (config mlflow.enabled) but the mlflow package is not "
                                "installed; pip install mlflow-skinny (requirements.txt), or set "
                                "mlflow.enabled: false") from None
    if uri.startswith("file:"):   # the user chose a folder: MLflow 3 asks for this opt-in
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    results_dir = Path(results_dir)
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(experiment)

    def artifact_dir(p: Path) -> str | None:
        """Where ``p`` goes in the run: its folder below ``results_dir`` (None: the run's root)."""
        parent = p.parent.resolve()
        root = results_dir.resolve()
        return str(parent.relative_to(root)) if parent.is_relative_to(root) and parent != root else None

    with mlflow.start_run(run_name=run_name) as run:
        params = _flatten(config)
        items = sorted(params.items())
        for i in range(0, len(items), 100):   # MLflow takes at most 100 parameters a call
            mlflow.log_params(dict(items[i:i + 100]))
        mlflow.log_text(config_text, "config.yaml")
        for p in [*map(Path, tables), *map(Path, figures)]:
            if not p.exists():
                raise MlflowExportError(f"{p}: no such table or figure to log (a target of the run that is missing)")
            if p.is_dir():
                mlflow.log_artifacts(str(p), str(p.resolve().relative_to(results_dir.resolve()))
                                     if p.resolve().is_relative_to(results_dir.resolve()) else p.name)
            else:
                mlflow.log_artifact(str(p), artifact_dir(p))
        if summaries is not None:
            metrics = summary_metrics(pd.read_parquet(summaries))
            if metrics:
                mlflow.log_metrics(metrics)
        return run.info.run_id
