"""Progress of long work with an estimate of the time left (ETA).

:class:`Progress` counts the steps of one piece of work (``earnest glmm``: bootstrap shards and fits;
``earnest power``: grid points). On a terminal it draws one live line on stderr, a bar with the
steps done, the rate, the time spent and the time left, redrawn after every step and once a second in
between (the time left counts down); the messages of the steps scroll above it. Anywhere else (a log
file, a pipe, CI) it writes one plain line per step, the step's message followed by
``[k/N steps, ETA ...]``, so that logs stay readable. Generation jobs log their own progress every 10
s in the same words (:func:`format_eta`, :func:`rate_and_eta`; ``earnest.generation``).

The time left is the steps still to do times the mean time of the steps done so far in this run
(steps found done already, e.g. shards reused from an earlier run, count as done but not towards
the rate), less the time since the last step; unknown until one step is done.
"""

from __future__ import annotations

import math
import os
import shutil
import sys
import threading
import time
import weakref
from typing import Callable, TextIO

UNKNOWN = "--"

# The live line's ticker is a thread; the statistics fork worker processes (R's mclapply, the laplace
# engine's process pool). A fork while the ticker writes would leave the child a stream lock nobody
# releases, so every fork waits until no live line is being written (each write holds its lock).
_TICKING: "weakref.WeakSet[Progress]" = weakref.WeakSet()
_HELD: list = []


def _before_fork() -> None:
    for p in list(_TICKING):
        p._lock.acquire()
        _HELD.append(p)


def _after_fork() -> None:
    while _HELD:
        _HELD.pop()._lock.release()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork, after_in_child=_after_fork)


def format_eta(seconds: float | None) -> str:
    """A duration as a person reads it: ``42 s``, ``3 min 05 s``, ``2 h 07 min``, ``3 d 04 h``;
    :data:`UNKNOWN` for None, NaN, infinity or a negative value."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return UNKNOWN
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    return f"{s // 86400} d {s % 86400 // 3600:02d} h"


def rate_and_eta(done: int, elapsed: float, remaining: int) -> tuple[float, float]:
    """(steps per second, seconds left) after ``done`` steps in ``elapsed`` seconds with
    ``remaining`` to go; (0, NaN) before the first step."""
    if done <= 0 or elapsed <= 0:
        return 0.0, float("nan")
    rate = done / elapsed
    return rate, remaining / rate


class Progress:
    """The steps of one piece of work, shown on ``stream`` (default stderr).

    ``total``: the steps; ``label``: what is shown first (e.g. ``earnest glmm``); ``unit``: what a
    step is (``steps``, ``grid points``); ``live``: draw the live line (default: when ``stream``
    is a terminal); ``clock``: seconds (time.monotonic); ``tick``: seconds between redraws of the
    live line between steps (0: none). Use :meth:`log` for the messages of the work, :meth:`step`
    after each step and :meth:`close` (or a ``with`` block) at the end."""

    def __init__(self, total: int, *, label: str = "", unit: str = "steps", stream: TextIO | None = None,
                 live: bool | None = None, clock: Callable[[], float] = time.monotonic, tick: float = 1.0):
        self.total, self.label, self.unit = max(int(total), 0), label, unit
        self.stream = stream if stream is not None else sys.stderr
        if live is None:
            isatty = getattr(self.stream, "isatty", None)
            live = bool(isatty and isatty())
        self.live = live
        self.clock = clock
        self.done = 0          # steps done, those found done included
        self.counted = 0       # steps done in this run (the rate's)
        self.t0 = clock()
        self.t_counted = 0.0   # seconds from t0 to the last counted step
        self.t_last = self.t0
        self._lock = threading.Lock()
        self._drawn = False
        self._stop = threading.Event()
        self._ticker = None
        if self.live:
            with self._lock:
                self._draw()
        if self.live and tick > 0:
            self._ticker = threading.Thread(target=self._tick, args=(tick,), daemon=True)
            _TICKING.add(self)
            self._ticker.start()

    # ------------------------------------------------------------------ what is shown
    def eta(self, now: float | None = None) -> float:
        """Seconds left (NaN until a step of this run is done)."""
        now = self.clock() if now is None else now
        _, eta = rate_and_eta(self.counted, self.t_counted, self.total - self.done)
        if self.done >= self.total:
            return 0.0
        return max(eta - (now - self.t_last), 0.0) if math.isfinite(eta) else eta

    def status(self, now: float | None = None) -> str:
        """``k/N unit, p%, r unit/s, elapsed t, ETA t`` (the rate once a step of this run is done)."""
        now = self.clock() if now is None else now
        rate, _ = rate_and_eta(self.counted, self.t_counted, self.total - self.done)
        pct = 100.0 * self.done / self.total if self.total else 100.0
        parts = [f"{self.done}/{self.total} {self.unit}", f"{pct:.0f}%"]
        if rate > 0:
            parts.append(f"{rate:.3g} {self.unit}/s" if rate >= 0.1 else f"{1 / rate:.3g} s per step")
        parts += [f"elapsed {format_eta(now - self.t0)}", f"ETA {format_eta(self.eta(now))}"]
        return ", ".join(parts)

    def line(self, now: float | None = None, width: int = 80) -> str:
        """The live line: label, bar, :meth:`status`, cut to ``width`` characters."""
        bar_w = 20
        filled = int(bar_w * self.done / self.total) if self.total else bar_w
        text = (f"{self.label} " if self.label else "") + "[" + "#" * filled + "-" * (bar_w - filled) + "] " \
            + self.status(now)
        return text[:max(width - 1, 10)]

    # ------------------------------------------------------------------ the work
    def log(self, message: str) -> None:
        """A message of the work: above the live line, or a plain line."""
        with self._lock:
            if self.live:
                self._write("\r\x1b[K" + message + "\n")
                self._draw()
            else:
                self._write(message + "\n")

    def step(self, n: int = 1, message: str | None = None, *, counted: bool = True) -> None:
        """``n`` steps done (``counted=False``: found done already, not part of the rate), with the
        step's message: on a terminal above the live line, elsewhere one plain line ending in
        ``[k/N unit, ETA t]``."""
        with self._lock:
            now = self.clock()
            self.done = min(self.done + n, self.total) if self.total else self.done + n
            if counted:
                self.counted += n
                self.t_counted = now - self.t0
                self.t_last = now
            if self.live:
                if message:
                    self._write("\r\x1b[K" + message + "\n")
                self._draw(now)
            else:
                tail = f"[{self.done}/{self.total} {self.unit}, ETA {format_eta(self.eta(now))}]"
                self._write((f"{message}  {tail}" if message else f"{self.label} {tail}".strip()) + "\n")

    def close(self) -> None:
        """Stop the ticker and end the live line (it stays on the screen as the last word)."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=5)
            _TICKING.discard(self)
        with self._lock:
            if self.live and self._drawn:
                self._draw()
                self._write("\n")
                self._drawn = False

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ drawing
    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):   # a closed terminal or pipe: the work goes on
            pass

    def _draw(self, now: float | None = None) -> None:
        width = shutil.get_terminal_size((80, 24)).columns
        self._write("\r\x1b[K" + self.line(now, width))
        self._drawn = True

    def _tick(self, every: float) -> None:
        while not self._stop.wait(every):
            with self._lock:
                if self._drawn and not self._stop.is_set():
                    self._draw()
