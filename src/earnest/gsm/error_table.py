"""The error-class count table (Appendix F of the GSM-Symbolic re-evaluation): how many answers of
each model, prompt and dataset ended in each failure class (:mod:`earnest.gsm.failure_classes`), built
from the scored tables and written with :func:`earnest.tables.write_table`. Figures 9-11
(:func:`earnest.gsm.plots.figure_error_classes`) are drawn from it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import pandas as pd

from earnest.gsm import failure_classes as fc
from earnest.gsm.datasets import DATASET_LABELS
from earnest.fidelity import EARNEST
from earnest.tables import require_columns

#: Columns of the error-class count table.
ERROR_TABLE_COLUMNS = ("model", "prompt", "prompt_label", "style", "dataset", "error_class", "label", "count",
                       "n_responses", "percent_of_responses")


def error_class_table(scored: pd.DataFrame, styles: Mapping[str, str], *,
                      prompt_labels: Mapping[str, str] | None = None, fidelity: str = EARNEST,
                      source: str = "scored tables") -> pd.DataFrame:
    """Counts of each failure class per model, prompt and dataset from the scored tables.

    ``scored`` needs model, prompt, dataset, error_class (CONTRACTS.md; "" = correct);
    ``styles`` maps each prompt to ``text`` or ``code`` and, with ``fidelity``, decides which
    classes are listed (:func:`earnest.gsm.failure_classes.classes`; zero counts where absent, so
    every figure row has the same classes; a class outside that list, if the scorer ever writes
    one, is kept too). ``prompt_labels``: prompt -> label (formats.yaml). Correct answers count in
    ``n_responses`` only. Columns: :data:`ERROR_TABLE_COLUMNS`.
    """
    require_columns(scored, ("model", "prompt", "dataset", "error_class"), source)
    labels = dict(prompt_labels or {})
    df = scored[["model", "prompt", "dataset", "error_class"]].copy()
    for c in ("model", "prompt", "dataset"):
        df[c] = df[c].astype(str)
    df["error_class"] = df["error_class"].fillna("").astype(str)
    unknown = sorted(set(df["prompt"]) - set(styles))
    if unknown:
        raise ValueError(f"{source}: prompt(s) {unknown} have no answer style (known: {sorted(styles)})")
    rows = []
    for (model, prompt, dataset), g in df.groupby(["model", "prompt", "dataset"], sort=False):
        style = styles[prompt]
        # an answer the machine failed to run is listed only where one was (the order puts it last)
        listed = [c for c in fc.classes(style, fidelity) if c != fc.INFRASTRUCTURE_ERROR]
        counts = g.loc[g["error_class"] != fc.CORRECT, "error_class"].value_counts()
        order = list(listed) + sorted(set(counts.index) - set(listed))
        n = len(g)
        for cls in order:
            cnt = int(counts.get(cls, 0))
            rows.append({"model": model, "prompt": prompt, "prompt_label": labels.get(prompt) or prompt,
                         "style": style, "dataset": dataset, "error_class": cls, "label": fc.label(cls),
                         "count": cnt, "n_responses": n,
                         "percent_of_responses": 100.0 * cnt / n if n else float("nan")})
    return pd.DataFrame(rows, columns=list(ERROR_TABLE_COLUMNS))


def write_error_class_table(table: pd.DataFrame, stem: str | Path) -> dict[str, Path]:
    """Write the error-class counts with :func:`earnest.tables.write_table` (CSV raw, MD/LaTeX
    with only the non-zero rows shown wide: one row per model x prompt x dataset, one column per class)."""
    from earnest.tables import write_table

    caption = ("Counts of error classes (Appendix F of the GSM-Symbolic re-evaluation) per model, prompt "
               "format and dataset, from the scored answers; 'Wrong answer' is an extracted but incorrect "
               "number, the other classes are failures to produce a number. N = responses scored.")
    if table.empty:
        display = pd.DataFrame({"Model": [], "Prompt": [], "Dataset": [], "N": []})
        return write_table(display, stem, caption + " (No scored answers in this run.)", csv=table)
    # a class outside a prompt's style (a code error for a text prompt) stays an empty cell
    wide = table.pivot_table(index=["model", "prompt_label", "dataset", "n_responses"], columns="label",
                             values="count", aggfunc="sum", sort=False)
    order = [fc.LABELS[c] for c in fc.FAILURE_CLASSES if fc.LABELS[c] in wide.columns]
    order += [c for c in wide.columns if c not in order]
    wide = wide[order]
    keep = [c for c in wide.columns if (wide[c].fillna(0) != 0).any()] or order[:1]
    errors = wide.fillna(0).sum(axis=1)
    wide = wide[keep].reset_index()
    display = pd.DataFrame({"Model": wide["model"], "Prompt": wide["prompt_label"],
                            "Dataset": [DATASET_LABELS.get(d, d) for d in wide["dataset"]],
                            "N": wide["n_responses"].astype(int),
                            "Correct": (wide["n_responses"] - errors.to_numpy()).astype(int)})
    for c in keep:
        display[c] = ["" if pd.isna(v) else str(int(v)) for v in wide[c]]
    return write_table(display, stem, caption + " Empty cells: the class does not apply to the prompt's "
                       "answer style.", csv=table)
