"""The bridge to R: embeds R through rpy2 once per process, sources the package's R code, and
converts data frames both ways without pandas2ri's global converters (which are slow and change
behaviour for every other rpy2 user in the process).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import threading
from importlib import resources

import numpy as np
import pandas as pd


class RError(RuntimeError):
    """R (or lme4) failed; the message carries R's own error text."""


@functools.lru_cache(maxsize=1)
def r():
    """The embedded R session, with lme4 loaded and src/earnest/stats/R/*.R sourced."""
    # rpy2 puts R's and the system's library folders on LD_LIBRARY_PATH for the whole process;
    # child processes started later (a pyenv Python, Snakemake) would then load the system's
    # libpython. The embedded R has its libraries loaded already, so the old value comes back.
    saved = os.environ.get("LD_LIBRARY_PATH")
    try:
        import rpy2.robjects as ro
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise RError("rpy2 is not installed; the GLMM engine needs rpy2==3.5.17 and R with lme4") from exc
    finally:
        if saved is None:
            os.environ.pop("LD_LIBRARY_PATH", None)
        else:
            os.environ["LD_LIBRARY_PATH"] = saved
    # loading lme4 and sourcing earnest's R code run inside the guard like every R call: with rpy2's
    # event hook active, a Ctrl-C arriving here (the first seconds of a run) raised KeyboardInterrupt
    # inside that callback, where it is ignored, and the run went on for hours
    try:
        with _guard():
            # an empty site library makes library() warn on every start; the warning is noise
            ro.r('suppressWarnings(suppressPackageStartupMessages(library(lme4)))')
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # rpy2 raises RRuntimeError
        raise RError(f"R could not load lme4: {exc}") from exc
    with _guard():
        for script in sorted(resources.files("earnest.stats").joinpath("R").iterdir(), key=lambda p: p.name):
            if script.name.endswith(".R"):
                ro.r["source"](str(script))
    return ro


# lme4 releases earnest's R code is tested with, and the first it refuses
LME4_TESTED = "1.1-31"
LME4_REFUSED_FROM = (1, 1, 38)


def lme4_version() -> str:
    """The installed lme4's version, e.g. '1.1-31'."""
    return str(r().r('as.character(packageVersion("lme4"))')[0])


def lme4_supported(version: str) -> bool:
    """Whether the lme4 engine runs with lme4 ``version``: releases before 1.1-38. 1.1-38 changed
    checkConv's derivative checks (skipped above 10,000 observations and for singular fits, so
    fits that 1.1-31 flags would count as clean) and 2.x changed checkConv's arguments."""
    parts = tuple(int(p) for p in version.replace("-", ".").split(".")[:3])
    return parts < LME4_REFUSED_FROM


def check_lme4() -> str:
    """Raise :class:`RError` with what to do when the installed lme4 is one the engine refuses."""
    version = lme4_version()
    if not lme4_supported(version):
        raise RError(f"lme4 {version} is installed, but earnest's lme4 engine is tested with lme4 {LME4_TESTED} "
                     f"and refuses lme4 >= 1.1-38 (1.1-38 skips checkConv's derivative checks above 10,000 "
                     f"observations and for singular fits, which changes which fits count as clean; 2.x "
                     f"changes checkConv's arguments). Install lme4 {LME4_TESTED} (envs/stats.yaml pins it), "
                     f"or use the laplace engine (stats.engine: laplace / earnest glmm --engine laplace), "
                     f"which computes lme4 {LME4_TESTED}'s checks itself.")
    return version


class _InterruptRelay:
    """Ctrl-C, relayed to R while R runs.

    Python turns SIGINT into KeyboardInterrupt only when the main thread runs Python bytecode, and
    while R computes it runs none. rpy2's remedy, a Python event hook that R calls now and then,
    does not work (the pending KeyboardInterrupt is raised on entering the hook, before the hook can
    tell R, and is dropped as "ignored from cffi callback": the R call runs on to the end and the
    program carries on as if nothing was pressed), and it cannot stay (see :func:`_guard`). Instead
    Python's signal wakeup descriptor is pointed at a pipe while R runs; a thread reading it sets
    R's own flag ``R_interrupts_pending`` on SIGINT, R stops at its next check (parallel::mclapply
    then sends its forked workers SIGTERM), and :func:`_guard` raises KeyboardInterrupt.

    Only in the main thread (signals reach no other) and only while SIGINT has Python's default
    handler: a SIGINT ignored (a background job) or handled by the caller is left as it is. A
    wakeup descriptor the caller had set (asyncio's) gets every signal byte forwarded and comes
    back afterwards."""

    STOP = b"\0"  # no signal has number 0

    def __init__(self, rlib):
        self.rlib = rlib
        self.interrupted = False
        self.read, self.write = os.pipe()
        os.set_blocking(self.write, False)
        try:
            self.previous = signal.set_wakeup_fd(self.write, warn_on_full_buffer=False)
        except BaseException:
            os.close(self.read)
            os.close(self.write)
            raise
        self.thread = threading.Thread(target=self._relay, name="earnest-r-interrupt", daemon=True)
        self.thread.start()

    @classmethod
    def start(cls, rlib):
        if threading.current_thread() is not threading.main_thread():
            return None
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            return None
        return cls(rlib)

    def _relay(self):
        # SIGINT goes to the main thread: R's own handler, installed while R waits in select(),
        # jumps back into R's stack, which only the main thread has
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        while True:
            data = os.read(self.read, 64)
            for byte in data:
                if byte == 0:
                    return
                if byte == signal.SIGINT:
                    self.interrupted = True
                    self.rlib.R_interrupts_pending = 1
                if self.previous >= 0:
                    with contextlib.suppress(OSError):
                        os.write(self.previous, bytes([byte]))
            if not data:
                return

    def stop(self):
        if self.thread is None:
            return
        signal.set_wakeup_fd(self.previous)
        os.write(self.write, self.STOP)
        self.thread.join()
        self.thread = None
        os.close(self.read)
        os.close(self.write)
        # a SIGINT relayed just as R returned must not interrupt the next R call; Python still has
        # it pending and raises KeyboardInterrupt itself
        self.rlib.R_interrupts_pending = 0


@contextlib.contextmanager
def _guard():
    """Every R call runs inside this guard.

    R runs no Python code of its own accord: rpy2 points R's event hook (``ptr_R_ProcessEvents``,
    called by every R_CheckUserInterrupt, so all through a glmer fit) at a Python callback that
    first takes the GIL. R forks its bootstrap workers (parallel::mclapply) with the GIL released;
    when another Python thread of this process (a progress-bar monitor, a sandbox reader, the
    caller's own) held it at that instant, the forked worker waited for a GIL whose holder does not
    exist in the child, and the worker and the bootstrap hung for ever. R checks the hook for NULL
    before calling it, so it is cleared for the call and put back after; the workers' own output is
    silenced on the R side (earnest_claim_apply), so no console callback runs in a child either.

    Ctrl-C reaches R through :class:`_InterruptRelay`, or through R's own SIGINT handler while R
    waits in select() (R/bridge.R): either way the call stops and KeyboardInterrupt is raised,
    rather than an R error without a message."""
    from rpy2.rinterface_lib import openrlib

    rlib = openrlib.rlib
    saved = rlib.ptr_R_ProcessEvents
    rlib.ptr_R_ProcessEvents = openrlib.ffi.NULL
    relay = None

    def interrupted():
        # the relay has read every signal byte written before R returned once it has stopped
        if relay is None:
            return False
        relay.stop()
        return relay.interrupted

    try:
        relay = _InterruptRelay.start(rlib)
        yield
    except Exception as exc:
        # relayed from Python's handler, or R's own (while it waits in select)
        if interrupted() or _INTERRUPTED in str(exc):
            raise KeyboardInterrupt("interrupted while R ran") from exc
        raise
    else:
        # a SIGINT whose KeyboardInterrupt a console callback swallowed while R finished anyway
        if interrupted():
            raise KeyboardInterrupt("interrupted while R ran")
    finally:
        if relay is not None:
            relay.stop()
        rlib.ptr_R_ProcessEvents = saved


# the error earnest_interruptible (R/bridge.R) turns an interruption into
_INTERRUPTED = "earnest-interrupted"


def guarded(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` for an R function ``fn``, inside :func:`_guard` and R's
    ``earnest_interruptible``: Ctrl-C stops it with KeyboardInterrupt."""
    wrap = r().globalenv["earnest_interruptible"]
    with _guard():
        return wrap(fn, *args, **kwargs)


def call(name: str, *args, **kwargs):
    """Call the R function ``name``; any R error becomes :class:`RError` naming the function, an
    interruption (Ctrl-C) KeyboardInterrupt."""
    ro = r()
    try:
        return guarded(ro.globalenv[name], *args, **kwargs)
    except Exception as exc:
        if isinstance(exc, RError):
            raise
        raise RError(f"R function {name} failed: {str(exc).strip()}") from exc


def to_r_frame(df: pd.DataFrame):
    """A pandas frame of int, float, bool and str columns as an R data.frame."""
    ro = r()
    cols = {}
    for name in df.columns:
        s = df[name]
        if pd.api.types.is_bool_dtype(s):
            cols[name] = ro.BoolVector(s.tolist())
        elif pd.api.types.is_integer_dtype(s):
            cols[name] = ro.IntVector(s.astype(np.int64).tolist())
        elif pd.api.types.is_float_dtype(s):
            cols[name] = ro.FloatVector(s.astype(float).tolist())
        else:
            cols[name] = ro.StrVector(s.astype(str).tolist())
    return ro.DataFrame(cols)


def _vector_to_numpy(vec) -> np.ndarray:
    ro = r()
    na_int = ro.NA_Integer
    if isinstance(vec, ro.vectors.BoolVector):
        # R's logical NA arrives as a sentinel; keep it as None so it stays missing
        return np.array([None if v is ro.NA_Logical else bool(v) for v in vec], dtype=object)
    if isinstance(vec, ro.vectors.IntVector):
        vals = list(vec)
        if any(v is na_int for v in vals):
            return np.array([np.nan if v is na_int else float(v) for v in vals])
        return np.array(vals, dtype=np.int64)
    if isinstance(vec, ro.vectors.FloatVector):
        return np.array(list(vec), dtype=float)
    if isinstance(vec, ro.vectors.FactorVector):
        levels = list(vec.levels)
        return np.array([levels[i - 1] for i in vec], dtype=object)
    if isinstance(vec, ro.vectors.StrVector):
        return np.array([None if v is ro.NA_Character else str(v) for v in vec], dtype=object)
    raise TypeError(f"cannot convert R vector of type {type(vec).__name__}")


def from_r_frame(rdf) -> pd.DataFrame:
    """An R data.frame as a pandas frame, column by column."""
    names = list(rdf.names)
    return pd.DataFrame({n: _vector_to_numpy(rdf.rx2(n)) for n in names})


def from_r_list(rlist) -> dict:
    """A named R list, one level deep: data.frames become pandas frames, length-1 vectors scalars."""
    ro = r()
    out = {}
    for name in rlist.names:
        value = rlist.rx2(name)
        if isinstance(value, ro.vectors.DataFrame):
            out[name] = from_r_frame(value)
        elif value is ro.NULL or len(value) == 0:
            out[name] = [] if isinstance(value, ro.vectors.StrVector) else None
        else:
            arr = _vector_to_numpy(value)
            out[name] = arr.tolist() if isinstance(value, ro.vectors.StrVector) else (
                arr[0] if len(arr) == 1 else arr)
    return out
