"""The workflow's answers as an Inspect AI log, written with inspect_ai's own writer, so that
``inspect view`` shows every prompt, answer, extracted value and score (earnest has no viewer of its own).

One log per model x prompt format x dataset: one sample per item (one per item and answer where a
table has several answers per item, column ``sample``: each is an epoch of Inspect's). A sample is

- ``input``: the item's question (the dataset row, as an Inspect task's input), ``target``: the gold answer;
- ``messages``: the exact prompt the model was sent (checked against the answer's ``prompt_sha256``)
  and the model's answer; ``output``: the answer with its stop reason;
- ``scores["earnest"]``: ``C`` / ``I`` (earnest's ``correct``), ``answer`` the extracted value,
  ``explanation`` the extraction pattern and error class, ``metadata`` the answer's trace (fidelity,
  decoding, tokens, seconds);
- ``metadata``: id (the template), variant (0 = GSM-Base, 1 = a variant), instance, question, gamma,
  dataset: what :mod:`earnest.readers.inspect_log` reads back as harness samples
  (``Mapping(variant_field="variant")``), the same for every model and prompt so that items pair.

inspect-ai is imported only here (requirements.txt; envs/logs.yaml).
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import pandas as pd

from earnest.generation import prompt_sha256
from earnest.backends.base import GenerationRequest

SCORER = "earnest"
#: earnest's stop reasons (earnest.backends.base.STOP_REASONS) in Inspect's words
STOP_REASONS = {"eos": "stop", "stop_string": "stop", "max_new_tokens": "max_tokens",
                "content_filter": "content_filter"}
NEEDED = ["item_id", "template_id", "instance", "question", "answer", "response", "extracted",
          "extraction_pattern", "error_class", "correct", "prompt_sha256"]


class InspectExportError(ValueError):
    """A scored table that cannot be written as an Inspect log (the message names the file and row)."""


def _plain(value):
    """A JSON-able scalar (NaN -> None; numpy scalars -> Python)."""
    if value is None:
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def answers_table(scored: pd.DataFrame, generations: pd.DataFrame, items: pd.DataFrame, *, where: str) -> pd.DataFrame:
    """A scored table with its items' questions and its answers' traces (``prompt_sha256``, fidelity,
    decoding: the generations table's, which the scored table does not carry), one row per scored row;
    InspectExportError naming ``where`` for a scored item that either table lacks."""
    from earnest.generation import TRACE_COLUMNS

    out = scored.drop(columns=[c for c in ("question", *TRACE_COLUMNS) if c in scored.columns])
    for name, table, cols in (("items", items, ["question"]), ("generations", generations, list(TRACE_COLUMNS))):
        keys = ["item_id", "sample"] if "sample" in table.columns and "sample" in out.columns else ["item_id"]
        lacking = [c for c in cols if c not in table.columns]
        if lacking:
            raise InspectExportError(f"{where}: the {name} table has no column(s) {', '.join(lacking)}")
        merged = out.merge(table[keys + cols].drop_duplicates(keys), on=keys, how="left", validate="many_to_one")
        absent = merged[cols[0]].isna()
        if absent.any():
            raise InspectExportError(f"{where}: {int(absent.sum())} scored answer(s) not in the {name} table (first: "
                                     f"{merged.loc[absent, 'item_id'].iloc[0]}); rerun the workflow (snakemake) so that "
                                     f"the tables are of one run")
        out = merged
    return out


def inspect_samples(scored: pd.DataFrame, render: Callable[[str], str], *, model: str, where: str) -> list:
    """inspect_ai ``EvalSample`` objects of a scored table with its questions and traces (:func:`answers_table`).

    ``render``: the prompt format's ``render`` (question -> the exact prompt); each prompt is checked
    against its answer's ``prompt_sha256``, so a log never shows a prompt the model was not sent
    (InspectExportError naming ``where`` and the item otherwise). ``where``: the table's file, for messages."""
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, ModelOutput
    from inspect_ai.scorer import Score

    missing = [c for c in NEEDED if c not in scored.columns]
    if missing:
        raise InspectExportError(f"{where}: no column(s) {', '.join(missing)}; a scored table "
                                 f"(results/scored/<model>/<prompt>/<dataset>.parquet) has them")
    samples = []
    epochs = scored["sample"].astype(int) + 1 if "sample" in scored.columns else pd.Series(1, index=scored.index)
    for (i, row), epoch in zip(scored.iterrows(), epochs):
        prompt = render(row["question"])
        if prompt_sha256(GenerationRequest(key=row["item_id"], prompt=prompt)) != row["prompt_sha256"]:
            raise InspectExportError(
                f"{where}: row {i} (item {row['item_id']}): the prompt format renders a prompt whose SHA-256 is "
                f"not the answer's prompt_sha256 (the format changed since the answer was generated, or it was "
                f"generated with fewer exemplars); regenerate the answers (snakemake reruns them when the "
                f"format's files change)")
        response = "" if row["response"] is None else str(row["response"])
        extracted = _plain(row["extracted"])
        trace = {k: _plain(row[k]) for k in ("prompt_tokens", "new_tokens", "stop_reason", "seconds", "fidelity",
                                              "prompt_sha256") if k in scored.columns}
        if "decoding" in scored.columns and isinstance(row["decoding"], str):
            trace["decoding"] = json.loads(row["decoding"])
        trace.update(extracted=extracted, extraction_pattern=str(row["extraction_pattern"]),
                     error_class=str(row["error_class"]))
        explanation = f"extraction pattern: {row['extraction_pattern'] or '(none)'}; " + (
            "correct" if bool(row["correct"]) else f"error class: {row['error_class'] or '(none)'}")
        instance = int(row["instance"])
        samples.append(EvalSample(
            id=str(row["item_id"]), epoch=int(epoch), input=str(row["question"]), target=str(row["answer"]),
            messages=[ChatMessageUser(content=prompt), ChatMessageAssistant(content=response, model=model)],
            output=ModelOutput.from_content(model, response, stop_reason=STOP_REASONS.get(row.get("stop_reason"),
                                                                                          "unknown")),
            scores={SCORER: Score(value="C" if bool(row["correct"]) else "I",
                                  answer="" if extracted is None else f"{extracted:g}",
                                  explanation=explanation, metadata=trace)},
            metadata={"id": int(row["template_id"]), "variant": 0 if instance < 0 else 1, "instance": instance,
                      "question": str(row["question"]), "gamma": _plain(row.get("gamma")),
                      "dataset": str(row.get("dataset", ""))}))
    return samples


def write_inspect_log(scored: pd.DataFrame, render: Callable[[str], str], path: str | Path, *, model: str,
                      prompt: str, dataset: str, where: str, created: datetime | None = None) -> Path:
    """Write one ``.eval`` log (inspect_ai's ``write_eval_log``) of a scored table: task
    ``<prompt>_<dataset>``, model ``model``, the samples of :func:`inspect_samples` and the accuracy
    (with its standard error) as the headline score. Returns the path written."""
    from inspect_ai.log import (EvalConfig, EvalDataset, EvalLog, EvalMetric, EvalResults, EvalScore, EvalSpec,
                                write_eval_log)

    samples = inspect_samples(scored, render, model=model, where=where)
    n = len(samples)
    acc = float(scored["correct"].astype(float).mean()) if n else float("nan")
    stderr = math.sqrt(acc * (1 - acc) / (n - 1)) if n > 1 else float("nan")
    spec = EvalSpec(created=(created or datetime.now(timezone.utc)).isoformat(timespec="seconds"),
                    task=f"{prompt}_{dataset}", task_args={"prompt": prompt, "dataset": dataset},
                    dataset=EvalDataset(name=dataset, samples=n,
                                        sample_ids=[s.id for s in samples if s.epoch == 1]),
                    model=model, config=EvalConfig(epochs=max((s.epoch for s in samples), default=1)),
                    metadata={"written_by": "earnest (results/scored -> Inspect log)"})
    results = EvalResults(total_samples=n, completed_samples=n, scores=[EvalScore(
        name=SCORER, scorer=SCORER, metrics={"accuracy": EvalMetric(name="accuracy", value=acc),
                                             "stderr": EvalMetric(name="stderr", value=stderr)})])
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_eval_log(EvalLog(status="success", eval=spec, results=results, samples=samples), str(path.resolve()),
                   format="eval")
    return path
