"""Per-sample results of other harnesses as earnest's inputs: lm-evaluation-harness
(``lm_eval --log_samples``) here, Inspect AI logs in :mod:`earnest.readers.inspect_log`; both become the
same rows, which one mapping (:class:`Mapping`) turns into the GLMM, compare and power inputs.

lm-eval format followed: 0.4.x as written by 0.4.13 (``EvaluationTracker.save_results_samples``):
one file ``<output_path>/<model_name_sanitized>/samples_<task>_<date>.jsonl`` per task, one JSON
object per line and per (document, filter) with ``doc_id``, ``doc`` (the dataset row), ``target``,
``arguments``, ``resps``, ``filtered_resps``, ``filter`` (e.g. ``strict-match``), ``metrics`` (names
of the metric keys), ``doc_hash``, ``prompt_hash``, ``target_hash`` and one key per metric with its
value (e.g. ``"exact_match": 1.0``).

Each sample becomes one row (:data:`ROW_COLUMNS`): model (the folder name lm-eval gave it, or
``--lm-eval-model``), task (from the file name), doc_id, item (``doc_hash``, which identifies the
document whatever the task or model; computed as lm-eval does when absent), template, variant,
correct (the metric's value, which must be 0/1), question (the doc's question field, for gamma),
source (``file:line``), epoch (1; Inspect logs have several with ``--inspect-epoch all``) and
variant_from (``task``, ``field`` or ``id``: what gave the row its variant, so that rows of both
readers read with their own fields go through one :class:`Mapping` into prompts).

How a sample maps to a template and a variant:

* ``gsm_symbolic`` (GSM-Symbolic-style tasks whose docs are rows of the official release): the
  template is the doc's ``id`` field (``template_field``; an integer); the variant is 0 for samples
  of the ``base_tasks`` (the GSM-Base task, one document per template) and 1 for every other task,
  or the doc's ``variant_field`` when one is named (each reader may name its own:
  ``earnest.readers.options``).
* ``per_document`` (any other task, the fallback): every document is its own cluster (a template id
  derived from its ``doc_hash``, the same for every model and task; numbered 0, 1, ... in the order
  of the hashes for the fits), which makes the GLMM's random intercept a per-question intercept;
  variants as above.

Which tasks make one analysed prompt (:func:`task_groups`): every (model, prompt) is its own fit
(GLMM) or condition (compare). By default each task is its own prompt, except that with base
tasks each other task forms a prompt with the base task (named by that task; with several base tasks,
the one whose name ends as its own does: ``gsm_symbolic_base_reference`` with
``gsm_symbolic_variants_reference``, as ``earnest lm-eval-task`` names each mode's tasks); ``groups`` names them
explicitly (``--lm-eval-group NAME=TASK,TASK``) and ``pool`` puts all tasks of a model into one.
Within a prompt a document counts once: the same document in two of its tasks, or one task of a
model in two files (two runs), is an error naming both places.

A sample that lacks what its mapping needs, a metric that is not 0/1, several filters without one
chosen, or a value of the wrong kind (a list ``doc_id``, a template id ``3.7`` or ``Infinity``) is
an error naming the file and line.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from earnest.jsonl import iter_jsonl

FORMAT_VERSION = "lm-evaluation-harness 0.4.x --log_samples (fields as written by 0.4.13)"
MAPPINGS = ("gsm_symbolic", "per_document")
FILE_RE = re.compile(r"^samples_(?P<task>.+?)_(?P<date>\d{4}-\d{2}-\d{2}T[0-9.\-]+)\.jsonl$")
# epoch: the answer's epoch (Inspect; 1 for lm-eval); variant_from: where the row's variant came from
# (task: the base tasks decide; field: a doc or metadata field; id: Inspect's --id-pattern)
ROW_COLUMNS = ("model", "task", "doc_id", "item", "template", "variant", "correct", "question", "source", "epoch",
               "variant_from")
INT64 = 2 ** 63


class LmEvalError(ValueError):
    """A harness results file cannot be read as asked; the message names the file and line."""


@dataclass(frozen=True)
class Mapping:
    """How samples map to templates, variants and prompts (see the module docstring).

    ``groups``: ((prompt, (task, ...)), ...) explicit task groups; ``pool``: all tasks of a model in
    one prompt; ``prompt``: the name of the one prompt (when there is one); ``question_field``: the
    doc field whose text gives gamma (GLMM 2); ``id_pattern``: a regular expression with a named
    group ``template`` (and optionally ``variant``, 0/1) matched against Inspect sample ids."""
    kind: str = "gsm_symbolic"
    template_field: str = "id"
    base_tasks: tuple = field(default_factory=tuple)
    variant_field: str | None = None
    question_field: str = "question"
    groups: tuple = field(default_factory=tuple)
    pool: bool = False
    prompt: str | None = None
    id_pattern: str | None = None

    def __post_init__(self):
        if self.kind not in MAPPINGS:
            raise LmEvalError(f"lm-eval mapping must be one of {', '.join(MAPPINGS)}, not {self.kind!r}")
        if self.pool and self.groups:
            raise LmEvalError("--lm-eval-pool puts every task into one prompt; it does not go with --lm-eval-group")
        if self.id_pattern is not None:
            try:
                rx = re.compile(self.id_pattern)
            except re.error as exc:
                raise LmEvalError(f"--id-pattern {self.id_pattern!r} is not a regular expression ({exc})") from None
            if "template" not in rx.groupindex:
                raise LmEvalError(f"--id-pattern {self.id_pattern!r} needs a named group (?P<template>...)")


def task_of(path: Path) -> str:
    """The task name in ``samples_<task>_<date>.jsonl`` (the whole stem when it is named otherwise)."""
    m = FILE_RE.match(path.name)
    return m.group("task") if m else path.stem.removeprefix("samples_")


def _field(doc: dict, name: str):
    cur = doc
    for part in name.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def integer_id(value, where: str, what: str, minimum: int = -INT64) -> int:
    """An id that must be an integer (a JSON integer, an integral finite number or a string of
    digits, within int64 and not below ``minimum``); LmEvalError naming ``where`` and ``what``
    otherwise."""
    v = value
    if isinstance(v, str) and re.fullmatch(r"\s*[+-]?\d+\s*", v):
        v = int(v)
    if isinstance(v, float) and math.isfinite(v) and v == int(v):
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int):
        raise LmEvalError(f"{where}: {what} must be an integer, found {json.dumps(value)[:80]}")
    if not -INT64 <= v < INT64:
        raise LmEvalError(f"{where}: {what} {v} does not fit a 64-bit integer")
    if v < minimum:
        raise LmEvalError(f"{where}: {what} {v} is below {minimum}")
    return v


def cluster_id(item: str) -> int:
    """The per_document mapping's template id of an item: stable across models and tasks."""
    return int(hashlib.sha256(item.encode("utf-8")).hexdigest()[:15], 16)


def doc_hash(doc) -> str:
    """lm-eval's ``doc_hash`` of a doc (sha256 of its JSON with indent 2), for samples without one."""
    return hashlib.sha256(json.dumps(doc, indent=2, ensure_ascii=False, default=str).encode("utf-8")).hexdigest()


def binary_value(value, where: str, what: str) -> int:
    """A correctness value that must be 0/1 (a JSON number or boolean)."""
    if isinstance(value, bool):
        return int(value)
    if not isinstance(value, (int, float)) or value not in (0, 1):
        raise LmEvalError(f"{where}: {what} must be 0/1 for a GLMM, found {json.dumps(value)[:80]}")
    return int(value)


def sample_row(*, model: str, task: str, doc_id, item: str, fields: dict, correct: int, where: str,
               mapping: Mapping, template=None, variant=None, epoch: int = 1, reader: str = "lm-eval") -> dict:
    """One row (:data:`ROW_COLUMNS`) by ``mapping``: template and variant from ``fields`` (the
    doc, or an Inspect sample's metadata) unless given (an Inspect id pattern), question text.
    ``reader`` ("lm-eval" or "inspect") names the option of a missing field in the error."""
    variant_from = "id" if variant is not None else ("field" if mapping.variant_field else "task")
    if template is None:
        if mapping.kind == "gsm_symbolic":
            raw = _field(fields, mapping.template_field)
            if raw is None:
                raise LmEvalError(f"{where}: doc has no field '{mapping.template_field}' for the template "
                                  f"(name the field with --{reader}-template-field, or --template-field for both "
                                  f"readers; use the per_document mapping for tasks that are not "
                                  f"GSM-Symbolic-style)")
            template = integer_id(raw, where, f"template id (field '{mapping.template_field}')")
        else:
            template = cluster_id(item)
    if variant is None:
        if not variant_from_task(mapping) and not mapping.variant_field:
            raise LmEvalError(f"{where}: --id-pattern gave no variant for this sample id")
        if mapping.variant_field:
            v = _field(fields, mapping.variant_field)
            if isinstance(v, bool) or v not in (0, 1) or isinstance(v, (list, dict, str)):
                own = "--inspect-variant-field" if reader == "inspect" else "--lm-eval-variant-field"
                hint = (f" (no such field here: --variant-field names the field of both readers; give this "
                        f"reader's with {own}" + (", or none to take the variant from the task or --id-pattern"
                                                   if reader == "inspect" else "") + ")") if v is None else ""
                raise LmEvalError(f"{where}: doc field '{mapping.variant_field}' must be 0/1, found "
                                  f"{json.dumps(v)[:80]}{hint}")
            variant = int(v)
        else:
            variant = 0 if task in mapping.base_tasks else 1
    q = _field(fields, mapping.question_field)
    return {"model": model, "task": task, "doc_id": doc_id, "item": item, "template": template,
            "variant": int(variant), "correct": int(correct), "question": q if isinstance(q, str) else None,
            "source": where, "epoch": int(epoch), "variant_from": variant_from}


# ---------------------------------------------------------------------------- what a file is
def foreign_file(path: Path, expected: str = "lm-eval") -> str | None:
    """What ``path`` is when it is not what ``expected`` ("lm-eval" samples or an "inspect" log)
    reads, as a sentence saying what to give instead; None when it may be one."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        return f"{path}: cannot read ({exc})"
    samples_hint = ("earnest reads the per-sample files samples_<task>_<date>.jsonl that `lm_eval ... "
                    "--log_samples` writes beside it (--lm-eval), or an Inspect AI log (--inspect LOG.eval)")
    if head.startswith(b"PK\x03\x04"):
        if expected == "inspect":
            return None
        return (f"{path}: a zip archive, as Inspect AI writes its .eval logs, not an lm-eval samples file: give "
                f"it with --inspect {path}")
    if path.name.startswith("results_") and path.suffix == ".json":
        return (f"{path}: lm-eval's aggregate results file (results_<date>.json: scores per task, no "
                f"per-sample answers); {samples_hint}")
    if path.suffix == ".json":
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, OSError, RecursionError):
            return None
        if isinstance(doc, dict) and "eval" in doc and ("samples" in doc or "results" in doc):
            if expected == "inspect":
                return None
            return f"{path}: an Inspect AI log (JSON format), not an lm-eval samples file: give it with --inspect {path}"
        if isinstance(doc, dict) and "results" in doc and ("configs" in doc or "config" in doc):
            return f"{path}: lm-eval's aggregate results file (scores per task, no per-sample answers); {samples_hint}"
    if expected == "inspect":
        if FILE_RE.match(path.name) or path.suffix == ".jsonl":
            return (f"{path}: not an Inspect AI log (a .eval zip or a .json log); it looks like an lm-eval samples "
                    f"file: give it with --lm-eval {path}")
        return f"{path}: not an Inspect AI log (a .eval zip archive, or a .json log written with --log-format json)"
    return None


# ---------------------------------------------------------------------------- models
def model_names(folders: Sequence[str], given: Sequence[str] | str | None) -> dict[str, str]:
    """folder (lm-eval) or model (Inspect) -> the name earnest uses. ``given``: None, one NAME
    (only when every file is of one model) or ``OLD=NAME`` entries."""
    names = {f: f for f in folders}
    if not given:
        return names
    given = [given] if isinstance(given, str) else list(given)
    plain = [g for g in given if "=" not in g]
    if plain:
        if len(given) > 1 or len(set(folders)) > 1:
            raise LmEvalError(f"--lm-eval-model {' '.join(given)}: the files are of {len(set(folders))} model(s) "
                              f"({', '.join(sorted(set(folders)))}); one plain NAME would pool them into one model: "
                              f"rename each with OLD=NAME")
        return {f: plain[0] for f in folders}
    for g in given:
        old, new = g.split("=", 1)
        if old not in names:
            raise LmEvalError(f"--lm-eval-model {g}: no file of model {old!r} (models: {', '.join(sorted(names))})")
        names[old] = new
    if len(set(names.values())) < len(names):
        raise LmEvalError(f"--lm-eval-model {' '.join(given)}: two models get the same name, which would pool them")
    return names


def check_one_file_per_task(sources: dict, model: str, task: str, path: Path, noun: str = "file") -> None:
    """Record that ``path`` holds ``task`` of ``model`` in ``sources``; LmEvalError if a file read
    before holds it too, or ``path`` was given twice (every document would count twice). Both the
    lm-eval and the Inspect reader call it (``noun``: what their files are called)."""
    key = (model, task)
    if key in sources:
        where = "was given twice" if sources[key] == path else f"is also in {sources[key]} (two runs?)"
        raise LmEvalError(f"{path}: task {task!r} of model {model!r} {where}; a document counts once: give one "
                          f"{noun} per task and model")
    sources[key] = path


# ---------------------------------------------------------------------------- lm-eval samples
def read_samples(paths: Sequence[str | Path], *, mapping: Mapping = Mapping(), metric: str | None = None,
                 filter_name: str | None = None, model: Sequence[str] | str | None = None) -> pd.DataFrame:
    """Rows (:data:`ROW_COLUMNS`) of every sample in ``paths``."""
    paths = [Path(p) for p in paths]
    for path in paths:
        problem = foreign_file(path, "lm-eval")
        if problem:
            raise LmEvalError(problem)
    names = model_names([p.parent.name or "lm-eval" for p in paths], model)
    rows, files = [], {}
    for path in paths:
        task = task_of(path)
        mdl = names[path.parent.name or "lm-eval"]
        check_one_file_per_task(files, mdl, task, path)
        seen: dict[int, int] = {}
        records = [(i, rec) for _, i, rec in iter_jsonl(path, error=LmEvalError)]
        if not records:
            raise LmEvalError(f"{path}: no samples")
        filters = sorted({str(r.get("filter", "none")) for _, r in records})
        chosen = filter_name
        if chosen is None:
            if len(filters) > 1:
                raise LmEvalError(f"{path}: samples of several filters ({', '.join(filters)}); choose one "
                                  f"with --lm-eval-filter")
            chosen = filters[0]
        elif chosen not in filters:
            raise LmEvalError(f"{path}: no samples of filter {chosen!r} (filters: {', '.join(filters)})")
        for i, rec in records:
            if str(rec.get("filter", "none")) != chosen:
                continue
            where = f"{path}:{i}"
            for key in ("doc_id", "doc"):
                if key not in rec:
                    raise LmEvalError(f"{where}: missing field '{key}' (not an lm-eval --log_samples line?)")
            doc_id = integer_id(rec["doc_id"], where, "doc_id", minimum=0)  # an index into the task's documents
            name = metric
            if name is None:
                names_ = rec.get("metrics")
                if not isinstance(names_, list) or not all(isinstance(n, str) for n in names_):
                    raise LmEvalError(f"{where}: field 'metrics' must be a list of metric names, found "
                                      f"{json.dumps(names_)[:80]}")
                if len(names_) != 1:
                    raise LmEvalError(f"{where}: {len(names_)} metrics ({', '.join(names_)}); choose one with "
                                      f"--lm-eval-metric")
                name = names_[0]
            if name not in rec:
                raise LmEvalError(f"{where}: no value for metric '{name}'")
            value = binary_value(rec[name], where, f"metric '{name}'")
            if doc_id in seen:
                raise LmEvalError(f"{where}: doc_id {doc_id} appears twice for filter {chosen!r} (first at line "
                                  f"{seen[doc_id]})")
            seen[doc_id] = i
            doc = rec["doc"] if isinstance(rec["doc"], dict) else {}
            h = rec.get("doc_hash")
            item = h if isinstance(h, str) and h else doc_hash(rec["doc"])
            rows.append(sample_row(model=mdl, task=task, doc_id=doc_id, item=item, fields=doc, correct=value,
                                   where=where, mapping=mapping))
    return pd.DataFrame(rows, columns=list(ROW_COLUMNS))


# ---------------------------------------------------------------------------- the one mapping to prompts
def variant_from_task(mapping: Mapping) -> bool:
    """Whether a row's variant is its task's (0 for the base tasks), not a doc field's or an id's."""
    return not mapping.variant_field and not (mapping.id_pattern and "variant" in re.compile(mapping.id_pattern).groupindex)


def task_groups(tasks: Iterable[str], mapping: Mapping,
                by_task: Iterable[str] | None = None) -> list[tuple[str, tuple[str, ...]]]:
    """(prompt, tasks) of every analysed prompt (module docstring), checked against the tasks read.
    ``by_task``: the tasks whose rows take their variant from the task (the base tasks decide), the
    only ones a base task pairs with; by default every task unless the mapping names a variant field."""
    tasks = sorted(set(tasks))
    by_task = [t for t in tasks if not mapping.variant_field] if by_task is None else sorted(set(by_task))
    missing = [t for t in mapping.base_tasks if t not in tasks]
    if missing:
        raise LmEvalError(f"--lm-eval-base-task {' '.join(missing)}: no samples of that task (tasks read: "
                          f"{', '.join(tasks)})")
    if mapping.pool:
        groups = [(mapping.prompt or "+".join(tasks), tuple(tasks))]
    elif mapping.groups:
        groups = [(n, tuple(ts)) for n, ts in mapping.groups]
        for name, ts in groups:
            unknown = [t for t in ts if t not in tasks]
            if unknown:
                raise LmEvalError(f"--lm-eval-group {name}={','.join(ts)}: no samples of task(s) "
                                  f"{', '.join(unknown)} (tasks read: {', '.join(tasks)})")
        names = [n for n, _ in groups]
        if len(set(names)) < len(names):
            raise LmEvalError(f"--lm-eval-group: prompt names repeat ({', '.join(names)})")
        left = [t for t in tasks if not any(t in ts for _, ts in groups)]
        if left:
            raise LmEvalError(f"task(s) {', '.join(left)} are in no --lm-eval-group; add them to one or leave "
                              f"their files out")
    elif mapping.base_tasks and by_task:
        base = [t for t in by_task if t in mapping.base_tasks]
        others = [t for t in by_task if t not in mapping.base_tasks]
        # tasks whose rows carry their own variant (a field, an id) are prompts of their own
        alone = [(t, (t,)) for t in tasks if t not in by_task]
        if not others:
            groups = [(t, (t,)) for t in base] + alone
        elif len(base) == 1 or len(others) == 1:
            groups = [(t, tuple(base) + (t,)) for t in others] + alone
        elif _paired_by_suffix(base, others):
            groups = [(t, (b, t)) for b, t in _paired_by_suffix(base, others)] + alone
        else:
            raise LmEvalError(f"base tasks {', '.join(base)} and other tasks {', '.join(others)}: which base task goes "
                              f"with which is not said; name each prompt's tasks with --lm-eval-group "
                              f"NAME=BASE_TASK,TASK ...")
    else:
        groups = [(t, (t,)) for t in tasks]
    if mapping.prompt and not mapping.pool:
        if len(groups) != 1:
            raise LmEvalError(f"--lm-eval-prompt {mapping.prompt}: the tasks make {len(groups)} prompts "
                              f"({', '.join(n for n, _ in groups)}), each its own fit; name them with "
                              f"--lm-eval-group NAME=TASK,..., or pool them with --lm-eval-pool")
        groups = [(mapping.prompt, groups[0][1])]
    return groups


def _paired_by_suffix(base: list[str], others: list[str]) -> list[tuple[str, str]]:
    """(base task, other task) pairs where every task's name ends in a part (after its last ``_``)
    that exactly one base task and one other task share, as the fidelity modes of ``earnest
    lm-eval-task``'s tasks do (``gsm_symbolic_base_reference`` with ``gsm_symbolic_variants_reference``);
    empty when the names do not pair that way."""
    def by_end(tasks):
        ends = {}
        for t in tasks:
            ends.setdefault(t.rsplit("_", 1)[-1], []).append(t)
        return ends

    b, o = by_end(base), by_end(others)
    if set(b) != set(o) or any(len(v) != 1 for v in (*b.values(), *o.values())):
        return []
    return [(b[end][0], o[end][0]) for end in sorted(o)]


def prompt_rows(samples: pd.DataFrame, mapping: Mapping = Mapping()) -> pd.DataFrame:
    """The samples with a ``prompt`` column (:func:`task_groups`): one copy of a task's rows per
    prompt it belongs to. A document (item) counts once per model and prompt: the same document
    in two tasks of one prompt is an error naming both places."""
    if samples.empty:
        raise LmEvalError("no samples to analyse")
    # rows whose variant is their task's: the base tasks decide, whatever base tasks the rows were read
    # with (each reader's rows say where their variant came from; rows without say nothing, and the
    # mapping decides for all of them)
    if "variant_from" in samples.columns and samples["variant_from"].notna().all():
        by_task = (samples["variant_from"] == "task").to_numpy()
        task_by_task = set(samples.loc[by_task, "task"])
    else:
        by_task, task_by_task = np.full(len(samples), variant_from_task(mapping)), None
    if by_task.any():
        variant = samples["variant"].to_numpy().copy()
        variant[by_task] = (~samples["task"].isin(mapping.base_tasks)).to_numpy()[by_task].astype(int)
        samples = samples.assign(variant=variant)
    if "epoch" not in samples.columns:
        samples = samples.assign(epoch=1)
    if mapping.kind == "per_document":
        # small ids for the fits (R's integers are 32-bit), one per document across every model and task
        samples = samples.assign(template=samples["item"].rank(method="dense").astype("int64") - 1)
    frames = []
    for prompt, tasks in task_groups(samples["task"], mapping, by_task=task_by_task):
        sub = samples[samples["task"].isin(tasks)].assign(prompt=prompt)
        # a document counts once per model and prompt: in one task, answered once per epoch (Inspect's
        # epochs answer every sample again, each a row of the same item)
        tasks_of = sub.groupby(["model", "item"])["task"].transform("nunique")
        dup = (tasks_of > 1) | sub.duplicated(["model", "item", "epoch"], keep=False)
        if dup.any():
            d = sub[dup].sort_values("source")
            first = d.iloc[0]
            second = d[(d["item"] == first["item"]) & (d["model"] == first["model"])].iloc[1]
            raise LmEvalError(f"{second['source']}: the same document (doc_hash {first['item'][:12]}...) as "
                              f"{first['source']}, both in prompt {prompt!r} of model {first['model']!r}; a document "
                              f"counts once: make the tasks separate prompts (--lm-eval-group) or leave one out")
        frames.append(sub)
    return pd.concat(frames, ignore_index=True)


def to_glmm_input(samples: pd.DataFrame, mapping: Mapping = Mapping(), *, glmm: int = 1,
                  gamma: Callable[[str], float] | None = None) -> pd.DataFrame:
    """GLMM input (model, prompt, template, variant, correct, item[, epochs][, gamma]) from
    :func:`read_samples` rows: one fit per model x prompt (:func:`prompt_rows`). Several epochs of
    one question (Inspect, ``--inspect-epoch all``) become one row, ``correct`` their mean and
    ``epochs`` their number (:func:`average_epochs`). GLMM 2's gamma is
    computed from the doc's question field (``mapping.question_field``) by ``gamma`` (question ->
    gamma; the caller's benchmark's, e.g. :func:`earnest.gsm.gamma.gamma` in a fidelity mode, which
    this reader does not know), required for GLMM 2."""
    out = prompt_rows(samples, mapping)
    for (model, prompt), sub in out.groupby(["model", "prompt"], sort=True):
        variants = set(sub["variant"])
        if variants != {0, 1}:
            raise LmEvalError(f"model {model!r}, prompt {prompt!r}: the GLMM needs samples of both GSM-Base "
                              f"(variant 0) and GSM-Variants (variant 1); found only variant {sorted(variants)} (name "
                              f"the base task with --lm-eval-base-task, or a doc field with --lm-eval-variant-field)")
    out, epochs = average_epochs(out)
    cols = ["model", "prompt", "template", "variant", "correct", "item"] + (["epochs"] if epochs else [])
    if glmm == 2:
        bad = out["question"].isna()
        if bad.any():
            where = out.loc[bad, "source"].iloc[0]
            raise LmEvalError(f"{where}: no question text in field '{mapping.question_field}' for GLMM 2's gamma "
                              f"(name the field with --lm-eval-question-field, or --question-field for both readers)")
        if gamma is None:
            raise ValueError("to_glmm_input: GLMM 2 needs gamma, the function that gives a question's gamma")
        out["gamma"] = [gamma(q) for q in out["question"]]
        cols.append("gamma")
    return out[cols].reset_index(drop=True)


def average_epochs(rows: pd.DataFrame) -> tuple[pd.DataFrame, bool]:
    """(rows, whether any were averaged): where a question (item) of a model x prompt has several
    rows, one per epoch (Inspect's ``--epochs``, read with ``--inspect-epoch all``), one row of it
    whose ``correct`` is the mean over its epochs and ``epochs`` their number
    (:data:`earnest.stats.glmm.EPOCHS`; the rule is :func:`earnest.stats.glmm.average_repeats`, which a
    model's samples follow too): several epochs of the same question are not independent
    answers, and as rows of their own they would shrink the GLMM's Wald SE (two identical greedy
    epochs by ~29%) and weigh a question by its epochs. Every question of a model x prompt must have
    the same number of epochs (LmEvalError naming two that differ: read one epoch with
    ``--inspect-epoch N``, or the epochs every question has)."""
    from earnest.stats.glmm import average_repeats

    return average_repeats(rows, ["model", "prompt", "item"], what="epochs", error=LmEvalError,
                           where=lambda r: f"{r['source']} (doc {r['doc_id']!r})",
                           fix=": read one epoch (--inspect-epoch N) or complete the log")


def to_compare_input(samples: pd.DataFrame, mapping: Mapping = Mapping(), *, by: str | None = None) -> pd.DataFrame:
    """Compare input (model, prompt, template, item, variant, correct) from :func:`read_samples`
    rows, prompts as for the GLMM (:func:`prompt_rows`); items pair by ``doc_hash``. With
    ``by="prompts"``, two prompts that share a task are refused: their shared samples would be
    paired with themselves."""
    out = prompt_rows(samples, mapping)
    if out.duplicated(["model", "prompt", "item"]).any():
        # several epochs (Inspect, --inspect-epoch all): epoch e of one condition pairs with epoch e of
        # the other, each epoch's answer a paired unit of its own
        out = out.assign(item=out["item"].astype(str) + "#epoch" + out["epoch"].astype(str))
    if by == "prompts":
        for model, sub in out.groupby("model", sort=True):
            per = sub.groupby("task")["prompt"].unique()
            for task, prompts in per.items():
                if len(prompts) > 1:
                    raise LmEvalError(f"model {model!r}: prompts {', '.join(sorted(prompts))} share the samples of task "
                                      f"{task!r}, which --by prompts would pair with themselves; give each prompt its "
                                      f"own tasks (--lm-eval-group NAME=TASK,...)")
    return out[["model", "prompt", "template", "item", "variant", "correct"]].reset_index(drop=True)
