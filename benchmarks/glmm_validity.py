"""Validity of the bootstrapped GLMM on simulated data with a known variant effect.

For each scenario (a true variant effect, and no effect), simulates ``--datasets`` data sets,
bootstraps GLMM 1 (or 2) on each and prints: coverage of the 95% percentile interval, the share of
P < 0.05 (power under the effect, false-positive rate under none), the mean clean share, and the
same for the Wald interval/test of the full-data fit as a reference measured in the same run.

    python benchmarks/glmm_validity.py [--datasets 30] [--resamples 100] [--templates 60]
                                       [--variants 20] [--glmm 1] [--cores 2] [--engine lme4]

``--ceiling``: no effect at accuracies near 100% (template intercepts ``--intercepts``), where
resamples that draw no wrong GSM-Base answer are separated: the false-positive rate of the
summaries' rule (separated resamples counted at their bound, a degenerate fit never significant)
against Eq. 4 over the clean fits alone (the rule before), on the same fits, with Wilson intervals.

    python benchmarks/glmm_validity.py --ceiling [--datasets 200] [--engine laplace]
                                       [--intercepts 4.5,6,7.5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy import stats

from earnest.stats.engines.lme4 import wald_fit
from earnest.stats.glmm import validate_glmm_input
from earnest.stats.simulate import coverage_study, simulate_glmm_input
from earnest.stats.power import wilson


def wald_study(n_datasets, effect, seed, glmm, templates, variants, gamma_effect):
    rows = []
    for k in range(n_datasets):
        df = validate_glmm_input(simulate_glmm_input(templates, variants, variant_effect=effect,
                                                     gamma_effect=gamma_effect, seed=seed + k), glmm)
        c = wald_fit(df, glmm).coefs.set_index("term").loc["variant"]
        half = stats.norm.ppf(0.975) * c["se"]
        rows.append({"covered": c["estimate"] - half <= effect <= c["estimate"] + half, "p_below_alpha": c["p"] < 0.05})
    return pd.DataFrame(rows)


def ceiling(args) -> None:
    print(f"no effect at the accuracy ceiling; {args.datasets} data sets per intercept; {args.templates} templates x "
          f"(1 + {args.variants}) items; B = {args.resamples}; engine {args.engine}")
    for k, intercept in enumerate(float(x) for x in args.intercepts.split(",")):
        t0 = time.time()
        study = coverage_study(args.datasets, 0.0, n_resamples=args.resamples, seed=args.seed + 10_000 * k,
                               glmm=args.glmm, n_templates=args.templates, n_variants=args.variants,
                               cores=args.cores, engine=args.engine, intercept=intercept)
        n = len(study)
        new = int(study["p_below_alpha"].sum())
        old = int((study["p_clean_only"] < 0.05).sum())
        lo_new, hi_new = wilson(new, n, z=1.959964)
        lo_old, hi_old = wilson(old, n, z=1.959964)
        print(f"intercept {intercept:g}: accuracy {100 * study.accuracy.mean():.2f}% "
              f"(range {100 * study.accuracy.min():.2f}-{100 * study.accuracy.max():.2f}), "
              f"data sets with separated resamples {int((study.n_separated > 0).sum())}/{n}, degenerate "
              f"{int(study.degenerate.sum())}/{n} | false positives: summaries' rule {new}/{n} = {new / n:.3f} "
              f"[{lo_new:.3f}, {hi_new:.3f}], clean fits alone {old}/{n} = {old / n:.3f} [{lo_old:.3f}, {hi_old:.3f}]"
              f"  ({time.time() - t0:.0f} s)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=int, default=30)
    ap.add_argument("--resamples", type=int, default=100)
    ap.add_argument("--templates", type=int, default=60)
    ap.add_argument("--variants", type=int, default=20)
    ap.add_argument("--glmm", type=int, choices=(1, 2), default=1)
    ap.add_argument("--effect", type=float, default=-0.6)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--seed", type=int, default=5000)
    ap.add_argument("--engine", default="lme4", help="lme4 or laplace")
    ap.add_argument("--ceiling", action="store_true", help="no effect at accuracies near 100%%")
    ap.add_argument("--intercepts", default="4.5,6,7.5", help="--ceiling: template intercepts (log-odds)")
    args = ap.parse_args()
    if args.ceiling:
        ceiling(args)
        return
    gamma_effect = -0.2 if args.glmm == 2 else 0.0
    print(f"GLMM {args.glmm}; {args.datasets} data sets per scenario; {args.templates} templates x "
          f"(1 + {args.variants}) items; B = {args.resamples}")
    for label, effect, seed in (("effect", args.effect, args.seed), ("no effect", 0.0, args.seed + 100_000)):
        t0 = time.time()
        boot = coverage_study(args.datasets, effect, n_resamples=args.resamples, seed=seed, glmm=args.glmm,
                              n_templates=args.templates, n_variants=args.variants, gamma_effect=gamma_effect,
                              cores=args.cores, engine=args.engine)
        wald = wald_study(args.datasets, effect, seed, args.glmm, args.templates, args.variants, gamma_effect)
        what = "power" if effect != 0 else "false-positive rate"
        print(f"{label} (true log-OR {effect:+.2f}): bootstrap coverage {boot.covered.mean():.3f}, "
              f"{what} {boot.p_below_alpha.mean():.3f}, median estimate {np.median(boot['median']):+.3f}, "
              f"clean {boot.n_clean.mean() / args.resamples:.3f} | Wald coverage {wald.covered.mean():.3f}, "
              f"{what} {wald.p_below_alpha.mean():.3f}  ({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
