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

``--verdict``: the verdict (issue 50) against known truth in four cells of GLMM 1 data (100 templates x
(1 GSM-Base + 50 GSM-Variants), template intercepts u ~ N(0, 0.5^2)): ceiling null (99.4% in both
conditions), ceiling effect (99% vs 91%), ordinary null (70% both), ordinary effect (70% vs 60%). Each
data set goes through the workflow's own statistics (run_glmm -> build_summaries: penalised shards, the
full-data fit, the profile likelihood, the verdict) in earnest mode with ``--engine``, one test per data
set; beside it, on the same data sets, Fisher's exact test on the pooled 2x2 table and the unpenalised
template bootstrap alone (the rule before issue 50, without its degenerate refusal), with Wilson
intervals and ratios to Fisher's rate.

    python benchmarks/glmm_validity.py --verdict --engine laplace --datasets 100
    python benchmarks/glmm_validity.py --verdict --engine lme4 --datasets 20 --cells ceiling_null,ceiling_effect

``--cross-ceiling``: the cross-lingual GLMM with no interaction where one language sits at the ceiling
(English GSM-Base ~62%, French ~98%, the same variant effect in both; 60 templates x (1 + 10) per
language): the share of data sets whose interaction is called significant (truth: none), its mean
estimate, beside the full-data penalised likelihood-ratio test alone.

    python benchmarks/glmm_validity.py --cross-ceiling --datasets 100 --engine laplace

``--sparse``: the verdict where one condition has few events (issue 50's closing note), not none: the
bootstrap alone, the penalised likelihood-ratio test alone, their larger P (the separated-data rule) and
the exact test, on the same data sets, with Wilson intervals. Pair cells: 30 templates x 2 items, both
answers wrong on concordant items, an item discordant with probability d (5, 7 or 10 of 60), a right on
it with probability q (0.5: null), fitted as ``compare`` fits a pair without item intercepts (laplace),
beside McNemar's exact test and Fisher's on the pooled 2x2. GLMM 1 cells: 100 templates x (1 GSM-Base
+ 10 GSM-Variants), GSM-Base at 97% (about 3 wrong answers of 100) against GSM-Variants at 97% (null)
or 88%, through the workflow's statistics, beside Fisher's. Data sets whose rarer count is 0 (separated:
the rule already applies) are redrawn; the smallest rarer count of each data set is recorded.

    python benchmarks/glmm_validity.py --sparse --datasets 300 --cores 1 \
        --cells pair_null5,pair_null7,pair_null10,pair_effect7,pair_effect10
    python benchmarks/glmm_validity.py --sparse --datasets 100 --cores 1 --cells glmm_null,glmm_effect

``--holm``: B against Holm. Ten models of one prompt, each with a strong variant effect (90% vs 50%,
every resample below 0), one Holm family of 10: at ``--resamples`` B the bootstrap's bound 2/B cannot
pass Holm's smallest threshold alpha/10 when B <= 400; the verdict must say "unresolved" and name the B
that resolves it, and at that B find all ten.

    python benchmarks/glmm_validity.py --holm --resamples 200
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

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


CELLS = {"ceiling_null": (0.994, 0.994), "ceiling_effect": (0.99, 0.91),
         "ordinary_null": (0.70, 0.70), "ordinary_effect": (0.70, 0.60)}
#: --holm's effect: every resample below 0 (Wald z ~ 6)
STRONG = (0.90, 0.50)


def logit(p):
    return math.log(p / (1 - p))


def simulate_cell(cell, seed: int, templates: int = 100, variants: int = 50, sd: float = 0.5) -> pd.DataFrame:
    """GLMM 1 answers of ``cell`` (a name of CELLS, or the (GSM-Base, GSM-Variants) accuracies)."""
    pb, pv = CELLS[cell] if isinstance(cell, str) else cell
    rng = np.random.default_rng(seed)
    u = rng.normal(0, sd, templates)
    t = np.repeat(np.arange(templates), 1 + variants)
    v = np.tile(np.r_[0, np.ones(variants, dtype=int)], templates)
    eta = np.where(v == 0, logit(pb), logit(pv)) + u[t]
    y = (rng.random(t.size) < 1 / (1 + np.exp(-eta))).astype(int)
    return pd.DataFrame({"model": "sim", "prompt": "gsm", "template": t, "variant": v, "correct": y})


def verdict_one(args):
    cell, seed, engine, resamples = args
    from scipy.stats import fisher_exact
    from earnest.stats import run, summaries as S
    from earnest.stats.summary import bootstrap_p, clean_mask, glmm_frame, separation_sides, with_separated
    from earnest.stats import engines as E, glmm as G
    df = simulate_cell(cell, seed)
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


def simulate_all(fn, jobs, args) -> pd.DataFrame:
    """One simulated data set per job (``fn(job)``: its row) on ``args.cores`` processes; the rows,
    also written to ``args.out`` where given."""
    with ProcessPoolExecutor(args.cores) as ex:
        res = pd.DataFrame(list(ex.map(fn, jobs)))
    if args.out:
        res.to_csv(args.out, index=False)
    return res


def rate(k: int, n: int) -> str:
    """k of n data sets, as a share with its 95% Wilson interval."""
    lo, hi = wilson(k, n, z=1.959964)
    return f"{k:4d}/{n} = {k / n:6.1%}  [{lo:.1%}, {hi:.1%}]"


def verdict(args) -> None:
    cells = args.cells.split(",")
    jobs = [(c, args.seed + 4000 + i, args.engine, args.resamples) for c in cells for i in range(args.datasets)]
    t0 = time.time()
    res = simulate_all(verdict_one, jobs, args)
    print(f"the verdict: engine {args.engine}, {args.datasets} data sets per cell, B = {args.resamples}, "
          f"{time.time() - t0:.0f} s, load {os.getloadavg()[0]:.1f}")
    for cell, g in res.groupby("cell", sort=False):
        n = len(g)
        for name, col in (("earnest verdict", "significant"), ("Fisher exact", "fisher"),
                          ("bootstrap alone (old)", "boot_only")):
            k = int(g[col].sum())
            ratio = k / max(int(g["fisher"].sum()), 1)
            print(f"  {cell:16s} {name:22s} {rate(k, n)}  x Fisher {ratio:.2f}")
        print(f"  {cell:16s} verdicts: {dict(g['verdict'].value_counts())}; data sets without a wrong GSM-Base "
              f"answer: {int((g['wrong_base'] == 0).sum())}")


#: --sparse's cells: pairs (discordant share d of 60 items, P(a right | discordant) q) and GLMM 1
#: (GSM-Base, GSM-Variants accuracies)
SPARSE = {"pair_null5": ("pair", 5 / 60, 0.5), "pair_null7": ("pair", 7 / 60, 0.5),
          "pair_null10": ("pair", 10 / 60, 0.5), "pair_effect7": ("pair", 7 / 60, 1 / 7),
          "pair_effect10": ("pair", 10 / 60, 0.1), "glmm_null": ("glmm", 0.97, 0.97),
          "glmm_effect": ("glmm", 0.97, 0.88)}


def simulate_pair(d: float, q: float, seed: int, templates: int = 30, items: int = 2) -> pd.DataFrame:
    """Paired answers of models a and b (compare's rows): concordant items wrong for both, an item
    discordant with probability ``d``, a right on a discordant item with probability ``q``."""
    rng = np.random.default_rng(seed)
    n = templates * items
    disc = rng.random(n) < d
    a_right = disc & (rng.random(n) < q)
    b_right = disc & ~a_right
    t = np.repeat(np.arange(templates), items)
    item = [f"x{k}" for k in range(n)]
    return pd.concat([pd.DataFrame({"model": m, "prompt": "p", "template": t, "item": item, "correct": c.astype(int)})
                      for m, c in (("a", a_right), ("b", b_right))], ignore_index=True)


def sparse_one(args):
    cell, seed, resamples = args
    from scipy.stats import fisher_exact
    from earnest.stats.verdict import bounded_p
    kind, x, y = SPARSE[cell]
    for redraw in range(1000):      # the rarer count 0 is separated data: redraw
        s = seed + 100_000 * redraw
        if kind == "pair":
            df = simulate_pair(x, y, s)
            by = df.groupby("model")["correct"].agg(["sum", "count"])
            succ = [int(by.loc["a", "sum"]), int(by.loc["b", "sum"])]
        else:
            df = simulate_cell((x, y), s, templates=100, variants=10)
            by = df.groupby("variant")["correct"].agg(["sum", "count"])
            succ = [int(by.loc[0, "sum"]), int(by.loc[1, "sum"])]
        n = [int(by["count"].iloc[0]), int(by["count"].iloc[1])]
        rarer = min(min(k, m - k) for k, m in zip(succ, n))
        if rarer > 0:
            break
    p_fisher = fisher_exact([[succ[0], n[0] - succ[0]], [succ[1], n[1] - succ[1]]])[1]
    if kind == "pair":
        from earnest.stats import compare as C
        data = C.validate_compare_input(df)
        r = C.compare_pair(C.paired_rows(data, "models", "p", "a", "b"), resamples, s, item_effects=False,
                           engine="laplace")
        p_exact = r["p_mcnemar"]
        extra = {"discordant": r["n_ab"] + r["n_ba"]}
    else:
        from earnest.stats import run, summaries as S
        with tempfile.TemporaryDirectory() as tmp:
            out, _, _ = run.run_glmm(df, 1, resamples, s, tmp, engine="laplace", fidelity="earnest", cores=1,
                                     log=lambda m: None)
        t = S.build_summaries(out)
        r = t[t["term"] == "variant"].iloc[0].to_dict()
        p_exact = p_fisher
        extra = {"discordant": -1}
    p_boot, _ = bounded_p(float(r["p_boot"]), float(r["p_bound"]), "earnest")
    p_lr = float(r["p_lr"])
    return {"cell": cell, "seed": s, "rarer": rarer, **extra, "p_boot": p_boot, "p_lr": p_lr,
            "p_value": float(r["p_value"]), "p_max": max(p_boot, p_lr), "p_exact": p_exact, "p_fisher": p_fisher}


def sparse(args) -> None:
    cells = list(SPARSE) if args.cells == ",".join(CELLS) else args.cells.split(",")
    unknown = sorted(set(cells) - set(SPARSE))
    if unknown:
        raise SystemExit(f"--sparse --cells: unknown {unknown}; choose from {sorted(SPARSE)}")
    jobs = [(c, args.seed + 9000 + i, args.resamples) for c in cells for i in range(args.datasets)]
    t0 = time.time()
    res = simulate_all(sparse_one, jobs, args)
    print(f"sparse data: laplace, B = {args.resamples}, {args.datasets} data sets per cell, "
          f"{time.time() - t0:.0f} s, load {os.getloadavg()[0]:.1f}")
    for cell, g in res.groupby("cell", sort=False):
        n = len(g)
        exact = "McNemar exact" if SPARSE[cell][0] == "pair" else "Fisher exact"
        cols = [("bootstrap alone", "p_boot"), ("LR alone", "p_lr"), ("max(bootstrap, LR)", "p_max"),
                ("verdict today", "p_value"), (exact, "p_exact")]
        if SPARSE[cell][0] == "pair":
            cols.append(("Fisher exact (pooled)", "p_fisher"))
        for name, col in cols:
            print(f"  {cell:14s} {name:22s} {rate(int((g[col] < 0.05).sum()), n)}")
        extra = f", discordant items median {g.discordant.median():g}" if SPARSE[cell][0] == "pair" else ""
        print(f"  {cell:14s} rarer count: median {g.rarer.median():g} (range {g.rarer.min()}-{g.rarer.max()}){extra}")


def cross_one(args):
    seed, engine, resamples, templates, variants = args
    from earnest.stats import crosslingual as X
    from earnest.stats.glmm import prior_for
    prior = prior_for("earnest")
    df = X.simulate(templates, ["en", "fr"], n_variants=variants, variant_effect=-0.5,
                    language_effects={"fr": 3.4}, intercept=0.5, seed=seed)
    shards = X.bootstrap(df, range(resamples), seed, engine=engine, prior=prior)
    wald = X.full_fit(df, engine=engine, prior=prior)
    prof = X.profile(df, wald, prior=prior)
    s = X.summarise(shards, df, wald=wald, profile=prof, prior=prior, fidelity="earnest")
    r = s[s["kind"] == "interaction"].iloc[0]
    fr_base = df[(df["language"] == "fr") & (df["variant"] == 0)]["correct"]
    return {"seed": seed, "verdict": r["verdict"], "significant": bool(r["significant_uncorrected"]),
            "estimate": float(r["estimate"]), "p_value": float(r["p_value"]), "p_lr": float(r["p_lr"]),
            "lr_only": bool(r["p_lr"] < 0.05), "acc_fr_base": float(fr_base.mean()),
            "wrong_fr_base": int((1 - fr_base).sum())}


def cross_ceiling(args) -> None:
    jobs = [(args.seed + 7000 + i, args.engine, args.resamples, args.templates, 10) for i in range(args.datasets)]
    t0 = time.time()
    res = simulate_all(cross_one, jobs, args)
    n = len(res)
    print(f"cross-lingual, no interaction, French GSM-Base at the ceiling: engine {args.engine}, {n} data sets, "
          f"{args.templates} templates x (1 + 10) per language, B = {args.resamples}, {time.time() - t0:.0f} s, "
          f"load {os.getloadavg()[0]:.1f}; French GSM-Base accuracy {res.acc_fr_base.mean():.1%} "
          f"(data sets without a wrong French GSM-Base answer: {int((res.wrong_fr_base == 0).sum())})")
    for name, col in (("earnest verdict", "significant"), ("likelihood-ratio test alone", "lr_only")):
        print(f"  interaction called significant, {name:28s} {rate(int(res[col].sum()), n)}")
    print(f"  interaction estimate: mean {res.estimate.mean():+.3f} (sd {res.estimate.std():.3f}; truth 0); "
          f"verdicts {dict(res['verdict'].value_counts())}")


def holm_one(args):
    k, seed, engine, resamples = args
    from earnest.stats import run
    df = simulate_cell(STRONG, seed).assign(model=f"m{k:02d}")
    with tempfile.TemporaryDirectory() as tmp:
        s, _, _ = run.run_glmm(df, 1, resamples, seed, tmp, engine=engine, fidelity="earnest", cores=1,
                               log=lambda m: None)
    return s


def holm_case(args) -> None:
    from earnest.stats import summaries as S
    from earnest.stats.verdict import resolving_resamples

    models = 10
    needed = resolving_resamples(models, 0.05)
    for b in (args.resamples, needed):
        t0 = time.time()
        jobs = [(k, args.seed + 300 + k, args.engine, b) for k in range(models)]
        with ProcessPoolExecutor(args.cores) as ex:
            rows = pd.concat(list(ex.map(holm_one, jobs)), ignore_index=True)
        t = S.build_summaries(rows)
        t = t[(t["term"] == "variant") & (t["glmm"] == 1)]
        print(f"B = {b}: ten strong effects (90% vs 50%), one Holm family of {models}: P {sorted(set(t.p_value.round(4)))}, "
              f"significant before Holm {int(t.significant_uncorrected.sum())}/{models}, after Holm "
              f"{int(t.significant_holm.sum())}/{models}; verdicts {dict(t['verdict'].value_counts())}; "
              f"resolving B named {sorted(set(int(x) for x in t.resolving_resamples if x))}  "
              f"({time.time() - t0:.0f} s, engine {args.engine})", flush=True)


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
    ap.add_argument("--verdict", action="store_true", help="the verdict vs Fisher, at the ceiling and away")
    ap.add_argument("--cells", default=",".join(CELLS), help="--verdict: the cells")
    ap.add_argument("--cross-ceiling", action="store_true", help="cross-lingual, one language at the ceiling")
    ap.add_argument("--sparse", action="store_true", help="few events in a condition: bootstrap, LR, exact tests")
    ap.add_argument("--holm", action="store_true", help="B against Holm: unresolved at small B, resolved at the named B")
    ap.add_argument("--out", default="", help="--verdict/--cross-ceiling/--sparse: a CSV of every data set")
    args = ap.parse_args()
    for flag, run in (("ceiling", ceiling), ("verdict", verdict), ("cross_ceiling", cross_ceiling), ("holm", holm_case),
                      ("sparse", sparse)):
        if getattr(args, flag):
            run(args)
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
