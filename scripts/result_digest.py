"""Digest every result of a workflow run, to show that a change of code leaves the results alone.

    python scripts/result_digest.py RESULTS_DIR > digest.json          # one run
    python scripts/result_digest.py --compare RUN_A RUN_B               # two runs: rc 1 if they differ

Every table under RESULTS_DIR (Parquet, CSV, TSV, Markdown, LaTeX, JSON, JSONL) is read and its
content hashed; what legitimately differs between two runs of the same inputs is left out and
listed: timing columns (seconds, wall-clock), absolute paths of the run directory, figures and the
HTML report (their bytes carry dates), model weights, caches and logs. Floats are compared exactly
(``repr``): identical means identical, not close.
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


def _frame_digest(df: pd.DataFrame) -> tuple[str, list[str]]:
    dropped = [c for c in df.columns if VOLATILE_COLUMN.search(str(c).lower())]
    df = df.drop(columns=dropped)
    text = df.to_csv(index=False, float_format=None, lineterminator="\n")
    # attrs carry run metadata of Parquet tables that the library writes (e.g. cluster labels)
    return hashlib.sha256(text.encode()).hexdigest(), dropped


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
            h, dropped = _frame_digest(pd.read_parquet(path))
            out["files"][rel] = {"sha256": h, **({"dropped_columns": dropped} if dropped else {})}
        elif path.suffix in (".csv", ".tsv"):
            sep = "\t" if path.suffix == ".tsv" else ","
            try:
                h, dropped = _frame_digest(pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False))
                out["files"][rel] = {"sha256": h, **({"dropped_columns": dropped} if dropped else {})}
            except (pd.errors.ParserError, pd.errors.EmptyDataError):
                out["files"][rel] = {"sha256": _text_digest(path.read_text(), root)}
        else:
            out["files"][rel] = {"sha256": _text_digest(path.read_text(errors="replace"), root)}
    return out


def compare(a: dict, b: dict) -> list[str]:
    problems = []
    for rel in sorted(set(a["files"]) | set(b["files"])):
        if rel not in a["files"]:
            problems.append(f"only in B: {rel}")
        elif rel not in b["files"]:
            problems.append(f"only in A: {rel}")
        elif a["files"][rel]["sha256"] != b["files"][rel]["sha256"]:
            problems.append(f"differs: {rel}")
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="a results directory (or, with --compare, two; a .json digest works too)")
    ap.add_argument("--compare", action="store_true")
    args = ap.parse_args(argv)

    def load(p: str) -> dict:
        return json.loads(Path(p).read_text()) if p.endswith(".json") else digest(Path(p))

    if not args.compare:
        json.dump(load(args.runs[0]), sys.stdout, indent=1, sort_keys=True)
        return 0
    if len(args.runs) != 2:
        ap.error("--compare takes two runs")
    a, b = load(args.runs[0]), load(args.runs[1])
    problems = compare(a, b)
    print(f"{len(a['files'])} tables in A, {len(b['files'])} in B; {len(problems)} differ")
    for p in problems:
        print("  " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
