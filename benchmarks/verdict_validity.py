"""The verdict at the accuracy ceiling and away from it, against known truth (issue 50).

Simulated GLMM 1 data sets (100 templates x 1 GSM-Base item + 50 GSM-Variants items, template
intercepts u ~ N(0, 0.5^2)) in four cells: ceiling null (99.4% in both conditions), ceiling effect
(99% vs 91%), ordinary null (70% both) and ordinary effect (70% vs 60%). Each data set goes through
the workflow's own statistics (earnest.stats.run.run_glmm + earnest.stats.summaries.build_summaries:
the bootstrap shard, the full-data fit, the profile likelihood and the verdict) in earnest mode with
the chosen engine, one test per data set (uncorrected: a family of one). Printed per cell: the share
called significant with its 95% Wilson interval, beside Fisher's exact test on the pooled 2x2 table
and the unpenalised template bootstrap alone (Eq. 4 P < alpha over clean unpenalised fits, separated
resamples at their bound: the rule before this change, without its degenerate refusal) on the same
data sets, as ratios to Fisher's rate.

    python3 benchmarks/verdict_validity.py --engine laplace --datasets 100
    python3 benchmarks/verdict_validity.py --engine lme4 --datasets 20 --cells ceiling_null,ceiling_effect
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

CELLS = {"ceiling_null": (0.994, 0.994), "ceiling_effect": (0.99, 0.91),
         "ordinary_null": (0.70, 0.70), "ordinary_effect": (0.70, 0.60)}


def logit(p):
    return math.log(p / (1 - p))


def simulate(cell: str, seed: int, templates: int = 100, variants: int = 50, sd: float = 0.5) -> pd.DataFrame:
    pb, pv = CELLS[cell]
    rng = np.random.default_rng(seed)
    u = rng.normal(0, sd, templates)
    t = np.repeat(np.arange(templates), 1 + variants)
    v = np.tile(np.r_[0, np.ones(variants, dtype=int)], templates)
    eta = np.where(v == 0, logit(pb), logit(pv)) + u[t]
    y = (rng.random(t.size) < 1 / (1 + np.exp(-eta))).astype(int)
    return pd.DataFrame({"model": "sim", "prompt": "gsm", "template": t, "variant": v, "correct": y})


def one(args):
    cell, seed, engine, resamples = args
    from scipy.stats import fisher_exact
    from earnest.stats import run, summaries as S
    from earnest.stats.summary import bootstrap_p, clean_mask, glmm_frame, separation_sides, with_separated
    from earnest.stats import engines as E, glmm as G
    df = simulate(cell, seed)
    with tempfile.TemporaryDirectory() as tmp:
        s, _, _ = run.run_glmm(df, 1, resamples, seed, tmp, engine=engine, fidelity="earnest", cores=1,
                               log=lambda m: None)
    t = S.build_summaries(s)
    r = t[t["term"] == "variant"].iloc[0]
    tab = df.groupby("variant")["correct"].agg(["sum", "count"])
    table = [[tab.loc[0, "sum"], tab.loc[0, "count"] - tab.loc[0, "sum"]],
             [tab.loc[1, "sum"], tab.loc[1, "count"] - tab.loc[1, "sum"]]]
    p_fisher = fisher_exact(table)[1]
    # the template bootstrap alone, unpenalised (laplace), separated resamples at their bound
    frame = G.model_frame(df, 1)
    sh = E.run_shard(df, 1, resamples, seed, engine="laplace")
    per = sh.drop_duplicates("resample")
    sides = pd.Series(separation_sides(glmm_frame(df, 1), per["seed"].to_numpy()), index=per["resample"].to_numpy())
    kept = sh[clean_mask(sh, "earnest") & (sh["term"] == "variant")]
    theta, _ = with_separated(kept, sides)
    p_old = bootstrap_p(theta)
    p_old = 2.0 / len(theta) if p_old == 0 and len(theta) else p_old
    del frame
    return {"cell": cell, "seed": seed, "verdict": r["verdict"], "significant": bool(r["significant_uncorrected"]),
            "p_value": r["p_value"], "p_boot": r["p_boot"], "p_lr": r["p_lr"], "p_fisher": p_fisher,
            "fisher": p_fisher < 0.05, "boot_only": p_old < 0.05, "wrong_base": int(table[0][1])}


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return float("nan"), float("nan")
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return c - h, c + h


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", default="laplace")
    ap.add_argument("--datasets", type=int, default=100)
    ap.add_argument("--resamples", type=int, default=100)
    ap.add_argument("--cells", default=",".join(CELLS))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=9000)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    jobs = [(c, a.seed + i, a.engine, a.resamples) for c in a.cells.split(",") for i in range(a.datasets)]
    t0 = time.time()
    with ProcessPoolExecutor(a.workers) as ex:
        res = pd.DataFrame(list(ex.map(one, jobs)))
    if a.out:
        res.to_csv(a.out, index=False)
    print(f"engine {a.engine}, {a.datasets} data sets per cell, B = {a.resamples}, {time.time() - t0:.0f} s, "
          f"load {os.getloadavg()[0]:.1f}")
    for cell, g in res.groupby("cell", sort=False):
        n = len(g)
        for name, col in (("earnest verdict", "significant"), ("Fisher exact", "fisher"),
                          ("bootstrap alone (old)", "boot_only")):
            k = int(g[col].sum())
            lo, hi = wilson(k, n)
            ratio = k / max(int(g["fisher"].sum()), 1)
            print(f"  {cell:16s} {name:22s} {k:4d}/{n} = {k / n:6.1%}  [{lo:.1%}, {hi:.1%}]  x Fisher {ratio:.2f}")
        print(f"  {cell:16s} verdicts: {dict(g['verdict'].value_counts())}; data sets without a wrong GSM-Base "
              f"answer: {int((g['wrong_base'] == 0).sum())}")


if __name__ == "__main__":
    main()
