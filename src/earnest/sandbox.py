"""Run model-written Python safely: a static check, then an isolated child process per snippet.

What may run is decided twice:

1. **Statically** (``find_violations``) on the ``ast`` of the code, in the calling process:
   file, process, network and interpreter access is refused — ``open``, ``eval``, ``exec``,
   ``compile``, ``getattr``/``setattr``/``delattr``, ``globals``/``locals``/``vars``, ``input``,
   ``breakpoint`` ..., every dunder name or attribute (``().__class__``), every attribute starting
   with ``_`` (module internals), frame/code/traceback attributes (``gi_frame``, ``f_globals``),
   string constants containing ``__`` (``"{0.__class__}".format``) and imports outside
   ``ALLOWED_MODULES`` (pure computation: math, fractions, decimal, statistics, ...). Because
   identifiers are checked after the parser's NFKC normalisation, look-alike spellings
   (``ｅｘｅｃ``) are caught too, which string matching would miss.
2. **At run time**, in a fresh ``fork()`` of a pre-started worker interpreter (``python -I -S``,
   allowed modules preloaded, network namespace unshared when permitted). Before the snippet runs
   the child puts itself in its own session (killed with its whole group on timeout, and by
   ``PR_SET_PDEATHSIG`` if its worker dies), points stdin/stdout/stderr at ``/dev/null``, and —
   when the worker runs as root — ``chroot``s into an empty per-snippet temporary directory and
   drops to uid/gid 65534. It then sets rlimits: CPU seconds, address space (``RLIMIT_AS``),
   ``RLIMIT_FSIZE`` = 0 (no file can grow), ``RLIMIT_NPROC`` = 0 (no child processes),
   ``RLIMIT_NOFILE`` = 4 (no new file or socket descriptor at all), no core files. The snippet
   sees only a small builtins dict whose ``__import__`` hands out copies of the allowed modules
   with their module-valued attributes (``fractions.sys``) removed, and whose ``print`` only
   counts characters against the output limit. The worker enforces the wall-clock limit.

Result classes follow Appendix F of the GSM-Symbolic re-evaluation (code prompts), plus
``timeout`` and ``resource_limit``: see ``ERROR_CLASSES``.

This file must import only the standard library: it is also the worker program
(``python -I -S sandbox.py --worker TOKEN``).
"""

from __future__ import annotations

import ast
import json
import os
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from fractions import Fraction

# --------------------------------------------------------------------------------------------
# Policy (shared by the calling process and the worker)
# --------------------------------------------------------------------------------------------

#: Modules a snippet may import: pure computation, no I/O, no process or interpreter access.
#: (``random`` is left out on purpose: answers must be reproducible; ``operator`` because
#: ``attrgetter("__class__")`` reaches attributes through strings.)
ALLOWED_MODULES = frozenset({
    "math", "cmath", "fractions", "decimal", "statistics", "numbers", "itertools",
    "functools", "collections", "datetime", "calendar", "string", "re", "heapq", "bisect",
})

#: Names that give file, process or interpreter access, or reach attributes through strings.
FORBIDDEN_NAMES = frozenset({
    "open", "eval", "exec", "compile", "__import__", "getattr", "setattr", "delattr",
    "globals", "locals", "vars", "input", "breakpoint", "exit", "quit", "help", "dir",
    "memoryview", "copyright", "credits", "license",
})

#: Attributes that lead to modules, processes or interpreter frames.
FORBIDDEN_ATTRIBUTES = frozenset({
    "mro", "sys", "os", "modules", "builtins", "system", "popen", "fork", "forkpty", "spawn",
    "subprocess", "socket", "ctypes", "loader", "load_module", "exec_module", "import_module",
    "func_globals", "im_func", "format_map",
})
# frame (f_), traceback (tb_), generator/coroutine (gi_, cr_, ag_) and code (co_) internals
FORBIDDEN_ATTRIBUTE_PREFIXES = ("_", "f_", "tb_", "gi_", "cr_", "ag_", "co_")

#: Builtins a snippet sees; everything else is a NameError (or refused statically).
SAFE_BUILTINS = (
    "abs", "all", "any", "ascii", "bin", "bool", "bytearray", "bytes", "callable", "chr", "complex", "dict", "divmod",
    "enumerate", "filter", "float", "format", "frozenset", "hasattr", "hash", "hex", "id", "int",
    "isinstance", "issubclass", "iter", "len", "list", "map", "max", "min", "next", "object",
    "oct", "ord", "pow", "property", "range", "repr", "reversed", "round", "set", "slice",
    "sorted", "staticmethod", "classmethod", "str", "sum", "super", "tuple", "type", "zip",
    "ArithmeticError", "AssertionError", "AttributeError", "Exception", "IndexError", "KeyError",
    "LookupError", "MemoryError", "NameError", "NotImplementedError", "OverflowError",
    "RecursionError", "UnboundLocalError", "FloatingPointError",
    "RuntimeError", "StopIteration", "TypeError", "ValueError", "ZeroDivisionError",
    "NotImplemented", "Ellipsis",
)

#: Classes a run can end in ("" = it returned a number): ``earnest.failure_classes`` names them
#: (imported only on the calling side: the worker runs this file alone, standard library only).
if __name__ != "__main__":
    from earnest.failure_classes import EARNEST as _EARNEST, classes as _classes

    ERROR_CLASSES = _classes("code", _EARNEST, scoring=False)

#: Longer sources are not run (a model answer is bounded by max_new_tokens; this is far above).
MAX_SOURCE_CHARS = 200_000

# Values whose integer part needs more bits than a float can hold are reported as +-inf.
_MAX_EXACT_BITS = 1024


@dataclass(frozen=True)
class Limits:
    """Per-snippet limits. ``wall_seconds`` is enforced by killing the child's process group."""

    cpu_seconds: int = 2
    wall_seconds: float = 5.0
    memory_bytes: int = 512 * 1024 * 1024
    output_chars: int = 64 * 1024

    def as_dict(self) -> dict:
        return {"cpu": int(self.cpu_seconds), "wall": float(self.wall_seconds),
                "mem": int(self.memory_bytes), "out": int(self.output_chars)}


@dataclass(frozen=True)
class RunResult:
    """Outcome of running one snippet's ``solution()``.

    error_class is "" when a number came back (then ``value`` is set, ``exact`` too when the
    number is an int, Fraction or Decimal of manageable size), else one of ``ERROR_CLASSES``.
    """

    error_class: str
    value: float | None = None
    exact: Fraction | None = field(default=None, compare=False)
    detail: str = ""


# --------------------------------------------------------------------------------------------
# Static check
# --------------------------------------------------------------------------------------------

def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def find_violations(tree: ast.AST) -> list[str]:
    """Every construct in ``tree`` that may not run, as short descriptions (empty: allowed)."""
    problems: list[str] = []

    def bad_identifier(name: str | None, what: str, node: ast.AST) -> None:
        if name and _is_dunder(name):
            problems.append(f"line {getattr(node, 'lineno', '?')}: dunder {what} {name!r}")

    for node in ast.walk(tree):
        line = getattr(node, "lineno", "?")
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name not in ALLOWED_MODULES:
                    problems.append(f"line {line}: import of {alias.name!r}")
                bad_identifier(alias.asname, "alias", node)
        elif isinstance(node, ast.ImportFrom):
            if node.level or node.module not in ALLOWED_MODULES:
                problems.append(f"line {line}: import from {node.module!r}")
            for alias in node.names:
                if alias.name.startswith("_"):
                    problems.append(f"line {line}: import of private name {alias.name!r}")
                bad_identifier(alias.asname, "alias", node)
        elif isinstance(node, ast.Name):
            if node.id in FORBIDDEN_NAMES:
                problems.append(f"line {line}: use of {node.id!r}")
            else:
                bad_identifier(node.id, "name", node)
        elif isinstance(node, ast.Attribute):
            attr = node.attr
            if attr in FORBIDDEN_ATTRIBUTES or attr.startswith(FORBIDDEN_ATTRIBUTE_PREFIXES):
                problems.append(f"line {line}: attribute {attr!r}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
            if (b"__" if isinstance(node.value, bytes) else "__") in node.value:
                problems.append(f"line {line}: string constant containing '__'")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bad_identifier(node.name, "definition", node)
        elif isinstance(node, ast.arg):
            bad_identifier(node.arg, "argument", node)
        elif isinstance(node, ast.keyword):
            bad_identifier(node.arg, "keyword", node)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                bad_identifier(name, "name", node)
        elif isinstance(node, ast.ExceptHandler):
            bad_identifier(node.name, "name", node)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)):
            bad_identifier(node.name, "name", node)
        elif isinstance(node, ast.MatchMapping):
            bad_identifier(node.rest, "name", node)
    return problems


def check_source(source: str) -> RunResult | None:
    """Parse and check ``source``; a RunResult (syntax_error / forbidden_construct /
    resource_limit for an oversized source) if it may not run, else None."""
    if len(source) > MAX_SOURCE_CHARS:
        return RunResult("resource_limit", detail=f"source of {len(source)} characters (limit {MAX_SOURCE_CHARS})")
    try:
        tree = ast.parse(source, filename="<solution>")
    except SyntaxError as exc:  # includes IndentationError
        return RunResult("syntax_error", detail=_describe(exc))
    except (ValueError, RecursionError, MemoryError, OverflowError) as exc:
        # null bytes, absurd nesting, literals past the int-string limit
        return RunResult("syntax_error", detail=f"{type(exc).__name__}: {_short(str(exc))}")
    problems = find_violations(tree)
    if problems:
        return RunResult("forbidden_construct", detail="; ".join(problems[:5]))
    return None


# --------------------------------------------------------------------------------------------
# Calling side: a pool of worker processes
# --------------------------------------------------------------------------------------------

_HEADER = struct.Struct(">I")
_MAX_MESSAGE = 1 << 20


def _short(text: str, n: int = 300) -> str:
    return text if len(text) <= n else text[:n] + "..."


def _describe(exc: BaseException) -> str:
    try:
        return _short(f"{type(exc).__name__}: {exc}")
    except Exception:  # str() of the exception itself may fail (huge int arguments)
        return type(exc).__name__


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes | None:
    """n bytes from fd, or None on EOF or when the deadline passes."""
    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
        chunk = os.read(fd, n - got)
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _send(fd: int, obj: dict) -> None:
    data = json.dumps(obj).encode()
    data = _HEADER.pack(len(data)) + data
    while data:
        data = data[os.write(fd, data):]


def _receive(fd: int, deadline: float | None) -> dict | None:
    head = _read_exact(fd, _HEADER.size, deadline)
    if head is None:
        return None
    (size,) = _HEADER.unpack(head)
    if size > _MAX_MESSAGE:
        return None
    body = _read_exact(fd, size, deadline)
    return None if body is None else json.loads(body)


class _Worker:
    """One pre-started worker interpreter; used by one thread at a time."""

    def __init__(self, token: str):
        self.token = token
        self.proc: subprocess.Popen | None = None
        self.info: dict = {}

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", os.path.abspath(__file__), "--worker", self.token],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}, close_fds=True,
            start_new_session=True,
        )
        hello = _receive(self.proc.stdout.fileno(), time.monotonic() + 60)
        if hello is None:
            self.stop()
            raise RuntimeError("sandbox worker failed to start")
        self.info = hello

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()  # a worker exits on EOF
            proc.wait(timeout=2)
        except Exception:
            pass
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        proc.stdout.close()

    def request(self, source: str, limits: Limits, full_builtins: bool = False) -> dict:
        if self.proc is None:
            self.start()
        try:
            _send(self.proc.stdin.fileno(), {"source": source, "limits": limits.as_dict(),
                                             "full_builtins": bool(full_builtins)})
            # the worker answers by wall + a margin even for a runaway child; beyond that the
            # worker itself is broken and gets replaced
            reply = _receive(self.proc.stdout.fileno(), time.monotonic() + limits.wall_seconds + 10)
        except (BrokenPipeError, OSError, ValueError):
            reply = None
        if reply is None:
            self.stop()
            return {"error": "unclassified", "detail": "sandbox worker died or hung; restarted"}
        return reply


class Sandbox:
    """A pool of pre-started workers; each snippet runs in its own freshly forked, limited child.

    Use as a context manager, or call ``close()``; workers also exit when this process dies.
    Thread-safe: ``run`` may be called from several threads, ``run_many`` spreads a batch over
    all workers.
    """

    def __init__(self, workers: int | None = None, limits: Limits = Limits()):
        self.limits = limits
        # twice the cores: a worker spends much of each snippet waiting on fork/exit and pipes
        self.n_workers = max(1, workers or min(8, 2 * (os.cpu_count() or 1)))
        # a per-sandbox token in every worker's command line lets tests find strays via /proc
        self.token = f"earnest-sandbox-{os.getpid()}-{id(self):x}"
        self._idle: list[_Worker] = [_Worker(self.token) for _ in range(self.n_workers)]
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
            worker.stop()

    def worker_pids(self) -> list[int]:
        """Process ids of the running workers (for tests and diagnostics)."""
        return [w.proc.pid for w in self._all if w.proc is not None]

    def capabilities(self) -> dict:
        """What isolation the workers obtained (netns, chroot, setuid), once one has started."""
        for w in self._all:
            if w.info:
                return {k: v for k, v in w.info.items() if k != "pid"}
        return {}

    # -- running -----------------------------------------------------------------------------
    def run(self, source: str) -> RunResult:
        """Check ``source`` (a module defining ``solution``), run ``solution()`` isolated, classify."""
        refused = check_source(source)
        if refused is not None:
            return refused
        return self._run_checked(source)

    def run_many(self, sources: list[str]) -> list[RunResult]:
        """``run`` for each source, in order, spread over the workers."""
        results: list[RunResult | None] = [None] * len(sources)
        todo = []
        for i, src in enumerate(sources):
            refused = check_source(src)
            if refused is None:
                todo.append(i)
            else:
                results[i] = refused
        if todo:
            lock = threading.Lock()
            pending = iter(todo)

            def drain() -> None:
                while True:
                    with lock:
                        i = next(pending, None)
                    if i is None:
                        return
                    results[i] = self._run_checked(sources[i])

            threads = [threading.Thread(target=drain, daemon=True)
                       for _ in range(min(self.n_workers, len(todo)))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        return results  # type: ignore[return-value]

    def _run_unchecked(self, source: str, full_builtins: bool = False) -> RunResult:
        """Run without the static check (tests of the process-level limits only)."""
        return self._run_checked(source, full_builtins=full_builtins)

    def _run_checked(self, source: str, full_builtins: bool = False) -> RunResult:
        worker = self._acquire()
        try:
            reply = worker.request(source, self.limits, full_builtins)
        finally:
            self._release(worker)
        return _decode(reply)

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


def _decode(reply: dict) -> RunResult:
    error = reply.get("error", "unclassified")
    detail = reply.get("detail", "")
    if error:
        return RunResult(error, detail=detail)
    value = float(reply["value"])
    exact = None
    if reply.get("exact"):
        exact = Fraction(reply["exact"])
    elif value == value and value not in (float("inf"), float("-inf")):
        exact = Fraction(value)
    return RunResult("", value=value, exact=exact, detail=detail)


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


# --------------------------------------------------------------------------------------------
# Worker side (runs as `python -I -S sandbox.py --worker TOKEN`)
# --------------------------------------------------------------------------------------------

_CLONE_NEWNET = 0x40000000
_PR_SET_PDEATHSIG = 1
_NOBODY = 65534


class _OutputLimit(BaseException):
    """Raised by the sandbox print once the output limit is passed (not an Exception on purpose)."""


def _module_copy(module):
    """A copy of ``module`` exposing only its public, non-module attributes."""
    import types

    copy = types.ModuleType(module.__name__)
    for name in dir(module):
        if name.startswith("_"):
            continue
        value = getattr(module, name)
        if isinstance(value, types.ModuleType):
            continue
        setattr(copy, name, value)
    return copy


def _encode_value(value) -> dict:
    """What solution() returned, as the worker reports it (numbers as exact strings where sane)."""
    import decimal  # preloaded by the worker

    if value is None:
        return {"error": "none_returned", "detail": "solution() returned None"}
    if isinstance(value, bool):
        return {"error": "not_a_number", "detail": "returned a bool"}
    if isinstance(value, int):
        value = int(value)
        if value.bit_length() <= _MAX_EXACT_BITS:
            try:
                as_float = repr(float(value))
            except OverflowError:
                as_float = "inf" if value > 0 else "-inf"
            return {"error": "", "value": as_float, "exact": str(value)}
        return {"error": "", "value": "inf" if value > 0 else "-inf",
                "detail": f"integer of {value.bit_length()} bits"}
    if isinstance(value, float):
        return {"error": "", "value": repr(value)}
    if isinstance(value, Fraction):
        try:
            as_float = repr(float(value))
        except OverflowError:
            as_float = "inf" if value > 0 else "-inf"
        if max(value.numerator.bit_length(), value.denominator.bit_length()) <= _MAX_EXACT_BITS:
            return {"error": "", "value": as_float,
                    "exact": f"{value.numerator}/{value.denominator}"}
        return {"error": "", "value": as_float}
    if isinstance(value, decimal.Decimal):
        as_float = repr(float(value))  # Decimal -> float never raises (inf / nan / 0.0)
        if value.is_finite() and abs(value.adjusted()) <= 300 and len(value.as_tuple().digits) <= 400:
            return {"error": "", "value": as_float, "exact": str(Fraction(value))}
        return {"error": "", "value": as_float}
    kind = type(value).__name__
    if isinstance(value, complex):
        return {"error": "not_a_number", "detail": "returned a complex number"}
    return {"error": "not_a_number", "detail": f"returned a {_short(kind, 60)}"}


def _classify(exc: BaseException) -> str:
    if isinstance(exc, (_OutputLimit, MemoryError, RecursionError)):
        return "resource_limit"
    if isinstance(exc, SyntaxError):
        return "syntax_error"
    if isinstance(exc, NameError):
        return "name_error"
    if isinstance(exc, ZeroDivisionError):
        return "zero_division_error"
    if isinstance(exc, AttributeError):
        return "attribute_error"
    if isinstance(exc, (TypeError, ValueError)):
        return "type_value_error"
    if isinstance(exc, ImportError):
        return "forbidden_construct"
    return "unclassified"


def _execute(source: str, limits: dict, modules: dict, full_builtins: bool = False) -> dict:
    """Run the snippet in this (already isolated) process and describe the outcome."""
    import builtins

    written = [0]
    cap = limits["out"]

    def sandbox_print(*args, sep=" ", end="\n", file=None, flush=False):
        # output goes nowhere; it is only counted, so a flood ends as resource_limit
        if written[0] > cap:
            raise _OutputLimit()
        written[0] += sum(len(str(a)) for a in args) + len(str(end)) + len(str(sep)) * max(0, len(args) - 1)
        if written[0] > cap:
            raise _OutputLimit()

    def sandbox_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level or name not in modules:
            raise ImportError(f"import of {name!r} is not allowed")
        return modules[name]

    if full_builtins:  # tests of the OS-level limits only; never set for model output
        namespace = {"__builtins__": builtins, "__name__": "__sandbox__"}
    else:
        safe = {name: getattr(builtins, name) for name in SAFE_BUILTINS}
        safe.update(print=sandbox_print, __import__=sandbox_import,
                    __build_class__=builtins.__build_class__)
        namespace = {"__builtins__": safe, "__name__": "__sandbox__"}
    try:
        code = compile(source, "<solution>", "exec")
        exec(code, namespace)
        solution = namespace.get("solution")
        if not callable(solution):
            return {"error": "no_function", "detail": "no callable solution() after running the code"}
        value = solution()
        if written[0] > cap:
            return {"error": "resource_limit", "detail": "output limit exceeded"}
        return _encode_value(value)
    except BaseException as exc:  # noqa: BLE001 - every failure is a result here
        if written[0] > cap:
            return {"error": "resource_limit", "detail": "output limit exceeded"}
        detail = "output limit exceeded" if isinstance(exc, _OutputLimit) else _describe(exc)
        return {"error": _classify(exc), "detail": detail}


def _child(request: dict, workdir: str, result_w: int, devnull: int, libc, root: bool,
           modules: dict, worker_pid: int) -> None:
    """Body of the forked child: isolate, limit, run, report on fd 3, exit."""
    import resource  # preloaded by the worker: after chroot nothing more can be imported

    source, limits = request["source"], request["limits"]
    try:
        os.setsid()
        os.dup2(result_w, 3)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.closerange(4, 1 << 16)
        if root:
            os.chroot(workdir)
            os.chdir("/")
            os.setgroups([])
            os.setgid(_NOBODY)
            os.setuid(_NOBODY)
        else:
            os.chdir(workdir)
        # after setuid: a change of credentials clears the parent-death signal
        if libc is not None:
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != worker_pid:  # the worker died before prctl took effect
            os._exit(1)
        cpu = max(1, int(limits["cpu"]))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_AS, (limits["mem"], limits["mem"]))
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
        resource.setrlimit(resource.RLIMIT_NOFILE, (4, 4))
        for name in ("RLIMIT_MEMLOCK", "RLIMIT_MSGQUEUE"):
            if hasattr(resource, name):
                resource.setrlimit(getattr(resource, name), (0, 0))
        outcome = _execute(source, limits, modules, bool(request.get("full_builtins")))
    except BaseException as exc:  # noqa: BLE001
        outcome = {"error": "unclassified", "detail": "sandbox setup failed: " + _describe(exc)}
    try:
        data = json.dumps(outcome).encode()
    except Exception:
        data = json.dumps({"error": "unclassified", "detail": "unreportable result"}).encode()
    try:
        while data:
            data = data[os.write(3, data):]
    finally:
        os._exit(0)


def _wait_child(pid: int, result_r: int, wall: float) -> dict:
    """Collect the child's report within ``wall`` seconds; kill its whole group in any case."""
    deadline = time.monotonic() + wall
    chunks: list[bytes] = []
    size = 0
    timed_out = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        if not select.select([result_r], [], [], left)[0]:
            timed_out = True
            break
        chunk = os.read(result_r, 65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > _MAX_MESSAGE:
            break
    # the child is not reaped yet, so its process group id cannot have been reused
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    _, status = os.waitpid(pid, 0)
    if timed_out:
        return {"error": "timeout", "detail": f"wall-clock limit of {wall:g} s"}
    if chunks:
        try:
            return json.loads(b"".join(chunks))
        except ValueError:
            pass
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig in (signal.SIGXCPU, signal.SIGKILL):
            return {"error": "timeout", "detail": f"CPU time limit (signal {signal.Signals(sig).name})"}
        if sig in (signal.SIGSEGV, signal.SIGBUS, signal.SIGXFSZ, signal.SIGABRT):
            return {"error": "resource_limit", "detail": f"killed by {signal.Signals(sig).name}"}
        return {"error": "unclassified", "detail": f"killed by signal {sig}"}
    return {"error": "unclassified", "detail": f"exited with status {os.waitstatus_to_exitcode(status)} without a result"}


def _worker_main() -> None:
    import importlib
    import resource  # noqa: F401 - preloaded for the children
    import shutil
    import tempfile

    libc = None
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
    except Exception:
        libc = None
    modules = {}
    for name in sorted(ALLOWED_MODULES):
        modules[name] = _module_copy(importlib.import_module(name))
    root = os.geteuid() == 0
    netns = False
    if root and libc is not None:
        netns = libc.unshare(_CLONE_NEWNET) == 0
    base = tempfile.mkdtemp(prefix="earnest-sandbox-")
    os.chmod(base, 0o711)
    devnull = os.open(os.devnull, os.O_RDWR)
    proto_in, proto_out = 0, os.dup(1)
    os.dup2(devnull, 1)  # nothing printed by mistake can corrupt the protocol stream
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    _send(proto_out, {"pid": os.getpid(), "netns": netns, "chroot": root, "setuid": root,
                      "nofile": 4})
    counter = 0
    worker_pid = os.getpid()
    try:
        while True:
            request = _receive(proto_in, None)
            if request is None:
                break
            counter += 1
            workdir = os.path.join(base, str(counter))
            os.mkdir(workdir, 0o700)
            if root:
                os.chown(workdir, _NOBODY, _NOBODY)
            result_r, result_w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(result_r)
                _child(request, workdir, result_w, devnull, libc, root, modules, worker_pid)
                os._exit(1)  # not reached
            os.close(result_w)
            try:
                reply = _wait_child(pid, result_r, float(request["limits"]["wall"]))
            finally:
                os.close(result_r)
                shutil.rmtree(workdir, ignore_errors=True)
            _send(proto_out, reply)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__" and len(sys.argv) >= 2 and sys.argv[1] == "--worker":
    _worker_main()
