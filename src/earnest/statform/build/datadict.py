"""The deterministic data dictionary of a case-library project (paper Appendix A.2).

Each tabular file is read with pandas into a summary: shape, column names, dtypes, per-column
descriptive statistics, missing-value counts and a five-row preview. The preview's values are
simulated, never copied: the paper asked an LLM for rows that keep each field's type, range and
distribution; we draw them from a seeded statistical simulation of each column's summary, so the
dictionary is reproducible and no raw row reaches the benchmark:

* numeric columns: normal draws with the column's mean and standard deviation, clipped to its
  [min, max] and rounded to the column's decimals (integer columns stay integers);
* boolean and low-cardinality columns (at most 20 levels or under half the rows distinct): levels
  drawn with their observed frequencies;
* datetimes: uniform between the first and last date;
* other text (names, free text, ids): placeholders ``<column>_<k>``;
* each cell missing with the column's missing rate.

Infinite values (``inf`` in a CSV, ``Infinity`` in JSON) are no part of a distribution: a numeric
column's statistics and simulated values come from its finite values, and ``infinite`` counts the
others (a column of infinities only has no statistics and a preview of ``null``).

The seed of each column is the SHA-256 of (seed, project, file, column), so adding a file or a
column changes no other column's preview.

The paper has the model write the preview rows; so does the induction stage
(:func:`model_previews`): before it asks for questions, the configured model (the induce stage's)
writes each table's rows from its summary (``build_prompts/preview.txt``; it never sees the data),
checked: five rows, exactly the table's columns, numbers within each column's [min, max]. A table
whose answer fails the check after the retries keeps the seeded simulation, labelled in its
``preview_source`` with the reason. The dictionary file itself (this module's
:func:`project_dictionary`) stays deterministic.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd

PREVIEW_ROWS = 5


def read_table(path: str | Path) -> pd.DataFrame:
    """A data file as a DataFrame (csv, tsv, json, jsonl, parquet, xlsx/xls with openpyxl/xlrd)."""
    path = Path(path)
    suf = path.suffix.lower()
    if suf == ".csv":
        return pd.read_csv(path)
    if suf == ".tsv":
        return pd.read_csv(path, sep="\t")
    if suf == ".jsonl":
        return pd.read_json(path, lines=True)
    if suf == ".json":
        obj = json.loads(path.read_text(encoding="utf-8"))
        return pd.json_normalize(obj) if isinstance(obj, list) else pd.DataFrame(obj)
    if suf == ".parquet":
        return pd.read_parquet(path)
    if suf in (".xlsx", ".xls"):
        return pd.read_excel(path)
    raise ValueError(f"{path}: not a tabular file this pipeline reads")


def _rng(seed: int, *parts: str) -> np.random.Generator:
    digest = hashlib.sha256("\x00".join([str(seed), *parts]).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "big"))


def _py(v):
    """A JSON-safe Python value."""
    if v is None:
        return None
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        return None if not np.isfinite(v) else round(float(v), 6)
    if isinstance(v, (np.bool_,)):
        return bool(v)
    if isinstance(v, pd.Timestamp):
        return v.isoformat()
    return v if isinstance(v, (int, str, bool)) else str(v)


def _decimals(values: pd.Series) -> int:
    best = 0
    for v in values.dropna().head(200):
        s = repr(float(v))
        if "e" in s:
            return 6
        best = max(best, len(s.split(".")[1].rstrip("0")) if "." in s else 0)
    return min(best, 6)


def column_summary(col: pd.Series) -> dict:
    """Descriptive statistics of one column (numeric: count, mean, std, min, quartiles, max; else count, unique, top, freq)."""
    out = {"dtype": str(col.dtype), "missing": int(col.isna().sum())}
    if pd.api.types.is_bool_dtype(col):
        vc = col.dropna().value_counts()
        out.update(count=int(col.notna().sum()), unique=int(vc.size), top=_py(vc.index[0]) if vc.size else None,
                   freq=int(vc.iloc[0]) if vc.size else 0)
    elif pd.api.types.is_numeric_dtype(col):
        finite = _finite(col)
        d = finite.describe()
        out.update({k: _py(d[k]) for k in ("count", "mean", "std", "min", "25%", "50%", "75%", "max") if k in d})
        out["count"] = int(col.notna().sum())
        n_inf = out["count"] - len(finite)
        if n_inf:
            out["infinite"] = n_inf
    elif pd.api.types.is_datetime64_any_dtype(col):
        out.update(count=int(col.notna().sum()), min=_py(col.min()), max=_py(col.max()))
    else:
        vc = col.dropna().astype(str).value_counts()
        out.update(count=int(col.notna().sum()), unique=int(vc.size), top=vc.index[0] if vc.size else None,
                   freq=int(vc.iloc[0]) if vc.size else 0)
    return out


def _finite(col: pd.Series) -> pd.Series:
    """The present, finite values of a numeric column, as floats."""
    x = col.dropna().astype(float)
    return x[np.isfinite(x.to_numpy())]


def simulate_column(col: pd.Series, name: str, rng: np.random.Generator, n: int = PREVIEW_ROWS) -> list:
    """``n`` simulated values for one column (see module doc)."""
    present = col.dropna()
    miss_rate = float(col.isna().mean()) if len(col) else 0.0
    if present.empty:
        return [None] * n
    if pd.api.types.is_bool_dtype(col) or (not pd.api.types.is_numeric_dtype(col) and
                                           not pd.api.types.is_datetime64_any_dtype(col) and
                                           (present.nunique() <= 20 or present.nunique() < 0.5 * len(present))):
        vc = present.astype(str if not pd.api.types.is_bool_dtype(col) else bool).value_counts(normalize=True)
        idx = rng.choice(len(vc), size=n, p=vc.to_numpy(dtype=float))
        values = [_py(vc.index[i]) for i in idx]
    elif pd.api.types.is_numeric_dtype(col):
        x = _finite(col)
        if x.empty:
            return [None] * n
        mean, sd = float(x.mean()), float(x.std(ddof=1)) if len(x) > 1 else 0.0
        draws = np.clip(rng.normal(mean, sd if np.isfinite(sd) else 0.0, size=n), x.min(), x.max())
        if pd.api.types.is_integer_dtype(col) or bool((x == x.round()).all()):
            values = [int(round(v)) for v in draws]
        else:
            dec = _decimals(x)
            values = [round(float(v), dec) for v in draws]
    elif pd.api.types.is_datetime64_any_dtype(col):
        lo, hi = present.min().value, present.max().value
        values = [pd.Timestamp(int(v)).isoformat() for v in rng.uniform(lo, hi, size=n)]
    else:
        values = [f"{name}_{int(k)}" for k in rng.integers(1, max(2, present.nunique()) + 1, size=n)]
    missing = rng.random(n) < miss_rate
    return [None if m else v for v, m in zip(values, missing)]


def table_dictionary(df: pd.DataFrame, file_label: str, project: str, seed: int) -> dict:
    """The dictionary of one table: shape, columns, dtypes, statistics, missing counts, simulated preview."""
    columns = [str(c) for c in df.columns]
    preview_cols = {c: simulate_column(df[orig], c, _rng(seed, project, file_label, c))
                    for c, orig in zip(columns, df.columns)}
    preview = [{c: preview_cols[c][i] for c in columns} for i in range(PREVIEW_ROWS)]
    return {"file": file_label, "shape": [int(df.shape[0]), int(df.shape[1])], "columns": columns,
            "dtypes": {c: str(df[o].dtype) for c, o in zip(columns, df.columns)},
            "statistics": {c: column_summary(df[o]) for c, o in zip(columns, df.columns)},
            "missing": {c: int(df[o].isna().sum()) for c, o in zip(columns, df.columns)},
            "preview_simulated": preview}


def project_dictionary(project: str, project_dir: str | Path, files: list[str], seed: int) -> dict:
    """Every readable table of a project; unreadable files are listed with the reason, not dropped."""
    project_dir = Path(project_dir)
    tables, skipped = [], []
    for f in files:
        label = str(Path(f).resolve().relative_to(project_dir.resolve()))
        try:
            df = read_table(f)
        except Exception as exc:  # noqa: BLE001 - any reader error: record it, go on with the others
            skipped.append({"file": label, "reason": f"{type(exc).__name__}: {exc}"[:300]})
            continue
        tables.append(table_dictionary(df, label, project, seed))
    return {"project": project, "tables": tables, "skipped": skipped}


def _preview_checker(table: dict):
    """The validator of one table's model-written preview (see module doc)."""
    from .llm import InvalidAnswer

    columns = table["columns"]
    bounds = {}
    for c in columns:
        st = table["statistics"].get(c, {})
        lo, hi = st.get("min"), st.get("max")
        if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and not isinstance(lo, bool):
            bounds[c] = (float(lo), float(hi))

    def check(obj: dict) -> list[dict]:
        rows = obj.get("rows")
        if not isinstance(rows, list) or len(rows) != PREVIEW_ROWS:
            raise InvalidAnswer(f"'rows' must be a list of exactly {PREVIEW_ROWS} row objects")
        out = []
        for i, row in enumerate(rows):
            if not isinstance(row, dict) or set(row) != set(columns):
                raise InvalidAnswer(f"row {i + 1} must have exactly the columns {columns}")
            for c in columns:
                v = row[c]
                if v is not None and not isinstance(v, (str, int, float, bool)):
                    raise InvalidAnswer(f"row {i + 1}, column {c!r}: a value must be a number, text, true/false or null")
                if c in bounds and v is not None:
                    lo, hi = bounds[c]
                    if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
                        raise InvalidAnswer(f"row {i + 1}, column {c!r}: {v!r} is not a number in [{lo:g}, {hi:g}]")
            out.append({c: row[c] for c in columns})
        return out

    return check


def model_previews(dictionary: dict, cfg) -> dict:
    """``dictionary`` with each table's ``preview`` written by the model of ``cfg`` (a
    :class:`~earnest.statform.build.stages.StageConfig`), or the seeded simulation where the model's
    answer stayed unusable, and ``preview_source`` saying which (module doc)."""
    from .llm import JsonTask, raise_transport_errors

    out = json.loads(json.dumps(dictionary))
    tasks = []
    for t in out["tables"]:
        summary = {k: t[k] for k in ("file", "shape", "columns", "dtypes", "statistics", "missing")}
        tasks.append(JsonTask(f"{out['project']}/preview/{t['file']}",
                              [{"role": "system", "content": cfg.prompts.render("preview", n_rows=PREVIEW_ROWS)},
                               {"role": "user", "content": json.dumps(summary, ensure_ascii=False, indent=1)}],
                              _preview_checker(t)))
    outcomes = cfg.ask(tasks) if tasks else {}
    raise_transport_errors(outcomes, "preview", f"project {out['project']}")
    for t, task in zip(out["tables"], tasks):
        oc = outcomes[task.key]
        simulated = t.pop("preview_simulated")
        if oc.ok:
            t["preview"], t["preview_source"] = oc.value, "written by the model from the table's summary"
        else:
            t["preview"] = simulated
            t["preview_source"] = f"simulated (seeded fallback; the model's rows were unusable: {oc.error})"
    return out
