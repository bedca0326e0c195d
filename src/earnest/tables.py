"""The one table writer of the project: a DataFrame to CSV, Markdown and LaTeX, with a caption.

Every table the project publishes goes through :func:`write_table`. The CSV holds the raw values
(numbers stay numbers, so other tools can read them back); Markdown and LaTeX hold the display
form, made by optional per-column formatters, with optional bold cells (the papers bold P values
below alpha).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable, Mapping

import pandas as pd

Formatter = Callable[[object], str]

# LaTeX specials that must be escaped in cell text; order matters for the backslash.
_LATEX_ESCAPES = [
    ("\\", r"\textbackslash{}"),
    ("&", r"\&"),
    ("%", r"\%"),
    ("$", r"\$"),
    ("#", r"\#"),
    ("_", r"\_"),
    ("{", r"\{"),
    ("}", r"\}"),
    ("~", r"\textasciitilde{}"),
    ("^", r"\textasciicircum{}"),
]
# Unicode symbols the tables use, written as LaTeX commands so any engine typesets them.
_LATEX_SYMBOLS = {
    "‡": r"$\ddagger$",
    "±": r"$\pm$",
    "Δ": r"$\Delta$",
    "γ": r"$\gamma$",
    "✓": r"\checkmark{}",
    "✘": r"$\times$",
    "≤": r"$\leq$",
    "·": r"$\cdot$",
}


def default_format(value: object) -> str:
    """Display form of a cell without a formatter: NaN/None as an empty cell, floats with 3 decimals."""
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return f"{value:.3f}"
    return str(value)


def latex_escape(text: str) -> str:
    """Escape LaTeX specials in ``text`` and spell the tables' Unicode symbols as LaTeX."""
    for raw, escaped in _LATEX_ESCAPES:
        text = text.replace(raw, escaped)
    for symbol, command in _LATEX_SYMBOLS.items():
        text = text.replace(symbol, command)
    return text


def _markdown_escape(text: str) -> str:
    # a pipe would split the cell; newlines would end the row
    return text.replace("|", r"\|").replace("\n", " ")


def display_frame(df: pd.DataFrame, formatters: Mapping[str, Formatter] | None = None) -> pd.DataFrame:
    """Every cell of ``df`` as display text, using ``formatters[column]`` where given."""
    formatters = dict(formatters or {})
    unknown = set(formatters) - set(df.columns)
    if unknown:
        raise KeyError(f"formatters name columns the table does not have: {sorted(unknown)}")
    out = {}
    for col in df.columns:
        fmt = formatters.get(col, default_format)
        out[col] = [fmt(v) for v in df[col].tolist()]
    return pd.DataFrame(out, index=df.index, columns=df.columns)


def to_markdown(display: pd.DataFrame, caption: str, bold: pd.DataFrame | None = None) -> str:
    """A GitHub-flavoured Markdown table followed by its caption line."""
    header = [_markdown_escape(str(c)) for c in display.columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for cells in _body_cells(display, bold, _markdown_escape, lambda t: f"**{t}**"):
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"*{caption}*")
    return "\n".join(lines) + "\n"


def _body_cells(display: pd.DataFrame, bold: pd.DataFrame | None, escape, emphasise):
    """Each body row's cells, escaped, with the cells ``bold`` marks (and that are not empty) emphasised."""
    for r in range(len(display)):
        cells = []
        for c, col in enumerate(display.columns):
            text = escape(display.iat[r, c])
            if bold is not None and text and bool(bold[col].iat[r]):
                text = emphasise(text)
            cells.append(text)
        yield cells


def to_latex(display: pd.DataFrame, caption: str, label: str | None = None,
             bold: pd.DataFrame | None = None) -> str:
    """A booktabs ``table`` environment with the caption below, first column left-aligned."""
    ncol = len(display.columns)
    align = "l" + "r" * (ncol - 1)
    lines = [r"\begin{table}[ht]", r"\centering", rf"\begin{{tabular}}{{{align}}}", r"\toprule"]
    lines.append(" & ".join(latex_escape(str(c)) for c in display.columns) + r" \\")
    lines.append(r"\midrule")
    for cells in _body_cells(display, bold, latex_escape, lambda t: rf"\textbf{{{t}}}"):
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", rf"\caption{{{latex_escape(caption)}}}"]
    if label:
        lines.append(rf"\label{{{label}}}")
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


def write_table(df: pd.DataFrame, stem: str | Path, caption: str, *,
                formatters: Mapping[str, Formatter] | None = None,
                bold: pd.DataFrame | None = None,
                label: str | None = None,
                csv: pd.DataFrame | None = None) -> dict[str, Path]:
    """Write ``df`` as ``stem.csv``, ``stem.md`` and ``stem.tex``; return the three paths by suffix.

    ``formatters`` maps a column to a function giving its display text (Markdown, LaTeX);
    ``bold`` is a boolean frame shaped like ``df`` marking cells to set in bold;
    ``csv`` replaces ``df`` in the CSV where the display cells combine several numbers
    (the CSV then carries them as separate raw columns). The caption heads nothing in the CSV
    (it would break readers); it is the Markdown's last line and the LaTeX ``\\caption``.
    """
    if not caption or not caption.strip():
        raise ValueError(f"table {stem}: a caption is required")
    if bold is not None and (list(bold.columns) != list(df.columns) or len(bold) != len(df)):
        raise ValueError(f"table {stem}: the bold mask must have the table's shape and columns")
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    # appended, not with_suffix: stems like "table_14.glmm2" carry dots of their own
    paths = {ext: stem.parent / f"{stem.name}.{ext}" for ext in ("csv", "md", "tex")}
    (csv if csv is not None else df).to_csv(paths["csv"], index=False)
    display = display_frame(df, formatters)
    paths["md"].write_text(to_markdown(display, caption, bold), encoding="utf-8")
    paths["tex"].write_text(to_latex(display, caption, label, bold), encoding="utf-8")
    return paths


# ---------------------------------------------------------------- reading results tables back
class TableColumnError(ValueError):
    """A results table lacks columns a figure or comparison needs."""


def require_columns(df: pd.DataFrame, columns, source: str) -> pd.DataFrame:
    """``df`` unchanged when it has every column in ``columns``; else TableColumnError naming
    ``source`` (the file) and the missing columns."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise TableColumnError(f"{source}: missing column(s) {', '.join(missing)} "
                               f"(has: {', '.join(map(str, df.columns))})")
    return df


def read_table(path: str | Path, columns=()) -> pd.DataFrame:
    """Read a CSV or Parquet results table and check it has ``columns`` (clear error otherwise)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: results table not found")
    if path.suffix == ".parquet":
        df = pd.read_parquet(path)
    elif path.suffix == ".csv":
        # model and prompt names such as "1" or "NA" stay text
        df = pd.read_csv(path, dtype={"model": str, "prompt": str, "error_class": str, "prompt_label": str},
                         keep_default_na=False, na_values=[""])
    else:
        raise ValueError(f"{path}: unknown table format (expected .csv or .parquet)")
    return require_columns(df, columns, str(path))
