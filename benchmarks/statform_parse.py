"""Seconds to parse hostile StatFormBench answers of ~1 MB against answers of the same size that are not hostile.

Every answer goes through ``earnest.statform.parsing.parse_response``, as scoring reads it. The
baselines, timed in the same run: the same number of characters of plain prose (no brace), and a
normal answer (a fenced JSON formulation with some prose, ~400 characters) repeated to that size.
Each hostile shape prints its time and its ratio to both; a linear parser keeps every ratio a
constant that does not grow with ``--size``. ``--against REV`` also times the parser of an earlier
commit on the same inputs (its ``parsing.py`` loaded beside this one; the quadratic ones took minutes
at 1 MB, so use a smaller ``--size`` there).

    python benchmarks/statform_parse.py [--size 1000000] [--repeat 3] [--against REV]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import types
from pathlib import Path

from earnest.statform import parsing

ROOT = Path(__file__).resolve().parents[1]

NORMAL = ("The problem compares two group means, so the test is a two-sample t-test.\n\n```json\n"
          + json.dumps({"category": "Mean Test\\Two-sample t-test",
                        "variables": {"n1": {"id": "n1", "value": 36, "role": "N/A"},
                                      "mean1": {"id": "mean1", "value": 5.2, "role": "predictor"},
                                      "alpha": {"id": "alpha", "value": 0.05, "role": "N/A"}}}, indent=1)
          + "\n```\n")


def shapes(size: int) -> dict[str, str]:
    """The inputs, each about ``size`` characters (never above parsing.MAX_ANSWER_CHARS)."""
    def fill(unit: str, head: str = "", tail: str = "") -> str:
        return head + unit * max(1, (size - len(head) - len(tail)) // len(unit)) + tail

    return {
        # baselines
        "plain prose": fill("the mean of the sample is compared ")[:size],
        "normal answers": fill(NORMAL)[:size],
        # hostile shapes
        "'{' only": "{" * size,
        "'{\"' repeated": fill('{"'),
        "'{' + spaces": fill("{ \n"),
        "failing objects nested 40 deep": fill("1,", head='{"a":' * 40 + "["),
        "unterminated string, 40 deep": fill("x", head='{"a":' * 40 + '"'),
        "``` + long tag, no closing fence": fill("a", head="```"),
        "one key given twice, many keys": "{" + ",".join(f'"k{i}":1,"k{i}":2' for i in range(size // 22)) + "}",
        "many small objects": fill('{"a":1} '),
    }


def time_parse(parse, text: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        parse(text)
        best = min(best, time.perf_counter() - t)
    return best


def old_parser(rev: str):
    """``parse_response`` of ``src/earnest/statform/parsing.py`` at ``rev``, loaded as a sibling module."""
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:src/earnest/statform/parsing.py"],
                         capture_output=True, text=True, check=True).stdout
    mod = types.ModuleType("earnest.statform._parsing_at_rev")
    mod.__package__ = "earnest.statform"
    sys.modules[mod.__name__] = mod
    exec(compile(src, f"{rev}:parsing.py", "exec"), mod.__dict__)
    return mod.parse_response


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1_000_000, help="characters per input (default 1,000,000)")
    ap.add_argument("--repeat", type=int, default=3, help="best of this many parses each")
    ap.add_argument("--against", metavar="REV", help="also time the parser of this commit")
    args = ap.parse_args()
    size = min(args.size, parsing.MAX_ANSWER_CHARS)
    inputs = shapes(size)
    parsers = {"this checkout": parsing.parse_response}
    if args.against:
        parsers[args.against] = old_parser(args.against)
    for label, parse in parsers.items():
        times = {name: time_parse(parse, text, args.repeat) for name, text in inputs.items()}
        plain, normal = times["plain prose"], times["normal answers"]
        print(f"{label}: ~{size:,} characters per input, best of {args.repeat}")
        print(f"  {'input':36s} {'seconds':>9s} {'x plain':>9s} {'x normal':>9s}  status")
        for name, text in inputs.items():
            status = parse(text).status
            print(f"  {name:36s} {times[name]:9.4f} {times[name] / plain:9.1f} {times[name] / normal:9.2f}  {status}")
        worst = max(times.values())
        print(f"  slowest: {worst:.3f} s ({worst / normal:.2f}x the normal answers of the same size)\n")


if __name__ == "__main__":
    main()
