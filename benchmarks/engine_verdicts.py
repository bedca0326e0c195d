"""The laplace engine's clean verdicts against lme4's, resample by resample, on hard designs.

Simulated GLMM 1 data of 100 templates x (1 GSM-Base + 50 GSM-Variants) answers (issues 24.7 and
25): near-perfect accuracy with GSM-Base all right, GSM-Base ~97-99% (some answers wrong), 2%
accuracy, GSM-Base all wrong, a template always right, template SD 3 with OR 0.37, a strong
per-answer gamma effect that GLMM 1 leaves out, and near-perfect variants with GSM-Base answers
wrong. Both engines fit the same resamples (R's draws); lme4 with its defaults on ``--rows`` and,
on every resample where the verdicts differ, with its PIRLS converged (tolPwrss = 1e-12). Each
disagreement is put in one kind:

* separated: the drawn templates' GSM-Base or GSM-Variants answers are all right or all wrong, so
  the variant effect has no finite estimate; laplace's Newton does not converge (clean under no
  rule), lme4 stops wherever its deviance turns flat;
* lme4 PIRLS: only lme4's defaults flag the fit and lme4 with PIRLS converged calls it clean;
* lme4 boundary: lme4 stops at theta = 0 (singular) where the Laplace deviance is lower inside;
* other: anything else (printed in full).

Prints per design and rule the clean counts of both engines, the kinds, and each summary's median,
interval and degenerate verdict.

    python benchmarks/engine_verdicts.py [--resamples 100] [--rows aggregated|answers] [--designs NAME ...]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
import pandas as pd

from earnest.stats import engines as E
from earnest.stats import glmm as G
from earnest.stats.engines import lme4 as L4
from earnest.stats.engines import laplace as L
from earnest.stats.simulate import simulate_glmm_input
from earnest.stats.summaries import build_summaries
from earnest.stats.summary import clean_mask, summarise

RULES = ("reference", "earnest")


def designs() -> dict:
    sim = simulate_glmm_input
    out = {
        "variants 99.5%, GSM-Base all right": sim(100, 50, variant_effect=-0.7, intercept=6.0, ranef_sd=0.5, seed=3),
        "GSM-Base 99%, variants 92%": sim(100, 50, variant_effect=-2.5, intercept=5.0, ranef_sd=0.5, seed=4),
        "variants 99.6%, GSM-Base 97% (wrong ones)": sim(100, 50, variant_effect=1.5, intercept=4.0, ranef_sd=0.5,
                                                        seed=10),
        "2% accuracy": sim(100, 50, variant_effect=-0.3, intercept=-3.9, ranef_sd=0.5, seed=3),
        "template SD 3, OR 0.37": sim(100, 50, variant_effect=np.log(0.37), intercept=3.0, ranef_sd=3.0, seed=6),
        "per-answer gamma effect -3, template SD 0.5": sim(100, 50, variant_effect=-0.5, gamma_effect=-3.0,
                                                           intercept=0.5, ranef_sd=0.5, seed=7),
    }
    allwrong = sim(100, 50, variant_effect=0.5, intercept=0.0, ranef_sd=1.0, seed=5)
    allwrong.loc[allwrong["variant"] == 0, "correct"] = 0
    out["GSM-Base all wrong"] = allwrong
    right = sim(100, 50, variant_effect=-0.5, intercept=0.0, ranef_sd=1.0, seed=5)
    right.loc[right["template"] == 0, "correct"] = 1
    out["a template always right"] = right
    return out


def compare(name: str, raw: pd.DataFrame, n: int, seed: int, rows: str) -> None:
    df = G.validate_glmm_input(raw, 1)
    acc = raw.groupby("variant")["correct"].mean()
    t0 = time.perf_counter()
    lap = E.run_shard(df, 1, n, seed, engine="laplace")
    t1 = time.perf_counter()
    lme = E.run_shard(df, 1, n, seed, engine="lme4", aggregate=rows == "aggregated")
    t2 = time.perf_counter()
    v = lambda s: s[s["term"] == "variant"].reset_index(drop=True)  # noqa: E731
    a, b = v(lap), v(lme)
    sep = L.separated_resamples(df, range(n), seed)
    print(f"\n{name}: GSM-Base {100 * acc[0]:.1f}%, GSM-Variants {100 * acc[1]:.1f}%; {n} resamples ({int(sep.sum())} "
          f"separated); laplace {1000 * (t1 - t0) / n:.1f} ms, lme4 ({rows} rows) {1000 * (t2 - t1) / n:.0f} ms per "
          f"resample")
    wl, wm = L.full_fit(df, 1), L4.wald_fit(df, 1)
    print(f"  full-data fit: laplace {wl.coefs['estimate'].iloc[1]:.3f} {'; '.join(wl.messages) or 'clean'}; lme4 (answers) "
          f"{wm.coefs['estimate'].iloc[1]:.3f} {'; '.join(wm.messages)[:90] or 'clean'}")
    for rule in RULES:
        ca, cb = clean_mask(a, rule).to_numpy(), clean_mask(b, rule).to_numpy()
        diff = np.flatnonzero(ca != cb)
        kinds: dict[str, int] = {}
        other = []
        tight = pd.DataFrame()
        if diff.size:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tight = E.cross_check(df, 1, lap[lap["resample"].isin(diff)], len(diff), seed)
            tight = tight[tight["term"] == "variant"].set_index("resample")
        for r in diff:
            if sep[r]:
                kind = "separated, lme4 clean at |est| > 10" if cb[r] and abs(b.loc[r, "estimate"]) > 10 else \
                    "separated, other"
            elif ca[r] and r in tight.index and tight.loc[r, "tight_converged"]:
                kind = "lme4 PIRLS (gradient check on its inexact deviance)"
            elif ca[r] and "singular" in str(b.loc[r, "messages"]) and r in tight.index \
                    and tight.loc[r, "deviance_gap"] > 1e-6:
                kind = "lme4 boundary (stops at theta = 0, deviance lower inside)"
            else:
                kind = "other"
                other.append(f"resample {r}: laplace {a.loc[r, 'estimate']:.3f} {a.loc[r, 'messages'][:60]!r}; "
                             f"lme4 {b.loc[r, 'estimate']:.3f} {b.loc[r, 'messages'][:60]!r}")
            kinds[kind] = kinds.get(kind, 0) + 1
        sa = build_summaries(summarise(lap, df, 1, model="m", prompt="p", fidelity=rule)).iloc[0]
        sb = build_summaries(summarise(lme, df, 1, model="m", prompt="p", fidelity=rule)).iloc[0]
        desc = lambda s: (f"median {s['median_log_or']:.2f} [{s['ci_low_log']:.2f}, {s['ci_high_log']:.2f}] "  # noqa: E731
                          f"p {s['p_boot']:.3f}{' DEGENERATE' if s['degenerate'] else ''}")
        print(f"  {rule:9s}: clean laplace {int(ca.sum())}, lme4 {int(cb.sum())}; differ on {diff.size}: "
              + (", ".join(f"{k} x {c}" for k, c in kinds.items()) or "none"))
        print(f"             laplace {desc(sa)}; lme4 {desc(sb)}; laplace not converged {int(sa['n_not_converged'])}")
        for line in other[:5]:
            print(f"             {line}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--resamples", type=int, default=100)
    ap.add_argument("--seed", type=int, default=77)
    ap.add_argument("--rows", choices=G.ROWS, default="aggregated", help="rows lme4 fits (laplace: the same deviance)")
    ap.add_argument("--designs", nargs="*", help="names (substrings) of the designs to run; default all")
    args = ap.parse_args()
    print(f"engine verdicts, {args.resamples} resamples per design, lme4 on {args.rows} rows; load average "
          f"{os.getloadavg()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    for name, raw in designs().items():
        if args.designs and not any(d in name for d in args.designs):
            continue
        compare(name, raw, args.resamples, args.seed, args.rows)
    print(f"\nload average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
