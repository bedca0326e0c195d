"""Sandbox throughput: isolated answers per second against an unsafe in-process ``exec``.

Generates 2,000 varied solution functions (grade-school arithmetic in the style of the code
prompts; about one in six raises or returns something that is not a number), runs them

* isolated: ``earnest.sandbox.Sandbox.run_many`` — static check, then each snippet in its own
  forked, rlimited child of a pre-started worker under no_new_privs, Landlock and seccomp
  (chrooted and setuid too when run as root);
* baseline: ``exec`` of the same source in this process and a direct call of ``solution()``;

* previous: the sandbox of an earlier git revision (``--previous REV``, default 638e3ce: the
  deny-list filter without namespaces for non-root), the "before" of the current design;
* layers alone: the current sandbox with all but one kernel layer switched off (seccomp alone,
  as libseccomp and as earnest's own compiler build the allowlist; namespaces alone), to show what
  each costs;

prints the rates and their ratios to the current sandbox, and checks that all agree on every
snippet: the same number for those that run, the same error class for those that fail.

Usage: PYTHONPATH=src python benchmarks/sandbox.py [--n 2000] [--workers 2] [--seed 0] [--previous REV]
"""

from __future__ import annotations

import argparse
import atexit
import importlib.util
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from earnest.gsm import failure_classes as fc
from earnest.sandbox import Limits, Sandbox


def make_snippets(n: int, seed: int) -> list[str]:
    """``n`` solution functions: arithmetic, loops, floats, math/fractions, and some that fail."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        a, b, c = rng.randint(2, 500), rng.randint(2, 90), rng.randint(1, 40)
        kind = rng.choices(
            ["linear", "loop", "ratio", "math", "fraction", "list", "zero", "name", "none", "type", "text", "attr"],
            weights=[20, 15, 15, 10, 8, 12, 4, 4, 4, 3, 3, 2])[0]
        if kind == "linear":
            body = (f"    apples = {a}\n    baskets = {b}\n    eaten = {c}\n"
                    f"    # total apples left\n    left = apples * baskets - eaten\n    return left\n")
        elif kind == "loop":
            body = (f"    total = 0\n    for day in range({b}):\n        total += day * {c} + {a % 7}\n"
                    f"    return total\n")
        elif kind == "ratio":
            body = f"    price = {a}\n    people = {b}\n    share = price / people * {c}\n    return round(share, 2)\n"
        elif kind == "math":
            body = f"    import math\n    return math.ceil({a} / {b}) + math.floor(math.sqrt({a * c}))\n"
        elif kind == "fraction":
            body = (f"    from fractions import Fraction\n    part = Fraction({c}, {b}) * {a}\n"
                    f"    return part\n")
        elif kind == "list":
            body = (f"    prices = [{a}, {b}, {c}, {a + b}]\n    discounted = [p * 0.9 for p in prices]\n"
                    f"    return sum(discounted) - min(prices)\n")
        elif kind == "zero":
            body = f"    remaining = {b} - {b}\n    return {a} / remaining\n"
        elif kind == "name":
            body = f"    total_cost = {a} * {b}\n    return total_costs\n"
        elif kind == "none":
            body = f"    total = {a} + {b}\n"
        elif kind == "type":
            body = f"    count = '{a}'\n    return count + {b}\n"
        elif kind == "text":
            body = f"    return 'The answer is {a + b}'\n"
        else:
            body = f"    value = {a}\n    return value.amount\n"
        out.append(f"def solution():\n    # snippet {i}\n" + body[:-1] + "\n")
    return out


def classify_in_process(source: str) -> tuple[str, float | None]:
    """The unsafe baseline: exec and call in this process, classified like the sandbox does."""
    from decimal import Decimal
    from fractions import Fraction

    namespace: dict = {"__name__": "__baseline__"}
    try:
        exec(compile(source, "<snippet>", "exec"), namespace)
        value = namespace["solution"]()
    except ZeroDivisionError:
        return fc.ZERO_DIVISION_ERROR, None
    except NameError:
        return fc.NAME_ERROR, None
    except AttributeError:
        return fc.ATTRIBUTE_ERROR, None
    except (TypeError, ValueError):
        return fc.TYPE_VALUE_ERROR, None
    except Exception:  # noqa: BLE001
        return fc.UNCLASSIFIED, None
    if value is None:
        return fc.NONE_RETURNED, None
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction, Decimal)):
        return fc.NOT_A_NUMBER, None
    return "", float(value)


def previous_sandbox(rev: str):
    """The earnest.sandbox module of git revision ``rev``, loaded from a temporary copy (its
    worker runs that copy), or None when git or the revision is not there."""
    repo = Path(__file__).resolve().parents[1]
    try:
        text = subprocess.run(["git", "-C", str(repo), "show", f"{rev}:src/earnest/sandbox.py"],
                              capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        # from issue 42 on the sandbox is a package (src/earnest/sandbox/), whose modules import each
        # other as earnest.sandbox.*: not loadable beside the current one in this process
        kind = subprocess.run(["git", "-C", str(repo), "cat-file", "-t", f"{rev}:src/earnest/sandbox"],
                              capture_output=True, text=True).stdout.strip()
        if kind == "tree":
            print(f"# previous revision {rev}: its sandbox is a package (src/earnest/sandbox/); this benchmark "
                  "loads only the one-file sandbox of earlier revisions; skipped", flush=True)
        return None
    path = Path(tempfile.mkdtemp(prefix="earnest-bench-")) / "sandbox_previous.py"
    # its workers run this file while the benchmark lasts; removed at exit (it was left in TMPDIR)
    atexit.register(shutil.rmtree, path.parent, True)
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("sandbox_previous", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    # revisions before the redesign (issue 22) import the failure classes from their old place
    sys.modules.setdefault("earnest.failure_classes", fc)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - a revision this benchmark cannot load is skipped, said why
        print(f"# previous revision {rev}: not loadable here ({type(exc).__name__}: {exc}); skipped", flush=True)
        return None
    return module


def timed_run(box, snippets):
    box.run_many(["def solution():\n    return 0\n"] * box.n_workers)  # start the workers
    started = time.perf_counter()
    results = box.run_many(snippets)
    return results, time.perf_counter() - started


def mismatches_between(baseline, isolated) -> tuple[list, int]:
    mismatches = []
    ran = 0
    for i, ((cls, value), res) in enumerate(zip(baseline, isolated)):
        if cls != res.error_class:
            mismatches.append((i, cls, res.error_class, res.detail))
        elif cls == "":
            ran += 1
            if not math.isclose(value, res.value, rel_tol=0, abs_tol=0):
                mismatches.append((i, value, res.value, ""))
    return mismatches, ran


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=None, help="default: the Sandbox default (2 x cores, at most 8)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--previous", default="638e3ce", help="git revision of the 'before' sandbox")
    args = parser.parse_args(argv)

    snippets = make_snippets(args.n, args.seed)

    started = time.perf_counter()
    baseline = [classify_in_process(s) for s in snippets]
    baseline_s = time.perf_counter() - started

    limits = Limits(cpu_seconds=2, wall_seconds=5.0)
    runs = {}
    with Sandbox(workers=args.workers, limits=limits) as box:
        runs["current (all layers)"] = timed_run(box, snippets)
        caps = box.describe()
        n_workers = box.n_workers
    for label, disable, compiler in (("seccomp alone", ("namespaces", "landlock"), "auto"),
                                     ("seccomp alone, earnest's", ("namespaces", "landlock"), "earnest"),
                                     ("namespaces alone", ("seccomp", "landlock"), "auto")):
        with Sandbox(workers=args.workers, limits=limits, disable=disable, seccomp_compiler=compiler) as box:
            runs[label] = timed_run(box, snippets)
    previous = previous_sandbox(args.previous)
    if previous is not None:
        with previous.Sandbox(workers=args.workers, limits=limits) as box:
            runs[f"previous ({args.previous})"] = timed_run(box, snippets)

    uptime = os.getloadavg()
    print(f"snippets: {args.n}, workers: {n_workers}, cpus: {os.cpu_count()}, "
          f"load average {uptime[0]:.1f} / {uptime[1]:.1f}, isolation: {caps}")
    print(f"in-process exec (unsafe):    {args.n / baseline_s:10.1f} answers/s  ({baseline_s:.3f} s)")
    current_s = runs["current (all layers)"][1]
    failed = False
    for label, (results, seconds) in runs.items():
        mismatches, ran = mismatches_between(baseline, results)
        print(f"{label + ':':28} {args.n / seconds:10.1f} answers/s  ({seconds:.2f} s; "
              f"{current_s / seconds:.2f}x the current sandbox's rate)"
              + (f"  MISMATCH on {len(mismatches)}, e.g. {mismatches[:2]}" if mismatches else ""))
        failed |= bool(mismatches)
    if failed:
        return 1
    print(f"every run gives the same answer and the same error class for every snippet ({ran} return a number)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
