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
                        "(--lm-eval-template-field, --lm-eval-variant-field) or the sample id (--id-pattern)")
    g.add_argument("--lm-eval-map", choices=lmeval.MAPPINGS, default="gsm_symbolic",
                   help="gsm_symbolic: template = the doc's id field; per_document: one cluster per document")
    g.add_argument("--lm-eval-base-task", "--base-task", nargs="+", default=[], metavar="TASK",
                   help="tasks whose samples are GSM-Base (variant 0); every other task is GSM-Variants (1) and "
                        "forms a prompt with the base task")
    g.add_argument("--lm-eval-group", "--task-group", nargs="+", type=_group, default=[], metavar="NAME=TASK,TASK",
                   help="the tasks of each analysed prompt (default: each task its own prompt, with the base task)")
    g.add_argument("--lm-eval-pool", "--pool-tasks", action="store_true",
                   help="pool every task of a model into one prompt (a document still counts once)")
    g.add_argument("--lm-eval-template-field", "--template-field", default="id",
                   help="doc (Inspect: metadata) field holding the template id (gsm_symbolic)")
    g.add_argument("--lm-eval-variant-field", "--variant-field", default=None,
                   help="doc (Inspect: metadata) field holding variant 0/1 (instead of tasks)")
    g.add_argument("--lm-eval-question-field", "--question-field", default="question",
                   help="doc (Inspect: metadata) field holding the question text, for GLMM 2's gamma "
                        "(Inspect: the sample's input when the metadata has none)")
    g.add_argument("--lm-eval-metric", default=None, help="per-sample metric giving correctness (default: the only one)")
    g.add_argument("--lm-eval-filter", default=None, help="lm-eval filter to use when samples carry several")
    g.add_argument("--lm-eval-model", nargs="+", default=None, metavar="NAME|OLD=NAME",
                   help="model name instead of the folder (Inspect: the log's model) name; OLD=NAME per model "
                        "when the files are of several models")
    g.add_argument("--lm-eval-prompt", default=None, help="name of the one prompt (default: the task's name)")
    g.add_argument("--inspect-scorer", default=None, help="Inspect scorer giving correctness (default: the only one)")
    g.add_argument("--inspect-epoch", type=int, default=None,
                   help="Inspect epoch to use when the log has several (each epoch answers every sample again)")
    g.add_argument("--id-pattern", default=None, metavar="REGEX",
                   help="Inspect: template (and variant 0/1) from the sample id by a regular expression with "
                        "named groups, e.g. '(?P<template>\\d+)-(?P<variant>[01])-\\d+'")


def mapping_from_args(args) -> lmeval.Mapping:
    """The :class:`earnest.readers.lmeval.Mapping` the options describe."""
    return lmeval.Mapping(kind=args.lm_eval_map, template_field=args.lm_eval_template_field,
                   base_tasks=tuple(args.lm_eval_base_task or ()), variant_field=args.lm_eval_variant_field,
                   question_field=args.lm_eval_question_field, groups=tuple(args.lm_eval_group or ()),
                   pool=bool(args.lm_eval_pool), prompt=args.lm_eval_prompt, id_pattern=args.id_pattern)


def given(args) -> bool:
    """Whether harness results (--lm-eval or --inspect) were given."""
    return bool(getattr(args, "lm_eval", None) or getattr(args, "inspect", None))


def samples_from_args(args) -> pd.DataFrame:
    """The rows of every --lm-eval and --inspect file (:data:`earnest.readers.lmeval.ROW_COLUMNS`)."""
    mapping = mapping_from_args(args)
    frames = []
    if args.lm_eval:
        frames.append(lmeval.read_samples(args.lm_eval, mapping=mapping, metric=args.lm_eval_metric,
                                   filter_name=args.lm_eval_filter, model=args.lm_eval_model))
    if getattr(args, "inspect", None):
        frames.append(inspect_log.read_logs(args.inspect, mapping=mapping, scorer=args.inspect_scorer,
                                            epoch=args.inspect_epoch, model=args.lm_eval_model))
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
