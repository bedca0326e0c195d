"""Ex4 judged by a direct contrast: rejection rates under known truth (issue 40.4).

Simulated answers (earnest.stats.simulate.simulate_number_matched: GSM-Base rows shared by two GLMM
inputs, base + variants and base + number-matched variants) in three scenarios: number-only (the
variants' drop comes from their larger numbers: matched variants do not drop), variant-only (both drop
alike: the contrast's truth is 0) and null (no drop anywhere). For each data set both GLMM 1s are
bootstrapped with the same seed (the laplace engine, the embedded config's), then:

- contrast: the paired difference of the two variant log odds ratios (earnest.stats.contrast), P < alpha
  and not degenerate: what the Ex4 table's ``differs`` now reads;
- old rule: "Ex1 significant and Ex4 not" (or the reverse), each judged as the summaries judge it: what
  ``differs`` read before.

A test of "the drop differs" must reject at about alpha where the truth is 0 (variant-only, null) and
often where it is not (number-only). Prints one line per scenario with Wilson 95% intervals.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from earnest.stats.contrast import paired_contrast  # noqa: E402
from earnest.stats.diagnostics import judge_effect  # noqa: E402
from earnest.stats.engines import run_shard  # noqa: E402
from earnest.stats.glmm import validate_glmm_input  # noqa: E402
from earnest.stats.simulate import simulate_number_matched  # noqa: E402
from earnest.stats.power import wilson  # noqa: E402


SCENARIOS = {"number-only": (0.0, "effect"), "variant-only": ("effect", 0.0), "null": (0.0, 0.0)}


def run(args) -> None:
    print(f"# {datetime.date.today()} load {os.getloadavg()[0]:.1f}; {args.datasets} data sets per scenario, "
          f"{args.templates} templates x {args.variants} variants, B = {args.resamples}, effect {args.effect}, "
          f"alpha {args.alpha}, engine {args.engine}", flush=True)
    for name, (variant, number) in SCENARIOS.items():
        variant = args.effect if variant == "effect" else variant
        number = args.effect if number == "effect" else number
        start = time.monotonic()
        counts = {"contrast": 0, "old": 0, "ex1": 0, "ex4": 0, "degenerate": 0}
        for k in range(args.datasets):
            v, m = simulate_number_matched(args.templates, args.variants, variant_effect=variant,
                                           number_effect=number, seed=args.seed + k)
            v, m = validate_glmm_input(v, 1), validate_glmm_input(m, 1)
            seed = args.seed + 10_000 + k
            sv = run_shard(v, 1, args.resamples, base_seed=seed, cores=args.cores, engine=args.engine)
            sm = run_shard(m, 1, args.resamples, base_seed=seed, cores=args.cores, engine=args.engine)
            rv, dv = judge_effect(sv, v, 1, "variant")
            rm, dm = judge_effect(sm, m, 1, "variant")
            c = paired_contrast(sv, v, sm, m, degenerate_a=dv, degenerate_b=dm)
            sig_v = bool(rv["p_boot"] < args.alpha) and not dv
            sig_m = bool(rm["p_boot"] < args.alpha) and not dm
            counts["contrast"] += int(c["p_boot"] < args.alpha and not c["degenerate"])
            counts["old"] += int(sig_v != sig_m)
            counts["ex1"] += int(sig_v)
            counts["ex4"] += int(sig_m)
            counts["degenerate"] += int(c["degenerate"])
        n = args.datasets
        parts = []
        for key in ("contrast", "old", "ex1", "ex4"):
            lo, hi = wilson(counts[key], n, z=1.959964)
            parts.append(f"{key} {100 * counts[key] / n:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]")
        print(f"{name:13s} " + "; ".join(parts) + f"; degenerate contrasts {counts['degenerate']}; "
              f"{time.monotonic() - start:.0f} s", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=int, default=200)
    ap.add_argument("--resamples", type=int, default=200)
    ap.add_argument("--templates", type=int, default=60)
    ap.add_argument("--variants", type=int, default=10)
    ap.add_argument("--effect", type=float, default=-0.6)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7000)
    ap.add_argument("--engine", default="laplace", help="laplace or lme4")
    run(ap.parse_args())


if __name__ == "__main__":
    main()
