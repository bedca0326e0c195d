"""Continuous batching over a slot cache: which request holds which slot, when slots are refilled,
when a step is launched and its tokens read back, and when the tail of a job runs on fewer rows.

:class:`SlotScheduler` runs one job of the transformers backend (``earnest.backends.hf``) over a
:class:`earnest.backends.slots.SlotStep`. Each slot holds one request: its own prompt tokens, prefilled
against the prefix when it enters (several entering requests together), then one generated token per
step with positions continuing from its prompt, so each row computes what it would alone. A slot whose
answer ends takes the next waiting request (on a GPU once an eighth of the slots are free, so that
prefills come in groups); when none is waiting, the live rows move to the front and the step runs on
fewer rows. With CUDA graphs the step after the current one is launched before the current one's
tokens are read back and checked, so the host's work (stop strings, refills) overlaps the device's; a
token computed for a slot whose answer ended meanwhile is dropped. With LongRoPE (``rope``), a row's
cache is recomputed with the long factors at the step where it crosses the original maximum
(``earnest.backends.rope``), and rows past it from the start hold the long-factor prefix.
"""

from __future__ import annotations

import collections

from .slots import graph_sizes


class SlotScheduler:
    """One job's slots; ``backend`` supplies the prefill (``_prefill``), the stop rule (``_feed``,
    ``_new_state``, ``_result``) and the rows' tokens; ``done(i, result)`` takes each finished answer."""

    def __init__(self, backend, cache, step, rows, order, prefix, max_new_tokens: int, done, *,
                 prefill_rows: int, grouped: bool, pipelined: bool, rope=None):
        torch = backend.torch
        self.torch, self.be, self.cache, self.step = torch, backend, cache, step
        self.rows, self.prefix, self.P, self.max_new, self.done = rows, prefix, len(prefix), max_new_tokens, done
        self.prefill_rows, self.rope = prefill_rows, rope
        B = cache.batch
        self.sizes = graph_sizes(B) if grouped else None
        self.refill_at = max(1, B // 8) if grouped else 1
        self.scratch = cache.columns - 1
        self.slot_req: list[int | None] = [None] * B
        self.slot_long = [False] * B             # LongRoPE, standard layout: the slot holds the long-factor prefix
        self.states: dict[int, dict] = {}
        self.col = [self.scratch] * B            # the column each slot writes next (host copy)
        self.queue = collections.deque(order)
        self.n_rows = B
        self.depth = 2 if pipelined else 1
        self.inflight: collections.deque = collections.deque()
        self.pinned = backend.device.type == "cuda"
        self.ring = [torch.empty(B, dtype=torch.long, pin_memory=self.pinned) for _ in range(self.depth + 1)]
        self.launched = 0
        self.prefills = 0

    # ---------------------------------------------------------------- slots
    def retire(self, ended: list[int]) -> None:
        """Slots whose answer ended: their rows step on the scratch column until refilled."""
        if not ended:
            return
        idx = self.torch.tensor(ended, device=self.cache.write_pos.device)
        self.cache.write_pos[idx] = self.scratch
        self.step.pos[idx] = 0
        for s in ended:
            self.slot_req[s] = None
            self.col[s] = self.scratch

    def take(self, pairs: list[tuple[int, int]]) -> list[int]:
        """Feed each slot its new token; finish the answers that ended; the slots freed."""
        ended = []
        for s, reason in self.be._feed([(s, self.states[self.slot_req[s]], tok) for s, tok in pairs], self.max_new):
            i = self.slot_req[s]
            self.done(i, self.be._result(self.rows[i], self.states.pop(i), reason))
            ended.append(s)
        self.retire(ended)
        return ended

    def _enter(self, slots: list[int], owns: list[list[int]], long: bool, reqs: list[int]) -> list[int]:
        """Prefill ``owns`` (of the requests ``reqs``) into ``slots`` (with the long-factor prefix where
        ``long``); their first tokens."""
        if self.rope is not None and not self.cache.shared and self.P:
            for s in slots:
                if self.slot_long[s] != long:
                    for li, (k, v) in enumerate(self.be._prefix_layers(self.prefix, long)):
                        self.cache.write_prefix(s, li, k, v)
                    self.slot_long[s] = long
        self.prefills += 1
        return self.be._prefill(self.cache, self.step, slots, owns, self.prefix, long=long, reqs=reqs)

    def fill(self) -> None:
        """Give free slots the next waiting requests (prefilled together, ``prefill_rows`` at most)."""
        while self.queue:
            free = [s for s in range(self.n_rows) if self.slot_req[s] is None]
            if not free:
                return
            chosen = free[: min(len(free), len(self.queue), self.prefill_rows)]
            reqs = [self.queue.popleft() for _ in chosen]
            groups: dict[bool, list] = {}
            for s, i in zip(chosen, reqs):     # LongRoPE: rows past the original maximum enter apart
                groups.setdefault(self.rope is not None and len(self.rows[i]) > self.rope.original, []).append((s, i))
            for long, pairs in groups.items():
                first = self._enter([s for s, _ in pairs], [self.rows[i][self.P:] for _, i in pairs], long,
                                    [i for _, i in pairs])
                for s, i in pairs:
                    self.slot_req[s] = i
                    self.states[i] = self.be._new_state(i)
                    self.col[s] = self.cache.base + len(self.rows[i]) - self.P
                self.take([(s, t) for (s, _), t in zip(pairs, first)])

    def cross(self) -> None:
        """LongRoPE: a row whose next token is at position ``original`` is recomputed whole (prompt and
        answer so far) with the long factors, as ``generate`` recomputes its cache there."""
        for s in range(self.n_rows):
            i = self.slot_req[s]
            if i is None or self.col[s] - self.cache.base + self.P != self.rope.original:
                continue
            tokens = self.rows[i][self.P:] + self.states[i]["tokens"]
            first = self._enter([s], [tokens], True, [i])
            self.col[s] = self.cache.base + len(tokens)
            self.take([(s, first[0])])

    # ---------------------------------------------------------------- steps
    def launch(self) -> None:
        live = [s for s in range(self.n_rows) if self.slot_req[s] is not None]
        out = self.step.run(self.n_rows, max(self.col[s] for s in live) + 1)
        host = self.ring[self.launched % len(self.ring)][: self.n_rows]
        host.copy_(out, non_blocking=self.pinned)
        event = None
        if self.pinned:
            event = self.torch.cuda.Event()
            event.record()
        self.launched += 1
        for s in live:
            self.col[s] += 1
        self.inflight.append((host, event, [(s, self.slot_req[s]) for s in live]))

    def land(self) -> list[int]:
        host, event, launched_with = self.inflight.popleft()
        if event is not None:
            event.synchronize()
        toks = host.tolist()
        # only the slots that still hold the request the step was launched for
        return self.take([(s, toks[s]) for s, i in launched_with if self.slot_req[s] == i])

    def shrink(self) -> bool:
        """Nothing waits: run the step on as few rows as hold the live answers (once no step is in
        flight). True while a shrink is due but a step is still in flight."""
        live = [s for s in range(self.n_rows) if self.slot_req[s] is not None]
        target = len(live) if self.sizes is None else next((z for z in self.sizes if z >= len(live)), self.n_rows)
        due = bool(live) and target < self.n_rows
        if due and not self.inflight:
            keep = live + [s for s in range(self.n_rows) if self.slot_req[s] is None][: target - len(live)]
            self.step.gather_rows(self.torch.tensor(keep, device=self.cache.write_pos.device))
            self.slot_req[:target] = [self.slot_req[s] for s in keep]
            self.slot_long[:target] = [self.slot_long[s] for s in keep]
            self.col[:target] = [self.col[s] for s in keep]
            self.n_rows = target
            return False
        return due

    def run(self) -> None:
        self.fill()
        waiting = False
        while True:
            if self.rope is not None:       # (no step is in flight: a LongRoPE job is not pipelined)
                self.cross()
            if not waiting and len(self.inflight) < self.depth and any(
                    r is not None for r in self.slot_req[: self.n_rows]):
                self.launch()
                if len(self.inflight) < self.depth:
                    continue
            if not self.inflight:
                break
            ended = self.land()
            if self.queue:
                if ended and sum(r is None for r in self.slot_req[: self.n_rows]) >= min(self.refill_at, len(self.queue)):
                    self.fill()
                continue
            waiting = self.shrink()
