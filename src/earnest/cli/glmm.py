"""``earnest glmm``: bootstrapped GLMM 1 / GLMM 2 on a GLMM input table, with summaries and tables."""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

from earnest.fidelity import DEFAULT, MODES
from earnest.stats import engines as E
from earnest.schema import schema_default
from earnest.stats import glmm as G
from earnest.cli.common import fail, input_choice_problem, log, options_problem
from earnest.stats.rbridge import RError


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``earnest glmm`` on the top-level subparsers."""
    p = subparsers.add_parser(
        "glmm", help="bootstrapped binomial GLMMs (lme4) on a GLMM input table",
        description="Fit GLMM 1 (correct ~ variant + (1|template)) or GLMM 2 (... + gamma_c) per model x "
                    "prompt with a template bootstrap; write shards, summaries and tables. Input columns: "
                    "model, prompt, template, variant (0/1), correct (0/1) and, for GLMM 2, gamma.")
    p.add_argument("input", type=Path, nargs="?", help="GLMM input, .csv or .parquet (or give --lm-eval files)")
    p.add_argument("--glmm", type=int, choices=(1, 2), required=True)
    p.add_argument("--resamples", type=int, required=True, help="bootstrap resamples B (paper: 2000)")
    p.add_argument("--seed", type=int, required=True, help="base seed; resample b uses a seed derived from (seed, b)")
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.add_argument("--shards", type=int, default=schema_default("stats.shards"), help="split the resamples into this many shard files")
    p.add_argument("--cores", type=int, default=None, help="R worker processes per shard (default: all usable cores)")
    p.add_argument("--fidelity", choices=MODES, default=DEFAULT,
                   help="reference: fit per-answer rows and count a fit as clean as the paper authors' code "
                        "does; earnest (default): aggregated rows, no warning of any kind")
    p.add_argument("--rows", choices=G.ROWS, default=None,
                   help="answers (one row per answer, as the paper's pymer4 fits) or aggregated (binomial rows, "
                        "same likelihood, faster; lme4's checks flag other resamples); default: the fidelity mode's")
    p.add_argument("--row-level", action="store_true", help="the same as --rows answers")
    p.add_argument("--engine", choices=E.engine_names(), default=schema_default("stats.engine"),
                   help="lme4 (default): glmer through R, one fit per resample; laplace: the same Laplace deviance "
                        "and lme4's convergence checks in numpy, all resamples at once (far faster; README)")
    p.add_argument("--check-resamples", type=int, default=schema_default("stats.check_resamples"),
                   help="laplace engine: resamples per shard refitted with lme4 as a check (0: none)")
    from earnest.readers import options
    options.add_arguments(p)
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    from earnest.gsm import paper_tables
    from earnest.stats import run as R
    from earnest.stats.summaries import build_summaries

    problem = options_problem(((args.resamples, "stats.resamples", "--resamples"), (args.seed, "stats.seed", "--seed"),
                               (args.shards, "stats.shards", "--shards"),
                               (args.check_resamples, "stats.check_resamples", "--check-resamples"),
                               (args.cores, "stats.threads", "--cores")), args.out)
    if problem:
        return fail("glmm", problem)
    if args.shards < 1 or args.shards > args.resamples:
        return fail("glmm", f"--shards must be between 1 and --resamples ({args.resamples})")
    problem = input_choice_problem(args, "a GLMM input table")
    if problem:
        return fail("glmm", problem)
    try:
        if args.input is not None:
            raw = G.read_glmm_input(args.input)
            source = str(args.input)
        else:
            from earnest.readers import lmeval, options
            raw = lmeval.to_glmm_input(options.samples_from_args(args), options.mapping_from_args(args),
                                       glmm=args.glmm, gamma=gsm_gamma(args.fidelity))
            source = "harness samples"
        df = G.validate_glmm_input(raw, args.glmm, source=source, fidelity=args.fidelity)
        G.check_estimable(df, source=source)
    except (G.GLMMInputError, OSError, ValueError) as exc:
        return fail("glmm", str(exc))
    unpaired = G.unpaired_note(df)
    if unpaired:
        log(f"earnest glmm: WARNING: {unpaired}")
    engine = E.get_engine(args.engine)                    # resolved once: the object goes down from here
    try:
        with warnings.catch_warnings():                   # a pair that is not faithful: run_glmm logs why
            warnings.simplefilter("ignore", UserWarning)
            E.resolve_rows("answers" if args.row_level else args.rows, args.fidelity, engine=engine)
    except ValueError as exc:
        msg = str(exc).replace("stats.engine: ", "--engine ")
        return fail("glmm", msg.replace("stats.rows: ", "--rows ").replace("stats.rows ", "--rows "))
    out = args.out
    if engine.slow_rows is not None and len(df) > engine.slow_rows:
        faster = [e.name for e in E.ENGINES.values() if e.slow_rows is None]
        log(f"earnest glmm: {len(df)} rows with the {engine.name} engine: each glmer() fit takes minutes at this "
            f"size; --engine {' / '.join(faster)} fits the same model in seconds")
    from earnest.progress import Progress

    # a live line with the time left on a terminal, a plain line per shard and fit elsewhere
    progress = Progress(R.steps(df, args.shards), label="earnest glmm", unit="steps")
    try:
        summaries, refits, checks = R.run_glmm(df, args.glmm, args.resamples, args.seed, out / "shards",
                                               n_shards=args.shards, cores=args.cores,
                                               rows="answers" if args.row_level else args.rows,
                                               fidelity=args.fidelity, engine=engine,
                                               check_resamples=args.check_resamples, log=progress.log,
                                               on_step=lambda msg, counted: progress.step(1, msg, counted=counted))
    except RError as exc:
        progress.close()
        return fail("glmm", f"R failed ({exc}). Finished shards are kept under {out / 'shards'}; "
                            f"rerunning the same command reuses them.", status=1)
    finally:
        progress.close()
    out.mkdir(parents=True, exist_ok=True)
    table = build_summaries(summaries)  # with Holm, verdicts and significance (earnest.stats.summaries)
    table.to_csv(out / f"summary_glmm{args.glmm}.csv", index=False)
    if len(refits):
        refits.to_csv(out / f"optimiser_refits_glmm{args.glmm}.csv", index=False)
    if len(checks):
        checks.to_csv(out / f"engine_check_glmm{args.glmm}.csv", index=False)
        n = int(checks["checked"].sum())
        log(f"laplace engine checked against lme4 on {n} resamples: largest difference where both are clean "
            f"{checks['max_abs_diff'].max():.2g} (lme4 with converged PIRLS); clean flags agree on "
            f"{int(checks['clean_agree_tight'].sum())}/{n} (converged PIRLS) and "
            f"{int(checks['clean_agree_default'].sum())}/{n} (lme4's defaults); under the {args.fidelity} rule "
            f"{int(checks[f'clean_agree_tight_{args.fidelity}'].sum())}/{n} and "
            f"{int(checks[f'clean_agree_default_{args.fidelity}'].sum())}/{n} -> {out / f'engine_check_glmm{args.glmm}.csv'}")
        for w in checks.loc[checks["warning"] != "", "warning"]:
            log(f"WARNING: {w}")
    paths = paper_tables.write_stats_tables(table, out / "tables", refits=refits, glmm_input=df)
    figures = draw_figures(table, args.glmm, out / "figures")
    log(f"wrote {out / f'summary_glmm{args.glmm}.csv'}, {len(paths)} table files under {out / 'tables'} (every fit "
        f"as JSON: {out / 'tables' / 'summary.json'}) and {len(figures)} figure files under {out / 'figures'}")
    return 0


def gsm_gamma(fidelity: str):
    """GLMM 2's gamma of a question (:func:`earnest.gsm.gamma.gamma`) in ``fidelity`` mode: what the
    harness readers (:func:`earnest.readers.lmeval.to_glmm_input`) are given, as they know no benchmark."""
    import functools

    from earnest.gsm.gamma import gamma
    return functools.partial(gamma, fidelity=fidelity)


def draw_figures(table, glmm: int, out_dir: Path) -> list[Path]:
    """The paper's figures of one ``earnest glmm`` run: Figure 1's layout per prompt (GLMM 1's
    variant effect), or Figure 3's (GLMM 2's number and corrected variant effects)."""
    from earnest.gsm import plots
    from earnest.stats.glmm import safe_name

    out_dir.mkdir(parents=True, exist_ok=True)
    prompts = sorted(table["prompt"].astype(str).unique())
    if glmm == 1:
        return [p for prompt in prompts
                for p in plots.figure_variant_effect(table, prompt, out_dir / f"variant_effect_{safe_name(prompt)}")]
    return plots.figure_number_effect(table, prompts, out_dir / "number_effect")
