"""Resumable generation: one model × prompt format × dataset → a generations table.

Results are appended to checkpoint files (``.<output stem>.partial/part-<time>-<pid>-<n>.parquet``,
each written atomically under a name no other part has) as they arrive, so a job killed at any
moment and started again skips what is done. Temporary files a killed or failed write left behind
are removed when a job starts, and a part that cannot be read is set aside and its items asked
again. The final table is written only when every item has exactly one row.

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


def run_requests(requests: Sequence[GenerationRequest], backend: Backend, *, model: str, prompt: str, dataset: str,
                 output: str | Path, max_new_tokens: int, checkpoint_every: int = CHECKPOINT_EVERY) -> pd.DataFrame:
    """Answer every request not yet checkpointed, then write ``output`` (one row per request key).

    Returns the final table, in the requests' order. Raises :class:`GenerationError` (after
    checkpointing every answer received) when some requests got no answer.
    """
    keys = [r.key for r in requests]
    if len(set(keys)) != len(keys):
        dup = next(k for k, n in Counter(keys).items() if n > 1)
        raise ValueError(f"{output}: request key {dup!r} appears more than once")
    ckpt = checkpoint_dir(output)
    ckpt.mkdir(parents=True, exist_ok=True)
    clean_checkpoints(ckpt)
    done = load_checkpoints(ckpt)
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
        rows = [dict(item_id=r.key, model=model, prompt=prompt, dataset=dataset, response=r.response,
                     prompt_tokens=r.prompt_tokens, new_tokens=r.new_tokens, stop_reason=r.stop_reason,
                     seconds=r.seconds, **dict(zip(TRACE_COLUMNS, trace_of(r.key)))) for r in buffer]
        write_parquet_atomic(pd.DataFrame(rows, columns=TABLE_COLUMNS), new_part_path(ckpt), replace=False)
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

    table = load_checkpoints(ckpt).drop_duplicates("item_id", keep="first")
    table = table[table["item_id"].isin(set(keys))]
    missing = set(keys) - set(table["item_id"])
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
        filled = [trace_of(k) for k in table.loc[untraced, "item_id"]]
        for j, col in enumerate(TRACE_COLUMNS):
            table.loc[untraced, col] = [f[j] for f in filled]
    table = table.sort_values("item_id", key=lambda s: s.map(order)).reset_index(drop=True)[TABLE_COLUMNS]
    table = table.astype({"prompt_tokens": "int64", "new_tokens": "int64", "seconds": "float64"})
    write_parquet_atomic(table, output)
    shutil.rmtree(ckpt, ignore_errors=True)
    return table


def generate_dataset(items: pd.DataFrame, fmt: PromptFormat, backend: Backend, *, model: str, dataset: str,
                     output: str | Path, max_new_tokens: int, checkpoint_every: int = CHECKPOINT_EVERY,
                     formats: Mapping[str, PromptFormat] | None = None) -> pd.DataFrame:
    """Generate an answer for every item not yet checkpointed, then write ``output``.

    Each request carries the format's stop strings and fidelity mode (``fmt.stop``,
    ``fmt.fidelity``: the mode ``load_formats`` loaded it for). ``formats``: an item's own format
    where it has one (fewer exemplars where the full prompt does not fit the model's context,
    earnest.gsm.context_fit). Returns the final table (one row per item, in the items' order).
    """
    formats = formats or {}
    requests = [GenerationRequest(key=row.item_id, prompt=formats.get(row.item_id, fmt).render(row.question),
                                  stop=formats.get(row.item_id, fmt).stop, fidelity=fmt.fidelity)
                for row in items.itertuples()]
    return run_requests(requests, backend, model=model, prompt=fmt.name, dataset=dataset, output=output,
                        max_new_tokens=max_new_tokens, checkpoint_every=checkpoint_every)
