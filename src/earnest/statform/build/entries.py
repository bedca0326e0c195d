"""Raw material of the construction pipeline: textbook entries (JSONL) and case-library projects.

**Entries** (one JSON object a line, the form annotators produce after PDF extraction, paper
Appendix A.1)::

    {"entry_id": "gerstman-4.12", "question": "...", "answer": "...",
     "data": "LaTeX table, text, a JSON object/list, or null",
     "source": "textbook", "metadata": {"chapter": "4", "page": "88-89"}}

``entry_id`` (or ``id``) names the entry in every file the pipeline writes, so it is restricted to
letters, digits, ``.``, ``_`` and ``-``; ``question`` is required and non-empty; ``answer`` is
required (it may be empty: quality filtering discards such samples, with the reason kept);
``source`` defaults to ``textbook``.

**Case library**: a folder with one sub-folder per project, each holding an analysis report
(``report.html``/``.htm``/``.md``/``.txt``, or the one HTML/Markdown file there) and data files.
Projects without a report or without a tabular data file are excluded, and each exclusion is
recorded with its reason (paper Appendix A.2: "a complete analysis report and at least one data
file that can be converted into a structured tabular representation").
"""

from __future__ import annotations

import re
from pathlib import Path

from earnest.jsonl import iter_jsonl

ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,120}$")
REPORT_SUFFIXES = (".html", ".htm", ".md", ".markdown", ".txt", ".pdf")
TABLE_SUFFIXES = (".csv", ".tsv", ".json", ".jsonl", ".parquet", ".xlsx", ".xls")


class EntryError(ValueError):
    """A bad entry or project; the message names the file and line or folder."""


def normalize_entry(rec, where: str) -> dict:
    """One entry record checked and completed (see module doc)."""
    if not isinstance(rec, dict):
        raise EntryError(f"{where}: an entry must be a JSON object")
    eid = rec.get("entry_id", rec.get("id"))
    if isinstance(eid, int) and not isinstance(eid, bool):
        eid = str(eid)
    if not isinstance(eid, str) or not ID_RE.match(eid):
        raise EntryError(f"{where}: field 'entry_id' must be letters, digits, '.', '_' or '-' (got {eid!r})")
    q = rec.get("question")
    if not isinstance(q, str) or not q.strip():
        raise EntryError(f"{where} (entry {eid}): field 'question' must be a non-empty string")
    if "answer" not in rec:
        raise EntryError(f"{where} (entry {eid}): field 'answer' is missing (write \"\" for an entry without one)")
    a = rec["answer"]
    if a is None:
        a = ""
    if not isinstance(a, str):
        raise EntryError(f"{where} (entry {eid}): field 'answer' must be a string")
    data = rec.get("data")
    if data is not None and not isinstance(data, (str, dict, list)):
        raise EntryError(f"{where} (entry {eid}): field 'data' must be text, a JSON object/list or null")
    source = rec.get("source", "textbook")
    if source not in ("textbook", "case"):
        raise EntryError(f"{where} (entry {eid}): field 'source' must be 'textbook' or 'case', got {source!r}")
    meta = rec.get("metadata") or {}
    if not isinstance(meta, dict):
        raise EntryError(f"{where} (entry {eid}): field 'metadata' must be an object")
    return {"entry_id": eid, "source": source, "question": q, "answer": a, "data": data, "metadata": meta}


def pdf_pages(path: str | Path) -> list[str]:
    """The text of every page of a PDF, through pypdf (a PyPI package: requirements.txt). An encrypted
    or unreadable file is an :class:`EntryError` naming it."""
    try:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise EntryError(f"{path}: reading a PDF needs the pypdf package (pip install -r requirements.txt)") from exc
    try:
        reader = PdfReader(str(path))
        if reader.is_encrypted:
            raise EntryError(f"{path}: the PDF is encrypted; decrypt it first")
        return [(page.extract_text() or "") for page in reader.pages]
    except (PdfReadError, OSError, ValueError) as exc:
        raise EntryError(f"{path}: not a readable PDF ({type(exc).__name__}: {exc})") from None


def pdf_entries(path: str | Path) -> list[dict]:
    """Textbook entries from a PDF: one entry per page that holds text (``<file stem>-p<page>``, the
    page's text as the question, no answer), for the split stage to cut into exercises. Pages
    without text (scans: run OCR first) are left out; a PDF with no text at all is an error."""
    path = Path(path)
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", path.stem).strip("-") or "book"
    out = []
    for i, text in enumerate(pdf_pages(path), start=1):
        text = re.sub(r"[ \t]+", " ", text).strip()
        if text:
            out.append(normalize_entry({"entry_id": f"{stem}-p{i:04d}", "question": text, "answer": "",
                                        "metadata": {"pdf": path.name, "page": i}}, f"{path}: page {i}"))
    if not out:
        raise EntryError(f"{path}: no page holds text (a scanned book needs OCR before it is read)")
    return out


def read_entries(path: str | Path) -> list[dict]:
    """Every entry of a JSONL file, checked (duplicate ids are an error naming both lines), or of a PDF
    textbook (:func:`pdf_entries`)."""
    path = Path(path)
    if not path.is_file():
        raise EntryError(f"{path}: no such file")
    if path.suffix.lower() == ".pdf":
        return pdf_entries(path)
    out, seen = [], {}
    for where, _, rec in iter_jsonl(path, objects_only=False, error=EntryError):
        entry = normalize_entry(rec, where)
        if entry["entry_id"] in seen:
            raise EntryError(f"{where}: duplicate entry_id {entry['entry_id']!r} (first at {seen[entry['entry_id']]})")
        seen[entry["entry_id"]] = where
        out.append(entry)
    return out


def find_report(project: Path) -> Path | None:
    for stem in ("report", "analysis", "README", "index"):
        for suf in REPORT_SUFFIXES:
            p = project / f"{stem}{suf}"
            if p.is_file():
                return p
    candidates = sorted(p for p in project.iterdir() if p.is_file() and p.suffix.lower() in REPORT_SUFFIXES[:4])
    return candidates[0] if len(candidates) == 1 else None


def scan_cases(root: str | Path) -> tuple[dict[str, dict], list[dict]]:
    """Projects of a case-library folder: ``({name: {"report": path, "data": [paths]}}, excluded)``.

    ``excluded`` lists ``{"project", "reason"}`` for every sub-folder left out. Data files are the
    tabular ones (by suffix) anywhere below the project folder, in sorted order.
    """
    root = Path(root)
    if not root.is_dir():
        raise EntryError(f"{root}: case-library folder not found")
    projects, excluded = {}, []
    for project in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        name = project.name
        if not ID_RE.match(name):
            excluded.append({"project": name, "reason": "folder name is not letters, digits, '.', '_' or '-'"})
            continue
        report = find_report(project)
        data = sorted(p for p in project.rglob("*") if p.is_file() and p.suffix.lower() in TABLE_SUFFIXES)
        if report is None:
            excluded.append({"project": name, "reason": "no analysis report (report.html/.md or a single HTML/Markdown file)"})
        elif not data:
            excluded.append({"project": name, "reason": f"no tabular data file ({', '.join(TABLE_SUFFIXES)})"})
        else:
            projects[name] = {"report": str(report), "data": [str(p) for p in data]}
    return projects, excluded


_TAG = re.compile(r"<[^>]+>")
_DROP = re.compile(r"<(script|style)\b.*?</\1>", re.DOTALL | re.IGNORECASE)


def report_text(path: str | Path, max_chars: int = 12000) -> str:
    """A report as plain text (HTML tags, scripts and styles removed; whitespace collapsed), cut at ``max_chars``."""
    import html

    if Path(path).suffix.lower() == ".pdf":
        text = "\n\n".join(pdf_pages(path))
    else:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    if Path(path).suffix.lower() in (".html", ".htm"):
        text = html.unescape(_TAG.sub(" ", _DROP.sub(" ", text)))
    text = re.sub(r"[ \t]+", " ", text)
    text = re.sub(r"\n\s*\n+", "\n\n", text).strip()
    return text[:max_chars]
