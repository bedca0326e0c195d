"""The command-line options for other harnesses' results (``--lm-eval``, ``--inspect`` and the
mapping options) that ``earnest glmm``, ``compare`` and ``power`` share, and reading the files they
name: lm-evaluation-harness samples (:mod:`earnest.readers.lmeval`) and Inspect AI logs
(:mod:`earnest.readers.inspect_log`), both into the same rows."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from earnest.readers import inspect_log, lmeval


def _group(text: str) -> tuple[str, tuple[str, ...]]:
    name, sep, tasks = text.partition("=")
    ts = tuple(t for t in tasks.split(",") if t)
    if not sep or not name or not ts:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=TASK[,TASK...]")
    return name, ts


def _epoch(text: str) -> int | str:
    if text == "all":
        return "all"
    if text.strip().lower() == "all":
        raise argparse.ArgumentTypeError(f"{text!r}: write all (lower case) for every epoch")
    n = int(text) if text.isascii() and text.isdigit() else 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected an epoch number (1, 2, ...) or all")
    return n


def add_arguments(parser, *, required: bool = False) -> None:
    """The harness input options shared by ``earnest glmm``, ``compare`` and ``power``."""
    g = parser.add_argument_group("results of other harnesses (" + lmeval.FORMAT_VERSION + "; "
                                  + inspect_log.FORMAT_VERSION + ")")
    g.add_argument("--lm-eval", type=Path, nargs="+", required=required, metavar="SAMPLES_JSONL",
                   help="samples_<task>_<date>.jsonl files written by lm_eval --log_samples; the model is the "
                        "file's folder (lm-eval's sanitized model name)")
    g.add_argument("--inspect", type=Path, nargs="+", metavar="LOG", default=None,
                   help="Inspect AI logs (.eval, or .json written with --log-format json); the task is the log's "
                        "task, the model its model; template and variant from sample metadata "
                        "(--template-field, --variant-field, or --inspect-template-field, --inspect-variant-field for the "
                        "logs alone) or the sample id (--id-pattern)")
    g.add_argument("--lm-eval-map", choices=lmeval.MAPPINGS, default="gsm_symbolic",
                   help="gsm_symbolic: template = the doc's id field; per_document: one cluster per document")
    g.add_argument("--lm-eval-base-task", "--base-task", nargs="+", default=[], metavar="TASK",
                   help="tasks whose samples are GSM-Base (variant 0); every other task is GSM-Variants (1) and "
                        "forms a prompt with the base task")
    g.add_argument("--lm-eval-group", "--task-group", nargs="+", type=_group, default=[], metavar="NAME=TASK,TASK",
                   help="the tasks of each analysed prompt (default: each task its own prompt, with the base task)")
    g.add_argument("--lm-eval-pool", "--pool-tasks", action="store_true",
                   help="pool every task of a model into one prompt (a document still counts once)")
    # the fields of a sample: --X-field for both readers, --lm-eval-X-field / --inspect-X-field for one
    # (a reader's own --...-variant-field none: its variant from the task, or Inspect's --id-pattern)
    for name, default, what in (("template", "id", "the template id (gsm_symbolic)"),
                                ("variant", None, "variant 0/1 (instead of tasks)"),
                                ("question", "question", "the question text, for GLMM 2's gamma (Inspect: the "
                                                         "sample's input when the metadata has none)")):
        g.add_argument(f"--{name}-field", default=None, metavar="FIELD",
                       help=f"doc (lm-eval) and metadata (Inspect) field holding {what}"
                            + (f"; default {default}" if default else ""))
        for flag, files, off in (("lm-eval", "--lm-eval files", "the task"),
                                 ("inspect", "--inspect logs", "the task or --id-pattern")):
            g.add_argument(f"--{flag}-{name}-field", default=None, metavar="FIELD",
                           help=f"as --{name}-field, for the {files} only"
                                + (f"; none: their variant from {off}" if name == "variant" else ""))
    g.add_argument("--lm-eval-metric", default=None, help="per-sample metric giving correctness (default: the only one)")
    g.add_argument("--lm-eval-filter", default=None, help="lm-eval filter to use when samples carry several")
    g.add_argument("--lm-eval-model", nargs="+", default=None, metavar="NAME|OLD=NAME",
                   help="model name instead of the folder (Inspect: the log's model) name; OLD=NAME per model "
                        "when the files are of several models")
    g.add_argument("--lm-eval-prompt", default=None, help="name of the one prompt (default: the task's name)")
    g.add_argument("--inspect-scorer", default=None, help="Inspect scorer giving correctness (default: the only one)")
    g.add_argument("--inspect-epoch", type=_epoch, default=None, metavar="N|all",
                   help="Inspect epoch to use when the log has several (each epoch answers every sample again); "
                        "all: every epoch's answer, each a row of the same item (the bootstrap resamples whole "
                        "templates, so the repeated answers of an item stay together)")
    g.add_argument("--id-pattern", default=None, metavar="REGEX",
                   help="Inspect: template (and variant 0/1) from the sample id by a regular expression with "
                        "named groups, e.g. '(?P<template>\\d+)-(?P<variant>[01])-\\d+'")


_FIELDS = {"template": "id", "variant": None, "question": "question"}


def _fields(args, reader: str) -> dict:
    """The template, variant and question fields of one reader ("lm_eval" or "inspect"): its own
    option (--lm-eval-X-field / --inspect-X-field), else the shared --X-field, else the default; a
    reader's own variant field given as ``none`` takes its variant from the task (or, Inspect, the id
    pattern)."""
    out = {}
    for name, default in _FIELDS.items():
        own = getattr(args, f"{reader}_{name}_field", None)
        value = own if own is not None else getattr(args, f"{name}_field", None)
        if value is None or (name == "variant" and own is not None and own.strip().lower() == "none"):
            value = default
        out[f"{name}_field"] = value
    return out


def check_field_options(args) -> None:
    """A reader's own field option without any file of that reader is an error naming it (it would
    apply to nothing; before the options were split, --lm-eval-X-field also set Inspect's field)."""
    for reader, flag, files in (("lm_eval", "lm-eval", "--lm-eval files"), ("inspect", "inspect", "--inspect logs")):
        if getattr(args, reader, None):
            continue
        for name in _FIELDS:
            if getattr(args, f"{reader}_{name}_field", None) is not None:
                other = "inspect" if reader == "lm_eval" else "lm-eval"
                raise lmeval.LmEvalError(f"--{flag}-{name}-field applies to {files}, and none are given; "
                                         f"use --{other}-{name}-field for the other reader, or --{name}-field for both")


def mapping_from_args(args, reader: str | None = None) -> lmeval.Mapping:
    """The :class:`earnest.readers.lmeval.Mapping` the options describe, for one reader ("lm_eval",
    "inspect": its fields) or, by default, for making prompts of the rows of both (the fields of
    the lm-eval files when there are any, else of the Inspect logs)."""
    if reader is None:
        reader = "lm_eval" if getattr(args, "lm_eval", None) else "inspect"
    return lmeval.Mapping(kind=args.lm_eval_map, base_tasks=tuple(args.lm_eval_base_task or ()),
                          groups=tuple(args.lm_eval_group or ()), pool=bool(args.lm_eval_pool),
                          prompt=args.lm_eval_prompt, id_pattern=args.id_pattern if reader == "inspect" else None,
                          **_fields(args, reader))


def given(args) -> bool:
    """Whether harness results (--lm-eval or --inspect) were given."""
    return bool(getattr(args, "lm_eval", None) or getattr(args, "inspect", None))


def samples_from_args(args) -> pd.DataFrame:
    """The rows of every --lm-eval and --inspect file (:data:`earnest.readers.lmeval.ROW_COLUMNS`)."""
    check_field_options(args)
    frames = []
    if args.lm_eval:
        frames.append(lmeval.read_samples(args.lm_eval, mapping=mapping_from_args(args, "lm_eval"),
                                          metric=args.lm_eval_metric, filter_name=args.lm_eval_filter,
                                          model=args.lm_eval_model))
    if getattr(args, "inspect", None):
        frames.append(inspect_log.read_logs(args.inspect, mapping=mapping_from_args(args, "inspect"),
                                            scorer=args.inspect_scorer, epoch=args.inspect_epoch,
                                            model=args.lm_eval_model))
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
