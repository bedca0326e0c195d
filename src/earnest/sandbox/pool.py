"""The calling side: a pool of pre-started worker interpreters (``Sandbox``), each snippet run in
its own freshly forked, limited child of one of them (``earnest.sandbox.worker``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from earnest.sandbox.layers import LAYER_HINTS, LAYERS, layers_in_force, missing_layers_warning
from earnest.sandbox.policy import _EARNEST, UNCLASSIFIED, RunResult, _short, _size_limit, check_source
from earnest.sandbox.protocol import (_MAX_MESSAGE, _MAX_RESULT, _TEMP_PREFIX, _interpret, _parse_object, _read_exact,
                                      _receive, _receive_pair_head, _send_to_worker, validate_reply)

#: The worker program, started as ``python -I -S WORKER --worker TOKEN TMPDIR DISABLED`` (a file,
#: not a module: ``-I -S`` and an empty environment leave no sys.path entry that leads to earnest).
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")


class SandboxUnavailable(RuntimeError):
    """Model code cannot run safely here (no layer blocks file reads), or no worker starts."""


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the process group ``proc`` leads (started with a session of its own) unless ``proc``
    has already been reaped, then reap it. Its group is killed even where ``proc`` itself has ended
    (not yet reaped, its id is not reused): what it started dies with it."""
    if proc.returncode is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:  # the group is gone already
            pass
        proc.wait()


@dataclass(frozen=True)
class Limits:
    """Per-snippet limits. The time limit is ``cpu_seconds`` of the answer's own CPU time (the
    kernel's RLIMIT_CPU: answers spinning beside it on a loaded node cannot make an innocent answer
    time out, issue 53.5); ``wall_seconds`` is a generous wall-clock cap beside it, for an answer that
    waits without spending CPU (a sleep, a blocked call), enforced by killing the child's process
    group. Both end the answer as ``timeout``."""

    cpu_seconds: int = 2
    wall_seconds: float = 60.0
    memory_bytes: int = 512 * 1024 * 1024
    output_chars: int = 64 * 1024

    def __post_init__(self) -> None:
        # a negative or NaN wall-clock limit ended every worker (each answer "unclassified"), a
        # memory limit of -1 is RLIM_INFINITY (no limit at all)
        import math

        checks = (("cpu_seconds", self.cpu_seconds, 1, 86400), ("wall_seconds", self.wall_seconds, 1e-3, 86400),
                  ("memory_bytes", self.memory_bytes, 1 << 24, 1 << 50), ("output_chars", self.output_chars, 0, 1 << 40))
        for name, value, low, high in checks:
            if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
                    or not low <= value <= high or (name != "wall_seconds" and value != int(value))):
                unit = {"cpu_seconds": "whole seconds", "wall_seconds": "seconds",
                        "memory_bytes": "bytes", "output_chars": "characters"}[name]
                raise ValueError(f"sandbox Limits.{name}: {value!r} is not a number of {unit} "
                                 f"from {low:g} to {high:g}")

    def as_dict(self) -> dict:
        return {"cpu": int(self.cpu_seconds), "wall": float(self.wall_seconds),
                "mem": int(self.memory_bytes), "out": int(self.output_chars)}


_WARNED: set = set()  # missing isolation layers already reported in this process

@dataclass(frozen=True)
class _WorkerFailure:
    """The worker's own failure to run an answer (``fork``: no process for it; ``setup``: its
    process ended before model code ran), told by the worker's status, never by an answer."""

    kind: str
    detail: str


_NOT_SENT = object()  # the request never reached a live worker: nothing of the answer ran


class _Worker:
    """One pre-started worker interpreter; used by one thread at a time."""

    def __init__(self, token: str, python: str, disabled: frozenset, answer_uid: int = 65534):
        self.token = token
        self.answer_uid = answer_uid
        self.python = python
        self.disabled = disabled
        self.proc: subprocess.Popen | None = None
        self.closed = False  # set by Sandbox.close(): no new interpreter after it
        self.info: dict = {}

    def start(self) -> None:
        import tempfile

        if self.closed:
            raise RuntimeError("sandbox is closed")
        try:
            # an empty environment: nothing of the caller's (API keys) reaches model code; the
            # caller's temporary directory (a Slurm job's TMPDIR, say) holds the worker's
            self.proc = subprocess.Popen(
                [self.python, "-I", "-S", WORKER, "--worker", self.token,
                 tempfile.gettempdir(), ",".join(sorted(self.disabled)) or "-", str(self.answer_uid)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                env={}, cwd="/", close_fds=True, start_new_session=True,
            )
        except OSError as exc:
            self.proc = None
            import errno

            if exc.errno in (errno.EMFILE, errno.ENFILE, errno.EAGAIN, errno.ENOMEM):
                raise SandboxUnavailable(
                    f"sandbox: cannot start a worker: {exc} (this process's descriptor limit, ulimit -n / "
                    "RLIMIT_NOFILE: two per worker; or the user's process limit, ulimit -u, or memory)") from exc
            raise SandboxUnavailable(f"sandbox: cannot start the interpreter {self.python!r} "
                                     f"(sandbox.python): {exc}") from exc
        try:
            proc = self.proc
            hello = None if proc is None else _receive(proc.stdout.fileno(), time.monotonic() + 60)
        except (OSError, ValueError):  # stopped meanwhile (its pipe closed)
            hello = None
        except BaseException:  # interrupted: an unread hello must not be taken for a reply
            self.stop()
            raise
        if self.closed:  # Sandbox.close() ran meanwhile: this interpreter must not outlive it
            self.stop()
            raise RuntimeError("sandbox is closed")
        if hello is None or "start_error" in hello:
            self.stop()
            why = f": {_short(str(hello['start_error']), 300)}" if hello else ""
            raise SandboxUnavailable(f"sandbox: the worker ({self.python} -I -S {WORKER}) "
                                     f"did not start{why}")
        self.info = hello
        blockers = hello.get("file_reads_blocked_by") or []
        if not blockers:
            self.stop()
            missing = ("seccomp", "landlock", "namespaces")
            raise SandboxUnavailable(
                "model code is not run: on this machine no sandbox layer blocks file reads"
                + (" (disabled: " + ", ".join(sorted(self.disabled)) + ")" if self.disabled else "")
                + ". Any one of these is enough: " + "; ".join(f"{n}: {LAYER_HINTS[n]}" for n in missing))
        missing = [name for name in ("seccomp", "landlock", "namespaces")
                   if name not in blockers and name not in self.disabled]
        if missing and tuple(missing) not in _WARNED:
            _WARNED.add(tuple(missing))
            import logging

            logging.getLogger("earnest.sandbox").warning("%s", missing_layers_warning(missing, blockers, hello.get("uid")))

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()  # a worker exits on EOF
            proc.wait(timeout=2)
        except Exception:
            pass
        _kill_group(proc)
        proc.stdout.close()
        base = self.info.get("base")
        if isinstance(base, str) and os.path.basename(base).startswith(_TEMP_PREFIX):
            import shutil

            shutil.rmtree(base, ignore_errors=True)  # in case the worker could not

    def request(self, source: str, limits: Limits, full_builtins: bool = False,
                fidelity: str = _EARNEST, channels: bool = False) -> "dict | RunResult":
        # a worker that cannot fork a child for the answer (the user's process limit reached by
        # other processes of the same user, memory) says so; it is retried a few times (the
        # limit may be transient), then the run stops with a clear error: an innocent answer that
        # never ran must not be scored as ``unclassified``
        # (and one whose child's set-up failed before model code ran: nothing of the answer's).
        # Such failures come from the worker's own status, never from what an answer wrote on its
        # result pipe: an answer's report is only ever a reply (``validate_reply`` judges it), so
        # no answer can end the batch by writing {"fork_error": ...} there.
        failure: _WorkerFailure | None = None
        for pause in (0.05, 0.25, 1.0, 2.0, None):
            reply = self._request_once(source, limits, full_builtins, fidelity, channels)
            if reply is _NOT_SENT:  # the worker had died while idle: the answer never ran; a fresh one
                reply = self._request_once(source, limits, full_builtins, fidelity, channels)
            if reply is _NOT_SENT:
                return {"error": UNCLASSIFIED, "detail": "sandbox worker died, hung or sent garbage; restarted"}
            if not isinstance(reply, _WorkerFailure):
                return reply
            failure = reply
            if pause is not None:
                time.sleep(pause)
        if failure.kind == "job_limit":   # the configuration's: every answer would fail alike
            raise SandboxUnavailable(
                f"sandbox: no answer can run: {failure.detail}; no answer of this batch was scored")
        if failure.kind == "fork":
            raise SandboxUnavailable(
                f"sandbox: the worker cannot start a process for an answer ({failure.detail}): the "
                "process limit of this user (ulimit -u, RLIMIT_NPROC; every process and thread of the user "
                "on this machine counts) or the memory is exhausted; no answer of this batch was scored")
        # the set-up of this answer's process failed every time (its uid's key quota, a namespace
        # limit): this answer's failure, not the batch's; it is marked as the machine's, not the model's
        return RunResult(UNCLASSIFIED, detail=f"not run: the sandbox could not set up its process ({failure.detail})",
                         infrastructure=f"the process for this answer could not be set up, before any model code "
                                        f"ran ({failure.detail})")

    def _request_once(self, source: str, limits: Limits, full_builtins: bool, fidelity: str, channels: bool = False):
        """The reply to one request (a dict: the answer's report, or the worker's account of how
        the answer's process ended), ``_NOT_SENT`` or a ``_WorkerFailure``."""
        if self.proc is None:
            self.start()
        proc = self.proc  # Sandbox.close() in another thread may set self.proc to None meanwhile
        if proc is None:
            raise RuntimeError("sandbox is closed")
        payload = json.dumps({"source": source, "limits": limits.as_dict(),
                              "full_builtins": bool(full_builtins), "mode": fidelity,
                              "channels": bool(channels)}).encode()
        if len(payload) > _MAX_MESSAGE:
            return {"error": "resource_limit", "detail": f"request of {len(payload)} bytes"}
        wall = float(limits.wall_seconds)
        try:
            try:
                _send_to_worker(proc.stdin.fileno(), {"wall": wall}, payload)
            except BrokenPipeError:  # dead before it had the whole request: nothing of it ran
                self.stop()
                if self.closed:
                    raise RuntimeError("sandbox is closed") from None
                return _NOT_SENT
            # the worker answers by wall + a margin even for a runaway child; beyond that the
            # worker itself is broken and gets replaced
            deadline = time.monotonic() + wall + 10
            head = _receive_pair_head(proc.stdout.fileno(), deadline)
            body = None
            if head is not None and head[1] <= _MAX_RESULT + 1:
                body = _read_exact(proc.stdout.fileno(), head[1], deadline) if head[1] else b""
        except (BrokenPipeError, OSError, ValueError):
            head = body = None
        except BaseException:
            # interrupted mid-exchange (KeyboardInterrupt, an exception from a signal handler):
            # this request's reply is still to come, and the next request must never read it as
            # its own, so the worker goes
            self.stop()
            raise
        if head is None or body is None:
            self.stop()
            if self.closed:  # closed under this answer: not a result of the answer
                raise RuntimeError("sandbox is closed")
            return {"error": UNCLASSIFIED, "detail": "sandbox worker died, hung or sent garbage; restarted"}
        if head[0].get("restart"):  # the worker could not empty its namespaces: a fresh one next
            self.stop()
        if head[0].get("fork_error"):
            return _WorkerFailure("fork", _short(str(head[0]["fork_error"]), 200))
        if head[0].get("setup_failed") and not head[0].get("timed_out"):
            # the child wrote no _READY: nothing of the answer ran (the worker's status says so, the
            # body is the set-up's own report)
            report = _parse_object(body) or {}
            detail = report.get("detail") if isinstance(report.get("detail"), str) else ""
            kind = "job_limit" if report.get("setup") == "job_limit" else "setup"
            return _WorkerFailure(kind, _short(detail or "the process ended before it was set up", 200))
        return _interpret(head[0], body, wall, fidelity)


#: the oldest Python the worker runs on (os.waitstatus_to_exitcode, os.pidfd_open)
MIN_PYTHON = (3, 9)


class _ProbeFlood(Exception):
    """A probed program wrote more than it may (its argument: the limit in bytes)."""


_PROBE_LIMIT = 64 * 1024


def _probe(argv: list[str], timeout: float) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``argv``, each stream kept to ``_PROBE_LIMIT`` bytes: a program
    that writes more (one that prints without end where a Python was expected) is killed, with every
    process of its session, and ``_ProbeFlood`` raised, instead of its output filling this process's
    memory. ``subprocess.TimeoutExpired`` after ``timeout`` s."""
    import selectors

    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    out = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    flood = False
    end = time.monotonic() + timeout
    try:
        with selectors.DefaultSelector() as sel:
            for stream in out:
                sel.register(stream, selectors.EVENT_READ)
            while sel.get_map() and not flood:
                left = end - time.monotonic()
                if left <= 0:
                    raise subprocess.TimeoutExpired(argv, timeout)
                for key, _ in sel.select(left):
                    data = os.read(key.fd, 65536)
                    if not data:
                        sel.unregister(key.fileobj)
                        continue
                    buf = out[key.fileobj]
                    buf += data
                    if len(buf) > _PROBE_LIMIT:
                        flood = True
        if flood:
            raise _ProbeFlood(_PROBE_LIMIT)
        returncode = proc.wait(max(0.1, end - time.monotonic()))
    finally:
        _kill_group(proc)
        proc.stdout.close()
        proc.stderr.close()
    return (returncode, out[proc.stdout].decode("utf-8", "replace"), out[proc.stderr].decode("utf-8", "replace"))


def resolve_python(python: str) -> str:
    """The real executable behind ``python`` (a name on PATH, a pyenv shim, a path): the workers
    start it with an empty environment, in which wrappers that need one do not work."""
    import shutil

    found = shutil.which(python)
    if found is None and "/" not in python:
        raise SandboxUnavailable(f"sandbox.python: {python!r} is not on PATH (give a path to a Python "
                                 f"interpreter, or the name of one on PATH)")
    found = found or python
    # (written so that any Python, 2.7 too, answers: its version is then refused by name)
    code = "import sys; sys.stdout.write(sys.executable + '\\n' + '%d.%d' % tuple(sys.version_info[:2]) + '\\n')"
    try:
        returncode, stdout, stderr = _probe([found, "-c", code], timeout=60.0)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxUnavailable(f"sandbox.python: {python!r} does not run: {exc}") from exc
    except _ProbeFlood as exc:
        raise SandboxUnavailable(f"sandbox.python: {python!r} does not run as a Python interpreter: asked for its "
                                 f"version, it wrote more than {exc} bytes and was stopped (give a path to a "
                                 "Python interpreter)") from None
    proc = subprocess.CompletedProcess([found], returncode, stdout, stderr)
    lines = proc.stdout.splitlines()
    exe = lines[0].strip() if lines else ""
    if proc.returncode != 0 or not exe or not os.path.isfile(exe):
        raise SandboxUnavailable(f"sandbox.python: {python!r} does not run as a Python interpreter "
                                 f"(exit status {proc.returncode}: {_short(proc.stderr.strip(), 200)})")
    try:
        version = tuple(int(v) for v in lines[1].split("."))
    except (IndexError, ValueError):
        version = (0, 0)
    if version < MIN_PYTHON:
        shown = ".".join(map(str, version)) if version != (0, 0) else "unknown"
        raise SandboxUnavailable(f"sandbox.python: {python!r} is Python {shown}; the sandbox's worker needs Python "
                                 f"{MIN_PYTHON[0]}.{MIN_PYTHON[1]} or later (reference mode wants the authors' 3.12: "
                                 "envs/score-reference.yaml)")
    return exe


class Sandbox:
    """A pool of pre-started workers; each snippet runs in its own freshly forked, limited child.

    Use as a context manager, or call ``close()``; workers also exit when this process dies.
    Thread-safe: ``run`` may be called from several threads, ``run_many`` spreads a batch over
    all workers.

    ``python``: the interpreter that runs model code (default: this one); its version decides
    what model code can do (Python 3.12 syntax, ``math.sumprod``) and is in ``capabilities()``.
    ``disable``: layers (of ``LAYERS``) to switch off — for tests that show each remaining layer
    holding on its own; never needed in use. With every layer that blocks file reads off (or
    missing on the machine), ``run`` raises ``SandboxUnavailable`` instead of running model code.
    ``seccomp_compiler``: who compiles the allowlist — ``"auto"`` (libseccomp where it loads, else
    earnest's own compiler for x86_64 and aarch64) or ``"earnest"`` (for tests that show earnest's
    program holding as libseccomp's does; ``capabilities()["seccomp_compiler"]`` says which ran).
    """

    def __init__(self, workers: int | None = None, limits: Limits = Limits(), *,
                 python: str | None = None, disable=(), seccomp_compiler: str = "auto",
                 answer_uid: int | None = None):
        self.limits = limits
        unknown = sorted(set(disable) - set(LAYERS))
        if unknown:
            raise ValueError(f"sandbox: unknown layer(s) {unknown}; the layers are {list(LAYERS)}")
        if seccomp_compiler not in ("auto", "earnest"):
            raise ValueError(f"sandbox: seccomp_compiler is 'auto' or 'earnest', not {seccomp_compiler!r}")
        self.disabled = frozenset(disable)
        self.static = "static" not in self.disabled
        self.python = resolve_python(python) if python else sys.executable
        # twice the cores this process may run on (a Slurm job's allocation, not the node's: its
        # CPU affinity): a worker spends much of each snippet waiting on fork/exit and pipes
        self.n_workers = max(1, workers or min(8, 2 * len(os.sched_getaffinity(0))))
        # a per-sandbox token in every worker's command line lets tests find strays via /proc
        self.token = f"{_TEMP_PREFIX}{os.getpid()}-{id(self):x}"
        # the worker's switches: the kernel layers it leaves off, and libseccomp where earnest compiles
        worker_layers = (self.disabled - {"static"}) | ({"libseccomp"} if seccomp_compiler == "earnest" else set())
        # as root: the uid every answer of this batch runs as, its own (not 65534, which any process
        # of nobody on the machine shares: its key quota, its processes); ``answer_uid`` may name one
        from earnest.sandbox.kernel.namespaces import pick_answer_uid

        self.answer_uid = int(answer_uid) if answer_uid is not None else \
            (pick_answer_uid() if os.geteuid() == 0 else os.getuid())
        self._idle: list[_Worker] = [_Worker(self.token, self.python, worker_layers, self.answer_uid)
                                     for _ in range(self.n_workers)]
        self._all = list(self._idle)
        self._cond = threading.Condition()
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop every worker (and with them any child still running)."""
        with self._cond:
            self._closed = True
        for worker in self._all:
            worker.closed = True
            worker.stop()

    def worker_pids(self) -> list[int]:
        """Process ids of the running workers (for tests and diagnostics)."""
        return [w.proc.pid for w in self._all if w.proc is not None]

    def helper_pids(self) -> list[int]:
        """Process ids of the workers' pid-namespace inits (long-lived, one per worker that has a
        pid namespace; they end with their worker)."""
        return [w.info["init_pid"] for w in self._all if w.proc is not None and w.info.get("init_pid")]

    def capabilities(self, start: bool = False) -> dict:
        """The layers in force: ``layers`` (names, outermost kernel layer first), ``static_policy``,
        ``namespaces`` (user, mount, net, uts, pid, ipc as obtained), ``landlock`` (the kernel's ABI
        version, 0 = none), ``seccomp`` ("allowlist" or ""), ``seccomp_compiler`` ("libseccomp" or
        "earnest": who compiled the allowlist), ``chroot``, ``setuid``,
        ``no_new_privs``, ``file_reads_blocked_by``, ``python`` (the version that runs model code)
        and ``uid``. Empty until a worker has started, unless ``start``."""
        if start and not any(w.info for w in self._all):
            worker = self._acquire()
            try:
                if worker.proc is None:
                    worker.start()
            finally:
                self._release(worker)
        for w in self._all:
            if w.info:
                caps = {k: v for k, v in w.info.items() if k not in ("pid", "base", "executable", "init_pid", "answer_uid")}
                caps["static_policy"] = self.static
                caps["layers"] = [name for name, _ in layers_in_force(caps)]
                return caps
        return {}

    def describe(self) -> str:
        """One line for tables and reports: the layers in force and the Python that ran model code."""
        caps = self.capabilities(start=True)
        return f"python {caps['python']}; " + " + ".join(shown for _, shown in layers_in_force(caps))

    def temp_dirs(self) -> list[str]:
        """The workers' temporary directories (for tests and diagnostics)."""
        return [w.info["base"] for w in self._all if w.proc is not None and w.info.get("base")]

    # -- running -----------------------------------------------------------------------------
    def check(self, source: str, fidelity: str = _EARNEST) -> RunResult | None:
        """The static policy's verdict (None: run it); with the policy disabled only the size limit."""
        if not self.static:
            return _size_limit(source, fidelity)
        return check_source(source, fidelity, foreign_python=self.python != sys.executable)

    def run(self, source: str, *, fidelity: str = _EARNEST) -> RunResult:
        """Check ``source``, run it isolated, classify.

        earnest: ``source`` is a module defining ``solution``; ``solution()`` is called.
        reference: ``source`` is the reference's program (the function and ``ret = NAME()``), run
        in the reference's namespace with separate globals and locals; ``ret`` is the result.
        """
        refused = self.check(source, fidelity)
        if refused is not None:
            return refused
        return self._run_checked(source, fidelity=fidelity)

    def run_many(self, sources: list[str], *, fidelity: str = _EARNEST, channels: bool = False) -> list[RunResult]:
        """``run`` for each source, in order, spread over the workers. Raises
        ``SandboxUnavailable`` (in the calling thread) if model code cannot run here. With
        ``channels`` (reference mode; the state-channel scanner, never scoring) each result also
        names the process state the answer changed (``RunResult.channels``)."""
        return self._run_batch(sources, fidelity=fidelity, check=True, channels=channels)

    def _run_many_unchecked(self, sources: list[str], *, full_builtins: bool = False,
                            fidelity: str = _EARNEST) -> list[RunResult]:
        """``run_many`` without the static check and, with ``full_builtins``, with the real
        builtins (the tests' model of answers that escaped the Python layer completely)."""
        return self._run_batch(sources, fidelity=fidelity, check=False, full_builtins=full_builtins)

    def _run_batch(self, sources: list[str], *, fidelity: str, check: bool,
                   full_builtins: bool = False, channels: bool = False) -> list[RunResult]:
        results: list[RunResult | None] = [None] * len(sources)
        todo = []
        for i, src in enumerate(sources):
            refused = self.check(src, fidelity) if check else None
            if refused is None:
                todo.append(i)
            else:
                results[i] = refused
        if todo:
            lock = threading.Lock()
            pending = iter(todo)
            failures: list[BaseException] = []

            def drain() -> None:
                while not failures:
                    with lock:
                        i = next(pending, None)
                    if i is None:
                        return
                    try:
                        results[i] = self._run_checked(sources[i], full_builtins=full_builtins,
                                                       fidelity=fidelity, channels=channels)
                    except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
                        failures.append(exc)

            threads = [threading.Thread(target=drain, daemon=True)
                       for _ in range(min(self.n_workers, len(todo)))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if failures:
                raise failures[0]
        return results  # type: ignore[return-value]

    def _run_unchecked(self, source: str, full_builtins: bool = False,
                       fidelity: str = _EARNEST) -> RunResult:
        """Run without the static check and, with ``full_builtins``, with the real builtins (the
        tests' model of a snippet that escaped the Python layer completely)."""
        return self._run_checked(source, full_builtins=full_builtins, fidelity=fidelity)

    def _run_checked(self, source: str, full_builtins: bool = False,
                     fidelity: str = _EARNEST, channels: bool = False) -> RunResult:
        worker = self._acquire()
        try:
            reply = worker.request(source, self.limits, full_builtins, fidelity, channels)
        finally:
            self._release(worker)
        if isinstance(reply, RunResult):   # the machine's failure, told by the worker's status
            return reply
        return validate_reply(reply, fidelity)

    def _acquire(self) -> _Worker:
        with self._cond:
            while not self._idle:
                if self._closed:
                    raise RuntimeError("sandbox is closed")
                self._cond.wait()
            if self._closed:
                raise RuntimeError("sandbox is closed")
            return self._idle.pop()

    def _release(self, worker: _Worker) -> None:
        with self._cond:
            self._idle.append(worker)
            self._cond.notify()


_default: Sandbox | None = None
_default_lock = threading.Lock()


def default_sandbox() -> Sandbox:
    """A shared sandbox with default limits, closed when the interpreter exits."""
    global _default
    with _default_lock:
        if _default is None:
            import atexit

            _default = Sandbox()
            atexit.register(_default.close)
        return _default
