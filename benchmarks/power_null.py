"""Why the power table's OR = 1 row shows 12.5-15% rejections (issue 50): the power study's null
data sets, the bootstrap test on them and, on the same data sets, the full-data Wald test of the
GLMM and of a plain logistic GLM (no template effect).

1. The embedded power study's own OR = 1 point (the schema's defaults: the paper's median model,
   100 templates x 50 variants, B = 100, laplace, seed 1) with its 20 data sets, and the same with
   40 and with many more data sets (the first 20 are the same: data set k's seed depends on k only).
2. On each of those data sets: the Wald P of the GLMM's full-data fit (laplace) and of a plain
   logistic regression correct ~ variant (IRLS), and the simulated data's own log odds ratio.
3. The rates with 95% Wilson intervals, beside the Eq. 4 test's exact level at B
   (power.bootstrap_test_level) and alpha.

    PYTHONPATH=src python3 benchmarks/power_null.py [--sims 400] [--resamples 100] [--cores 2]
                                                    [--scenario median] [--effect variant|gamma]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import special, stats

from earnest.gsm import power_design as D
from earnest.stats import glmm as G
from earnest.stats import power as P
from earnest.stats.engines import laplace as LP
from earnest.stats.defaults import POWER_SEED


def glm_wald_p(df, effect: str = "variant") -> float:
    """Wald P of the effect's term in the logistic regression correct ~ variant [+ gamma] (no
    template effect), by IRLS."""
    cols = [np.ones(len(df)), df["variant"].to_numpy(float)]
    if effect == "gamma":
        cols.append(df["gamma"].to_numpy(float) - df["gamma"].mean())
    X = np.column_stack(cols)
    y = df["correct"].to_numpy(float)
    beta = np.zeros(X.shape[1])
    for _ in range(50):
        mu = special.expit(X @ beta)
        w = mu * (1 - mu)
        H = X.T @ (X * w[:, None])
        step = np.linalg.solve(H, X.T @ (y - mu))
        beta += step
        if np.max(np.abs(step)) < 1e-10:
            break
    j = X.shape[1] - 1                                  # variant (GLMM 1) or gamma (GLMM 2)
    se = math.sqrt(np.linalg.inv(H)[j, j])
    return float(2 * stats.norm.sf(abs(beta[j] / se)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=400)
    ap.add_argument("--resamples", type=int, default=100)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--seed", type=int, default=POWER_SEED)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--scenario", default="median", help="a paper scenario (power.scenarios)")
    ap.add_argument("--effect", default="variant", choices=["variant", "gamma"])
    args = ap.parse_args()
    (sc,) = D.published_scenarios(D.default_published_dir(), [args.scenario])
    glmm, term = P.EFFECT_TERMS[args.effect]
    effect_key = list(P.EFFECT_TERMS).index(args.effect)
    nt, nv = D.PAPER_DESIGN
    print(f"effect {args.effect}; scenario {sc.name}: GSM-Base accuracy {sc.baseline_acc:.3f}, template variance {sc.ranef_var:.2f}; "
          f"{nt} x {nv}; B = {args.resamples}; Eq. 4's exact level at this B: "
          f"{P.bootstrap_test_level(args.resamples, args.alpha):.3f}", flush=True)
    for n in (20, 40, args.sims):
        t0 = time.perf_counter()
        row = P.power_point(nt, nv, 1.0, sc, effect=args.effect, n_sims=n, n_resamples=args.resamples,
                            alpha=args.alpha, seed=args.seed, engine="laplace", cores=args.cores)
        lo, hi = row["power_ci_low"], row["power_ci_high"]
        print(f"bootstrap test ({args.effect} effect), OR 1, {n} data sets: {row['n_p_below_alpha']}/{n} = {row['power']:.3f} "
              f"[Wilson {lo:.3f}, {hi:.3f}] ({time.perf_counter() - t0:.0f} s)", flush=True)
    # the same data sets (power_point's seeds), their full-data Wald tests
    glmm_p, glm_p, log_or, first = [], [], [], []
    for k in range(args.sims):
        data_seed = P._seed(args.seed, 1, 0, effect_key, nt, nv, k)
        df = P.simulate_design(nt, nv, odds_ratio=1.0, baseline_acc=sc.baseline_acc, ranef_var=sc.ranef_var,
                               effect=args.effect, seed=data_seed)
        d = G.validate_glmm_input(df, glmm)
        wf = LP.full_fit(d, glmm)
        glmm_p.append(float(wf.coefs.set_index("term").loc[term, "p"]))
        glm_p.append(glm_wald_p(d, args.effect))
        a = d.groupby("variant")["correct"].mean()
        log_or.append(float(special.logit(a[1]) - special.logit(a[0])))
    glmm_p, glm_p = np.array(glmm_p), np.array(glm_p)
    for label, p in (("GLMM Wald (laplace full fit)", glmm_p), ("plain GLM Wald", glm_p)):
        for n in (20, 40, args.sims):
            k = int(np.sum(p[:n] < args.alpha))
            lo, hi = P.wilson(k, n)
            print(f"{label}, OR 1, {n} data sets: {k}/{n} = {k / n:.3f} [Wilson {lo:.3f}, {hi:.3f}]")
    first = np.flatnonzero(glmm_p[:20] < args.alpha)
    print(f"the first 20 data sets that the GLMM Wald test rejects: {first.tolist()}, their pooled log OR "
          f"{[round(log_or[i], 3) for i in first]}; pooled log OR over all {args.sims}: mean "
          f"{np.mean(log_or):+.4f}, sd {np.std(log_or, ddof=1):.4f}")
    # the null distribution of the Wald P values: uniform if the GLMM's Wald test holds its level
    ks = stats.kstest(glmm_p, "uniform")
    print(f"GLMM Wald P over {args.sims} null data sets against uniform: K-S D {ks.statistic:.3f}, P {ks.pvalue:.3f}")


if __name__ == "__main__":
    main()
