"""``earnest power``: simulated power and minimum detectable odds ratio of the template-bootstrap test."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from earnest.schema import schema_default
from earnest.cli.common import add_subcommand, fail, log, options_problem


def add_parser(subparsers) -> argparse.ArgumentParser:
    return add_subcommand(
        subparsers, "power", run, help="power and minimum detectable odds ratio of the template-bootstrap GLMM test",
        description="Simulate data sets from a binomial GLMM with template intercepts over a grid of templates x "
                    "variants per template x true odds ratio, run the project's test on each (B template "
                    "resamples, Eq. 4 bootstrap P value < alpha) and write power with Monte Carlo standard "
                    "errors, the minimum detectable OR at 80%% power and a power-curve figure. Scenarios "
                    "(GSM-Base accuracy and template-intercept variance) come from --baseline-acc/--ranef-var, "
                    "the paper's published tables (--paper-scenario), a bootstrap summaries table "
                    "(--from-summary), lm-evaluation-harness samples (--lm-eval) or Inspect AI logs (--inspect).",
        options=_options)


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--templates", type=int, nargs="+", help="template counts (default: 100, or the design of the results read)")
    p.add_argument("--variants", type=int, nargs="+", help="GSM-Variants items per template (default: 50, or the results' design)")
    p.add_argument("--odds-ratios", type=float, nargs="+", default=schema_default("power.odds_ratios"),
                   help="true odds ratios (include 1 for the false-positive rate)")
    p.add_argument("--baseline-acc", type=float, help="GSM-Base accuracy, a fraction in (0, 1)")
    p.add_argument("--ranef-var", type=float, help="template-intercept variance on the log-odds scale")
    p.add_argument("--paper-scenario", nargs="+", default=[],
                   help="scenarios from the paper's Tables 2-3: median, lower_quartile, upper_quartile or a model name")
    p.add_argument("--published", type=Path, default=None, help="directory of the published tables (default: resources/published)")
    p.add_argument("--from-summary", type=Path, help="a bootstrap summaries table (CSV/Parquet): one scenario per model x prompt")
    p.add_argument("--effects", nargs="+", default=schema_default("power.effects"), choices=["variant", "gamma"])
    p.add_argument("--gamma-sd", type=float, default=schema_default("power.gamma_sd"),
                   help="spread (sd) of gamma, drawn per answer, for the number effect (OR per unit of gamma)")
    p.add_argument("--sims", type=int, default=schema_default("power.sims"), help="simulated data sets per grid point")
    p.add_argument("--resamples", type=int, default=schema_default("power.resamples"), help="bootstrap resamples B per data set (paper: 2000)")
    p.add_argument("--alpha", type=float, default=schema_default("stats.alpha"))
    p.add_argument("--seed", type=int, default=schema_default("power.seed"))
    p.add_argument("--engine", default=schema_default("power.engine"))
    p.add_argument("--cores", type=int, default=schema_default("power.threads"), help="R worker processes per bootstrap")
    p.add_argument("--out", type=Path, required=True, help="output directory")


def _fail(msg: str) -> int:
    return fail("power", msg)


def run(args: argparse.Namespace) -> int:
    from earnest.gsm import power_design as D
    from earnest.stats import power as P

    scenarios, design = [], None
    problem = options_problem(((args.templates, "power.templates", "--templates"),
                               (args.variants, "power.variants", "--variants"),
                               (args.odds_ratios, "power.odds_ratios", "--odds-ratios"),
                               (args.effects, "power.effects", "--effects"), (args.sims, "power.sims", "--sims"),
                               (args.resamples, "power.resamples", "--resamples"), (args.seed, "power.seed", "--seed"),
                               (args.cores, "power.threads", "--cores"),
                               (args.gamma_sd, "power.gamma_sd", "--gamma-sd")), args.out)
    if problem:
        return _fail(problem)
    try:
        if args.baseline_acc is not None or args.ranef_var is not None:
            if args.baseline_acc is None or args.ranef_var is None:
                return _fail("--baseline-acc and --ranef-var go together")
            P.intercept_for_accuracy(args.baseline_acc, args.ranef_var)  # checks both
            scenarios.append(P.Scenario("stated", args.baseline_acc, args.ranef_var))
        if args.paper_scenario:
            published = args.published or D.default_published_dir()
            scenarios += D.published_scenarios(published, args.paper_scenario)
        from earnest.readers import lmeval, options
        found = []
        if args.from_summary or options.given(args):
            glmm_input = None
            if options.given(args):
                glmm_input = lmeval.to_glmm_input(options.samples_from_args(args), options.mapping_from_args(args))
            found, design = P.scenarios_from_results(summary=args.from_summary, glmm_input=glmm_input, log=log)
            scenarios += found
            if design and not found:
                log(f"earnest power: the results read gave no scenario (above); their design, {design[0]} templates x "
                    f"{design[1]} variants, stays the grid's unless --templates/--variants are given")
        if not scenarios:
            if args.from_summary or options.given(args):
                return _fail("the results given gave no usable scenario (reasons above: a GSM-Base accuracy of 0 or "
                             "100%, or no clean fit); state one with --baseline-acc and --ranef-var, or "
                             "--paper-scenario, and the grid keeps the results' design")
            return _fail("no scenario: give --baseline-acc and --ranef-var, --paper-scenario, --from-summary, "
                         "--lm-eval or --inspect")
        templates = args.templates or ([design[0]] if design else [D.PAPER_DESIGN[0]])
        variants = args.variants or ([design[1]] if design else [D.PAPER_DESIGN[1]])
        for nt in templates:
            for nv in variants:
                problem = P.design_problem(nt, nv)
                if problem:
                    where = (f"--templates {nt} with --variants {nv}" if args.templates or args.variants
                             else f"the design of the results read ({nt} x {nv})")
                    return _fail(f"{where}: {problem}")
        if not 0 < args.alpha < 1:
            return _fail(f"--alpha must lie in (0, 1), not {args.alpha}")
        engine = P.resolve_engine(args.engine)            # resolved once: every grid point gets the object
        n_points = len(scenarios) * len(args.effects) * len(templates) * len(variants) * len(set(args.odds_ratios))
        log(f"earnest power: {n_points} grid points x {args.sims} data sets x {args.resamples} resamples = "
            f"{n_points * args.sims * args.resamples} GLMM fits (engine {args.engine})")
        t0 = time.perf_counter()
        from earnest.progress import Progress

        # a live line with the time left on a terminal, a plain line per grid point elsewhere
        with Progress(n_points, label="earnest power", unit="grid points") as progress:
            power = P.power_study(scenarios, templates, variants, args.odds_ratios, effects=args.effects,
                                  n_sims=args.sims, n_resamples=args.resamples, alpha=args.alpha, seed=args.seed,
                                  engine=engine, cores=args.cores, gamma_sd=args.gamma_sd, log=progress.log,
                                  on_point=lambda msg: progress.step(1, msg))
    except (P.PowerError, OSError, ValueError) as exc:
        return _fail(str(exc))
    seconds = time.perf_counter() - t0
    mde = P.minimum_detectable_or(power)
    paths = P.write_power_tables(power, mde, args.out)
    from earnest.stats.plots_power import figure_power_curves
    figure_power_curves(power, mde, args.out / "power_curves")
    fits = int(power["fits"].sum())
    log(f"earnest power: {fits} fits in {seconds:.1f} s ({fits / max(seconds, 1e-9):.1f} fits/s); wrote "
        f"{paths['power']['csv']}, {paths['mde']['csv']} and {args.out / 'power_curves.png'}")
    return 0
