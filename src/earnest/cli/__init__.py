"""The `earnest` command line: entry points for data produced outside the workflow.

Each subcommand registers itself through ``add_parser(subparsers)``: the statistics front ends
are this package's modules (:mod:`.glmm`, :mod:`.power`, :mod:`.compare`, sharing :mod:`.common`),
the others live in the module that owns their logic; this file only wires them together.
``python -m earnest.cli`` runs it as the ``earnest`` console script does.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# module path -> it defines add_parser(subparsers) which sets func=... on its parser
SUBCOMMAND_MODULES = [
    "earnest.gsm.prompts",          # earnest prompt
    "earnest.gsm.scoring",          # earnest extract
    "earnest.gsm.lmeval_task",      # earnest lm-eval-task
    "earnest.cli.glmm",             # earnest glmm
    "earnest.cli.power",            # earnest power
    "earnest.cli.compare",          # earnest compare
    "earnest.config",           # earnest check-config
    "earnest.statform.results_csv",  # earnest statform-score, earnest statform-prompt
    "earnest.cli.plan_gpu",     # earnest plan-gpu
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="earnest", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
