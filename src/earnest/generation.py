"""Resumable generation: one model × prompt format × dataset → a generations table.

Results are appended to checkpoint files (``<output>.partial/part-NNNNN.parquet``, each written
atomically) as they arrive, so a job killed at any moment and started again skips what is done;
the final table is written only when every item has exactly one row.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import pandas as pd

from .backends.base import Backend, GenerationRequest, GenerationResult
from .prompts import PromptFormat

GENERATION_COLUMNS = ["item_id", "model", "prompt", "dataset", "response", "prompt_tokens",
                      "new_tokens", "stop_reason", "seconds"]

log = logging.getLogger(__name__)


def write_parquet_atomic(df: pd.DataFrame, path: str | Path) -> None:
    """Write ``df`` to ``path`` so that readers never see a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    df.to_parquet(tmp, index=False)
    os.replace(tmp, path)


def checkpoint_dir(output: str | Path) -> Path:
    output = Path(output)
    return output.with_name(f".{output.stem}.partial")


def load_checkpoints(ckpt: Path) -> pd.DataFrame:
    """Every row written so far (possibly with duplicates from an interrupted flush)."""
    parts = sorted(ckpt.glob("part-*.parquet")) if ckpt.is_dir() else []
    frames = []
    for p in parts:
        try:
            frames.append(pd.read_parquet(p))
        except Exception as exc:  # a part is written atomically, so this is real corruption
            raise RuntimeError(f"{p}: unreadable checkpoint ({exc}); delete it to regenerate its items") from exc
    if not frames:
        return pd.DataFrame(columns=GENERATION_COLUMNS)
    return pd.concat(frames, ignore_index=True)


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
        new = self.done - self.done_at_start
        rate = new / max(now - self.t0, 1e-9)
        eta = (self.total - self.done) / rate if rate > 0 else float("nan")
        log.info("progress: %d/%d items done, %.3f items/s, ETA %.0f s", self.done, self.total, rate, eta)


def generate_dataset(items: pd.DataFrame, fmt: PromptFormat, backend: Backend, *, model: str, dataset: str,
                     output: str | Path, max_new_tokens: int, checkpoint_every: int = 16) -> pd.DataFrame:
    """Generate an answer for every item not yet checkpointed, then write ``output``.

    Returns the final table (one row per item, in the items' order).
    """
    ckpt = checkpoint_dir(output)
    ckpt.mkdir(parents=True, exist_ok=True)
    done = load_checkpoints(ckpt)
    done_ids = set(done["item_id"])
    todo = items[~items["item_id"].isin(done_ids)]
    log.info("%s/%s/%s: %d items, %d already checkpointed in %s, %d to generate",
             model, fmt.name, dataset, len(items), len(done_ids & set(items["item_id"])), ckpt, len(todo))
    progress = _Progress(len(items), len(items) - len(todo))
    next_part = len(list(ckpt.glob("part-*.parquet")))
    buffer: list[GenerationResult] = []

    def flush() -> None:
        nonlocal next_part
        if not buffer:
            return
        rows = [dict(item_id=r.key, model=model, prompt=fmt.name, dataset=dataset, response=r.response,
                     prompt_tokens=r.prompt_tokens, new_tokens=r.new_tokens, stop_reason=r.stop_reason,
                     seconds=r.seconds) for r in buffer]
        write_parquet_atomic(pd.DataFrame(rows, columns=GENERATION_COLUMNS), ckpt / f"part-{next_part:05d}.parquet")
        next_part += 1
        progress.update(len(buffer))
        buffer.clear()

    def on_result(result: GenerationResult) -> None:
        buffer.append(result)
        if len(buffer) >= checkpoint_every:
            flush()

    if len(todo):
        requests = [GenerationRequest(key=row.item_id, prompt=fmt.render(row.question)) for row in todo.itertuples()]
        backend.generate(requests, max_new_tokens, on_result=on_result)
        flush()
    progress.update(0, force=True)

    table = load_checkpoints(ckpt).drop_duplicates("item_id", keep="first")
    table = table[table["item_id"].isin(set(items["item_id"]))]
    missing = set(items["item_id"]) - set(table["item_id"])
    if missing:
        raise RuntimeError(f"{output}: {len(missing)} items have no generation (e.g. {sorted(missing)[:3]})")
    order = {k: i for i, k in enumerate(items["item_id"])}
    table = table.sort_values("item_id", key=lambda s: s.map(order)).reset_index(drop=True)[GENERATION_COLUMNS]
    write_parquet_atomic(table, output)
    for p in ckpt.glob("part-*.parquet"):
        p.unlink()
    ckpt.rmdir()
    return table
