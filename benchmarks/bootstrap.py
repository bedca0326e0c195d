"""Bootstrap speed: the earnest GLMM engine against a Python loop of pymer4 0.8.2 fits.

Same simulated data (100 templates x 51 items: 1 GSM-Base + 50 GSM-Variants), same resamples
(the baseline rebuilds exactly the template draws the engine makes from each resample's seed).
The baseline is what the paper did: a Python loop building a new pymer4 ``Lmer`` per resample on
row-level data. The engine runs the loop inside R (one rpy2 call), on aggregated binomial rows
(``--rows aggregated``, earnest mode's default) or, as reference mode and the paper fit, one row
per answer (``--rows answers``),
over ``--cores`` forked workers (and, for comparison, on one core). The machine's speed drifts from minute to minute, so each of
``--rounds`` rounds times the pymer4 loop and then the engine back to back on new resamples, and
the speed-up reported is the median of the rounds' ratios.

Prints fits/s of both, the speed-up, the largest estimate difference on the shared resamples, and
the projected time for 2,000 resamples x 92 model x prompt x GLMM combinations (52 GLMM 1 fits:
20 models on the GSM prompt + 8 models x 4 prompts; 40 GLMM 2 fits: 8 models x 5 prompts).

    python benchmarks/bootstrap.py [--baseline-resamples 12] [--engine-resamples 120 36] [--rounds 5] [--cores 2]
                                   [--rows aggregated|answers]

``--paper-scale`` instead runs the laplace engine on the paper's grid (92 simulated model x prompt x
GLMM fits in the paper's proportions, 100 templates x 51 items, --resamples each), end to end
(bootstrap and full-data fit), with peak memory, and the lme4 engine on the first --lme4-resamples
resamples of one fit per GLMM: the speed ratio per resample, the projected grid time of both, the
largest estimate difference and how often (and why) the clean flags differ.

    python benchmarks/bootstrap.py --paper-scale [--resamples 2000] [--fits 92] [--cores 2]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd

from earnest.stats import engines as E
from earnest.stats import glmm as G
from earnest.stats import rbridge
from earnest.stats.simulate import simulate_glmm_input

COMBOS = {1: 52, 2: 40}
FORMULA = {1: "correct ~ variant + (1|cluster)", 2: "correct ~ variant + gamma_c + (1|cluster)"}


def template_draws(n_templates: int, seed: int) -> np.ndarray:
    """The 0-based template positions R draws for a resample with ``seed`` (as earnest_resample)."""
    ro = rbridge.r()
    drawn = ro.r(f'set.seed({seed}L, kind = "Mersenne-Twister", normal.kind = "Inversion", '
                 f'sample.kind = "Rejection"); sample.int({n_templates}L, {n_templates}L, replace = TRUE)')
    return np.asarray(list(drawn), dtype=int) - 1


def pymer4_loop(df: pd.DataFrame, glmm: int, resamples, base_seed: int) -> tuple[pd.DataFrame, float]:
    """Fit each resample with a new pymer4 Lmer; return (estimates per resample, seconds)."""
    if not hasattr(pd.DataFrame, "applymap"):
        # pymer4 0.8.2 calls DataFrame.applymap, which pandas 3 renamed to DataFrame.map
        pd.DataFrame.applymap = pd.DataFrame.map
    from pymer4.models import Lmer

    data = df.assign(gamma_c=G.centre_gamma(df))
    templates = np.sort(data["template"].unique())
    blocks = [data[data["template"] == t] for t in templates]
    draws = {b: template_draws(len(templates), G.resample_seed(base_seed, b)) for b in resamples}
    rows = []
    t0 = time.perf_counter()
    for b in resamples:
        parts = [blocks[i].assign(cluster=k + 1) for k, i in enumerate(draws[b])]
        boot = pd.concat(parts, ignore_index=True)
        model = Lmer(FORMULA[glmm], data=boot, family="binomial")
        model.fit(summarize=False, verbose=False)
        warnings = list(model.warnings or [])
        rows.append({"resample": b, "variant": float(model.coefs.loc["variant", "Estimate"]),
                     "clean": len(warnings) == 0})
    return pd.DataFrame(rows), time.perf_counter() - t0


def parallel_scaling(cores: int) -> float:
    """How many times faster ``cores`` CPU-bound R processes finish ``cores`` equal loops than one
    process running them in turn: the most any forked engine can gain on this machine now."""
    ro = rbridge.r()
    t = ro.r(f"""local({{
        spin <- compiler::cmpfun(function(i) {{ s <- 0; for (j in 1:3e7) s <- s + j; s }})
        spin(0)
        serial <- system.time(lapply(seq_len({cores}L), spin))[["elapsed"]]
        forked <- system.time(parallel::mclapply(seq_len({cores}L), spin, mc.cores = {cores}L))[["elapsed"]]
        serial / forked }})""")
    return float(t[0])


def engine(df: pd.DataFrame, glmm: int, resamples, base_seed: int, cores: int,
           rows: str = "aggregated") -> tuple[pd.DataFrame, float]:
    frame = G.model_frame(df, glmm, aggregate=rows == "aggregated")
    t0 = time.perf_counter()
    out = E.run_bootstrap(frame, glmm, resamples, base_seed, cores)
    secs = time.perf_counter() - t0
    v = out[out["term"] == "variant"][["resample", "estimate", "converged"]]
    return v.rename(columns={"estimate": "variant", "converged": "clean"}).reset_index(drop=True), secs


def _reason(lme4_msgs: str, laplace_msgs: str, lme4_clean: bool) -> str:
    """Why the two engines' clean flags differ on one resample, in a few words."""
    msgs = lme4_msgs if not lme4_clean else laplace_msgs
    who = "lme4" if not lme4_clean else "laplace"
    for key, what in (("max|grad|", "gradient check (max|grad|)"), ("singular", "singular fit"),
                      ("very large eigenvalue", "Hessian: very large eigenvalue"),
                      ("eigenvalue ratio", "Hessian: large eigenvalue ratio"),
                      ("negative eigenvalues", "Hessian: negative eigenvalue"), ("did not converge", "optimiser")):
        if key in msgs:
            return f"only {who} flags: {what}"
    return f"only {who} flags: {msgs[:60]}"


def paper_scale(args) -> None:
    """The paper's grid with the laplace engine end to end, lme4 on a sample of the same resamples."""
    import resource

    from earnest.stats.engines import laplace

    rng = np.random.default_rng(args.seed)
    grid = [(1, k) for k in range(COMBOS[1])] + [(2, k) for k in range(COMBOS[2])]
    if args.fits:
        # the same proportions as the paper's 52 GLMM 1 and 40 GLMM 2 fits
        n1 = max(1, round(args.fits * COMBOS[1] / 92))
        grid = [(1, k) for k in range(n1)] + [(2, k) for k in range(max(1, args.fits - n1))]
    datasets = {}
    for glmm, k in grid:
        # accuracies from about 15% to 90% across "models", random-intercept SD 1-2.5
        raw = simulate_glmm_input(100, 50, variant_effect=-0.4, gamma_effect=-0.2 if glmm == 2 else 0.0,
                                  intercept=float(rng.uniform(-1.5, 2.5)), ranef_sd=float(rng.uniform(1.0, 2.5)),
                                  seed=1000 * glmm + k)
        datasets[(glmm, k)] = G.validate_glmm_input(raw, glmm)
    print(f"paper-scale grid: {sum(g == 1 for g, _ in grid)} GLMM 1 + {sum(g == 2 for g, _ in grid)} GLMM 2 fits x "
          f"{args.resamples} resamples, 100 templates x 51 items each, laplace engine on {args.cores} cores; "
          f"load average {os.getloadavg()}")
    secs = {1: 0.0, 2: 0.0}
    count = {1: 0, 2: 0}
    shards = {}
    t_all = time.perf_counter()
    for (glmm, k), df in datasets.items():
        t0 = time.perf_counter()
        shards[(glmm, k)] = laplace.bootstrap(df, glmm, range(args.resamples), args.seed, workers=args.cores)
        laplace.full_fit(df, glmm)
        secs[glmm] += time.perf_counter() - t0
        count[glmm] += 1
    wall = time.perf_counter() - t_all
    peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    per = {g: secs[g] / (count[g] * args.resamples) for g in (1, 2) if count[g]}
    proj = sum(COMBOS[g] * 2000 * per[g] for g in per) / 60
    clean = {g: np.mean([s.drop_duplicates("resample")["converged"].mean() for (gg, _), s in shards.items() if gg == g])
             for g in per}
    print(f"laplace: {wall / 60:.1f} min for these {len(grid)} fits end to end (bootstrap + full-data fit); "
          + "; ".join(f"GLMM {g} {1000 * per[g]:.2f} ms per resample, {100 * clean[g]:.1f}% clean" for g in per)
          + f"; peak memory {peak:.0f} MB (this process + its workers)")
    print(f"laplace: projected time for the paper's grid (52 GLMM 1 + 40 GLMM 2 fits x 2000 resamples): "
          f"{proj:.1f} min")
    # the screened checkConv (the engine's default) against deriv12 at every fit, same resamples
    for glmm in per:
        df = datasets[next(key for key in datasets if key[0] == glmm)]
        des = laplace.Design.from_input(df, glmm)
        _, K = laplace.resample_weights(des.n_templates, range(args.resamples), args.seed)
        t0 = time.perf_counter()
        full = laplace.fit_arrays(des, K, workers=args.cores, checks=laplace.DERIV12)
        t1 = time.perf_counter()
        fast = laplace.fit_arrays(des, K, workers=args.cores, checks=laplace.SCREENED)
        t2 = time.perf_counter()
        same = sum(a == b for a, b in zip(full.messages, fast.messages))
        print(f"GLMM {glmm} checkConv, same {len(K)} resamples: deriv12 everywhere {1000 * (t1 - t0) / len(K):.2f} ms "
              f"per resample, screened {1000 * (t2 - t1) / len(K):.2f} ms ({(t1 - t0) / (t2 - t1):.2f}x); deriv12 "
              f"skipped on {int(fast.screened.sum())}/{len(K)}; messages identical on {same}/{len(K)}")
    # lme4 on the same resamples of the first datasets of each GLMM, same cores; R started and the
    # fast path checked outside the timings
    rates, diffs, agree, total, reasons = {}, [], 0, 0, {}
    for glmm in per:
        df = datasets[next(key for key in datasets if key[0] == glmm)]
        for agg in (True, False):
            E.run_bootstrap(G.model_frame(df, glmm, aggregate=agg), glmm, [10_000], args.seed, 1)
    for glmm in per:
        (g, k) = next(key for key in datasets if key[0] == glmm)
        df = datasets[(g, k)]
        n = args.lme4_resamples
        for rows in ("aggregated", "answers") if glmm == 1 else ("answers",):
            t0 = time.perf_counter()
            lme = E.run_bootstrap(G.model_frame(df, glmm, aggregate=rows == "aggregated"), glmm, range(n), args.seed,
                                  args.cores)
            rates[(glmm, rows)] = (time.perf_counter() - t0) / n
            lap = shards[(g, k)]
            m = lap.merge(lme, on=["resample", "term"], suffixes=("_laplace", "_lme4"))
            m = m[m["term"] != "(Intercept)"]
            both = m["converged_laplace"] & m["converged_lme4"]
            if both.any():
                diffs.append(float((m.loc[both, "estimate_laplace"] - m.loc[both, "estimate_lme4"]).abs().max()))
            pr = m.drop_duplicates("resample")
            total += len(pr)
            agree += int((pr["converged_laplace"] == pr["converged_lme4"]).sum())
            for r in pr[pr["converged_laplace"] != pr["converged_lme4"]].itertuples():
                why = _reason(r.messages_lme4, r.messages_laplace, r.converged_lme4)
                reasons[why] = reasons.get(why, 0) + 1
            print(f"lme4 engine, GLMM {glmm}, {rows} rows: {1000 * rates[(glmm, rows)]:.0f} ms per resample on "
                  f"{args.cores} cores ({n} resamples); laplace {1000 * per[glmm]:.2f} ms: "
                  f"{rates[(glmm, rows)] / per[glmm]:.0f}x")
        chk = E.cross_check(df, glmm, shards[(g, k)], args.check_resamples, args.seed)
        v = E.check_summary(chk)
        print(f"GLMM {glmm}: against lme4 with its PIRLS converged (tolPwrss 1e-12) on {v['checked']} resamples: largest "
              f"difference {v['max_abs_diff']:.1e} where both are clean ({v['lme4_short']} where lme4 stopped at a "
              f"higher deviance), clean flags agree on {v['clean_agree_tight']}/{v['checked']}"
              + (f"; WARNING {v['warning']}" if v["warning"] else ""))
    print(f"against the lme4 engine's defaults on the same resamples: largest difference where both are clean "
          f"{max(diffs) if diffs else float('nan'):.1e}; clean flags agree on {agree}/{total}; disagreements: "
          + (", ".join(f"{v} x {k}" for k, v in sorted(reasons.items(), key=lambda kv: -kv[1])) or "none"))
    lme4_proj = sum(COMBOS[g] * 2000 * rates[(g, "aggregated" if g == 1 else "answers")] for g in per) / 3600
    ratio = lme4_proj * 60 / proj
    print(f"projected paper grid with the lme4 engine (GLMM 1 aggregated rows, GLMM 2): {lme4_proj:.1f} h; "
          f"laplace {proj:.1f} min: {ratio:.0f}x; load average now {os.getloadavg()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--paper-scale", action="store_true",
                    help="the laplace engine on the paper's grid (92 fits x --resamples), lme4 on a sample of the "
                         "same resamples")
    ap.add_argument("--resamples", type=int, default=2000, help="--paper-scale: resamples per fit")
    ap.add_argument("--fits", type=int, default=0, help="--paper-scale: fit only this many of the 92 (same proportions)")
    ap.add_argument("--lme4-resamples", type=int, default=20, help="--paper-scale: resamples lme4 fits per GLMM")
    ap.add_argument("--check-resamples", type=int, default=5,
                    help="--paper-scale: resamples refitted with converged-PIRLS lme4 per GLMM")
    ap.add_argument("--baseline-resamples", type=int, default=12,
                    help="resamples the pymer4 loop fits per round (the engine fits the same ones first)")
    ap.add_argument("--engine-resamples", type=int, nargs=2, default=[120, 36], metavar=("GLMM1", "GLMM2"),
                    help="resamples the engine fits per round")
    ap.add_argument("--rounds", type=int, default=5,
                    help="rounds of (pymer4 loop, engine) timings; the speed-up is the median over rounds")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--rows", choices=G.ROWS, default="aggregated",
                    help="rows the engine fits: aggregated (earnest mode) or answers (reference mode, as pymer4)")
    args = ap.parse_args()
    if args.paper_scale:
        paper_scale(args)
        return

    df = G.validate_glmm_input(simulate_glmm_input(100, 50, variant_effect=-0.5, gamma_effect=-0.2, seed=7), 2)
    rbridge.r()  # start R outside the timings
    print(f"data: {len(df)} rows, {df['template'].nunique()} templates, engine on {args.rows} rows; {args.rounds} rounds, each timing the "
          f"pymer4 loop and then the engine back to back (the machine's speed drifts between minutes); "
          f"load average {os.getloadavg()}")
    print(f"{args.cores} CPU-bound R processes run {parallel_scaling(args.cores):.2f}x as fast as one on this "
          f"machine now (the ceiling of what forking gains)")
    rates = {}
    for glmm in (1, 2):
        # warm both paths once so neither pays R or pymer4 start-up inside the timing
        pymer4_loop(df, glmm, [10_000], args.seed)
        engine(df, glmm, [10_000], args.seed, 1, args.rows)
        n_base, n_engine = args.baseline_resamples, max(args.engine_resamples[glmm - 1], args.baseline_resamples)
        # the engine on one core as well: its own speed-up, apart from the machine's parallel scaling
        n_one = n_engine if glmm == 1 else n_base
        ratios, one_ratios, py_rates, eng_rates = [], [], [], []
        for k in range(args.rounds):
            # each round fits new resamples; the engine's first n_base are the pymer4 loop's
            first = k * n_engine
            py, py_s = pymer4_loop(df, glmm, range(first, first + n_base), args.seed)
            out, eng_s = engine(df, glmm, range(first, first + n_engine), args.seed, args.cores, args.rows)
            _, one_s = engine(df, glmm, range(first, first + n_one), args.seed, 1, args.rows)
            py_rate, eng_rate, one_rate = n_base / py_s, n_engine / eng_s, n_one / one_s
            ratios.append(eng_rate / py_rate)
            one_ratios.append(one_rate / py_rate)
            py_rates.append(py_rate)
            eng_rates.append(eng_rate)
            m = py.merge(out, on="resample", suffixes=("_pymer4", "_engine"))
            both = m[m["clean_pymer4"] & m["clean_engine"]]
            diff = float(np.max(np.abs(both["variant_pymer4"] - both["variant_engine"]))) if len(both) else float("nan")
            agree = int((m["clean_pymer4"] == m["clean_engine"]).sum())
            print(f"GLMM {glmm} round {k + 1}: pymer4 0.8.2 loop {py_rate:.2f} fits/s ({n_base} resamples); engine "
                  f"{eng_rate:.2f} fits/s ({n_engine} resamples, {args.cores} cores); speed-up {ratios[-1]:.1f}x "
                  f"(on 1 core {one_rate:.2f} fits/s, {one_ratios[-1]:.1f}x); max |variant estimate difference| {diff:.1e} over {len(both)} resamples clean in both, "
                  f"clean flag agrees on {agree}/{len(m)}")
        rates[glmm] = (float(np.median(py_rates)), float(np.median(eng_rates)))
        print(f"GLMM {glmm}: speed-up median {np.median(ratios):.1f}x (rounds: "
              f"{', '.join(f'{r:.1f}x' for r in ratios)}); on 1 core median {np.median(one_ratios):.1f}x")
    for name, k in (("pymer4 loop", 0), ("engine", 1)):
        hours = sum(2000 * COMBOS[g] / rates[g][k] for g in (1, 2)) / 3600
        print(f"projected 2,000 resamples x 92 combinations (52 GLMM 1 + 40 GLMM 2), {name}: {hours:.1f} h "
              f"(median rates)")
    print(f"parallel scaling at the end {parallel_scaling(args.cores):.2f}x; load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
