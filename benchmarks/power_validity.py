"""Validity of the power study and of paired comparisons on simulated data with known answers.

1. False-positive rate at OR = 1: the share of significant data sets, with its 95% Wilson interval,
   against alpha.
2. Power at a large design (default the paper's 100 x 50, its median model) at the OR where the
   Wald approximation gives 50% power: simulated power with its interval beside the Wald value.
3. A strong effect (OR 0.1): power near 1.
4. Paired comparisons: data sets with a known conditional log OR between two models; coverage of
   the 95% bootstrap interval and the median estimate.

Each line gives its cost (GLMM fits, seconds, fits/s). Small defaults run in minutes on 2 cores;
raise --sims for tighter intervals.

    python benchmarks/power_validity.py [--sims 40] [--resamples 100] [--engine lme4] [--cores 2]
                                        [--only fpr,wald,strong,paired]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from earnest.stats import compare as C
from earnest.stats import power as P


def _line(label, row, extra=""):
    lo, hi = row["power_ci_low"], row["power_ci_high"]
    print(f"{label}: {row['n_significant']}/{row['n_sims']} significant = {row['power']:.3f} "
          f"[{lo:.3f}, {hi:.3f}]{extra}; {row['fits']} fits in {row['seconds']:.0f} s "
          f"({row['fits'] / max(row['seconds'], 1e-9):.1f} fits/s)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=40)
    ap.add_argument("--resamples", type=int, default=100)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--engine", default="lme4")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--small", default="30x10", help="design of checks 1 and 3 (templates x variants)")
    ap.add_argument("--large", default="100x50", help="design of check 2")
    ap.add_argument("--only", default="fpr,wald,strong,paired")
    args = ap.parse_args()
    only = set(args.only.split(","))
    st, sv = map(int, args.small.split("x"))
    lt, lv = map(int, args.large.split("x"))
    sc = P.published_scenarios(P.default_published_dir(), ["median"])[0]
    kw = dict(n_sims=args.sims, n_resamples=args.resamples, alpha=args.alpha, seed=args.seed, engine=args.engine,
              cores=args.cores)
    print(f"scenario {sc.name}: GSM-Base accuracy {sc.baseline_acc:.3f}, template variance {sc.ranef_var:.2f}; "
          f"B = {args.resamples}, alpha = {args.alpha}, engine {args.engine}")
    if "fpr" in only:
        _line(f"1. false-positive rate, OR 1, {st} x {sv}", P.power_point(st, sv, 1.0, sc, **kw),
              f" (alpha {args.alpha})")
    if "wald" in only:
        orr = P.wald_mde(lt, lv, baseline_acc=sc.baseline_acc, ranef_var=sc.ranef_var, alpha=args.alpha, target=0.5)
        row = P.power_point(lt, lv, orr, sc, **kw)
        _line(f"2. power at {lt} x {lv}, OR {orr:.3f}", row, f" vs Wald {row['wald_power']:.3f}")
    if "strong" in only:
        _line(f"3. strong effect, OR 0.1, {st} x {sv}", P.power_point(st, sv, 0.1, sc, **kw))
    if "paired" in only:
        true = -0.8
        t0 = time.perf_counter()
        covered, est = 0, []
        for k in range(args.sims):
            d = C.validate_compare_input(C.simulate_paired(st, sv, log_or=true, seed=args.seed + k))
            r = C.compare_pair(C.paired_rows(d, "models", "p", "a", "b"), args.resamples, args.seed + 1000 + k,
                               cores=args.cores)
            est.append(r["median_log_or"])
            covered += int(r["ci_low"] <= math.exp(true) <= r["ci_high"])
        secs = time.perf_counter() - t0
        lo, hi = P.wilson(covered, args.sims)
        print(f"4. paired comparison, true log OR {true}, {st} templates x {sv} items: 95% interval covers it in "
              f"{covered}/{args.sims} = {covered / args.sims:.3f} [{lo:.3f}, {hi:.3f}]; median estimate "
              f"{np.nanmedian(est):+.3f}; {args.sims * args.resamples} fits in {secs:.0f} s", flush=True)


if __name__ == "__main__":
    main()
