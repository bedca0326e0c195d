"""Resumable generation: one model × prompt format × dataset → a generations table.

Results are appended to checkpoint files (``.<output stem>.partial/part-<time>-<pid>-<n>.parquet``,
each written atomically under a name no other part has) as they arrive, so a job killed at any
moment and started again skips what is done. Temporary files a killed or failed write left behind
are removed when a job starts, and a part that cannot be read is set aside and its items asked
again. The final table is written only when every item has exactly one row (with ``samples: n``, a
model entry's ``decoding.samples``: n rows, one per sample, column ``sample`` 0..n-1).

A request that got no answer (a backend's ``error:<kind>`` result, e.g. an API that kept failing
after its retries) is not a model answer: it is not checkpointed, and the job fails after saving
every answer it did get, so running it again asks only for what is missing.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Mapping, Protocol, Sequence

import pandas as pd

from earnest.backends.base import Backend, GenerationRequest, GenerationResult, check_stop_reason, is_error
from earnest.progress import format_eta, rate_and_eta
from earnest.schema import schema_default

#: answers between checkpoints (config/schema.yaml: generation.checkpoint_every)
CHECKPOINT_EVERY = schema_default("generation.checkpoint_every")
#: answers per question where a model's decoding names no samples (config/schema.yaml: models.*.decoding.samples)
SAMPLES = schema_default("models.*.decoding.samples")


class PromptFormat(Protocol):
    """What generation needs of a prompt format (a benchmark's, e.g. earnest.gsm.prompts.PromptFormat):
    its name, the full prompt of a question, the stop strings and the fidelity mode it was loaded for."""
    name: str
    stop: tuple[str, ...]
    fidelity: str

    def render(self, question: str) -> str: ...


GENERATION_COLUMNS = ["item_id", "model", "prompt", "dataset", "response", "prompt_tokens",
                      "new_tokens", "stop_reason", "seconds"]
#: what traces an answer to what produced it: the SHA-256 of the exact prompt (UTF-8 bytes of the raw
#: prompt, or of the chat messages as JSON), the fidelity mode, and the backend with its decoding
#: settings (JSON: backend, decoding, dtype, attention, batch size, library versions, max_new_tokens, stop)
TRACE_COLUMNS = ["prompt_sha256", "fidelity", "decoding"]
TABLE_COLUMNS = GENERATION_COLUMNS + TRACE_COLUMNS
#: which of a question's samples an answer is (0..n-1); a column only where a model draws more than one
SAMPLE = "sample"
#: a request's key for sample j of item i: ``i#sample<j>`` (only where there are several samples)
SAMPLE_SEP = "#sample"

log = logging.getLogger(__name__)

_TMP_MARK = ".tmp-"
_part_seq = itertools.count()


class GenerationError(RuntimeError):
    """Some requests got no answer; what was answered is checkpointed and a rerun asks the rest."""


def _tmp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}{_TMP_MARK}{os.getpid()}-{next(_part_seq)}")


def write_parquet_atomic(df: pd.DataFrame, path: str | Path, *, replace: bool = True) -> None:
    """Write ``df`` to ``path`` so that readers never see a half-written file.

    The table goes to a hidden temporary file next to ``path``, is read back (row count), and only
    then takes the final name; on any error (e.g. a full disk) the temporary file is removed.
    ``replace=False`` refuses to overwrite an existing ``path`` (FileExistsError).
    """
    import pyarrow.parquet as pq

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp_name(path)
    try:
        df.to_parquet(tmp, index=False)
        rows = pq.read_metadata(tmp).num_rows
        if rows != len(df):
            raise OSError(f"{tmp}: wrote {len(df)} rows but {rows} read back")
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)   # fails if path exists: never overwrites
            tmp.unlink()
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise


def checkpoint_dir(output: str | Path) -> Path:
    output = Path(output)
    return output.with_name(f".{output.stem}.partial")


def clean_checkpoints(ckpt: Path) -> list[Path]:
    """Remove temporary files an interrupted write left in ``ckpt``; returns what was removed."""
    removed = []
    if ckpt.is_dir():
        for p in ckpt.iterdir():
            if p.name.startswith(".") and _TMP_MARK in p.name:
                p.unlink(missing_ok=True)
                removed.append(p)
    if removed:
        log.info("%s: removed %d temporary file(s) left by an interrupted write", ckpt, len(removed))
    return removed


def load_checkpoints(ckpt: Path) -> pd.DataFrame:
    """Every row written so far (possibly with duplicates from an interrupted flush).

    Parts are read in the order they were written. A part that cannot be read (it was not written
    by :func:`write_parquet_atomic`, or the disk lost it) is renamed ``bad-<name>`` with a warning;
    its items count as not generated.
    """
    parts = sorted(ckpt.glob("part-*.parquet")) if ckpt.is_dir() else []
    frames = []
    for p in parts:
        try:
            frame = pd.read_parquet(p)
            missing = set(GENERATION_COLUMNS) - set(frame.columns)
            if missing:
                raise ValueError(f"missing columns {sorted(missing)}")
            frames.append(frame)
        except Exception as exc:
            log.warning("%s: unreadable checkpoint part (%s); set aside, its items will be generated again", p, exc)
            p.rename(p.with_name(f"bad-{p.name}"))
    if not frames:
        return pd.DataFrame(columns=TABLE_COLUMNS)
    return pd.concat(frames, ignore_index=True)


def new_part_path(ckpt: Path) -> Path:
    """A part name no other part has: write time (ns), process id and a per-process counter."""
    return ckpt / f"part-{time.time_ns():020d}-{os.getpid()}-{next(_part_seq):06d}.parquet"


class _Progress:
    def __init__(self, total: int, done: int):
        self.total, self.done_at_start, self.done = total, done, done
        self.t0 = time.time()
        self.last = 0.0
        self.reported = -1

    def update(self, n: int, force: bool = False) -> None:
        self.done += n
        now = time.time()
        if self.reported == self.done or (not force and now - self.last < 10 and self.done < self.total):
            return
        self.reported = self.done
        self.last = now
        rate, eta = rate_and_eta(self.done - self.done_at_start, now - self.t0, self.total - self.done)
        log.info("progress: %d/%d items done, %.3f items/s, ETA %s", self.done, self.total, rate, format_eta(eta))


def prompt_sha256(request: GenerationRequest) -> str:
    """SHA-256 (hex) of the exact prompt a request sends: its raw prompt's UTF-8 bytes, or its chat
    messages as compact JSON (lone surrogates kept as they are, so no prompt is refused)."""
    blob = request.prompt if request.prompt is not None else json.dumps(request.messages, ensure_ascii=False,
                                                                        separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


def decoding_record(backend: Backend, request: GenerationRequest, max_new_tokens: int) -> str:
    """The ``decoding`` column: the backend's own description, the token cap and the request's stop strings."""
    describe = getattr(backend, "describe", None)      # a duck-typed backend may have none
    own = describe() if describe is not None else {"backend": type(backend).__name__}
    return json.dumps({**own, "max_new_tokens": int(max_new_tokens), "stop": list(request.stop)},
                      sort_keys=True, ensure_ascii=False, default=str)


def sample_key(item_id: str, sample: int) -> str:
    """The request key of sample ``sample`` of item ``item_id`` (:data:`SAMPLE_SEP`)."""
    return f"{item_id}{SAMPLE_SEP}{int(sample)}"


def run_requests(requests: Sequence[GenerationRequest], backend: Backend, *, model: str, prompt: str, dataset: str,
                 output: str | Path, max_new_tokens: int, checkpoint_every: int = CHECKPOINT_EVERY,
                 samples: int = SAMPLES) -> pd.DataFrame:
    """Answer every request not yet checkpointed, then write ``output`` (one row per request key).

    ``samples`` > 1: the requests are samples of items, keyed :func:`sample_key`; the table has one row per
    item and sample (column ``item_id`` the item's, column :data:`SAMPLE`). Returns the final table, in the
    requests' order. Raises :class:`GenerationError` (after checkpointing every answer received) when some
    requests got no answer.
    """
    keys = [r.key for r in requests]
    if len(set(keys)) != len(keys):
        dup = next(k for k, n in Counter(keys).items() if n > 1)
        raise ValueError(f"{output}: request key {dup!r} appears more than once")
    several = int(samples) > 1
    columns = TABLE_COLUMNS[:1] + [SAMPLE] + TABLE_COLUMNS[1:] if several else TABLE_COLUMNS
    # the table's (item_id, sample) of a request key, and back
    ident = {r.key: ((r.key.rsplit(SAMPLE_SEP, 1)[0], r.sample) if several else (r.key, 0)) for r in requests}
    if several:
        bad = next((r.key for r in requests if r.key != sample_key(*ident[r.key])), None)
        if bad is not None:
            raise ValueError(f"{output}: request key {bad!r} is not <item>{SAMPLE_SEP}<sample> (samples: {samples})")
    ckpt = checkpoint_dir(output)
    ckpt.mkdir(parents=True, exist_ok=True)
    clean_checkpoints(ckpt)
    done = load_checkpoints(ckpt)
    if several:
        sample_of = done[SAMPLE] if SAMPLE in done.columns else pd.Series(0, index=done.index)
        done_ids = {sample_key(i, s) for i, s in zip(done["item_id"], sample_of)}
    else:
        done_ids = set(done["item_id"])
    todo = [r for r in requests if r.key not in done_ids]
    log.info("%s/%s/%s: %d items, %d already checkpointed in %s, %d to generate",
             model, prompt, dataset, len(requests), len(requests) - len(todo), ckpt, len(todo))
    progress = _Progress(len(requests), len(requests) - len(todo))
    by_key = {r.key: r for r in requests}
    trace = {}                                       # key -> (prompt_sha256, fidelity, decoding)
    decoding_of: dict = {}

    def trace_of(key: str) -> tuple[str, str, str]:
        if key not in trace:
            req = by_key[key]
            stop = tuple(req.stop)
            if stop not in decoding_of:
                decoding_of[stop] = decoding_record(backend, req, max_new_tokens)
            trace[key] = (prompt_sha256(req), req.fidelity, decoding_of[stop])
        return trace[key]

    buffer: list[GenerationResult] = []
    failed: list[GenerationResult] = []

    def flush() -> None:
        if not buffer:
            return
        rows = [dict(item_id=ident[r.key][0], **({SAMPLE: ident[r.key][1]} if several else {}), model=model,
                     prompt=prompt, dataset=dataset, response=r.response,
                     prompt_tokens=r.prompt_tokens, new_tokens=r.new_tokens, stop_reason=r.stop_reason,
                     seconds=r.seconds, **dict(zip(TRACE_COLUMNS, trace_of(r.key)))) for r in buffer]
        write_parquet_atomic(pd.DataFrame(rows, columns=columns), new_part_path(ckpt), replace=False)
        progress.update(len(buffer))
        buffer.clear()

    def on_result(result: GenerationResult) -> None:
        check_stop_reason(result.stop_reason, f"{output}: item {result.key}")
        if is_error(result.stop_reason):
            failed.append(result)
            return
        buffer.append(result)
        if len(buffer) >= checkpoint_every:
            flush()

    if todo:
        backend.generate(todo, max_new_tokens, on_result=on_result)
        flush()
    progress.update(0, force=True)
    if failed:
        kinds = Counter(r.stop_reason for r in failed)
        example = failed[0]
        raise GenerationError(
            f"{output}: {len(failed)} of {len(todo)} requests got no answer "
            f"({', '.join(f'{k} x{n}' for k, n in sorted(kinds.items()))}; e.g. {example.key}: "
            f"{example.extra.get('error', example.stop_reason)}). The {len(todo) - len(failed)} answers received "
            f"are checkpointed in {ckpt}; run the job again to ask for the rest.")

    table = load_checkpoints(ckpt)
    if several:   # the request key of each row: what the rows are matched and ordered by
        table["_key"] = [sample_key(i, s) for i, s in zip(table["item_id"], table[SAMPLE])]
    else:
        table["_key"] = table["item_id"]
    table = table.drop_duplicates("_key", keep="first")
    table = table[table["_key"].isin(set(keys))]
    missing = set(keys) - set(table["_key"])
    if missing:
        raise GenerationError(f"{output}: {len(missing)} items have no generation (e.g. {sorted(missing)[:3]}); "
                              "run the job again to generate them")
    order = {k: i for i, k in enumerate(keys)}
    # parts written before the trace columns existed: the trace of the request as it is asked now
    for col in TRACE_COLUMNS:
        if col not in table.columns:
            table[col] = None
    untraced = table["prompt_sha256"].isna()
    if untraced.any():
        log.info("%s: %d answers checkpointed without a trace get the trace of their request", output, untraced.sum())
        filled = [trace_of(k) for k in table.loc[untraced, "_key"]]
        for j, col in enumerate(TRACE_COLUMNS):
            table.loc[untraced, col] = [f[j] for f in filled]
    table = table.sort_values("_key", key=lambda s: s.map(order)).reset_index(drop=True)[columns]
    table = table.astype({"prompt_tokens": "int64", "new_tokens": "int64", "seconds": "float64",
                          **({SAMPLE: "int64"} if several else {})})
    write_parquet_atomic(table, output)
    shutil.rmtree(ckpt, ignore_errors=True)
    return table


def system_prompt_of(fmt: PromptFormat, model_system_prompt: str | None) -> str | None:
    """The system prompt a model x prompt format sends: the model entry's ``system_prompt`` where it has
    one, else the format's (formats.yaml ``system_prompt``), else None (the raw prompt alone)."""
    return model_system_prompt if model_system_prompt is not None else getattr(fmt, "system_prompt", None)


def request_text(prompt: str, system_prompt: str | None) -> dict:
    """A request's ``prompt`` (raw text) or, with a system prompt, its ``messages`` (system, then the prompt
    as the user's turn): the request's text, and what its ``prompt_sha256`` traces."""
    if system_prompt is None:
        return {"prompt": prompt}
    return {"messages": [{"role": "system", "content": system_prompt}, {"role": "user", "content": prompt}]}


def generate_dataset(items: pd.DataFrame, fmt: PromptFormat, backend: Backend, *, model: str, dataset: str,
                     output: str | Path, max_new_tokens: int, checkpoint_every: int = CHECKPOINT_EVERY,
                     formats: Mapping[str, PromptFormat] | None = None, samples: int = SAMPLES,
                     system_prompt: str | None = None) -> pd.DataFrame:
    """Generate an answer for every item not yet checkpointed, then write ``output``.

    Each request carries the format's stop strings and fidelity mode (``fmt.stop``,
    ``fmt.fidelity``: the mode ``load_formats`` loaded it for). ``formats``: an item's own format
    where it has one (fewer exemplars where the full prompt does not fit the model's context,
    earnest.gsm.context_fit). ``samples``: answers per item (a model entry's ``decoding.samples``; column
    :data:`SAMPLE` when more than one). ``system_prompt``: the model entry's (:func:`system_prompt_of`).
    Returns the final table (one row per item and sample, in the items' order).
    """
    formats = formats or {}
    samples = int(samples)
    requests = []
    for row in items.itertuples():
        f = formats.get(row.item_id, fmt)
        text = request_text(f.render(row.question), system_prompt_of(f, system_prompt))
        for j in range(samples):
            key = sample_key(row.item_id, j) if samples > 1 else row.item_id
            requests.append(GenerationRequest(key=key, stop=f.stop, fidelity=fmt.fidelity, sample=j, **text))
    return run_requests(requests, backend, model=model, prompt=fmt.name, dataset=dataset, output=output,
                        max_new_tokens=max_new_tokens, checkpoint_every=checkpoint_every, samples=samples)
