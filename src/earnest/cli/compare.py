"""``earnest compare``: paired comparisons of models or prompts on the same items (bootstrap GLMM,
McNemar beside it, Holm across pairs), with a table and an OR-matrix figure per family."""

from __future__ import annotations

import argparse
from pathlib import Path

from earnest.schema import schema_default
from earnest.stats.glmm import safe_name
from earnest.cli.common import add_subcommand, fail as cli_fail, input_choice_problem, log, options_problem
from earnest.stats.engines import engine_names, get_engine
from earnest.stats.summary import check_alpha


def add_parser(subparsers) -> argparse.ArgumentParser:
    return add_subcommand(
        subparsers, "compare", run, help="paired comparisons of models or prompts on the same items",
        description="For every pair of models (within each prompt) or of prompts (within each model): the GLMM "
                    "correct ~ condition + (1|template) + (1|item) on the items both answered, bootstrapped over "
                    "templates (median OR, percentile interval, Eq. 4 P value), McNemar's exact test beside it, "
                    "Holm across the pairs of each family. Input columns: model, prompt, template, item, correct "
                    "(0/1); or lm-evaluation-harness samples (--lm-eval) or Inspect AI logs (--inspect), mapped to "
                    "prompts as earnest glmm maps them.",
        input_help="compare input, .csv or .parquet", options=_options)


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--by", choices=("models", "prompts"), required=True,
                   help="models: compare the models of each prompt; prompts: the prompts of each model")
    p.add_argument("--resamples", type=int, required=True, help="bootstrap resamples B (paper: 2000)")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--alpha", type=float, default=schema_default("stats.alpha"))
    p.add_argument("--no-item-effects", action="store_true",
                   help="template intercepts only (GLMM 1's fast path; the OR is then marginal over items)")
    p.add_argument("--engine", choices=engine_names(), default=schema_default("stats.engine"),
                   help="GLMM engine; laplace only with --no-item-effects (it fits one random intercept)")
    p.add_argument("--agq", type=int, default=schema_default("compare.agq"),
                   help="1: Laplace, template and item intercepts; k > 1: item intercepts alone by adaptive "
                        "Gauss-Hermite quadrature with k points (no Laplace shrinkage of the paired OR)")
    p.add_argument("--cores", type=int, default=schema_default("compare.threads"))
    p.add_argument("--out", type=Path, required=True)


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    from earnest.stats.plots_power import figure_pairwise_matrix
    from earnest.stats import compare as C
    from earnest.stats.rbridge import RError

    def fail(msg):
        return cli_fail("compare", msg)

    problem = input_choice_problem(args)
    if problem:
        return fail(problem)
    problem = options_problem(((args.resamples, "compare.resamples", "--resamples"),
                               (args.seed, "compare.seed", "--seed"), (args.cores, "compare.threads", "--cores")),
                              args.out)
    if problem:
        return fail(problem)
    try:
        C.check_agq(args.agq, not args.no_item_effects)
    except C.CompareInputError as exc:
        return fail(str(exc))
    try:
        check_alpha(args.alpha, "--alpha")
    except ValueError as exc:
        return fail(str(exc))
    engine = get_engine(args.engine)                      # resolved once: every family and pair gets the object
    if not engine.fits_item_effects and not args.no_item_effects:
        return fail(f"--engine {args.engine} fits one random intercept: add --no-item-effects (template intercepts "
                    f"only)")
    try:
        from earnest.readers import lmeval, options
        if options.given(args):
            data = C.validate_compare_input(lmeval.to_compare_input(options.samples_from_args(args),
                                                                    options.mapping_from_args(args), by=args.by),
                                            "harness samples")
        else:
            src = args.input
            raw = C.read_compare_input(src)
            data = C.validate_compare_input(raw, str(src))
        pairs = C.check_pairs(data, args.by)
    except (ValueError, OSError) as exc:
        return fail(str(exc))
    if not pairs:
        return fail(f"no {args.by} family has two conditions: nothing to compare (--by {args.by} compares the "
                    + ("models of each prompt" if args.by == "models" else "prompts of each model") + ")")
    args.out.mkdir(parents=True, exist_ok=True)
    tables = []
    try:
        for fixed, conds in C.family_conditions(data, args.by).items():
            t = C.compare_family(data, args.by, fixed, conds, n_resamples=args.resamples, seed=args.seed,
                                 alpha=args.alpha, item_effects=not args.no_item_effects, cores=args.cores,
                                 engine=engine, agq=args.agq, log=log)
            stem = args.out / f"{args.by}_{safe_name(fixed)}"
            C.write_pairs_table(t, stem, alpha=args.alpha)
            figure_pairwise_matrix(t, args.out / f"{args.by}_{safe_name(fixed)}_matrix", order=conds, alpha=args.alpha,
                                   title=f"{'Models' if args.by == 'models' else 'Prompts'} of {fixed}")
            tables.append(t)
    except RError as exc:
        return fail(f"R failed ({exc})")
    all_pairs = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(columns=list(C.PAIR_COLUMNS))
    all_pairs.to_csv(args.out / "pairs.csv", index=False)
    log(f"earnest compare: {len(all_pairs)} pairs -> {args.out / 'pairs.csv'}")
    return 0
