"""Sandbox throughput: isolated answers per second against an unsafe in-process ``exec``.

Generates 2,000 varied solution functions (grade-school arithmetic in the style of the code
prompts; about one in six raises or returns something that is not a number), runs them

* isolated: ``earnest.sandbox.Sandbox.run_many`` — static check, then each snippet in its own
  forked, rlimited child of a pre-started worker under no_new_privs, Landlock and seccomp
  (chrooted and setuid too when run as root);
* baseline: ``exec`` of the same source in this process and a direct call of ``solution()``;

prints both rates and their ratio, and checks that both agree on every snippet: the same number
for those that run, the same error class for those that fail.

Usage: PYTHONPATH=src python benchmarks/sandbox.py [--n 2000] [--workers 2] [--seed 0]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time

from earnest import failure_classes as fc
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=None, help="default: the Sandbox default (2 x cores, at most 8)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    snippets = make_snippets(args.n, args.seed)

    started = time.perf_counter()
    baseline = [classify_in_process(s) for s in snippets]
    baseline_s = time.perf_counter() - started

    with Sandbox(workers=args.workers, limits=Limits(cpu_seconds=2, wall_seconds=5.0)) as box:
        box.run_many(["def solution():\n    return 0\n"] * box.n_workers)  # start the workers
        started = time.perf_counter()
        isolated = box.run_many(snippets)
        isolated_s = time.perf_counter() - started
        caps = box.capabilities()

    mismatches = []
    ran = 0
    for i, ((cls, value), res) in enumerate(zip(baseline, isolated)):
        if cls != res.error_class:
            mismatches.append((i, cls, res.error_class, res.detail))
        elif cls == "":
            ran += 1
            if not math.isclose(value, res.value, rel_tol=0, abs_tol=0):
                mismatches.append((i, value, res.value, ""))

    iso_rate = args.n / isolated_s
    base_rate = args.n / baseline_s
    print(f"snippets: {args.n} ({ran} return a number, {args.n - ran} fail), workers: {box.n_workers}, "
          f"cpus: {os.cpu_count()}, isolation: {caps}")
    print(f"isolated (fork per snippet): {iso_rate:10.1f} answers/s  ({isolated_s:.2f} s)")
    print(f"in-process exec (unsafe):    {base_rate:10.1f} answers/s  ({baseline_s:.3f} s)")
    print(f"ratio in-process / isolated: {base_rate / iso_rate:10.1f}x")
    if mismatches:
        print(f"MISMATCH on {len(mismatches)} snippet(s), e.g. {mismatches[:3]}")
        return 1
    print("both give the same answer and the same error class for every snippet")
    return 0


if __name__ == "__main__":
    sys.exit(main())
