"""Validity of the power study and of paired comparisons on simulated data with known answers.

1. False-positive rate at OR = 1: the share of significant data sets, with its 95% Wilson interval,
   against alpha.
2. Power at a large design (default the paper's 100 x 50, its median model) at the OR where the
   Wald approximation gives 50% power: simulated power with its interval beside the Wald value,
   for the variant effect (``wald``) and the number effect (``gamma_wald``, GLMM 2).
3. A strong effect (OR 0.1): power near 1.
4. Paired comparisons: data sets with a known conditional log OR between two models; coverage of
   the 95% bootstrap interval, with the bias and spread of the full-data estimate against the
   bootstrap's spread and McNemar's ratio, and what the clean rule drops.

Each line gives its cost (GLMM fits, seconds, fits/s). Small defaults run in minutes on 2 cores;
raise --sims for tighter intervals.

    python benchmarks/power_validity.py [--sims 40] [--resamples 100] [--engine lme4] [--cores 2]
                                        [--only fpr,wald,strong,paired,gamma_fpr,gamma_wald]
                                        [--fpr-large] [--paired 20x5]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from earnest.stats import compare as C
from earnest.gsm import power_design as D
from earnest.stats import power as P


def _line(label, row, extra=""):
    lo, hi = row["power_ci_low"], row["power_ci_high"]
    print(f"{label}: {row['n_p_below_alpha']}/{row['n_sims']} significant = {row['power']:.3f} "
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
    ap.add_argument("--only", default="fpr,wald,strong,paired",
                    help="checks: fpr, wald, strong, paired, gamma_fpr, gamma_wald")
    ap.add_argument("--fpr-large", action="store_true", help="also the false-positive rate at the large design")
    ap.add_argument("--paired", default="20x5", help="design of check 4 (templates x items per template)")
    ap.add_argument("--paired-log-or", type=float, default=-0.8)
    ap.add_argument("--paired-agq", type=int, default=1,
                    help="check 4's fit: 1 Laplace (template and item intercepts), k > 1 quadrature (compare --agq)")
    args = ap.parse_args()
    only = set(args.only.split(","))
    st, sv = map(int, args.small.split("x"))
    lt, lv = map(int, args.large.split("x"))
    sc = D.published_scenarios(D.default_published_dir(), ["median"])[0]
    kw = dict(n_sims=args.sims, n_resamples=args.resamples, alpha=args.alpha, seed=args.seed, engine=args.engine,
              cores=args.cores)
    print(f"scenario {sc.name}: GSM-Base accuracy {sc.baseline_acc:.3f}, template variance {sc.ranef_var:.2f}; "
          f"B = {args.resamples}, alpha = {args.alpha}, engine {args.engine}")
    lvl = f"the Eq. 4 test's level at B = {args.resamples}: {P.bootstrap_test_level(args.resamples, args.alpha):.3f}"
    if "fpr" in only:
        _line(f"1. false-positive rate, OR 1, {st} x {sv}", P.power_point(st, sv, 1.0, sc, **kw),
              f" (alpha {args.alpha}; {lvl})")
    if "fpr" in only and args.fpr_large:
        _line(f"1b. false-positive rate, OR 1, {lt} x {lv}", P.power_point(lt, lv, 1.0, sc, **kw),
              f" (alpha {args.alpha}; {lvl})")
    if "gamma_fpr" in only:
        _line(f"1c. false-positive rate of the number effect, OR 1, {st} x {sv}",
              P.power_point(st, sv, 1.0, sc, effect="gamma", **kw), f" (alpha {args.alpha}; {lvl})")
    for effect in ("variant", "gamma"):
        if ("wald" if effect == "variant" else "gamma_wald") not in only:
            continue
        orr = P.wald_mde(lt, lv, baseline_acc=sc.baseline_acc, ranef_var=sc.ranef_var, alpha=args.alpha, target=0.5,
                         effect=effect)
        row = P.power_point(lt, lv, orr, sc, effect=effect, **kw)
        _line(f"2{'' if effect == 'variant' else 'b'}. {effect} effect: power at {lt} x {lv}, OR {orr:.3f}"
              + (" per unit of gamma (sd 1.5)" if effect == "gamma" else ""), row, f" vs Wald {row['wald_power']:.3f}")
    if "strong" in only:
        _line(f"3. strong effect, OR 0.1, {st} x {sv}", P.power_point(st, sv, 0.1, sc, **kw))
    if "paired" in only:
        paired_check(args)


def _full_fit(pairs, agq=1):
    """Full-data fit of the paired GLMM (log OR, singular flag) through compare.R's own fit."""
    from earnest.stats import rbridge
    ro = rbridge.r()
    ro.r("earnest_pv_full <- function(d, agq) { o <- earnest_compare_fit(d, earnest_template_rows(d)$rows, agq); "
         "c(o$estimate[2], as.numeric(isTRUE(o$singular))) }")
    out = ro.globalenv["earnest_pv_full"](rbridge.to_r_frame(C.compare_frame(pairs)), int(agq))
    return float(out[0]), bool(out[1])


def paired_check(args) -> None:
    """Coverage of the paired comparison's interval, with what drives it: the bias and spread of the
    full-data estimate over data sets against the bootstrap's spread, and how many resamples the
    clean rule drops, and what dropping the singular fits (item variance at 0) as well would do."""
    from earnest.stats.summary import clean_mask, percentile_interval
    true = args.paired_log_or
    nt, ni = map(int, args.paired.split("x"))
    t0 = time.perf_counter()
    rules = ("clean (earnest rule)", "singular fits dropped (reference rule)")
    cov = dict.fromkeys(rules, 0)
    full, mcn, boot_sd, dropped, med = [], [], [], [], {r: [] for r in rules}
    for k in range(args.sims):
        d = C.validate_compare_input(C.simulate_paired(nt, ni, log_or=true, seed=args.seed + k))
        pairs = C.paired_rows(d, "models", "p", "a", "b")
        est, _ = _full_fit(pairs, args.paired_agq)
        full.append(est)
        m = C.mcnemar(pairs["correct_a"], pairs["correct_b"])
        mcn.append(math.log(m["n_ab"] / m["n_ba"]) if m["n_ab"] and m["n_ba"] else float("nan"))
        sh = C.bootstrap_pair(pairs, args.resamples, args.seed + 1000 + k, cores=args.cores, agq=args.paired_agq)
        v = sh[sh["term"] == "variant"]
        clean = clean_mask(sh)[sh["term"] == "variant"].to_numpy()
        singular = v["singular"].astype("boolean").fillna(True).astype(bool).to_numpy()
        dropped.append(1 - clean.mean())
        for rule, keep in zip(rules, (clean, clean & ~singular)):
            theta = v["estimate"].to_numpy(dtype=float)[keep]
            lo, hi = percentile_interval(theta)
            cov[rule] += int(lo <= true <= hi)
            med[rule].append(float(np.median(theta)) if theta.size else float("nan"))
        boot_sd.append(float(np.std(v["estimate"].to_numpy(dtype=float)[clean], ddof=1)))
    secs = time.perf_counter() - t0
    full = np.array(full)
    fit = "Laplace, template + item intercepts" if args.paired_agq == 1 else f"quadrature ({args.paired_agq} points), item intercepts"
    print(f"4. paired comparison ({fit}), true log OR {true}, {nt} templates x {ni} items, B = {args.resamples}, "
          f"{args.sims} data sets ({args.sims * (args.resamples + 1)} fits in {secs:.0f} s):", flush=True)
    print(f"   full-data estimate: mean {np.nanmean(full):+.3f} (bias {np.nanmean(full) - true:+.3f}), sd over data "
          f"sets {np.nanstd(full, ddof=1):.3f}; McNemar log(n_ab/n_ba): median {np.nanmedian(mcn):+.3f}; mean "
          f"bootstrap sd {np.nanmean(boot_sd):.3f}; resamples not clean {np.mean(dropped):.1%}")
    for rule in cov:
        lo, hi = P.wilson(cov[rule], args.sims)
        print(f"   interval from {rule} resamples covers the true value in {cov[rule]}/{args.sims} = "
              f"{cov[rule] / args.sims:.3f} [{lo:.3f}, {hi:.3f}]; median of medians {np.nanmedian(med[rule]):+.3f}",
              flush=True)

if __name__ == "__main__":
    main()
