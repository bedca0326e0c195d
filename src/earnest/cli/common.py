"""What the statistics subcommands (``earnest glmm``, ``earnest power``, ``earnest compare``) share:
their registration with the lm-evaluation-harness input options, the choice between an input table
and ``--lm-eval`` files, the error exit and the progress log (both on stderr)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable


def add_subcommand(subparsers, name: str, run: Callable[[argparse.Namespace], int], *, help: str,
                   description: str, input_help: str | None = None,
                   options: Callable[[argparse.ArgumentParser], None] | None = None) -> argparse.ArgumentParser:
    """Register ``earnest <name>``: the optional positional ``input`` table (when ``input_help`` is
    given), the options ``options(parser)`` adds, then the lm-eval input options
    (:func:`earnest.readers.options.add_arguments`); ``func`` = ``run``."""
    from earnest.readers import options as harness

    p = subparsers.add_parser(name, help=help, description=description)
    if input_help is not None:
        p.add_argument("input", type=Path, nargs="?", help=input_help)
    if options is not None:
        options(p)
    harness.add_arguments(p)
    p.set_defaults(func=run)
    return p


def fail(command: str, msg: str, status: int = 2) -> int:
    """Say ``earnest <command>: <msg>`` on stderr and return ``status`` (2: the input or the options)."""
    print(f"earnest {command}: {msg}", file=sys.stderr)
    return status


def options_problem(checks, out: Path) -> str | None:
    """The first complaint about a subcommand's options, or None: each ``(value, config key, option)``
    of ``checks`` against the range of the config key it stands for in config/schema.yaml (a value of
    None, not given, is left to the subcommand), then the output directory ``out``
    (:func:`out_dir_problem`)."""
    from earnest.schema import check_option

    try:
        for value, key, option in checks:
            if value is not None:
                check_option(value, key, option)
    except ValueError as exc:
        return str(exc)
    return out_dir_problem(out)


def out_dir_problem(path: Path, option: str = "--out") -> str | None:
    """The complaint when ``path`` cannot be the output directory ``option`` names: it is a file, a
    file stands where one of its parents should be a directory, or the directory it would be made
    in is not writable. Checked before any input is read or fit run, so no result is computed and
    then lost (``mkdir`` on a file ended such a run in a traceback)."""
    import os

    p = path
    while not (p.exists() or p.is_symlink()):
        if p.parent == p:
            return None
        p = p.parent
    if not p.is_dir():
        where = "is a file" if p == path else f"cannot be made: {p} is a file"
        return f"{option} {path}: {where}, not a directory (give a directory, new or existing)"
    if not os.access(p, os.W_OK | os.X_OK):
        return f"{option} {path}: {p} is not writable"
    return None


def log(msg: str) -> None:
    """A progress line on stderr."""
    print(msg, file=sys.stderr, flush=True)


def input_choice_problem(args: argparse.Namespace, table: str = "an input table") -> str | None:
    """The complaint when not exactly one of the ``input`` table and harness results (``--lm-eval``,
    ``--inspect``) is given."""
    from earnest.readers import options
    if (args.input is None) == (not options.given(args)):
        return f"give either {table} or --lm-eval / --inspect files"
    return None
