"""The one table writer of the project: a DataFrame to CSV, Markdown, LaTeX and HTML, with a caption.

Every table the project publishes goes through :func:`write_table`. The CSV holds the raw values
(numbers stay numbers, so other tools can read them back); Markdown, LaTeX and HTML hold the display
form, made by optional per-column formatters, with optional bold cells (the papers bold P values
below alpha). The HTML page is what ``snakemake --report`` shows: one self-contained file (no
network, a few lines of script of its own) whose columns sort by a click on their header and whose
rows a filter box narrows.
"""

from __future__ import annotations

import html
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


_HTML_STYLE = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1b1b1b;margin:0;padding:14px 18px}
h1{font-size:17px;margin:0 0 6px}
p.caption{max-width:70em;margin:0 0 10px;color:#333}
input{font:inherit;padding:3px 6px;margin:0 0 8px;width:22em}
table{border-collapse:collapse}
th,td{border-bottom:1px solid #ddd;padding:4px 9px;text-align:left;vertical-align:top;max-width:38em}
th{position:sticky;top:0;background:#eef1f6;cursor:pointer;user-select:none;white-space:nowrap}
th[aria-sort=ascending]::after{content:" \\25B2"}
th[aria-sort=descending]::after{content:" \\25BC"}
tbody tr:nth-child(even){background:#f8f9fb}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td pre{white-space:pre-wrap;margin:0;font:13px/1.35 ui-monospace,monospace}
"""
# Sorting and filtering of the one table of the page; numbers sort as numbers (the first number in
# a cell such as "1.52 [0.9, 2.1]" or "< 0.001"), text as text, empty cells last.
_HTML_SCRIPT = """
(function(){
var table=document.querySelector("table"),body=table.tBodies[0],heads=table.tHead.rows[0].cells;
function key(cell){var t=cell.textContent.trim(),m=t.replace(/\\u2212/g,"-").match(/-?\\d+(\\.\\d+)?(e[-+]?\\d+)?/i);
 return {t:t,n:(m&&/^[<>≤≥~]?\\s*[-\\u2212\\d.]/.test(t))?parseFloat(m[0]):NaN};}
Array.prototype.forEach.call(heads,function(th,col){th.title="sort by this column";
 th.addEventListener("click",function(){
 var asc=th.getAttribute("aria-sort")!=="ascending";
 Array.prototype.forEach.call(heads,function(h){h.removeAttribute("aria-sort");});
 th.setAttribute("aria-sort",asc?"ascending":"descending");
 var rows=Array.prototype.slice.call(body.rows).map(function(r){return [key(r.cells[col]),r];});
 rows.sort(function(a,b){var x=a[0],y=b[0];if(!x.t||!y.t)return (!x.t)-(!y.t);
  var c=(!isNaN(x.n)&&!isNaN(y.n))?x.n-y.n:x.t.localeCompare(y.t,undefined,{numeric:true});return asc?c:-c;});
 rows.forEach(function(r){body.appendChild(r[1]);});});});
document.getElementById("filter").addEventListener("input",function(e){var q=e.target.value.toLowerCase();
 Array.prototype.forEach.call(body.rows,function(r){r.hidden=q&&r.textContent.toLowerCase().indexOf(q)<0;});});
})();
"""


def _html_number(text: str) -> bool:
    t = text.strip().lstrip("<>≤≥~ ").replace("−", "-")
    try:
        float(t.split(" ")[0].rstrip("%*‡§"))
        return True
    except ValueError:
        return False


def to_html(display: pd.DataFrame, caption: str, bold: pd.DataFrame | None = None, *,
            title: str = "", preformatted: tuple[str, ...] = ()) -> str:
    """A self-contained HTML page: ``title``, the caption, a filter box and the table, whose columns
    sort on a click (no network, no library). Cells of the ``preformatted`` columns keep their line
    breaks (model answers)."""
    esc = html.escape
    head = "".join(f"<th scope=\"col\">{esc(str(c))}</th>" for c in display.columns)
    pre = {display.columns.get_loc(c) for c in preformatted if c in display.columns}
    rows = []
    for cells in _body_cells(display, bold, esc, lambda t: f"<b>{t}</b>"):
        tds = []
        for c, text in enumerate(cells):
            if c in pre:
                tds.append(f"<td><pre>{text}</pre></td>")
            elif _html_number(display.iat[len(rows), c]):
                tds.append(f"<td class=\"num\">{text}</td>")
            else:
                tds.append(f"<td>{text}</td>")
        rows.append("<tr>" + "".join(tds) + "</tr>")
    heading = f"<h1>{esc(title)}</h1>\n" if title else ""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{esc(title or 'table')}</title><style>{_HTML_STYLE}</style></head><body>\n{heading}"
            f"<p class=\"caption\">{esc(caption)}</p>\n"
            f"<input id=\"filter\" type=\"search\" placeholder=\"filter rows ({len(display)})\" "
            "aria-label=\"filter rows\">\n"
            f"<table><thead><tr>{head}</tr></thead><tbody>\n" + "\n".join(rows)
            + f"\n</tbody></table>\n<script>{_HTML_SCRIPT}</script>\n</body></html>\n")


def write_table(df: pd.DataFrame, stem: str | Path, caption: str, *,
                formatters: Mapping[str, Formatter] | None = None,
                bold: pd.DataFrame | None = None,
                label: str | None = None,
                csv: pd.DataFrame | None = None,
                title: str | None = None) -> dict[str, Path]:
    """Write ``df`` as ``stem.csv``, ``stem.md``, ``stem.tex`` and ``stem.html``; return the paths by suffix.

    ``formatters`` maps a column to a function giving its display text (Markdown, LaTeX);
    ``bold`` is a boolean frame shaped like ``df`` marking cells to set in bold;
    ``csv`` replaces ``df`` in the CSV where the display cells combine several numbers
    (the CSV then carries them as separate raw columns). The caption heads nothing in the CSV
    (it would break readers); it is the Markdown's last line and the LaTeX ``\\caption``, and it
    stands under ``title`` (the stem's name without one) above the HTML table.
    """
    if not caption or not caption.strip():
        raise ValueError(f"table {stem}: a caption is required")
    if bold is not None and (list(bold.columns) != list(df.columns) or len(bold) != len(df)):
        raise ValueError(f"table {stem}: the bold mask must have the table's shape and columns")
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    # appended, not with_suffix: stems like "table_14.glmm2" carry dots of their own
    paths = {ext: stem.parent / f"{stem.name}.{ext}" for ext in ("csv", "md", "tex", "html")}
    (csv if csv is not None else df).to_csv(paths["csv"], index=False)
    display = display_frame(df, formatters)
    paths["md"].write_text(to_markdown(display, caption, bold), encoding="utf-8")
    paths["tex"].write_text(to_latex(display, caption, label, bold), encoding="utf-8")
    paths["html"].write_text(to_html(display, caption, bold, title=title or stem.name), encoding="utf-8")
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
