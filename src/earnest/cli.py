"""The `earnest` command line: entry points for data produced outside the workflow.

Each subcommand lives in the module that owns its logic and registers itself through
``add_parser(subparsers)``; this file only wires them together.
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
    "earnest.stats.cli",        # earnest glmm
    "earnest.stats.power_cli",  # earnest power
    "earnest.stats.compare_cli",  # earnest compare
    "earnest.config",           # earnest check-config
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
