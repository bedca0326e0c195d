"""Validity of the bootstrapped GLMM on simulated data with a known variant effect.

For each scenario (a true variant effect, and no effect), simulates ``--datasets`` data sets,
bootstraps GLMM 1 (or 2) on each and prints: coverage of the 95% percentile interval, the share of
P < 0.05 (power under the effect, false-positive rate under none), the mean clean share, and the
same for the Wald interval/test of the full-data fit as a reference measured in the same run.

    python benchmarks/glmm_validity.py [--datasets 30] [--resamples 100] [--templates 60]
                                       [--variants 20] [--glmm 1] [--cores 2]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy import stats

from earnest.stats.glmm import validate_glmm_input, wald_fit
from earnest.stats.simulate import coverage_study, simulate_glmm_input


def wald_study(n_datasets, effect, seed, glmm, templates, variants, gamma_effect):
    rows = []
    for k in range(n_datasets):
        df = validate_glmm_input(simulate_glmm_input(templates, variants, variant_effect=effect,
                                                     gamma_effect=gamma_effect, seed=seed + k), glmm)
        c = wald_fit(df, glmm).coefs.set_index("term").loc["variant"]
        half = stats.norm.ppf(0.975) * c["se"]
        rows.append({"covered": c["estimate"] - half <= effect <= c["estimate"] + half, "p_below_alpha": c["p"] < 0.05})
    return pd.DataFrame(rows)


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
    args = ap.parse_args()
    gamma_effect = -0.2 if args.glmm == 2 else 0.0
    print(f"GLMM {args.glmm}; {args.datasets} data sets per scenario; {args.templates} templates x "
          f"(1 + {args.variants}) items; B = {args.resamples}")
    for label, effect, seed in (("effect", args.effect, args.seed), ("no effect", 0.0, args.seed + 100_000)):
        t0 = time.time()
        boot = coverage_study(args.datasets, effect, n_resamples=args.resamples, seed=seed, glmm=args.glmm,
                              n_templates=args.templates, n_variants=args.variants, gamma_effect=gamma_effect,
                              cores=args.cores)
        wald = wald_study(args.datasets, effect, seed, args.glmm, args.templates, args.variants, gamma_effect)
        what = "power" if effect != 0 else "false-positive rate"
        print(f"{label} (true log-OR {effect:+.2f}): bootstrap coverage {boot.covered.mean():.3f}, "
              f"{what} {boot.p_below_alpha.mean():.3f}, median estimate {np.median(boot['median']):+.3f}, "
              f"clean {boot.n_clean.mean() / args.resamples:.3f} | Wald coverage {wald.covered.mean():.3f}, "
              f"{what} {wald.p_below_alpha.mean():.3f}  ({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
