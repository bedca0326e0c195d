"""Digest every result of a workflow run, to show that a change of code leaves the results alone.

    python scripts/result_digest.py RESULTS_DIR > digest.json          # one run
    python scripts/result_digest.py --compare RUN_A RUN_B               # two runs: rc 1 if they differ
    python scripts/result_digest.py --compare A B --rename significant=significant_uncorrected

Every table under RESULTS_DIR (Parquet, CSV, TSV, Markdown, LaTeX, JSON, JSONL) is read and its
content hashed; what legitimately differs between two runs of the same inputs is left out and
listed: timing columns (seconds, wall-clock), absolute paths of the run directory, figures and the
HTML report (their bytes carry dates), model weights, caches and logs. Floats are compared exactly
(``repr``): identical means identical, not close. Tables are digested column by column, so a
comparison can say which columns differ, which were renamed (``--rename old=new``, e.g. after a
change that gave a column a clearer name) and which are new; a text table (Markdown, LaTeX) whose
bytes differ is listed apart, as its captions may have been reworded while its numbers stay.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

import pandas as pd

TABLES = (".parquet", ".csv", ".tsv", ".md", ".tex", ".json", ".jsonl")
SKIP_DIRS = ("models", "cache", "hub", ".snakemake")
# columns that measure time, not results
VOLATILE_COLUMN = re.compile(r"(^|_)(seconds|secs|elapsed|wall|runtime|time_s|timestamp)($|_)")
VOLATILE_TEXT = (re.compile(r"\d+(\.\d+)? ?s\b(?= of CPU| wall| elapsed)"),
                 re.compile(r"(elapsed|seconds|wall)[\"']?: ?[\d.]+"))


def _frame_digest(df: pd.DataFrame) -> tuple[str, list[str], dict]:
    dropped = [c for c in df.columns if VOLATILE_COLUMN.search(str(c).lower())]
    df = df.drop(columns=dropped)
    text = df.to_csv(index=False, float_format=None, lineterminator="\n")
    columns = {str(c): hashlib.sha256(df[[c]].to_csv(index=False, lineterminator="\n").split("\n", 1)[1]
                                      .encode()).hexdigest() for c in df.columns}
    return hashlib.sha256(text.encode()).hexdigest(), dropped, {"rows": len(df), "columns": columns}


def _text_digest(text: str, root: str) -> str:
    text = text.replace(root, "<run>")
    for pattern in VOLATILE_TEXT:
        text = pattern.sub("<time>", text)
    return hashlib.sha256(text.encode()).hexdigest()


def digest(results: Path) -> dict:
    results = results.resolve()
    root = str(results.parent)
    out: dict = {"files": {}, "left_out": []}
    for path in sorted(results.rglob("*")):
        rel = str(path.relative_to(results))
        if not path.is_file() or any(part in SKIP_DIRS for part in path.relative_to(results).parts):
            continue
        if path.suffix not in TABLES or path.name.startswith("."):
            out["left_out"].append(rel)
            continue
        if path.suffix == ".parquet":
            h, dropped, cols = _frame_digest(pd.read_parquet(path))
            out["files"][rel] = {"sha256": h, **cols, **({"dropped_columns": dropped} if dropped else {})}
        elif path.suffix in (".csv", ".tsv"):
            sep = "\t" if path.suffix == ".tsv" else ","
            try:
                h, dropped, cols = _frame_digest(pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False))
                out["files"][rel] = {"sha256": h, **cols, **({"dropped_columns": dropped} if dropped else {})}
            except (pd.errors.ParserError, pd.errors.EmptyDataError):
                out["files"][rel] = {"sha256": _text_digest(path.read_text(), root)}
        else:
            out["files"][rel] = {"sha256": _text_digest(path.read_text(errors="replace"), root)}
    return out


def compare(a: dict, b: dict, rename: dict[str, str] | None = None,
            file_rename: dict[str, dict[str, str]] | None = None) -> tuple[list[str], list[str]]:
    """(differences, notes): a table's values that differ, files on one side only; notes list what
    is allowed to change: renamed columns (``rename``; ``file_rename``: per file glob, first),
    columns only in B, reworded text tables."""
    import fnmatch

    default_rename = rename or {}
    problems, notes = [], []
    for rel in sorted(set(a["files"]) | set(b["files"])):
        fa, fb = a["files"].get(rel), b["files"].get(rel)
        if fa is None or fb is None:
            problems.append(f"only in {'B' if fa is None else 'A'}: {rel}")
            continue
        if fa["sha256"] == fb["sha256"]:
            continue
        if "columns" not in fa or "columns" not in fb:
            notes.append(f"text differs (captions, labels?): {rel}")
            continue
        rename = dict(default_rename)
        for pattern, mapping in (file_rename or {}).items():
            if fnmatch.fnmatch(rel, pattern):
                rename.update(mapping)
        if fa["rows"] != fb["rows"]:
            problems.append(f"differs: {rel}: {fa['rows']} rows in A, {fb['rows']} in B")
            continue
        ca = {rename.get(c, c): h for c, h in fa["columns"].items()}
        cb = fb["columns"]
        bad = [c for c in ca if c in cb and ca[c] != cb[c]]
        gone = [c for c in ca if c not in cb]
        if bad or gone:
            problems.append(f"differs: {rel}: " + "; ".join(
                ([f"values of {', '.join(bad)}"] if bad else []) + ([f"no column {', '.join(gone)} in B"] if gone else [])))
            continue
        renamed = [f"{c} -> {rename[c]}" for c in fa["columns"] if c in rename]
        added = [c for c in cb if c not in ca]
        order = list(ca) != [c for c in cb if c in ca]
        notes.append(f"same values: {rel}" + (f"; renamed {', '.join(renamed)}" if renamed else "")
                     + (f"; new columns {', '.join(added)}" if added else "") + ("; columns reordered" if order else ""))
    return problems, notes


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="a results directory (or, with --compare, two; a .json digest works too)")
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--rename", action="append", default=[], metavar="OLD=NEW",
                    help="a column of A that B names NEW (repeatable; a trailing * matches a prefix; "
                         "GLOB:OLD=NEW applies to the files matching GLOB only, before the others)")
    args = ap.parse_args(argv)

    def load(p: str) -> dict:
        return json.loads(Path(p).read_text()) if p.endswith(".json") else digest(Path(p))

    if not args.compare:
        json.dump(load(args.runs[0]), sys.stdout, indent=1, sort_keys=True)
        return 0
    if len(args.runs) != 2:
        ap.error("--compare takes two runs")
    a, b = load(args.runs[0]), load(args.runs[1])
    rename, file_rename = {}, {}
    for item in args.rename:
        where, colon, pair = item.rpartition(":") if ":" in item.partition("=")[0] else ("", "", item)
        old, sep, new = pair.partition("=")
        if not sep:
            ap.error(f"--rename {item!r}: give OLD=NEW or GLOB:OLD=NEW")
        (file_rename.setdefault(where, {}) if where else rename)[old] = new
    columns = {c for f in a["files"].values() for c in f.get("columns", {})}
    for old, new in list(rename.items()):
        if old.endswith("*"):
            del rename[old]
            rename.update({c: new[:-1] + c[len(old) - 1:] for c in columns if c.startswith(old[:-1])})
    problems, notes = compare(a, b, rename, file_rename)
    print(f"{len(a['files'])} tables in A, {len(b['files'])} in B; {len(problems)} with different values")
    for p in problems:
        print("  " + p)
    for n in notes:
        print("  note: " + n)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
