"""Run model-written Python safely: a static check, then an isolated child process per snippet.

The layers, outermost first, and what each one stops (any one of them failing leaves the others):

1. **Static policy** (``check_source``, in the calling process) — a first filter, not the
   boundary. It refuses, on the ``ast`` after the parser's NFKC normalisation (so ``ｅｘｅｃ`` is
   ``exec``): ``open``/``eval``/``exec``/``compile``/``getattr``/``globals``/... , every dunder
   name or attribute, attributes starting with ``_`` or naming frames, tracebacks, generators
   and code (``gi_frame``, ``f_back``, ``tb_frame``, ``co_code``...) — also inside ``match`` class
   patterns (``case object(__globals__=g)``) —, string constants containing ``__``, the
   string-to-attribute bridges ``string.Formatter``, ``functools.update_wrapper``/``wraps``,
   ``functools.singledispatch`` and ``typing.get_type_hints`` (which ``eval`` annotations),
   ``type`` with more than one argument (``type(name, bases, {dunder: ...})``) and imports
   outside ``ALLOWED_MODULES``. Reference mode (``fidelity="reference"``) first applies the
   authors' own check (a regular expression for ``open(...)``, ``eval(...)``, ``exec(...)``,
   ``__import__(...)``, ``getattr/setattr(...)`` on the raw text, class ``forbidden_string``) and
   then only the escape rules above, since names outside its namespace fail as NameError there.
2. **Namespace**: the snippet sees a small builtins dict (earnest: ``SAFE_BUILTINS``; reference:
   the reference's ``REFERENCE_BUILTINS`` and pre-imported ``REFERENCE_MODULES``) and copies of the
   allowed modules without their module-valued, private and eval-capable attributes.
3. **Process**: each snippet runs in a fresh ``fork()`` of a pre-started worker interpreter
   (``python -I -S``), in its own session and process group (killed as a group on timeout, and by
   ``PR_SET_PDEATHSIG`` if its worker dies), with stdin/stdout/stderr on ``/dev/null`` — the result
   goes back on a separate pipe, fd 3, which nothing printed can reach — and rlimits: CPU seconds,
   address space, ``RLIMIT_FSIZE`` = 0, ``RLIMIT_NPROC`` = 0, ``RLIMIT_NOFILE`` = 4, no core
   files. As root it also ``chroot``s into an empty directory and becomes uid/gid 65534 and the
   worker unshares the network namespace.
4. **no_new_privs + Landlock** (kernel ABI >= 1; no root needed): no file or directory may be
   read, written, created, removed, renamed or executed anywhere (the snippet needs none: its
   modules are preloaded); with ABI >= 4 no TCP bind/connect; with ABI >= 6 no signal to a process
   outside the snippet and no abstract unix socket.
5. **seccomp** (compiled once per worker by libseccomp through ctypes, installed in each child with
   one prctl; no root needed), with EPERM for: ``execve``,
   ``fork``/``clone``, every way to signal a process (``kill``, ``tgkill``, ``pidfd_*``), ``ptrace``
   and ``process_vm_*``, every socket call, opening a file for writing or creating one,
   ``unlink``/``rename``/``mkdir``/``chmod``/``chown``/``truncate``/``link``/``symlink`` and the like,
   ``io_uring`` (which would bypass the filter), ``mount``/``unshare``/``setns``/``chroot``,
   ``bpf``/``perf_event_open``/``userfaultfd``/``keyctl``, ``TIOCSTI``. Other architectures' system
   calls kill the process.

``Sandbox.capabilities()`` reports which of layers 3-5 the workers obtained. The calling process
trusts nothing that comes back: a reply is size-limited before it is parsed and validated field by
field; anything malformed becomes that answer's ``unclassified`` result, never an exception. A
snippet that escaped every layer could still choose its own result (as by returning a value) but
not another answer's. Per-snippet temporary directories are removed after each snippet, the
worker's directory when the worker ends (also when the calling process dies), and any left by a
killed worker when the next worker starts.

Result classes: ``earnest.failure_classes`` (Appendix F of the GSM-Symbolic re-evaluation, plus
``timeout`` and ``resource_limit``; in reference mode these two are reported as ``unclassified``,
the reference's catch-all, since the reference has no limits).

This file must import only the standard library: it is also the worker program
(``python -I -S sandbox.py --worker TOKEN``).
"""

from __future__ import annotations

import ast
import json
import os
import re
import select
import signal
import struct
import subprocess
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field
from fractions import Fraction

# --------------------------------------------------------------------------------------------
# Policy (shared by the calling process and the worker)
# --------------------------------------------------------------------------------------------

#: Modules a snippet may import (earnest mode): pure computation, no I/O, no process or
#: interpreter access. (``random`` is left out on purpose: answers must be reproducible;
#: ``operator`` because ``attrgetter("__class__")`` reaches attributes through strings.)
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
    "func_globals", "im_func",
})
#: Attributes and importable names that turn strings into attribute access or evaluated code
#: (``string.Formatter().get_field``, ``functools.update_wrapper(..., assigned=(dunder,))``,
#: ``singledispatch`` / ``get_type_hints``, which ``eval`` annotations); refused in both modes and
#: left out of the module copies a snippet sees.
BRIDGE_ATTRIBUTES = frozenset({
    "format_map", "Formatter", "get_field", "get_value", "vformat", "update_wrapper", "wraps",
    "singledispatch", "singledispatchmethod", "get_type_hints", "ForwardRef",
})
# frame (f_), traceback (tb_), generator/coroutine (gi_, cr_, ag_) and code (co_) internals
FORBIDDEN_ATTRIBUTE_PREFIXES = ("_", "f_", "tb_", "gi_", "cr_", "ag_", "co_")

#: Builtins a snippet sees in earnest mode; everything else is a NameError (or refused statically).
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

#: Reference mode: the builtins the reference code gives a snippet (answer_extractor.py at
#: d063998) — nothing else, so ``isinstance``, ``type``, ``ValueError`` or a ``class`` statement
#: (no ``__build_class__``) are NameErrors there, and an ``import`` that survives its
#: import-line removal fails (no ``__import__``) and is "unclassified".
REFERENCE_BUILTINS = (
    "int", "float", "str", "bool", "complex", "list", "dict", "tuple", "set", "len", "range",
    "enumerate", "zip", "all", "any", "reversed", "sorted", "filter", "map", "slice", "round",
    "min", "max", "abs", "sum", "pow", "divmod", "print",
)
#: Reference mode: modules present as global names without any import.
REFERENCE_MODULES = ("numbers", "math", "cmath", "decimal", "fractions", "random", "typing", "array")

#: Reference mode: its forbidden-string check on the raw text of the extracted function.
REFERENCE_FORBIDDEN = re.compile(r"(?:open|eval|exec|__import__|[gs]etattr)\(.*\)")

#: Longer sources are not run (a model answer is bounded by max_new_tokens; this is far above).
MAX_SOURCE_CHARS = 200_000

# Values whose integer part needs more bits than a float can hold are reported as +-inf.
_MAX_EXACT_BITS = 1024
_EARNEST, _REFERENCE = "earnest", "reference"  # = earnest.fidelity's names (standard library only here)

#: Classes a run can end in ("" = it returned a number): ``earnest.failure_classes`` names them
#: (imported only on the calling side: the worker runs this file alone, standard library only, so
#: the worker's code writes the names as strings; ``validate_reply`` turns any name that is not a
#: class there into ``unclassified``, and tests/test_failure_classes.py checks the worker's names).
if __name__ != "__main__":
    from earnest.failure_classes import EARNEST as _FC_EARNEST, FAILURE_CLASSES as _FAILURE_CLASSES
    from earnest.failure_classes import (FORBIDDEN_CONSTRUCT, FORBIDDEN_STRING, RESOURCE_LIMIT, SYNTAX_ERROR,
                                         TIMEOUT, TYPE_VALUE_ERROR, UNCLASSIFIED)
    from earnest.failure_classes import classes as _classes

    ERROR_CLASSES = _classes("code", _FC_EARNEST, scoring=False)
    _KNOWN_CLASSES = frozenset(_FAILURE_CLASSES)


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
    number is an int, Fraction or Decimal of manageable size), else one of ``ERROR_CLASSES``
    (earnest mode) or the reference's classes (reference mode).
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


def _bad_attribute(attr: str, names: bool = True) -> bool:
    return (attr in BRIDGE_ATTRIBUTES or attr.startswith(FORBIDDEN_ATTRIBUTE_PREFIXES)
            or (names and attr in FORBIDDEN_ATTRIBUTES))


def find_violations(tree: ast.AST, *, names: bool = True) -> list[str]:
    """Every construct in ``tree`` that may not run, as short descriptions (empty: allowed).

    ``names=False`` (reference mode) leaves out the rules on plain names and imports: there a name
    missing from the namespace is a NameError and imports are handled as the reference does.
    """
    problems: list[str] = []

    def bad_identifier(name: str | None, what: str, node: ast.AST) -> None:
        if name and _is_dunder(name):
            problems.append(f"line {getattr(node, 'lineno', '?')}: dunder {what} {name!r}")

    for node in ast.walk(tree):
        line = getattr(node, "lineno", "?")
        if isinstance(node, ast.Import):
            for alias in node.names:
                if names and alias.name not in ALLOWED_MODULES:
                    problems.append(f"line {line}: import of {alias.name!r}")
                bad_identifier(alias.asname, "alias", node)
        elif isinstance(node, ast.ImportFrom):
            if names and (node.level or node.module not in ALLOWED_MODULES):
                problems.append(f"line {line}: import from {node.module!r}")
            for alias in node.names:
                if alias.name.startswith("_") or alias.name in BRIDGE_ATTRIBUTES:
                    problems.append(f"line {line}: import of {alias.name!r}")
                bad_identifier(alias.asname, "alias", node)
        elif isinstance(node, ast.Name):
            if node.id in FORBIDDEN_NAMES and names:
                problems.append(f"line {line}: use of {node.id!r}")
            else:
                bad_identifier(node.id, "name", node)
        elif isinstance(node, ast.Attribute):
            if _bad_attribute(node.attr, names):
                problems.append(f"line {line}: attribute {node.attr!r}")
        elif isinstance(node, ast.MatchClass):
            # case C(attr=pattern) reads C's attribute ``attr``: the same rules as ``x.attr``
            for attr in node.kwd_attrs:
                if _bad_attribute(attr, names) or _is_dunder(attr):
                    problems.append(f"line {line}: attribute {attr!r} in a class pattern")
        elif isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
            if (b"__" if isinstance(node.value, bytes) else "__") in node.value:
                problems.append(f"line {line}: string constant containing '__'")
        elif names and isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type":
            # type(name, bases, namespace) builds a class from strings (dunder keys included)
            if len(node.args) != 1 or node.keywords:
                problems.append(f"line {line}: type() with more than one argument")
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


_WARNINGS_LOCK = threading.Lock()


def check_source(source: str, fidelity: str = _EARNEST) -> RunResult | None:
    """Parse and check ``source``; a RunResult if it may not run, else None.

    earnest: ``resource_limit`` for an oversized source, ``syntax_error``, ``forbidden_construct``.
    reference: ``forbidden_string`` (the reference's text check, then the escape rules of
    ``find_violations(names=False)``), then what compiling raises in the reference
    (``syntax_error``; ``type_value_error`` for a null byte on Python < 3.12), ``unclassified`` for
    an oversized source (a limit the reference does not have).
    """
    reference = fidelity == _REFERENCE
    if fidelity not in (_EARNEST, _REFERENCE):
        raise ValueError(f"fidelity: {fidelity!r} is not a fidelity mode")
    if len(source) > MAX_SOURCE_CHARS:
        return RunResult(UNCLASSIFIED if reference else RESOURCE_LIMIT,
                         detail=f"resource limit: source of {len(source)} characters (limit {MAX_SOURCE_CHARS})")
    if reference:
        m = REFERENCE_FORBIDDEN.search(source)
        if m is not None:
            return RunResult(FORBIDDEN_STRING, detail=f"forbidden string {_short(m.group(), 60)!r}")
    try:
        # SyntaxWarnings about model code are not ours to print; the lock keeps concurrent
        # callers from restoring each other's filters
        with _WARNINGS_LOCK, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source, filename="<solution>")
    except SyntaxError as exc:  # includes IndentationError
        return RunResult(SYNTAX_ERROR, detail=_describe(exc))
    except ValueError as exc:  # a null byte before Python 3.12
        return RunResult(TYPE_VALUE_ERROR if reference else SYNTAX_ERROR, detail=_describe(exc))
    except (RecursionError, MemoryError, OverflowError) as exc:
        # absurd nesting, literals past the int-string limit
        return RunResult(UNCLASSIFIED if reference else SYNTAX_ERROR,
                         detail=f"{type(exc).__name__}: {_short(str(exc))}")
    problems = find_violations(tree, names=not reference)
    if problems:
        if reference:
            return RunResult(FORBIDDEN_STRING,
                             detail="refused by earnest's static policy (the reference would run it): "
                                    + "; ".join(problems[:5]))
        return RunResult(FORBIDDEN_CONSTRUCT, detail="; ".join(problems[:5]))
    return None


# --------------------------------------------------------------------------------------------
# Calling side: a pool of worker processes
# --------------------------------------------------------------------------------------------

_HEADER = struct.Struct(">I")
_MAX_MESSAGE = 1 << 20
_MAX_RESULT = 64 * 1024  # a child's report: a class, a number and a short detail
_FLOAT_TEXT = re.compile(r"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|inf|nan)")
_EXACT_TEXT = re.compile(r"-?\d{1,1000}(?:/[1-9]\d{0,999})?")


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
    """One framed JSON object, or None (EOF, deadline, oversized or malformed: checked before
    and after parsing)."""
    head = _read_exact(fd, _HEADER.size, deadline)
    if head is None:
        return None
    (size,) = _HEADER.unpack(head)
    if size > _MAX_MESSAGE:
        return None
    body = _read_exact(fd, size, deadline)
    if body is None:
        return None
    try:
        obj = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def validate_reply(reply: object, fidelity: str = _EARNEST) -> RunResult:
    """Turn a worker's reply into a RunResult, trusting nothing in it: anything malformed (wrong
    types, an unknown class, a value that is not a number's text) is ``unclassified``."""
    def malformed(why: str) -> RunResult:
        return RunResult(UNCLASSIFIED, detail=f"malformed result from the sandbox ({why})")

    if not isinstance(reply, dict):
        return malformed("not an object")
    error = reply.get("error", UNCLASSIFIED)
    detail = reply.get("detail", "")
    detail = _short(detail) if isinstance(detail, str) else ""
    if not isinstance(error, str) or (error and error not in _KNOWN_CLASSES):
        return malformed("unknown class")
    if fidelity == _REFERENCE and error in (TIMEOUT, RESOURCE_LIMIT):
        # the reference has no limits (it would hang or die): its catch-all class
        return RunResult(UNCLASSIFIED, detail=f"{error.replace('_', ' ')}: {detail}")
    if error:
        return RunResult(error, detail=detail)
    text = reply.get("value")
    if not isinstance(text, str) or len(text) > 40 or not _FLOAT_TEXT.fullmatch(text):
        return malformed("value is not a number")
    value = float(text)
    exact = None
    exact_text = reply.get("exact")
    if exact_text is not None:
        if not isinstance(exact_text, str) or not _EXACT_TEXT.fullmatch(exact_text):
            return malformed("exact value is not a fraction")
        exact = Fraction(exact_text)
        if value == value and abs(value) != float("inf"):
            try:
                agree = abs(float(exact) - value) <= 1e-9 * max(1.0, abs(value))
            except OverflowError:
                agree = False
            if not agree:
                return malformed("exact and float values disagree")
    elif value == value and value not in (float("inf"), float("-inf")):
        exact = Fraction(value)
    return RunResult("", value=value, exact=exact, detail=detail)


_WARNED: set = set()  # missing isolation layers already reported in this process


class _Worker:
    """One pre-started worker interpreter; used by one thread at a time."""

    def __init__(self, token: str):
        self.token = token
        self.proc: subprocess.Popen | None = None
        self.info: dict = {}

    def start(self) -> None:
        import tempfile

        # the caller's temporary directory (a Slurm job's TMPDIR, say) holds the worker's
        env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "TMPDIR": tempfile.gettempdir()}
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", os.path.abspath(__file__), "--worker", self.token],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env, close_fds=True,
            start_new_session=True,
        )
        hello = _receive(self.proc.stdout.fileno(), time.monotonic() + 60)
        if hello is None:
            self.stop()
            raise RuntimeError("sandbox worker failed to start")
        self.info = hello
        missing = [name for name in ("seccomp", "landlock", "no_new_privs") if not hello.get(name)]
        if missing and tuple(missing) not in _WARNED:
            _WARNED.add(tuple(missing))
            import logging

            hints = {"seccomp": "install libseccomp2", "landlock": "Landlock needs Linux >= 5.13",
                     "no_new_privs": "no libc through ctypes"}
            logging.getLogger("earnest.sandbox").warning(
                "model code runs without %s on this machine (%s); the other layers still hold "
                "(see the earnest.sandbox docstring)", ", ".join(missing),
                "; ".join(hints[name] for name in missing))

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
        base = self.info.get("base")
        if isinstance(base, str) and os.path.basename(base).startswith("earnest-sandbox-"):
            import shutil

            shutil.rmtree(base, ignore_errors=True)  # in case the worker could not

    def request(self, source: str, limits: Limits, full_builtins: bool = False,
                fidelity: str = _EARNEST) -> dict:
        if self.proc is None:
            self.start()
        try:
            _send(self.proc.stdin.fileno(), {"source": source, "limits": limits.as_dict(),
                                             "full_builtins": bool(full_builtins), "mode": fidelity})
            # the worker answers by wall + a margin even for a runaway child; beyond that the
            # worker itself is broken and gets replaced
            reply = _receive(self.proc.stdout.fileno(), time.monotonic() + limits.wall_seconds + 10)
        except (BrokenPipeError, OSError, ValueError):
            reply = None
        if reply is None:
            self.stop()
            return {"error": UNCLASSIFIED, "detail": "sandbox worker died, hung or sent garbage; restarted"}
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
        """What isolation the workers obtained, once one has started: netns, chroot, setuid,
        nofile, no_new_privs, landlock (the kernel's ABI version, 0 = none), seccomp."""
        for w in self._all:
            if w.info:
                return {k: v for k, v in w.info.items() if k not in ("pid", "base")}
        return {}

    def temp_dirs(self) -> list[str]:
        """The workers' temporary directories (for tests and diagnostics)."""
        return [w.info["base"] for w in self._all if w.proc is not None and w.info.get("base")]

    # -- running -----------------------------------------------------------------------------
    def run(self, source: str, *, fidelity: str = _EARNEST) -> RunResult:
        """Check ``source``, run it isolated, classify.

        earnest: ``source`` is a module defining ``solution``; ``solution()`` is called.
        reference: ``source`` is the reference's program (the function and ``ret = NAME()``), run
        in the reference's namespace with separate globals and locals; ``ret`` is the result.
        """
        refused = check_source(source, fidelity)
        if refused is not None:
            return refused
        return self._run_checked(source, fidelity=fidelity)

    def run_many(self, sources: list[str], *, fidelity: str = _EARNEST) -> list[RunResult]:
        """``run`` for each source, in order, spread over the workers."""
        results: list[RunResult | None] = [None] * len(sources)
        todo = []
        for i, src in enumerate(sources):
            refused = check_source(src, fidelity)
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
                    results[i] = self._run_checked(sources[i], fidelity=fidelity)

            threads = [threading.Thread(target=drain, daemon=True)
                       for _ in range(min(self.n_workers, len(todo)))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        return results  # type: ignore[return-value]

    def _run_unchecked(self, source: str, full_builtins: bool = False,
                       fidelity: str = _EARNEST) -> RunResult:
        """Run without the static check (tests of the process-level limits only)."""
        return self._run_checked(source, full_builtins=full_builtins, fidelity=fidelity)

    def _run_checked(self, source: str, full_builtins: bool = False,
                     fidelity: str = _EARNEST) -> RunResult:
        worker = self._acquire()
        try:
            reply = worker.request(source, self.limits, full_builtins, fidelity)
        finally:
            self._release(worker)
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


# --------------------------------------------------------------------------------------------
# Worker side (runs as `python -I -S sandbox.py --worker TOKEN`)
# --------------------------------------------------------------------------------------------

_CLONE_NEWNET = 0x40000000
_PR_SET_PDEATHSIG = 1
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_NOBODY = 65534
_TEMP_PREFIX = "earnest-sandbox-"


def _temp_prefix() -> str:
    """``earnest-sandbox-HOST-``: a TMPDIR shared between nodes holds workers of several hosts,
    and a process id means something only on its own host."""
    import socket

    host = re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname())[:64] or "host"
    return f"{_TEMP_PREFIX}{host}-"

# Landlock (include/uapi/linux/landlock.h); the system call numbers are the same on every
# architecture that has them.
_SYS_LANDLOCK_CREATE_RULESET, _SYS_LANDLOCK_RESTRICT_SELF = 444, 446
_LANDLOCK_CREATE_RULESET_VERSION = 1

# seccomp through libseccomp (seccomp.h)
_SCMP_ACT_ALLOW = 0x7FFF0000
_SCMP_ACT_ERRNO_EPERM = 0x00050000 | 1
_SCMP_CMP_EQ, _SCMP_CMP_MASKED_EQ = 4, 7
_DENIED_SYSCALLS = (
    # new programs and processes
    "execve", "execveat", "fork", "vfork", "clone", "clone3",
    # signals to any process, tracing, other processes' memory
    "kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open",
    "pidfd_send_signal", "pidfd_getfd", "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
    # network and local sockets
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "sendto", "sendmsg",
    "sendmmsg", "recvfrom", "recvmsg", "recvmmsg", "setsockopt", "getsockopt", "shutdown",
    # changing the file system
    "creat", "openat2", "unlink", "unlinkat", "rename", "renameat", "renameat2", "mkdir", "mkdirat",
    "rmdir", "link", "linkat", "symlink", "symlinkat", "chmod", "fchmod", "fchmodat", "fchmodat2",
    "chown", "fchown", "lchown", "fchownat", "truncate", "ftruncate", "fallocate", "mknod",
    "mknodat", "utime", "utimes", "utimensat", "futimesat", "setxattr", "lsetxattr", "fsetxattr",
    "removexattr", "lremovexattr", "fremovexattr", "name_to_handle_at", "open_by_handle_at",
    # kernel interfaces a snippet has no business with (io_uring would bypass this filter)
    "io_uring_setup", "io_uring_enter", "io_uring_register", "mount", "umount2", "pivot_root",
    "chroot", "unshare", "setns", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount",
    "fspick", "mount_setattr", "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key",
    "request_key", "personality", "swapon", "swapoff", "reboot", "kexec_load", "kexec_file_load",
    "init_module", "finit_module", "delete_module", "acct", "quotactl", "settimeofday",
    "clock_settime", "adjtimex", "clock_adjtime", "sethostname", "setdomainname", "iopl", "ioperm",
    "fanotify_init",
)
_O_WRITE_FLAGS = (0o1, 0o2, 0o100, 0o1000)  # O_WRONLY, O_RDWR, O_CREAT, O_TRUNC
_TIOCSTI = 0x5412


# modules the allowed modules import lazily from C (preloaded by the worker)
_INTERNAL_IMPORTS = ("_strptime", "time")


class _OutputLimit(BaseException):
    """Raised by the sandbox print once the output limit is passed (not an Exception on purpose)."""


def _module_copy(module):
    """A copy of ``module`` exposing only its public, non-module, non-eval attributes."""
    import types

    copy = types.ModuleType(module.__name__)
    for name in dir(module):
        if name.startswith("_") or name in BRIDGE_ATTRIBUTES:
            continue
        value = getattr(module, name)
        if isinstance(value, types.ModuleType):
            continue
        setattr(copy, name, value)
    return copy


def _plain_int(value) -> int:
    """An int subclass's value as a plain int, without calling anything it overrides."""
    return int.__add__(value, 0) if type(value) is not int else value


def _encode_int(value: int) -> dict:
    if value.bit_length() <= _MAX_EXACT_BITS:
        try:
            as_float = float.__repr__(int.__float__(value))
        except OverflowError:
            as_float = "inf" if value > 0 else "-inf"
        return {"error": "", "value": as_float, "exact": int.__repr__(value)}
    return {"error": "", "value": "inf" if value > 0 else "-inf",
            "detail": f"integer of {value.bit_length()} bits"}


def _encode_value(value, mode: str = _EARNEST) -> dict:
    """What solution() returned, as the worker reports it (numbers as exact strings where sane).

    Subclasses are read through the base type's own methods, so an overridden ``__repr__`` or
    ``__float__`` cannot change what is reported.
    """
    import decimal  # preloaded by the worker

    if value is None:
        return {"error": "none_returned", "detail": "solution() returned None"}
    if mode == _REFERENCE:
        # the reference accepts int and float instances (bool too: True is 1) and nothing else
        if isinstance(value, float):
            return {"error": "", "value": float.__repr__(value)}
        if isinstance(value, int):
            return _encode_int(_plain_int(value))
        return {"error": "not_a_number", "detail": f"returned a {_short(type(value).__name__, 60)}"}
    if isinstance(value, bool):
        return {"error": "not_a_number", "detail": "returned a bool"}
    if isinstance(value, int):
        return _encode_int(_plain_int(value))
    if isinstance(value, float):
        return {"error": "", "value": float.__repr__(value)}
    if isinstance(value, Fraction):
        num, den = Fraction.numerator.__get__(value), Fraction.denominator.__get__(value)
        if type(num) is not int or type(den) is not int or den <= 0:
            return {"error": "not_a_number", "detail": "returned a malformed Fraction"}
        value = Fraction(num, den)
        try:
            as_float = float.__repr__(float(value))
        except OverflowError:
            as_float = "inf" if value > 0 else "-inf"
        if max(num.bit_length(), den.bit_length()) <= _MAX_EXACT_BITS:
            return {"error": "", "value": as_float, "exact": f"{value.numerator}/{value.denominator}"}
        return {"error": "", "value": as_float}
    if isinstance(value, decimal.Decimal):
        value = decimal.Decimal(decimal.Decimal.__str__(value))
        as_float = float.__repr__(float(value))  # Decimal -> float never raises (inf / nan / 0.0)
        if value.is_finite() and abs(value.adjusted()) <= 300 and len(value.as_tuple().digits) <= 400:
            return {"error": "", "value": as_float, "exact": str(Fraction(value))}
        return {"error": "", "value": as_float}
    kind = type(value).__name__
    if isinstance(value, complex):
        return {"error": "not_a_number", "detail": "returned a complex number"}
    return {"error": "not_a_number", "detail": f"returned a {_short(str(kind), 60)}"}


def _classify(exc: BaseException, mode: str = _EARNEST) -> str:
    if mode == _REFERENCE:
        # the reference's except clauses, in its order; everything else is its catch-all
        for kind, name in ((SyntaxError, "syntax_error"), (NameError, "name_error"),
                           (AttributeError, "attribute_error"),
                           (ZeroDivisionError, "zero_division_error"),
                           ((TypeError, ValueError), "type_value_error")):
            if isinstance(exc, kind):
                return name
        return "resource_limit" if isinstance(exc, _OutputLimit) else "unclassified"
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


def _one_argument_type(obj):
    """``type`` for snippets: the type of one object, never a new class."""
    return type(obj)


def _execute(source: str, limits: dict, modules: dict, full_builtins: bool = False,
             mode: str = _EARNEST) -> dict:
    """Run the snippet in this (already isolated) process and describe the outcome."""
    import builtins

    written = [0]
    # output goes nowhere; earnest counts it against a limit, reference mode (whose print writes
    # to stdout without one) only converts it as print would
    cap = limits["out"] if mode != _REFERENCE else float("inf")

    def sandbox_print(*args, sep=" ", end="\n", file=None, flush=False):
        if written[0] > cap:
            raise _OutputLimit()
        written[0] += sum(len(str(a)) for a in args) + len(str(end)) + len(str(sep)) * max(0, len(args) - 1)
        if written[0] > cap:
            raise _OutputLimit()

    def sandbox_import(name, globals=None, locals=None, fromlist=(), level=0):
        if not level and name in _INTERNAL_IMPORTS and name in sys.modules:
            # imported by an allowed module's C code on first use (datetime.strptime); the static
            # policy refuses the name in model code
            return sys.modules[name]
        if level or name not in ALLOWED_MODULES or name not in modules:
            raise ImportError(f"import of {name!r} is not allowed")
        return modules[name]

    try:
        if mode == _REFERENCE:
            safe = {name: getattr(builtins, name) for name in REFERENCE_BUILTINS}
            safe["print"] = sandbox_print
            scope = {"__builtins__": safe}
            scope.update((name, modules[name]) for name in REFERENCE_MODULES)
            local: dict = {}
            exec(compile(source, "<solution>", "exec"), scope, local)
            value = local.get("ret")
        else:
            if full_builtins:  # tests of the OS-level limits only; never set for model output
                namespace = {"__builtins__": builtins, "__name__": "__sandbox__"}
            else:
                safe = {name: getattr(builtins, name) for name in SAFE_BUILTINS}
                safe.update(print=sandbox_print, __import__=sandbox_import,
                            __build_class__=builtins.__build_class__, type=_one_argument_type)
                namespace = {"__builtins__": safe, "__name__": "__sandbox__"}
            exec(compile(source, "<solution>", "exec"), namespace)
            solution = namespace.get("solution")
            if not callable(solution):
                return {"error": "no_function", "detail": "no callable solution() after running the code"}
            value = solution()
        if written[0] > cap:
            return {"error": "resource_limit", "detail": "output limit exceeded"}
        return _encode_value(value, mode)
    except BaseException as exc:  # noqa: BLE001 - every failure is a result here
        if written[0] > cap:
            return {"error": "resource_limit", "detail": "output limit exceeded"}
        detail = "output limit exceeded" if isinstance(exc, _OutputLimit) else _describe(exc)
        return {"error": _classify(exc, mode), "detail": detail}


def _landlock_abi(libc) -> int:
    if libc is None:
        return 0
    abi = libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, 0, _LANDLOCK_CREATE_RULESET_VERSION)
    return abi if abi > 0 else 0


def _landlock_deny_all(libc, abi: int) -> None:
    """Enforce a Landlock domain with every access right handled and no rule: no file access at
    all, no TCP (ABI >= 4), no signals out of the domain or abstract unix sockets (ABI >= 6)."""
    import ctypes

    fs = (1 << 13) - 1  # ABI 1: execute ... make_sym
    if abi >= 2:
        fs |= 1 << 13   # refer
    if abi >= 3:
        fs |= 1 << 14   # truncate
    if abi >= 5:
        fs |= 1 << 15   # ioctl_dev
    fields = [fs]
    if abi >= 4:
        fields.append(0b11)  # bind_tcp, connect_tcp
    if abi >= 6:
        fields.append(0b11)  # scope: abstract unix socket, signal
    attr = (ctypes.c_uint64 * len(fields))(*fields)
    fd = libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.sizeof(attr), 0)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        if libc.syscall(_SYS_LANDLOCK_RESTRICT_SELF, fd, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(fd)


def _seccomp_filter():
    """The seccomp program (allow by default, EPERM for ``_DENIED_SYSCALLS``, for opening a file to
    write or create it, and for ``TIOCSTI``; other architectures' calls kill), compiled once in the
    worker by libseccomp into a ``struct sock_fprog`` that each child installs with one prctl; None
    without libseccomp."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError:
        return None

    class ArgCmp(ctypes.Structure):
        _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int),
                    ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]

    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                           ctypes.c_uint, ctypes.POINTER(ArgCmp)]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    ctx = lib.seccomp_init(_SCMP_ACT_ALLOW)
    if not ctx:
        return None
    try:
        def add(syscall: str, *cmps: tuple[int, int, int, int]) -> None:
            nr = lib.seccomp_syscall_resolve_name(syscall.encode())
            if nr < 0:  # not a system call on this architecture
                return
            array = (ArgCmp * max(1, len(cmps)))(*[ArgCmp(*c) for c in cmps])
            rc = lib.seccomp_rule_add_array(ctx, _SCMP_ACT_ERRNO_EPERM, nr, len(cmps), array if cmps else None)
            if rc < 0:
                raise OSError(-rc, f"seccomp rule for {syscall} failed")

        for syscall in _DENIED_SYSCALLS:
            add(syscall)
        for flag in _O_WRITE_FLAGS:
            add("open", (1, _SCMP_CMP_MASKED_EQ, flag, flag))
            add("openat", (2, _SCMP_CMP_MASKED_EQ, flag, flag))
        add("ioctl", (1, _SCMP_CMP_EQ, _TIOCSTI, 0))
        r, w = os.pipe()
        try:
            rc = lib.seccomp_export_bpf(ctx, w)
            os.close(w)
            w = -1
            if rc != 0:
                raise OSError(-rc, "seccomp_export_bpf failed")
            program = b""
            while chunk := os.read(r, 65536):
                program += chunk
        finally:
            os.close(r)
            if w >= 0:
                os.close(w)
    finally:
        lib.seccomp_release(ctx)
    if not program or len(program) % 8:
        return None

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_char_p))
    return fprog, buffer  # the buffer must stay alive as long as the program


def _child(request: dict, workdir: str, result_w: int, devnull: int, libc, root: bool,
           modules: dict, worker_pid: int, landlock: int, seccomp) -> None:
    """Body of the forked child: isolate, limit, run, report on fd 3, exit."""
    import fcntl  # preloaded by the worker: after chroot / Landlock nothing more can be imported
    import resource

    source, limits = request["source"], request["limits"]
    mode = _REFERENCE if request.get("mode") == _REFERENCE else _EARNEST
    try:
        os.setsid()
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        # stdio -> /dev/null, result pipe -> fd 3; move both above the low fds first so that
        # neither can be overwritten by the other's dup2 (whatever numbers they had)
        result_hi = fcntl.fcntl(result_w, fcntl.F_DUPFD_CLOEXEC, 10)
        null_hi = fcntl.fcntl(devnull, fcntl.F_DUPFD_CLOEXEC, 10)
        for fd in (0, 1, 2):
            os.dup2(null_hi, fd)
        os.dup2(result_hi, 3)
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
            if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                raise OSError("PR_SET_NO_NEW_PRIVS failed")
        if os.getppid() != worker_pid:  # the worker died before prctl took effect
            os._exit(1)
        if landlock:
            _landlock_deny_all(libc, landlock)
        if seccomp is not None:
            import ctypes  # preloaded by the worker

            if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(seccomp[0]), 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "PR_SET_SECCOMP failed")
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
        outcome = _execute(source, limits, modules, bool(request.get("full_builtins")), mode)
    except BaseException as exc:  # noqa: BLE001
        outcome = {"error": "unclassified", "detail": "sandbox setup failed: " + _describe(exc)}
    try:
        data = json.dumps(outcome).encode()
    except BaseException:  # noqa: BLE001
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
    timed_out = oversized = False
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
        if size > _MAX_RESULT:
            oversized = True
            break
    # the child is not reaped yet, so its process group id cannot have been reused
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    _, status = os.waitpid(pid, 0)
    if timed_out:
        return {"error": "timeout", "detail": f"wall-clock limit of {wall:g} s"}
    if oversized:
        return {"error": "unclassified", "detail": "malformed result from the sandbox (oversized)"}
    if chunks:
        try:
            reply = json.loads(b"".join(chunks))
        except (ValueError, RecursionError):
            reply = None
        if isinstance(reply, dict):
            return reply
        return {"error": "unclassified", "detail": "malformed result from the sandbox (not a JSON object)"}
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig in (signal.SIGXCPU, signal.SIGKILL):
            return {"error": "timeout", "detail": f"CPU time limit (signal {signal.Signals(sig).name})"}
        if sig in (signal.SIGSEGV, signal.SIGBUS, signal.SIGXFSZ, signal.SIGABRT):
            return {"error": "resource_limit", "detail": f"killed by {signal.Signals(sig).name}"}
        return {"error": "unclassified", "detail": f"killed by signal {sig}"}
    return {"error": "unclassified", "detail": f"exited with status {os.waitstatus_to_exitcode(status)} without a result"}


def _remove_stale_dirs(tmp: str) -> None:
    """Remove temporary directories of this host's workers that no longer exist (killed before
    they could clean up); other hosts' and live processes' directories are left alone."""
    import shutil

    pattern = re.compile(re.escape(_temp_prefix()) + r"(\d+)-")
    try:
        names = os.listdir(tmp)
    except OSError:
        return
    for name in names:
        m = pattern.match(name)
        if m is None:
            continue
        path = os.path.join(tmp, name)
        try:
            if os.lstat(path).st_uid != os.geteuid():
                continue
            os.kill(int(m.group(1)), 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except OSError:
            continue


def _worker_main() -> None:
    import fcntl  # noqa: F401 - preloaded for the children
    import importlib
    import random
    import resource  # noqa: F401 - preloaded for the children
    import shutil
    import tempfile

    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # a vanished caller is an error, not death

    def stop(signum, frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
    libc = None
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
    except Exception:
        libc = None
    modules = {}
    for name in sorted(ALLOWED_MODULES | set(REFERENCE_MODULES)):
        modules[name] = _module_copy(importlib.import_module(name))
    for lazy in _INTERNAL_IMPORTS + ("encodings.idna",):  # imported on first use by datetime / str
        try:
            importlib.import_module(lazy)
        except ImportError:
            pass
    random.seed(0)  # every child starts from the same state: reproducible answers
    root = os.geteuid() == 0
    netns = False
    if root and libc is not None:
        netns = libc.unshare(_CLONE_NEWNET) == 0
    landlock = _landlock_abi(libc)
    try:
        seccomp = _seccomp_filter() if libc is not None else None
    except OSError:
        seccomp = None
    tmp = tempfile.gettempdir()
    _remove_stale_dirs(tmp)
    base = tempfile.mkdtemp(prefix=f"{_temp_prefix()}{os.getpid()}-")
    try:
        os.chmod(base, 0o711)
        devnull = os.open(os.devnull, os.O_RDWR)
        proto_in, proto_out = 0, os.dup(1)
        os.dup2(devnull, 1)  # nothing printed by mistake can corrupt the protocol stream
        _send(proto_out, {"pid": os.getpid(), "base": base, "netns": netns, "chroot": root,
                          "setuid": root, "nofile": 4, "no_new_privs": libc is not None,
                          "landlock": landlock, "seccomp": seccomp is not None})
        counter = 0
        worker_pid = os.getpid()
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
                _child(request, workdir, result_w, devnull, libc, root, modules, worker_pid,
                       landlock, seccomp)
                os._exit(1)  # not reached
            os.close(result_w)
            try:
                reply = _wait_child(pid, result_r, float(request["limits"]["wall"]))
            finally:
                os.close(result_r)
                shutil.rmtree(workdir, ignore_errors=True)
            _send(proto_out, reply)
    except (OSError, SystemExit):  # the caller went away (EPIPE) or asked us to stop
        pass
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__" and len(sys.argv) >= 2 and sys.argv[1] == "--worker":
    _worker_main()
