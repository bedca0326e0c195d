"""Per-sample results of lm-evaluation-harness (``lm_eval --log_samples``) as earnest's inputs.

Format followed: lm-evaluation-harness 0.4.x as written by 0.4.13 (``EvaluationTracker.
save_results_samples``): one file ``<output_path>/<model_name_sanitized>/samples_<task>_<date>.jsonl``
per task, one JSON object per line and per (document, filter) with ``doc_id``, ``doc`` (the dataset
row), ``target``, ``arguments`` (``{"gen_args_0": {"arg_0": prompt, "arg_1": generation kwargs}}``),
``resps``, ``filtered_resps``, ``filter`` (e.g. ``strict-match``), ``metrics`` (names of the metric
keys), ``doc_hash``, ``prompt_hash``, ``target_hash`` and one key per metric with its value (e.g.
``"exact_match": 1.0``).

Each sample becomes one row: model (the folder name lm-eval gave it, or ``model=``), task (from
the file name), doc_id, item (``doc_hash``, which identifies the document whatever the task or
model, else the doc_id), template, variant and correct (the metric's value, which must be 0/1).

How a sample maps to a template and a variant (:class:`Mapping`):

* ``gsm_symbolic`` (GSM-Symbolic-style tasks whose docs are rows of the official release): the
  template is the doc's ``id`` field (``template_field``); the variant is 0 for samples of the
  ``base_tasks`` (the GSM-Base task, one document per template) and 1 for every other task, or
  the doc's ``variant_field`` when one is named.
* ``per_document`` (any other task, the fallback): every document is its own cluster (template =
  doc_id), which makes the GLMM's random intercept a per-question intercept; variants as above.

A sample that lacks what its mapping needs, a metric that is not 0/1, several filters without one
chosen, or a document seen twice for one model and task is an error naming the file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import pandas as pd

from earnest.jsonl import iter_jsonl

FORMAT_VERSION = "lm-evaluation-harness 0.4.x --log_samples (fields as written by 0.4.13)"
MAPPINGS = ("gsm_symbolic", "per_document")
FILE_RE = re.compile(r"^samples_(?P<task>.+?)_(?P<date>\d{4}-\d{2}-\d{2}T[0-9.\-]+)\.jsonl$")
ROW_COLUMNS = ("model", "task", "doc_id", "item", "template", "variant", "correct", "source")


class LmEvalError(ValueError):
    """An lm-eval samples file cannot be read as asked; the message names the file and line."""


@dataclass(frozen=True)
class Mapping:
    """How samples map to templates and variants (see the module docstring)."""
    kind: str = "gsm_symbolic"
    template_field: str = "id"
    base_tasks: tuple = field(default_factory=tuple)
    variant_field: str | None = None

    def __post_init__(self):
        if self.kind not in MAPPINGS:
            raise LmEvalError(f"lm-eval mapping must be one of {', '.join(MAPPINGS)}, not {self.kind!r}")


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


def read_samples(paths: Sequence[str | Path], *, mapping: Mapping = Mapping(), metric: str | None = None,
                 filter_name: str | None = None, model: str | None = None) -> pd.DataFrame:
    """Rows (:data:`ROW_COLUMNS`) of every sample in ``paths``."""
    rows = []
    for path in map(Path, paths):
        task = task_of(path)
        mdl = model or path.parent.name or "lm-eval"
        seen = set()
        try:
            records = [(i, rec) for _, i, rec in iter_jsonl(path, error=LmEvalError)]
        except OSError as exc:
            raise LmEvalError(f"{path}: cannot read ({exc})") from exc
        if not records:
            raise LmEvalError(f"{path}: no samples")
        filters = sorted({str(r.get("filter", "none")) for _, r in records})
        chosen = filter_name
        if chosen is None:
            if len(filters) > 1:
                raise LmEvalError(f"{path}: samples of several filters ({', '.join(filters)}); choose one")
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
            name = metric
            if name is None:
                names = rec.get("metrics") or []
                if len(names) != 1:
                    raise LmEvalError(f"{where}: {len(names)} metrics ({', '.join(map(str, names))}); choose one")
                name = names[0]
            if name not in rec:
                raise LmEvalError(f"{where}: no value for metric '{name}'")
            value = rec[name]
            if isinstance(value, bool):
                value = int(value)
            if not isinstance(value, (int, float)) or value not in (0, 1):
                raise LmEvalError(f"{where}: metric '{name}' must be 0/1 for a GLMM, found {value!r}")
            doc = rec["doc"] if isinstance(rec["doc"], dict) else {}
            doc_id = rec["doc_id"]
            if doc_id in seen:
                raise LmEvalError(f"{where}: doc_id {doc_id!r} appears twice for filter {chosen!r}")
            seen.add(doc_id)
            if mapping.kind == "gsm_symbolic":
                template = _field(doc, mapping.template_field)
                if template is None:
                    raise LmEvalError(f"{where}: doc has no field '{mapping.template_field}' for the template "
                                      f"(use the per_document mapping for tasks that are not GSM-Symbolic-style)")
            else:
                template = doc_id
            try:
                template = int(template)
            except (TypeError, ValueError):
                raise LmEvalError(f"{where}: template id {template!r} is not an integer") from None
            if mapping.variant_field:
                variant = _field(doc, mapping.variant_field)
                if variant not in (0, 1, True, False):
                    raise LmEvalError(f"{where}: doc field '{mapping.variant_field}' must be 0/1, found {variant!r}")
                variant = int(variant)
            else:
                variant = 0 if task in mapping.base_tasks else 1
            rows.append({"model": mdl, "task": task, "doc_id": doc_id,
                         "item": str(rec.get("doc_hash") or doc_id), "template": template, "variant": variant,
                         "correct": int(value), "source": where})
    return pd.DataFrame(rows, columns=list(ROW_COLUMNS))


def to_glmm_input(samples: pd.DataFrame, *, prompt: str | None = None) -> pd.DataFrame:
    """GLMM input (model, prompt, template, variant, correct) from :func:`read_samples` rows: one
    model x prompt per lm-eval model folder; ``prompt`` names it (default: the tasks, joined)."""
    if samples.empty:
        raise LmEvalError("no lm-eval samples to fit")
    out = samples.copy()
    out["prompt"] = prompt or "+".join(sorted(samples["task"].unique()))
    variants = set(out["variant"])
    if variants != {0, 1}:
        raise LmEvalError("the GLMM needs samples of both GSM-Base (variant 0) and GSM-Variants (variant 1); "
                          f"found only variant {sorted(variants)} (name the base task with --lm-eval-base-task, "
                          f"or a doc field with --lm-eval-variant-field)")
    return out[["model", "prompt", "template", "variant", "correct", "item"]].reset_index(drop=True)


def to_compare_input(samples: pd.DataFrame) -> pd.DataFrame:
    """Compare input (model, prompt, template, item, correct) from :func:`read_samples` rows: the
    task is the prompt, so two tasks over the same documents compare as two prompts."""
    out = samples.rename(columns={"task": "prompt"})
    return out[["model", "prompt", "template", "item", "variant", "correct"]].reset_index(drop=True)


def mapping_from_args(kind: str, base_tasks: Iterable[str] = (), template_field: str = "id",
                      variant_field: str | None = None) -> Mapping:
    return Mapping(kind=kind, template_field=template_field, base_tasks=tuple(base_tasks or ()),
                   variant_field=variant_field)


# ---------------------------------------------------------------------------- command-line options
def add_arguments(parser, *, required: bool = False) -> None:
    """The lm-eval input options shared by ``earnest glmm``, ``compare`` and ``power``."""
    g = parser.add_argument_group("lm-evaluation-harness input (" + FORMAT_VERSION + ")")
    g.add_argument("--lm-eval", type=Path, nargs="+", required=required, metavar="SAMPLES_JSONL",
                   help="samples_<task>_<date>.jsonl files written by lm_eval --log_samples; the model is the "
                        "file's folder (lm-eval's sanitized model name)")
    g.add_argument("--lm-eval-map", choices=MAPPINGS, default="gsm_symbolic",
                   help="gsm_symbolic: template = the doc's id field; per_document: one cluster per document")
    g.add_argument("--lm-eval-base-task", nargs="+", default=[], metavar="TASK",
                   help="tasks whose samples are GSM-Base (variant 0); every other task is GSM-Variants (1)")
    g.add_argument("--lm-eval-template-field", default="id", help="doc field holding the template id (gsm_symbolic)")
    g.add_argument("--lm-eval-variant-field", default=None, help="doc field holding variant 0/1 (instead of tasks)")
    g.add_argument("--lm-eval-metric", default=None, help="per-sample metric giving correctness (default: the only one)")
    g.add_argument("--lm-eval-filter", default=None, help="lm-eval filter to use when samples carry several")
    g.add_argument("--lm-eval-model", default=None, help="model name instead of the folder name")


def samples_from_args(args) -> pd.DataFrame:
    mapping = mapping_from_args(args.lm_eval_map, args.lm_eval_base_task, args.lm_eval_template_field,
                                args.lm_eval_variant_field)
    return read_samples(args.lm_eval, mapping=mapping, metric=args.lm_eval_metric,
                        filter_name=args.lm_eval_filter, model=args.lm_eval_model)
