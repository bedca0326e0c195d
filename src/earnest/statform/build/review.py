"""Human review: export a review sheet per batch (CSV to fill in, plus a static HTML page to read)
and import the reviewers' decisions.

The sheet has one row per sample that reached the end of the pipeline (``active``; flagged ones
first within their batch) with the original and rewritten text, the proposed labels and the
flags, and the columns reviewers fill:

* ``decision``: ``accept`` or ``reject`` (empty: not reviewed yet);
* ``category_final``: an ``L1\\L2`` label replacing the proposed one (needed for a sample whose
  labeller proposed a new category: the expert adopts or merges it);
* ``background_final``, ``question_final``: edited text replacing the rewrite;
* ``variables_final``: a JSON object of variable objects replacing the extracted ones;
* ``note``: free text, kept.

Discarded and failed samples are listed on the HTML page (with stage and reason) so reviewers see
what the pipeline lost, but they are not in the sheet to fill.
"""

from __future__ import annotations

import csv
import html
import io
import json
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

from ...jsonl import lone_surrogate, parse_json, read_utf8
from ...schema import schema_default
from ..data import CATEGORY_SEP, DataError, _parse_variables

#: samples per review batch (statform_build.review.batch_size)
BATCH_SIZE = schema_default("statform_build.review.batch_size")

DECISIONS = ("accept", "reject", "")
FILL_COLUMNS = ["decision", "category_final", "background_final", "question_final", "variables_final", "note"]
SHEET_COLUMNS = ["sample_id", "entry_id", "source", "flags", "category", "proposed_new_category", "label_reason",
                 "original_background", "original_question", "answer", "data", "background", "question",
                 "variables", "numbers_missing", "self_eval_feedback"] + FILL_COLUMNS


class ReviewError(ValueError):
    """A review sheet that cannot be imported; the message names file, line and column."""


def _cell(v) -> str:
    if v is None:
        return ""
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)


def sheet_row(r: dict) -> dict:
    lab = r.get("label") or {}
    rw = r.get("rewrite") or {}
    evals = rw.get("self_eval") or []
    feedback = (evals[-1].get("verdict") or {}).get("feedback", "") if evals else ""
    return {"sample_id": r["sample_id"], "entry_id": r["entry_id"], "source": r["source"], "flags": " ".join(r["flags"]),
            "category": lab.get("category") or "", "proposed_new_category": lab.get("proposed_new_category") or "",
            "label_reason": lab.get("reason", ""), "original_background": r["background"],
            "original_question": r["question"], "answer": r["answer"], "data": _cell(r["data"]),
            "background": rw.get("background", ""), "question": rw.get("question", ""),
            "variables": _cell(r.get("variables") or {}), "numbers_missing": " ".join(rw.get("numbers_missing", [])),
            "self_eval_feedback": feedback, **{c: "" for c in FILL_COLUMNS}}


_CSS = ("body{font-family:sans-serif;margin:1em}table{border-collapse:collapse;font-size:13px}"
        "td,th{border:1px solid #bbb;padding:4px;vertical-align:top;max-width:28em;white-space:pre-wrap}"
        "tr.flagged{background:#fff4e0}th{background:#eee;position:sticky;top:0}")


def _html_table(rows: list[dict], columns: list[str], flagged_col: str | None = None) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = []
    for row in rows:
        cls = ' class="flagged"' if flagged_col and row.get(flagged_col) else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{html.escape(str(row.get(c, '')))}</td>" for c in columns) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def export_review(samples: list[dict], out_dir: str | Path, batch_size: int = BATCH_SIZE) -> list[Path]:
    """Write ``batch-NNN.csv`` + ``batch-NNN.html`` per batch of active samples and ``index.html``
    (batches, and every discarded or failed sample with its stage and reason). Returns the files."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    active = [r for r in samples if r["status"] == "active"]
    lost = [r for r in samples if r["status"] != "active"]
    written: list[Path] = []
    batches = [active[i:i + batch_size] for i in range(0, len(active), batch_size)] or [[]]
    names = []
    for b, batch in enumerate(batches, start=1):
        rows = sorted((sheet_row(r) for r in batch), key=lambda row: (row["flags"] == "",))
        name = f"batch-{b:03d}"
        names.append((name, len(rows), sum(1 for r in rows if r["flags"])))
        with open(out / f"{name}.csv", "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=SHEET_COLUMNS)
            w.writeheader()
            w.writerows(rows)
        page = (f"<!doctype html><meta charset='utf-8'><title>{name}</title><style>{_CSS}</style>"
                f"<h1>StatFormBench review, {name}</h1><p>{len(rows)} samples, flagged ones first (shaded). "
                f"Fill the columns {', '.join(FILL_COLUMNS)} in <code>{name}.csv</code>.</p>"
                + _html_table(rows, [c for c in SHEET_COLUMNS if c not in FILL_COLUMNS], flagged_col="flags"))
        (out / f"{name}.html").write_text(page, encoding="utf-8")
        written += [out / f"{name}.csv", out / f"{name}.html"]
    lost_rows = [{"sample_id": r["sample_id"], "status": r["status"], "stage": r["stage"], "reason": r["reason"],
                  "question": r["question"]} for r in lost]
    index = (f"<!doctype html><meta charset='utf-8'><title>StatFormBench review</title><style>{_CSS}</style>"
             "<h1>StatFormBench review sheets</h1><ul>"
             + "".join(f"<li><a href='{n}.html'>{n}</a>: {k} samples, {f} flagged (<a href='{n}.csv'>CSV</a>)</li>"
                       for n, k, f in names)
             + f"</ul><h2>Not in the sheets: {len(lost)} discarded or failed samples</h2>"
             + _html_table(lost_rows, ["sample_id", "status", "stage", "reason", "question"]))
    (out / "index.html").write_text(index, encoding="utf-8")
    written.append(out / "index.html")
    return written


@contextmanager
def _any_field_size():
    """csv's default cell limit is 128 KiB; a sheet's data or variables cell may be larger."""
    before = csv.field_size_limit()
    csv.field_size_limit(sys.maxsize)
    try:
        yield
    finally:
        csv.field_size_limit(before)


def _sheet_rows(f: Path) -> Iterator[tuple[str, dict]]:
    """(``file:line``, row) for each non-blank row of a filled sheet, the line being where the row
    starts (a quoted cell may span lines). The text must be UTF-8 (a byte order mark, as Excel
    writes, is dropped); every row must have as many cells as the header."""
    text = read_utf8(f, error=ReviewError)
    with _any_field_size():
        reader = csv.reader(io.StringIO(text, newline=""))
        try:
            header = next(reader, None)
            if header is None:
                raise ReviewError(f"{f}: empty file (no header row)")
            header = [h.strip() for h in header]
            missing = [c for c in ("sample_id", "decision") if c not in header]
            if missing:
                raise ReviewError(f"{f}: column(s) {missing} missing (the sheet's header was changed)")
            twice = sorted({h for h in header if h and header.count(h) > 1})
            if twice:
                raise ReviewError(f"{f}:1: column(s) {twice} appear twice in the header")
            start = reader.line_num + 1
            for cells in reader:
                where = f"{f}:{start}"
                start = reader.line_num + 1
                if not any(c.strip() for c in cells):
                    continue
                if len(cells) != len(header):
                    raise ReviewError(f"{where}: {len(cells)} cells, the header has {len(header)} (a comma or "
                                      "quote outside a quoted cell? quote cells that hold commas)")
                yield where, dict(zip(header, cells))
        except csv.Error as exc:
            raise ReviewError(f"{f}:{reader.line_num}: not a readable CSV row ({exc})") from None


def read_decisions(paths: Iterable[str | Path], known_ids: set[str] | None = None) -> dict[str, dict]:
    """Reviewers' decisions from filled sheets (CSV files, or folders of them), by sample id.

    Only rows with a decision or an edit count. Errors (unknown decision, sample id not in the
    build, a sample decided twice, bad category or variables, a file that is not UTF-8 CSV, a row
    with more or fewer cells than the header) name file, line and column.
    """
    files: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            files += sorted(p.glob("*.csv"))
        elif p.is_file():
            files.append(p)
        else:
            raise ReviewError(f"{p}: review decisions file or folder not found")
    out: dict[str, dict] = {}
    seen: dict[str, str] = {}
    for f in files:
        for where, row in _sheet_rows(f):
            sid = (row.get("sample_id") or "").strip()
            fill = {c: (row.get(c) or "").strip() for c in FILL_COLUMNS}
            if not any(fill[c] for c in FILL_COLUMNS if c != "note"):
                continue
            if known_ids is not None and sid not in known_ids:
                raise ReviewError(f"{where}: column sample_id: {sid!r} is not a sample of this build")
            if sid in seen:
                raise ReviewError(f"{where}: sample {sid!r} is decided twice (first at {seen[sid]})")
            seen[sid] = where
            if fill["decision"] not in DECISIONS:
                raise ReviewError(f"{where}: column decision: {fill['decision']!r} is not accept or reject")
            if fill["category_final"] and CATEGORY_SEP not in fill["category_final"]:
                raise ReviewError(f"{where}: column category_final: write the category as 'L1{CATEGORY_SEP}L2'")
            if fill["variables_final"]:
                obj = parse_json(fill["variables_final"], f"{where}: column variables_final", ReviewError,
                                 multiline=True, finite=True)
                bad = lone_surrogate(obj)
                if bad:
                    raise ReviewError(f"{where}: column variables_final: {bad[0]}: a lone surrogate escape "
                                      f"(U+{bad[2]:04X}) at character {bad[1]}; no UTF-8 file can hold it")
                try:
                    fill["variables_final"] = {v.id: v.to_dict() for v in _parse_variables(obj, where)}
                except DataError as exc:
                    raise ReviewError(f"{where}: column variables_final: {exc}") from None
            out[sid] = {**fill, "where": where}
    return out
