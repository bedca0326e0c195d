"""Run model-written Python: the kernel is the boundary; the static policy only classifies.

Each snippet runs in a fresh fork of a pre-started worker interpreter (``python -I -S``, started
with an empty environment; ``Sandbox(python=...)`` chooses the interpreter). The layers, and what
each stops on its own (tests/test_sandbox_layers.py runs a hostile corpus under each one alone, as
root and as an unprivileged user, with the static policy off):

1. **seccomp allowlist** (no root needed; compiled by libseccomp through ctypes, or where it is
   missing by earnest itself for x86_64 and aarch64, ``_bpf_allowlist``): default deny — every system
   call not in ``ALLOWED_SYSCALLS`` fails with EPERM (memory, process-private futexes, the
   system's and its own clocks, getrandom, signal return, write on the descriptor it holds, exit;
   nothing that takes a path, no other process or its CPU clock, no IPC, no shared futex, no
   socket, no scheduling or priority call, no prctl, no fork or exec); other architectures' calls
   kill. Alone it stops every attack class of the corpus; it is the only layer that stops a futex
   shared between answers running at once (keyed by a page of libc, a file every answer maps, it
   crosses namespaces and Landlock domains).
2. **Namespaces** where the kernel allows unprivileged user namespaces (or as root): the worker
   gets its own user (not as root), mount, network, UTS, pid and IPC namespaces, with an empty
   read-only tmpfs as its root (no path leads anywhere: no file to read, write or stat; no
   network). Snippets run in the worker's pid namespace, under an init of ours
   (``_namespace_init``): a snippet sees no process but itself and that init (no-one to signal,
   trace or re-limit), and after every answer the init kills whatever it left and the worker
   removes every SysV IPC object in the namespace, so nothing it makes reaches the next answer;
   the namespace's own limits allow no SysV object at all (``sysv-ipc-off``, where the kernel lets
   the namespace's owner set them: a segment's memory is counted in no limit of the answer's), and
   an init whose limits an answer changed is replaced before the next answer.
   (Fresh pid and IPC namespaces per answer hold the same but cost three times the throughput:
   65 against 195 answers/s measured in the same run.) Each answer also gets a user namespace of
   its own (``user-per-answer``, where the kernel allows one to nobody; capabilities dropped): the
   user keyring (``keyctl``), which the kernel keeps per user namespace and uid and not per process,
   is then a fresh one that dies with the answer — otherwise a key one answer adds reaches the
   next answer and, as root (every answer is nobody), outlives it on the host. Alone this layer
   stops file, process, IPC (keyrings included), network and survivor attacks.
3. **Landlock** (Linux >= 5.13): no file access at all; TCP (ABI >= 4), signals and abstract
   sockets out of the domain (ABI >= 6). Alone it stops file content reads and writes, TCP; not
   ``stat``, IPC or keys in the user keyring, nor (as an ordinary user) the user's persistent
   keyring (``keyctl get_persistent``: Kerberos tickets may live there), nor calls on other
   processes of the same user (their limits, priority: ``prlimit64``, ``setpriority``; signals
   before ABI 6), which only the allowlist and the namespaces stop: with Landlock alone, as an
   ordinary user, an answer can re-limit the caller and its neighbours (tests/sandbox_attacks.py
   does not try it there).
4. **Always**: no_new_privs; as root setuid/setgid to 65534 (and a chroot into an empty directory
   where there are no namespaces); capabilities dropped inside a user namespace; an empty
   environment; one descriptor (the result pipe, fd 3); rlimits (CPU, address space, no file
   size, no processes, 4 descriptors, no core); parent-death signals and a wall-clock alarm; the
   worker's request and result buffers wiped after each snippet (a snippet that reads its own
   memory finds nothing of another answer's); a session keyring of its own, new and empty, in the
   worker and again in every child (the keys of the caller's login session, which a process holds
   whatever its uid, are out of reach, and no answer shares one with the next).
5. **Static policy** (``check_source``; ``Sandbox(disable=("static",))`` switches it off): it
   decides failure classes, not containment. earnest mode refuses imports outside
   ``ALLOWED_MODULES``, dunders and the like (``forbidden_construct``) and gives copies of the
   allowed modules without private, module-valued or string-to-code attributes; reference mode
   refuses only what the authors' forbidden-string check refuses (``forbidden_string``) and runs
   the rest as they do — their builtins (the real ``print``, to a strict UTF-8 stdout that keeps
   nothing) and the real modules — contained by the layers above.

Where no layer that blocks file reads (seccomp, namespaces, Landlock, root's chroot) is present,
model code does not run: ``SandboxUnavailable`` says which layer is missing and how to get it.
``Sandbox.capabilities()`` and ``describe()`` name the layers in force; scored tables carry them.
The calling process trusts nothing that comes back: a reply is size-limited before it is parsed
and validated field by field; anything malformed becomes that answer's ``unclassified`` result. A
snippet can still forge its own result (by writing to fd 3), never another answer's. An error of
the machine is not a class: a worker that cannot fork a child for an answer, or a child whose
set-up fails before model code runs (it marks its pipe with ``_READY`` once set up), is retried and
then ``SandboxUnavailable``; the worker says so in its own status, never in the answer's report
(``_WorkerFailure``), so no answer can end a batch by forging one; uid 0 without 65534 mapped (a rootless container) is an ordinary user.

Result classes: :data:`ERROR_CLASSES`, named as ``earnest.gsm.failure_classes`` names them (Appendix F of the GSM-Symbolic re-evaluation, plus
``timeout`` and ``resource_limit``; in reference mode these two are reported as ``unclassified``,
the reference's catch-all, since the reference has no limits). Model code is compiled with the
running interpreter's own flags (``dont_inherit``): this file's ``__future__`` imports never apply.

This file must import only the standard library: it is also the worker program
(``python -I -S sandbox.py --worker TOKEN``).
"""

from __future__ import annotations

import ast
import io
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
#: ``singledispatch`` / ``get_type_hints``, which ``eval`` annotations); refused by earnest mode's
#: static policy and left out of the module copies its snippets see. Reference mode refuses only the
#: authors' forbidden strings and gives the real modules, these attributes included.
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
#: Reference mode: the state of ``random`` every answer starts from, the authors' ``set_seed(42)`` at the
#: start of their run (scripts/benchmark.py); in their one process the state then goes on from answer
#: to answer (resources/FIDELITY.md, section 15), here every answer starts from it afresh.
REFERENCE_RANDOM_SEED = 42

#: Reference mode: its forbidden-string check on the raw text of the extracted function.
REFERENCE_FORBIDDEN = re.compile(r"(?:open|eval|exec|__import__|[gs]etattr)\(.*\)")

#: Longer sources are not run (a model answer is bounded by max_new_tokens; this is far above).
MAX_SOURCE_CHARS = 200_000

# Values whose integer part needs more bits than a float can hold are reported as +-inf.
_MAX_EXACT_BITS = 1024
_EARNEST, _REFERENCE = "earnest", "reference"  # = earnest.fidelity's names (standard library only here)

#: Classes a run can end in ("" = it returned a number). The sandbox knows no benchmark: these names
#: are defined here, and the failure-class taxonomy that scores the answers imports them
#: (earnest.gsm.failure_classes, Appendix F; tests/test_failure_classes.py checks the order). The
#: worker's code writes them as strings (it runs this file alone, standard library only);
#: ``validate_reply`` turns any name that is not one of them into ``unclassified``.
NO_FUNCTION = "no_function"
FORBIDDEN_STRING = "forbidden_string"
FORBIDDEN_CONSTRUCT = "forbidden_construct"
SYNTAX_ERROR = "syntax_error"
NAME_ERROR = "name_error"
TYPE_VALUE_ERROR = "type_value_error"
ZERO_DIVISION_ERROR = "zero_division_error"
ATTRIBUTE_ERROR = "attribute_error"
NONE_RETURNED = "none_returned"
NOT_A_NUMBER = "not_a_number"
UNCLASSIFIED = "unclassified"
TIMEOUT = "timeout"
RESOURCE_LIMIT = "resource_limit"
#: earnest mode's classes, in the taxonomy's legend order; reference mode's (no limits, the
#: reference's forbidden-string check instead of earnest's static one)
ERROR_CLASSES = (NO_FUNCTION, FORBIDDEN_CONSTRUCT, SYNTAX_ERROR, NAME_ERROR, TYPE_VALUE_ERROR, ZERO_DIVISION_ERROR,
                 ATTRIBUTE_ERROR, NONE_RETURNED, NOT_A_NUMBER, UNCLASSIFIED, TIMEOUT, RESOURCE_LIMIT)
REFERENCE_ERROR_CLASSES = (NO_FUNCTION, FORBIDDEN_STRING, SYNTAX_ERROR, NAME_ERROR, TYPE_VALUE_ERROR,
                           ZERO_DIVISION_ERROR, ATTRIBUTE_ERROR, NONE_RETURNED, NOT_A_NUMBER, UNCLASSIFIED)
_KNOWN_CLASSES = frozenset(ERROR_CLASSES + REFERENCE_ERROR_CLASSES)


@dataclass(frozen=True)
class Limits:
    """Per-snippet limits. ``wall_seconds`` is enforced by killing the child's process group."""

    cpu_seconds: int = 2
    wall_seconds: float = 5.0
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


def _size_limit(source: str, fidelity: str) -> RunResult | None:
    """A source too long to run (checked with the static policy on or off); ValueError for a
    fidelity that is not a mode."""
    if fidelity not in (_EARNEST, _REFERENCE):
        raise ValueError(f"fidelity: {fidelity!r} is not a fidelity mode")
    if len(source) > MAX_SOURCE_CHARS:
        return RunResult(UNCLASSIFIED if fidelity == _REFERENCE else RESOURCE_LIMIT,
                         detail=f"resource limit: source of {len(source)} characters (limit {MAX_SOURCE_CHARS})")
    return None


def check_source(source: str, fidelity: str = _EARNEST, *, foreign_python: bool = False) -> RunResult | None:
    """The static policy: a RunResult if ``source`` is not to be run, else None. It classifies;
    it is not what contains model code (the process layers are).

    earnest: ``resource_limit`` for an oversized source, ``syntax_error``, ``forbidden_construct``
    (``find_violations``). With ``foreign_python`` (model code runs on another interpreter than
    this one) a source this Python cannot parse is left to that interpreter to judge.
    reference: the reference's own static check only — its forbidden strings
    (``forbidden_string``) — and ``unclassified`` for an oversized source (a limit the reference
    does not have); syntax errors are what compiling raises in the interpreter that runs it, as in
    the reference (``syntax_error``; ``type_value_error`` for a null byte before Python 3.12).
    """
    oversized = _size_limit(source, fidelity)
    if oversized is not None:
        return oversized
    if fidelity == _REFERENCE:
        m = REFERENCE_FORBIDDEN.search(source)
        if m is not None:
            return RunResult(FORBIDDEN_STRING, detail=f"forbidden string {_short(m.group(), 60)!r}")
        return None
    try:
        # SyntaxWarnings about model code are not ours to print; the lock keeps concurrent
        # callers from restoring each other's filters
        with _WARNINGS_LOCK, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source, filename="<solution>")
    except (SyntaxError, ValueError) as exc:  # SyntaxError includes IndentationError; ValueError: a null byte
        return None if foreign_python else RunResult(SYNTAX_ERROR, detail=_describe(exc))
    except (RecursionError, MemoryError, OverflowError) as exc:
        # absurd nesting, literals past the int-string limit
        return RunResult(SYNTAX_ERROR, detail=f"{type(exc).__name__}: {_short(str(exc))}")
    problems = find_violations(tree, names=True)
    if problems:
        return RunResult(FORBIDDEN_CONSTRUCT, detail="; ".join(problems[:5]))
    return None


# --------------------------------------------------------------------------------------------
# Calling side: a pool of worker processes
# --------------------------------------------------------------------------------------------

_HEADER = struct.Struct(">I")
_PAIR = struct.Struct(">II")  # a control object's length, then a payload's
# a request: up to MAX_SOURCE_CHARS characters, JSON-escaped (at most 12 bytes each: a character
# outside the BMP is two \uXXXX escapes), and its limits
_MAX_MESSAGE = 12 * MAX_SOURCE_CHARS + 4096
_MAX_RESULT = 64 * 1024  # a child's report: a class, a number and a short detail
#: The child's first byte on its result pipe once its set-up is done, just before model code runs:
#: a report without it is the set-up's own failure (an error of the machine, not a class of the
#: answer), and no model code can forge one, since the byte is already on the pipe when it runs.
_READY = b"R"
_FLOAT_TEXT = re.compile(r"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|inf|nan)")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_EXACT_TEXT = re.compile(r"-?\d{1,1000}(?:/[1-9]\d{0,999})?")


class SandboxUnavailable(RuntimeError):
    """Model code cannot run safely here (no layer blocks file reads), or no worker starts."""


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


def _write_all(fd: int, data) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _send(fd: int, obj: dict) -> None:
    data = json.dumps(obj).encode()
    _write_all(fd, _HEADER.pack(len(data)) + data)


def _send_pair(fd: int, control: dict, payload) -> None:
    """A small control object and a payload (bytes or a view), framed together."""
    head = json.dumps(control).encode()
    _write_all(fd, _PAIR.pack(len(head), len(payload)) + head)
    _write_all(fd, payload)


def _send_to_worker(fd: int, control: dict, payload) -> None:
    """``_send_pair`` to a worker that may have died: SIGPIPE blocked in this thread while writing,
    and the one a write to a dead worker raises taken off, so that a caller whose SIGPIPE is at its
    default (a command-line tool made for ``| head``, a host program) gets BrokenPipeError, not death."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGPIPE})
    try:
        _send_pair(fd, control, payload)
    except BrokenPipeError:
        if signal.SIGPIPE not in old:
            signal.sigtimedwait([signal.SIGPIPE], 0)
        raise
    finally:
        if signal.SIGPIPE not in old:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _parse_object(body: bytes) -> dict | None:
    try:
        obj = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


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
    return None if body is None else _parse_object(body)


def _receive_pair_head(fd: int, deadline: float | None = None) -> tuple[dict, int] | None:
    """The control object of a pair and the payload's length (the payload is left to read)."""
    head = _read_exact(fd, _PAIR.size, deadline)
    if head is None:
        return None
    size, payload = _PAIR.unpack(head)
    if size > 4096 or payload > _MAX_MESSAGE:
        return None
    body = _read_exact(fd, size, deadline)
    control = None if body is None else _parse_object(body)
    return None if control is None else (control, payload)


def _interpret(status: dict, body: bytes, wall: float) -> dict:
    """The worker's account of one child (its status and the raw bytes it reported) as a reply
    object; ``validate_reply`` then checks every field of it."""
    if status.get("timed_out"):
        return {"error": "timeout", "detail": f"wall-clock limit of {wall:g} s"}
    if status.get("oversized"):
        return {"error": "unclassified", "detail": "malformed result from the sandbox (oversized)"}
    if body:
        reply = _parse_object(body)
        if reply is not None:
            return reply
        return {"error": "unclassified", "detail": "malformed result from the sandbox (not a JSON object)"}
    sig = status.get("signal")
    if isinstance(sig, int) and 0 < sig < 65:
        if sig in (signal.SIGXCPU, signal.SIGKILL):
            return {"error": "timeout", "detail": f"CPU time limit (signal {signal.Signals(sig).name})"}
        if sig == signal.SIGALRM:
            return {"error": "timeout", "detail": "wall-clock limit (SIGALRM)"}
        if sig in (signal.SIGSEGV, signal.SIGBUS, signal.SIGXFSZ, signal.SIGABRT, signal.SIGSYS):
            return {"error": "resource_limit", "detail": f"killed by {signal.Signals(sig).name}"}
        return {"error": "unclassified", "detail": f"killed by signal {sig}"}
    return {"error": "unclassified", "detail": "ended without a result"}


def validate_reply(reply: object, fidelity: str = _EARNEST) -> RunResult:
    """Turn a worker's reply into a RunResult, trusting nothing in it: anything malformed (wrong
    types, an unknown class, a value that is not a number's text) is ``unclassified``."""
    def malformed(why: str) -> RunResult:
        return RunResult(UNCLASSIFIED, detail=f"malformed result from the sandbox ({why})")

    if not isinstance(reply, dict):
        return malformed("not an object")
    if "error" not in reply:  # every report of the child's names its class ("" for a value)
        return malformed("no error class: not a report of the sandbox's")
    error = reply.get("error", UNCLASSIFIED)
    detail = reply.get("detail", "")
    # printable text only: a lone surrogate (no UTF-8 encoding: a log or a file written with it
    # fails), NUL and terminal control sequences become escapes
    detail = _CONTROL.sub(lambda m: ascii(m.group())[1:-1], _short(detail)) if isinstance(detail, str) else ""
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

#: How to get each layer that blocks file reads where it is missing.
LAYER_HINTS = {
    "seccomp": "a kernel with seccomp filters (CONFIG_SECCOMP_FILTER=y, every distribution kernel since 3.5); "
               "on machines other than x86_64 and aarch64 also libseccomp2 (Debian/Ubuntu: apt-get install "
               "libseccomp2; RHEL: dnf install libseccomp)",
    "landlock": "Linux >= 5.13 with Landlock enabled (CONFIG_SECURITY_LANDLOCK=y and 'landlock' in the lsm= "
                "boot parameter)",
    "namespaces": "unprivileged user namespaces (sysctl user.max_user_namespaces > 0; on Debian/Ubuntu also "
                  "kernel.unprivileged_userns_clone=1 and, on Ubuntu >= 23.10, "
                  "kernel.apparmor_restrict_unprivileged_userns=0), or run as root",
}


#: What Landlock alone leaves open to an ordinary user's answers (docs/sandbox.md), said where it is
#: the only layer.
LANDLOCK_ALONE_GAPS = (", but with Landlock alone an answer can change the resource limits and priority of this "
                       "user's other processes, this run's included, and pass SysV IPC objects and keys between "
                       "answers; add seccomp to close these")


def missing_layers_warning(missing: list[str], blockers: list[str], uid) -> str:
    """What the sandbox says once where some layers are ``missing`` on the machine and ``blockers``
    (the layers that block file reads) remain, for a worker running as ``uid``."""
    gaps = LANDLOCK_ALONE_GAPS if list(blockers) == ["landlock"] and uid != 0 else ""
    return (f"model code runs without {', '.join(missing)} on this machine; {', '.join(blockers)} still hold "
            f"(see the earnest.sandbox docstring){gaps}. To add them: "
            + "; ".join(f"{n}: {LAYER_HINTS[n]}" for n in missing))


@dataclass(frozen=True)
class _WorkerFailure:
    """The worker's own failure to run an answer (``fork``: no process for it; ``setup``: its
    process ended before model code ran), told by the worker's status, never by an answer."""

    kind: str
    detail: str


_NOT_SENT = object()  # the request never reached a live worker: nothing of the answer ran


class _Worker:
    """One pre-started worker interpreter; used by one thread at a time."""

    def __init__(self, token: str, python: str, disabled: frozenset):
        self.token = token
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
                [self.python, "-I", "-S", os.path.abspath(__file__), "--worker", self.token,
                 tempfile.gettempdir(), ",".join(sorted(self.disabled)) or "-"],
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
            raise SandboxUnavailable(f"sandbox: the worker ({self.python} -I -S {os.path.abspath(__file__)}) "
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
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        proc.stdout.close()
        base = self.info.get("base")
        if isinstance(base, str) and os.path.basename(base).startswith(_TEMP_PREFIX):
            import shutil

            shutil.rmtree(base, ignore_errors=True)  # in case the worker could not

    def request(self, source: str, limits: Limits, full_builtins: bool = False,
                fidelity: str = _EARNEST) -> dict:
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
            reply = self._request_once(source, limits, full_builtins, fidelity)
            if reply is _NOT_SENT:  # the worker had died while idle: the answer never ran; a fresh one
                reply = self._request_once(source, limits, full_builtins, fidelity)
            if reply is _NOT_SENT:
                return {"error": UNCLASSIFIED, "detail": "sandbox worker died, hung or sent garbage; restarted"}
            if not isinstance(reply, _WorkerFailure):
                return reply
            failure = reply
            if pause is not None:
                time.sleep(pause)
        if failure.kind == "fork":
            raise SandboxUnavailable(
                f"sandbox: the worker cannot start a process for an answer ({failure.detail}): the "
                "process limit of this user (ulimit -u, RLIMIT_NPROC; every process and thread of the user "
                "on this machine counts) or the memory is exhausted; no answer of this batch was scored")
        raise SandboxUnavailable(
            f"sandbox: the process for an answer could not be set up, before any model code ran "
            f"({failure.detail}); no answer of this batch was scored")

    def _request_once(self, source: str, limits: Limits, full_builtins: bool, fidelity: str):
        """The reply to one request (a dict: the answer's report, or the worker's account of how
        the answer's process ended), ``_NOT_SENT`` or a ``_WorkerFailure``."""
        if self.proc is None:
            self.start()
        proc = self.proc  # Sandbox.close() in another thread may set self.proc to None meanwhile
        if proc is None:
            raise RuntimeError("sandbox is closed")
        payload = json.dumps({"source": source, "limits": limits.as_dict(),
                              "full_builtins": bool(full_builtins), "mode": fidelity}).encode()
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
            return _WorkerFailure("setup", _short(detail or "the process ended before it was set up", 200))
        return _interpret(head[0], body, wall)


def resolve_python(python: str) -> str:
    """The real executable behind ``python`` (a name on PATH, a pyenv shim, a path): the workers
    start it with an empty environment, in which wrappers that need one do not work."""
    import shutil

    found = shutil.which(python)
    if found is None and "/" not in python:
        raise SandboxUnavailable(f"sandbox.python: {python!r} is not on PATH (give a path to a Python "
                                 f"interpreter, or the name of one on PATH)")
    found = found or python
    try:
        proc = subprocess.run([found, "-c", "import sys; print(sys.executable)"], capture_output=True,
                              text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxUnavailable(f"sandbox.python: {python!r} does not run: {exc}") from exc
    exe = proc.stdout.strip()
    if proc.returncode != 0 or not exe or not os.path.isfile(exe):
        raise SandboxUnavailable(f"sandbox.python: {python!r} does not run as a Python interpreter "
                                 f"(exit status {proc.returncode}: {_short(proc.stderr.strip(), 200)})")
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
                 python: str | None = None, disable=(), seccomp_compiler: str = "auto"):
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
        self._idle: list[_Worker] = [_Worker(self.token, self.python, worker_layers)
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
                caps = {k: v for k, v in w.info.items() if k not in ("pid", "base", "executable", "init_pid")}
                caps["static_policy"] = self.static
                caps["layers"] = (["static"] if self.static else []) + list(caps.get("layers", []))
                return caps
        return {}

    def describe(self) -> str:
        """One line for tables and reports: the layers in force and the Python that ran model code."""
        caps = self.capabilities(start=True)
        parts = []
        for layer in caps["layers"]:
            if layer == "landlock":
                parts.append(f"landlock-abi{caps['landlock']}")
            elif layer == "seccomp":
                # who compiled it, where not libseccomp (the usual case keeps its plain name)
                parts.append("seccomp-allowlist" + ("(earnest)" if caps.get("seccomp_compiler") == "earnest" else ""))
            elif layer == "namespaces":
                parts.append("namespaces(" + ",".join(caps["namespaces"]) + ")")
            else:
                parts.append(layer)
        return f"python {caps['python']}; " + " + ".join(parts)

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

    def run_many(self, sources: list[str], *, fidelity: str = _EARNEST) -> list[RunResult]:
        """``run`` for each source, in order, spread over the workers. Raises
        ``SandboxUnavailable`` (in the calling thread) if model code cannot run here."""
        return self._run_batch(sources, fidelity=fidelity, check=True)

    def _run_many_unchecked(self, sources: list[str], *, full_builtins: bool = False,
                            fidelity: str = _EARNEST) -> list[RunResult]:
        """``run_many`` without the static check and, with ``full_builtins``, with the real
        builtins (the tests' model of answers that escaped the Python layer completely)."""
        return self._run_batch(sources, fidelity=fidelity, check=False, full_builtins=full_builtins)

    def _run_batch(self, sources: list[str], *, fidelity: str, check: bool,
                   full_builtins: bool = False) -> list[RunResult]:
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
                                                       fidelity=fidelity)
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
# Worker side (runs as `python -I -S sandbox.py --worker TOKEN TMPDIR DISABLED`)
# --------------------------------------------------------------------------------------------

_CLONE_NEWUTS, _CLONE_NEWIPC, _CLONE_NEWUSER = 0x04000000, 0x08000000, 0x10000000
_CLONE_NEWPID, _CLONE_NEWNET, _CLONE_NEWNS = 0x20000000, 0x40000000, 0x00020000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_MNT_DETACH = 2
_PR_SET_PDEATHSIG = 1
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_DUMPABLE = 4
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
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

# seccomp: libseccomp's constants (seccomp.h), which earnest's own compiler uses too
_SCMP_ACT_ALLOW = 0x7FFF0000
_SCMP_ACT_ERRNO_EPERM = 0x00050000 | 1
_SCMP_CMP_EQ, _SCMP_CMP_MASKED_EQ = 4, 7
_PROT_EXEC = 0x4
_FUTEX_PRIVATE_FLAG = 128
#: clock ids the answer's clock calls may name: the system's clocks (0-15: CLOCK_REALTIME ..
#: CLOCK_TAI, the process's and thread's own CPU clocks); a negative id names another process's or
#: thread's CPU clock (``~pid << 3 | type``), whose time (and with it, the process list) is refused
_CLOCK_ID_MASK = 0xFFFFFFF0

#: The system calls a child may make once model code runs; everything else fails with EPERM
#: (and other architectures' calls kill it). Measured with ``strace -f`` on the worker running the
#: 89 golden code answers in both modes and answers that allocate, recurse, print and loop until
#: their limits: after the filter CPython made only brk, mmap, munmap, write and exit_group. The
#: rest are harmless calls it makes on other paths (large reallocations, random.seed(), clocks
#: without the vDSO, a signal interrupting a call, glibc's own locking). The child holds one
#: descriptor (its result pipe, fd 3) and no path: nothing here takes one.
ALLOWED_SYSCALLS = {
    # computing: memory. mmap/mprotect without PROT_EXEC (see _seccomp_filter); an mmap of a file
    # is impossible (the only descriptor is a pipe)
    "brk": "the heap (pymalloc arenas, big ints)",
    "mmap": "large allocations (anonymous only; no PROT_EXEC)",
    "munmap": "freeing large allocations",
    "mremap": "growing large allocations (lists, bytearrays)",
    "mprotect": "glibc malloc's arena set-up (no PROT_EXEC)",
    "madvise": "glibc malloc returning memory",
    # computing: the interpreter itself
    "futex": "the GIL and locks (one thread: never contended); process-private operations only",
    "getrandom": "random.seed() / os.urandom without a file",
    "clock_gettime": "time and datetime.now() (also the vDSO's fallback); the system's and its own clocks only",
    "clock_getres": "time.get_clock_info (the same clocks)",
    "gettimeofday": "the vDSO's fallback",
    "clock_nanosleep": "time.sleep (bounded by the wall-clock limit; the same clocks)",
    "nanosleep": "time.sleep on older glibc",
    "sched_yield": "lock spinning in libc",
    "getpid": "CPython's fork/thread-state checks",
    "gettid": "CPython's thread state",
    "rt_sigprocmask": "glibc blocking signals around its own critical sections",
    "rt_sigreturn": "returning from a signal handler (SIGXCPU, SIGALRM end the child)",
    "restart_syscall": "a system call interrupted by a signal",
    # writing the result and ending
    "write": "the result on fd 3 (the only descriptor the child holds)",
    "exit": "ending",
    "exit_group": "ending (os._exit)",
}
#: Allowed only with these arguments: (argument index, comparison, mask or value, value).
#: Argument conditions, (index, op, mask, value): the call is allowed only where every
#: ``argument & mask == value`` (masks in the low 32 bits). A futex without FUTEX_PRIVATE_FLAG is
#: keyed by the page's file and offset where the page belongs to a file (libc's pages, which every
#: answer maps): such a futex reaches another answer's process whatever the namespaces and Landlock
#: domains, a channel between answers running at once; CPython and glibc use private futexes only.
#: A clock id outside 0-15 is another process's or thread's CPU clock (issue 39).
_ALLOWED_WITH_ARGS = {
    "mmap": [(2, _SCMP_CMP_MASKED_EQ, _PROT_EXEC, 0)],
    "mprotect": [(2, _SCMP_CMP_MASKED_EQ, _PROT_EXEC, 0)],
    "futex": [(1, _SCMP_CMP_MASKED_EQ, _FUTEX_PRIVATE_FLAG, _FUTEX_PRIVATE_FLAG)],
    "clock_gettime": [(0, _SCMP_CMP_MASKED_EQ, _CLOCK_ID_MASK, 0)],
    "clock_getres": [(0, _SCMP_CMP_MASKED_EQ, _CLOCK_ID_MASK, 0)],
    "clock_nanosleep": [(0, _SCMP_CMP_MASKED_EQ, _CLOCK_ID_MASK, 0)],
}

#: Every isolation layer, by the name ``Sandbox(disable=...)`` and ``capabilities()`` use.
LAYERS = ("static", "namespaces", "landlock", "seccomp")

# modules the allowed modules import lazily from C (preloaded by the worker)
_INTERNAL_IMPORTS = ("_strptime", "time")


class _OutputLimit(BaseException):
    """Raised by the sandbox print once the output limit is passed (not an Exception on purpose)."""


class _Discard(io.RawIOBase):
    """A byte sink: the end of reference mode's standard output (nothing is kept)."""

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        return len(data)


def _reference_stdout():
    """The standard output the authors' print writes to, without its bytes: a text stream that
    encodes as a UTF-8 locale's stdout does (``errors="strict"``: a lone surrogate raises
    UnicodeEncodeError when printed) and throws the bytes away."""
    return io.TextIOWrapper(io.BufferedWriter(_Discard()), encoding="utf-8", errors="strict")


def _module_copy(module):
    """A copy of ``module`` exposing only its public, non-module, non-eval attributes (earnest mode;
    reference mode gives model code the real modules, as the authors' run does)."""
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
    # earnest mode: output goes nowhere and counts against a limit. Reference mode: the builtin
    # print itself, writing to a stdout of the authors' kind that keeps nothing (_reference_stdout):
    # it raises where theirs does (file=5, sep=5, end=0, a lone surrogate) and has no limit.
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
            # the authors' namespace: their 28 builtins (print the real one) and the real modules
            # (``modules`` holds them in reference mode: every attribute, private and module-valued
            # ones included, as in their process; the kernel layers contain what they reach)
            sys.stdout = _reference_stdout()
            # (random reseeds itself from the system in every fork: set the authors' starting state)
            modules["random"].seed(REFERENCE_RANDOM_SEED)
            safe = {name: getattr(builtins, name) for name in REFERENCE_BUILTINS}
            scope = {"__builtins__": safe}
            scope.update((name, modules[name]) for name in REFERENCE_MODULES)
            local: dict = {}
            # compiled with this interpreter's own flags only (not this file's __future__ imports),
            # as the reference's exec(str) compiles it
            exec(compile(source, "<solution>", "exec", dont_inherit=True), scope, local)
            value = local.get("ret")
        else:
            if full_builtins:  # tests of the OS-level limits only; never set for model output
                namespace = {"__builtins__": builtins, "__name__": "__sandbox__"}
            else:
                safe = {name: getattr(builtins, name) for name in SAFE_BUILTINS}
                safe.update(print=sandbox_print, __import__=sandbox_import,
                            __build_class__=builtins.__build_class__, type=_one_argument_type)
                namespace = {"__builtins__": safe, "__name__": "__sandbox__"}
            try:
                code = compile(source, "<solution>", "exec", dont_inherit=True)
            except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as exc:
                return {"error": "syntax_error", "detail": _describe(exc)}
            exec(code, namespace)
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


#: The machines earnest compiles the allowlist for (no libseccomp), by ``os.uname().machine``:
#: the AUDIT_ARCH_* value the kernel puts in seccomp_data.arch.
_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
#: ``ALLOWED_SYSCALLS``' numbers on each machine of ``_AUDIT_ARCH``, in its order: the kernel's
#: tables (arch/x86/entry/syscalls/syscall_64.tbl; asm-generic/unistd.h for aarch64), checked
#: against libseccomp's own resolution by tests/test_sandbox_layers.py.
_SYSCALL_NUMBERS = {
    "brk": (12, 214), "mmap": (9, 222), "munmap": (11, 215), "mremap": (25, 216), "mprotect": (10, 226),
    "madvise": (28, 233), "futex": (202, 98), "getrandom": (318, 278), "clock_gettime": (228, 113),
    "clock_getres": (229, 114), "gettimeofday": (96, 169), "clock_nanosleep": (230, 115),
    "nanosleep": (35, 101), "sched_yield": (24, 124), "getpid": (39, 172), "gettid": (186, 178),
    "rt_sigprocmask": (14, 135), "rt_sigreturn": (15, 139), "restart_syscall": (219, 128),
    "write": (1, 64), "exit": (60, 93), "exit_group": (231, 94),
}


def _syscall_numbers(machine: str) -> dict[str, int]:
    """``_SYSCALL_NUMBERS`` for one machine of ``_AUDIT_ARCH``: {name: number}."""
    column = list(_AUDIT_ARCH).index(machine)
    return {name: numbers[column] for name, numbers in _SYSCALL_NUMBERS.items()}


_X32_SYSCALL_BIT = 0x40000000
_SECCOMP_RET_KILL = 0x00000000
# classic BPF (linux/filter.h): ld word at an absolute offset, jumps on a constant, return
_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_JGE_K, _BPF_JSET_K, _BPF_RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_BPF_ALU_AND_K = 0x54
# struct seccomp_data: nr (u32) at 0, arch (u32) at 4, instruction_pointer (u64) at 8, args (u64) from 16
_SECCOMP_DATA_NR, _SECCOMP_DATA_ARCH, _SECCOMP_DATA_ARGS = 0, 4, 16


def _bpf_allowlist(machine: str) -> bytes | None:
    """The allowlist as a classic BPF program (``struct sock_filter`` records), compiled by earnest
    for ``machine`` (``os.uname().machine``), or None for a machine it has no numbers for. The same
    decisions as libseccomp's program: another architecture's call, or an x32 call on x86_64, kills;
    a call in ``ALLOWED_SYSCALLS`` is allowed (``_ALLOWED_WITH_ARGS``: only where its argument
    passes the masked test); every other call fails with EPERM."""
    if machine not in _AUDIT_ARCH:
        return None
    arch, numbers = _AUDIT_ARCH[machine], _syscall_numbers(machine)
    if set(numbers) != set(ALLOWED_SYSCALLS):
        raise OSError("earnest's seccomp table does not cover ALLOWED_SYSCALLS")
    # a program of labelled instructions: jump targets are labels, resolved to offsets at the end
    prog: list[tuple] = []
    labels: dict[str, int] = {}

    def ins(code, k, jt=None, jf=None):
        prog.append((code, k, jt, jf))

    def label(name):
        labels[name] = len(prog)

    ins(_BPF_LD_W_ABS, _SECCOMP_DATA_ARCH)
    ins(_BPF_JEQ_K, arch, None, "kill")
    ins(_BPF_LD_W_ABS, _SECCOMP_DATA_NR)
    if machine == "x86_64":
        ins(_BPF_JGE_K, _X32_SYSCALL_BIT, "kill", None)
    for name in sorted(ALLOWED_SYSCALLS, key=numbers.get):
        ins(_BPF_JEQ_K, numbers[name], f"args:{name}" if name in _ALLOWED_WITH_ARGS else "allow", None)
    ins(_BPF_RET_K, _SCMP_ACT_ERRNO_EPERM)
    label("allow")
    ins(_BPF_RET_K, _SCMP_ACT_ALLOW)
    label("kill")
    ins(_BPF_RET_K, _SECCOMP_RET_KILL)
    for name, conditions in _ALLOWED_WITH_ARGS.items():
        label(f"args:{name}")
        for index, op, mask, value in conditions:
            if op != _SCMP_CMP_MASKED_EQ or mask >> 32 or value & ~mask:
                raise OSError(f"earnest's seccomp compiler has no rule for the condition on {name}")
            # (argument & mask) == value, mask in the low word: the low word of the little-endian
            # u64 (libseccomp compares the high word with a mask of 0 too: always equal)
            ins(_BPF_LD_W_ABS, _SECCOMP_DATA_ARGS + 8 * index)
            if value == 0:
                ins(_BPF_JSET_K, mask, f"deny:{name}", None)
            else:
                ins(_BPF_ALU_AND_K, mask)
                ins(_BPF_JEQ_K, value, None, f"deny:{name}")
        ins(_BPF_RET_K, _SCMP_ACT_ALLOW)
        label(f"deny:{name}")
        ins(_BPF_RET_K, _SCMP_ACT_ERRNO_EPERM)
    out = b""  # classic BPF jumps only forward: every label above follows its jumps
    for pos, (code, k, jt, jf) in enumerate(prog):
        offsets = [0 if target is None else labels[target] - pos - 1 for target in (jt, jf)]
        if not all(0 <= off <= 255 for off in offsets):
            raise OSError("earnest's seccomp program has a jump out of range")
        out += struct.pack("=HBBI", code, offsets[0], offsets[1], k)
    return out


def _seccomp_filter(use_libseccomp: bool = True):
    """The seccomp program — default deny: EPERM for every system call not in ``ALLOWED_SYSCALLS``
    (with ``_ALLOWED_WITH_ARGS``' argument conditions), other architectures' calls kill — compiled
    once in the worker into a ``struct sock_fprog`` that each child installs with one prctl, by
    libseccomp where it loads (and ``use_libseccomp``), else by earnest's own compiler
    (``_bpf_allowlist``: x86_64 and aarch64). Returns (fprog, buffer, compiler) or None."""
    import ctypes

    program = _libseccomp_program() if use_libseccomp else None
    compiler = "libseccomp"
    if program is None:
        program, compiler = _bpf_allowlist(os.uname().machine), "earnest"
    if not program or len(program) % 8:
        return None

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_char_p))
    return fprog, buffer, compiler  # the buffer must stay alive as long as the program


def _libseccomp_program() -> bytes | None:
    """The allowlist compiled by libseccomp (None where it does not load)."""
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
    ctx = lib.seccomp_init(_SCMP_ACT_ERRNO_EPERM)
    if not ctx:
        return None
    try:
        for syscall in ALLOWED_SYSCALLS:
            nr = lib.seccomp_syscall_resolve_name(syscall.encode())
            if nr < 0:  # not a system call on this architecture
                continue
            cmps = _ALLOWED_WITH_ARGS.get(syscall, [])
            array = (ArgCmp * max(1, len(cmps)))(*[ArgCmp(*c) for c in cmps])
            rc = lib.seccomp_rule_add_array(ctx, _SCMP_ACT_ALLOW, nr, len(cmps), array if cmps else None)
            if rc < 0:
                raise OSError(-rc, f"seccomp rule for {syscall} failed")
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
    return program


def _enter_namespaces(libc, root: bool, mountpoint: str) -> list[str]:
    """Move the worker into its own mount, network and UTS namespaces (through a user namespace
    when not root: no privilege needed where the kernel allows unprivileged user namespaces) and
    make an empty, read-only tmpfs its root, so that no path leads anywhere. Returns the
    namespaces obtained ([] if none: the other layers then hold alone); each child adds its own
    pid, IPC and mount namespaces (``_child_outer``)."""
    import ctypes

    uid, gid = os.getuid(), os.getgid()
    flags = _CLONE_NEWNS | _CLONE_NEWNET | _CLONE_NEWUTS | _CLONE_NEWIPC
    if not root:
        flags |= _CLONE_NEWUSER
    if libc.unshare(flags) != 0:
        return []
    if not root:
        for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
            with open(f"/proc/self/{name}", "w") as fh:
                fh.write(text)
    # while /proc is still reachable: no SysV IPC object at all in the answers' IPC namespace
    sysv = ["sysv-ipc-off"] if _refuse_sysv_ipc() else []
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]

    def mount(source, target, fstype, flags, data=None):
        if libc.mount(source, target, fstype, flags, data) != 0:
            raise OSError(ctypes.get_errno(), f"mount {target!r} failed")

    # nothing done here may propagate to the host's mounts
    mount(None, b"/", None, _MS_REC | _MS_PRIVATE)
    mount(b"none", mountpoint.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, b"size=4k,mode=0555")
    os.chdir(mountpoint)
    if libc.syscall(_SYS_PIVOT_ROOT, b".", b".") == 0:
        if libc.umount2(b".", _MNT_DETACH) != 0:
            raise OSError(ctypes.get_errno(), "umount of the old root failed")
    else:  # no pivot_root (an initramfs root): chroot into the empty tmpfs instead
        os.chroot(".")
    os.chdir("/")
    mount(None, b"/", None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    return ["mount", "net", "uts", "ipc"] + ([] if root else ["user"]) + sysv


#: The IPC namespace's limits that leave no SysV object to create: a segment's, a queue's and a
#: semaphore set's memory is not counted in any of the answer's limits (RLIMIT_AS sees a segment
#: only while attached), so without them an answer could hold memory beyond ``memory_bytes``.
_SYSV_OFF = (("shmmni", "0"), ("shmall", "0"), ("msgmni", "0"), ("sem", "0 0 0 0"))


def _refuse_sysv_ipc() -> bool:
    """Set the worker's (new) IPC namespace's limits to no SysV object at all; False where the
    kernel does not let this namespace's owner change them (before Linux 5.x in a user namespace,
    such as RHEL 8's: the seccomp allowlist, which refuses the calls, is then the only guard)."""
    try:
        for name, value in _SYSV_OFF:
            with open(f"/proc/sys/kernel/{name}", "w") as fh:
                fh.write(value)
            with open(f"/proc/sys/kernel/{name}") as fh:
                if fh.read().split() != value.split():
                    return False
    except OSError:
        return False
    return True


_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "ppc64le": 203, "s390x": 217, "riscv64": 41}.get(
    os.uname().machine, -1)
_SYS_KEYCTL = {"x86_64": 250, "aarch64": 219, "ppc64le": 271, "s390x": 280, "riscv64": 219}.get(
    os.uname().machine, -1)
_KEYCTL_JOIN_SESSION_KEYRING = 1


def _new_session_keyring(libc) -> bool:
    """Join a new, empty, anonymous session keyring: the keys of the session this process came
    from (the caller's login session: Kerberos tickets, tokens a user stored with ``keyctl``) are
    no longer reachable through it (keys are found by possession, and a process possesses the keys
    of its own session keyring, whatever its uid). False where the kernel has no keyrings."""
    return libc is not None and _SYS_KEYCTL > 0 and libc.syscall(_SYS_KEYCTL, _KEYCTL_JOIN_SESSION_KEYRING, None) >= 0


def _answer_user_namespace(libc) -> bool:
    """A user namespace of the answer's own (before it runs): its user keyring (``@u``, kept per
    user namespace, not per process) is then a fresh one that dies with the answer, instead of the
    keyring of its uid that every answer of the worker (as root: every process of ``nobody`` on the
    host, for as long as it runs) shares and that outlives the answer. The capabilities it gives
    are dropped right after (``_drop_capabilities``)."""
    return libc.unshare(_CLONE_NEWUSER) == 0


def _become_nobody() -> None:
    """As root: drop every group and become uid and gid 65534, as each answer's child does."""
    os.setgroups([])
    os.setresgid(_NOBODY, _NOBODY, _NOBODY)
    os.setresuid(_NOBODY, _NOBODY, _NOBODY)


def _probe_answer_user_namespace(libc, root: bool) -> bool:
    """Whether a child, as the answers' children will be (setuid to nobody as root), can have a
    user namespace of its own (unprivileged user namespaces allowed, no chroot)."""
    pid = os.fork()
    if pid == 0:
        try:
            if root:
                _become_nobody()
            os._exit(0 if _answer_user_namespace(libc) else 1)
        finally:
            os._exit(1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def _maps_nobody() -> bool:
    """Whether uid and gid 65534 exist in this process's user namespace (always on a host; in a
    rootless container, where only the user's own uid is mapped to 0, not)."""
    for name in ("uid_map", "gid_map"):
        try:
            with open(f"/proc/self/{name}") as fh:
                ranges = [tuple(map(int, line.split())) for line in fh if line.strip()]
        except (OSError, ValueError):
            return True  # no /proc to ask: assume a host
        if not any(inside <= _NOBODY < inside + count for inside, _, count in ranges):
            return False
    return True


def _drop_capabilities(libc) -> None:
    """No capability left (the child is uid 0 inside its user namespace: capabilities there
    concern only its own namespaces, but it needs none of them)."""
    import ctypes

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    data = (ctypes.c_uint32 * 6)()
    if libc.capset(ctypes.byref(Header(_LINUX_CAPABILITY_VERSION_3, 0)), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def _child_outer(payload: memoryview, result_w: int, setup: dict, worker_pid: int) -> None:
    """The forked child: its own session (the worker kills the group), then the snippet
    (``_child``, which keeps no descriptor but the result pipe). In the worker's pid namespace it
    is pid 2 or more (the namespace's pid 1 ignores its own SIGXCPU and SIGALRM;
    ``_namespace_init`` is pid 1)."""
    libc = setup["libc"]
    try:
        os.setsid()
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        if libc is not None:
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        # the worker died before prctl took effect? (in the pid namespace the worker, outside it,
        # is parent 0; an orphan's parent is the namespace's init, 1)
        if os.getppid() != (0 if setup["init"] is not None else worker_pid):
            os._exit(1)
        _child(payload, result_w, setup)
    except BaseException as exc:  # noqa: BLE001
        try:
            os.write(result_w, json.dumps({"error": "unclassified",
                                           "detail": "sandbox setup failed: " + _describe(exc)}).encode())
        except BaseException:  # noqa: BLE001
            pass
    os._exit(70)


def _namespace_init(request_r: int, ack_w: int, libc) -> None:
    """pid 1 of the worker's pid namespace: on each request from the worker, kill every other
    process in the namespace (anything an answer started: it outlives no answer), reap, ack."""
    # the worker's handlers (SIGTERM, SIGHUP: SystemExit; SIGINT: KeyboardInterrupt) would let an
    # answer in the namespace end its init with kill(1, SIGTERM); with the default actions the
    # kernel drops every signal sent to a namespace's init from inside it
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)  # no answer may trace it
    os.closerange(0, min(request_r, ack_w))
    for fd in range(min(request_r, ack_w) + 1, 1 << 10):
        if fd not in (request_r, ack_w):
            try:
                os.close(fd)
            except OSError:
                pass
    # an answer of the same uid (as an ordinary user, without the seccomp allowlist) may change
    # this process's resource limits (prlimit needs no privilege over a process of one's own uid):
    # after each answer they are compared with these, and a changed init is not trusted again
    import resource

    names = sorted(n for n in dir(resource) if n.startswith("RLIMIT_"))
    limits = [resource.getrlimit(getattr(resource, n)) for n in names]
    while True:
        try:
            if not os.read(request_r, 1):
                os._exit(0)
            try:
                os.kill(-1, signal.SIGKILL)  # all but pid 1 in this namespace
            except ProcessLookupError:
                pass
            while True:
                try:
                    os.waitpid(-1, 0)
                except ChildProcessError:
                    break
            intact = [resource.getrlimit(getattr(resource, n)) for n in names] == limits
            os.write(ack_w, b"k" if intact else b"x")
        except InterruptedError:
            continue
        except OSError:
            os._exit(1)


def _start_namespace_init(libc):
    """Give the worker its own pid namespace with ``_namespace_init`` as pid 1 (the IPC namespace
    is already the worker's own: ``_enter_namespaces``); returns (request fd, ack fd, its pid), or
    None where the kernel refuses."""
    if libc.unshare(_CLONE_NEWPID) != 0:
        return None
    req_r, req_w = os.pipe()
    ack_r, ack_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            _namespace_init(req_r, ack_w, libc)
        finally:
            os._exit(1)
    os.close(req_r)
    os.close(ack_w)
    return req_w, ack_r, pid


def _empty_namespaces(setup: dict) -> bool:
    """After an answer: kill whatever it left in the pid namespace and remove every SysV IPC
    object in the IPC namespace. False if the namespace's init is gone (the worker then ends)."""
    libc = setup["libc"]
    ok = True
    init = setup.get("init")
    if init is not None:
        try:
            os.write(init[0], b"c")
            ok = bool(select.select([init[1]], [], [], 10)[0]) and os.read(init[1], 1) == b"k"
        except OSError:
            ok = False
    if "ipc" in setup["namespaces"]:
        import ctypes

        buf = ctypes.create_string_buffer(512)
        # (control call, INFO command, STAT command)
        for call, info, stat in ((libc.shmctl, 14, 13), (libc.msgctl, 12, 11)):
            highest = call(0, info, buf)
            for index in range(max(highest, -1) + 1):
                ident = call(index, stat, buf)
                if ident >= 0:
                    call(ident, 0, None)  # IPC_RMID
        highest = libc.semctl(0, 0, 19, buf)  # SEM_INFO
        for index in range(max(highest, -1) + 1):
            ident = libc.semctl(index, 0, 18, buf)  # SEM_STAT
            if ident >= 0:
                libc.semctl(ident, 0, 0)
    return ok


def _child(payload: memoryview, result_fd: int, setup: dict) -> None:
    """Body of the child that runs the snippet: keep only the result pipe (as fd 3), drop
    privileges, limit, lock down, run, report on fd 3, exit."""
    import resource

    libc, root = setup["libc"], setup["root"]
    try:
        request = json.loads(bytes(payload))
        source, limits = request["source"], request["limits"]
        mode = _REFERENCE if request.get("mode") == _REFERENCE else _EARNEST
        full_builtins = bool(request.get("full_builtins"))
    except BaseException:  # noqa: BLE001
        source = None
    try:
        os.dup2(result_fd, 3)
        os.closerange(0, 3)
        os.closerange(4, 1 << 16)
        if source is None:
            raise ValueError("malformed request")
        if root:
            if "chroot" in setup["layers"]:
                os.chroot(setup["base"])
                os.chdir("/")
            _become_nobody()
        # a session keyring of its own, empty (not the worker's, shared by its answers); where the
        # worker could join one, so must the child: a failure (EDQUOT while the keys of answers just
        # ended wait for the kernel's collection) fails the set-up, which the caller retries, and is
        # never ignored (the child would otherwise keep the worker's keyring, shared by its answers)
        if setup["session_keyring"] and not _new_session_keyring(libc):
            raise OSError("joining a session keyring of its own failed (the key quota of uid "
                          f"{os.getuid()}, /proc/sys/kernel/keys/maxkeys, exhausted?)")
        if "user-per-answer" in setup["namespaces"]:
            if not _answer_user_namespace(libc):
                raise OSError("unshare of the answer's user namespace failed")
            _drop_capabilities(libc)
        elif "user" in setup["namespaces"]:
            _drop_capabilities(libc)
        if libc is not None:
            # after setuid: a change of credentials clears the parent-death signal
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                raise OSError("PR_SET_NO_NEW_PRIVS failed")
        os.environ.clear()  # and the C environment with it (unsetenv)
        # a wall-clock end of its own, in case the worker that would kill it is gone
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.setitimer(signal.ITIMER_REAL, float(limits["wall"]) + 2.0)
        cpu = max(1, int(limits["cpu"]))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        for name, value, soft in (("RLIMIT_CPU", cpu + 1, cpu), ("RLIMIT_AS", limits["mem"], limits["mem"])):
            hard = resource.getrlimit(getattr(resource, name))[1]
            if hard != resource.RLIM_INFINITY and value > hard:  # a job's limit (ulimit -v, h_vmem)
                raise OSError(f"{name} of {value} is above this job's hard limit of {hard}: lower the "
                              "sandbox's limit (cpu_seconds, memory_bytes) or raise the job's")
            resource.setrlimit(getattr(resource, name), (soft, value))
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
        resource.setrlimit(resource.RLIMIT_NOFILE, (4, 4))
        for name in ("RLIMIT_MEMLOCK", "RLIMIT_MSGQUEUE"):
            if hasattr(resource, name):
                resource.setrlimit(getattr(resource, name), (0, 0))
        if setup["landlock"]:
            _landlock_deny_all(libc, setup["landlock"])
        if setup["seccomp"] is not None:
            import ctypes  # preloaded by the worker

            if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(setup["seccomp"][0]), 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "PR_SET_SECCOMP failed")
        os.write(3, _READY)  # set up: what follows on the pipe is the answer's
        modules = setup["reference_modules"] if mode == _REFERENCE else setup["modules"]
        outcome = _execute(source, limits, modules, full_builtins, mode)
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


def _read_into(fd: int, buf, deadline: float | None) -> tuple[int, bool]:
    """Read from fd into buf (a bytearray or a view of one) until EOF, a full buf or the deadline,
    with no intermediate objects: nothing of one answer stays behind in the worker's heap once buf
    is wiped. Returns (bytes read, whether EOF was reached)."""
    view = memoryview(buf)
    got = 0
    while got < len(view):
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return got, False
        k = os.readv(fd, [view[got:]])
        if k == 0:
            return got, True
        got += k
    return got, False


def _ended_by(pid: int, deadline: float) -> bool:
    """Whether child pid has ended by the deadline (left unreaped: its process group id stays
    its own until the worker has killed the group). Waits on a pidfd where the kernel has them
    (Linux >= 5.3), else polls."""
    flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
    if os.waitid(os.P_PID, pid, flags) is not None:
        return True
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        fd = -1
    if fd >= 0:
        try:
            left = deadline - time.monotonic()
            return left > 0 and bool(select.select([fd], [], [], left)[0])
        finally:
            os.close(fd)
    pause = 0.0002
    while time.monotonic() < deadline:
        time.sleep(pause)
        pause = min(pause * 2, 0.01)
        if os.waitid(os.P_PID, pid, flags) is not None:
            return True
    return False


def _run_child(payload: memoryview, wall: float, setup: dict, result_buf: bytearray) -> tuple[dict, int]:
    """Fork the snippet's children, collect its report within ``wall`` seconds (into result_buf),
    kill its whole group in any case. Returns (status, length of the report)."""
    try:
        result_r, result_w = os.pipe()
    except OSError as exc:
        return {"fork_error": _describe(exc)}, 0
    worker_pid = os.getpid()
    deadline = time.monotonic() + wall
    try:
        pid = os.fork()
    except OSError as exc:  # no process for the answer (RLIMIT_NPROC, memory): the caller decides
        os.close(result_r)
        os.close(result_w)
        return {"fork_error": _describe(exc)}, 0
    if pid == 0:
        os.close(result_r)
        _child_outer(payload, result_w, setup, worker_pid)
        os._exit(1)  # not reached
    os.close(result_w)
    try:
        got, eof = _read_into(result_r, result_buf, deadline)
    finally:
        os.close(result_r)
    # the report is in (or the pipe closed): the children end by themselves, unless one closed
    # its pipe and kept running
    ended = eof and _ended_by(pid, deadline)
    timed_out = not ended and not (got and eof) and got < len(result_buf)
    # the first child is not reaped yet, so its process group id cannot have been reused
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    _, st = os.waitpid(pid, 0)
    while True:  # reap a snippet child that outlived its parent (the worker is their subreaper)
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break
    status = {"timed_out": timed_out, "oversized": got >= len(result_buf)}
    if not result_buf[:1] == _READY:
        status["setup_failed"] = True  # ended, or failed, before model code ran
    code = os.waitstatus_to_exitcode(st)
    if code >= 128:
        status["signal"] = code - 128  # the snippet's child died of this signal
    elif code < 0:
        status["signal"] = -code  # the first child died of this signal (the snippet's, or the worker's kill)
    return status, got


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


def _worker_main(tmp: str, disabled: frozenset) -> None:
    import fcntl  # noqa: F401 - preloaded for the children
    import importlib
    import random  # noqa: F401 - preloaded for the children (reference mode)
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
    # reference mode: the modules themselves, as the authors' namespace holds them (each child is a
    # fork: whatever an answer changes in them dies with it)
    reference_modules = {name: importlib.import_module(name) for name in REFERENCE_MODULES}
    for lazy in _INTERNAL_IMPORTS + ("encodings.idna",):  # imported on first use by datetime / str
        try:
            importlib.import_module(lazy)
        except ImportError:
            pass
    # (random reseeds itself in every fork of this process; reference mode's answers, the only ones
    # that reach it, set REFERENCE_RANDOM_SEED before model code runs)
    # root that can become nobody: root in a rootless container (podman, ``unshare -r``,
    # Apptainer --fakeroot) has uid 0 but no 65534 to switch to, and is an ordinary user here
    root = os.geteuid() == 0 and _maps_nobody()
    uid = os.getuid()
    _remove_stale_dirs(tmp)
    base = ""  # the empty directory a root worker without namespaces chroots into
    hello_sent, proto_out = False, None
    namespaces: list[str] = []
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        proto_in, proto_out = 0, os.dup(1)
        os.dup2(devnull, 1)  # nothing printed by mistake can corrupt the protocol stream
        os.close(devnull)
        if libc is not None:
            libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        # none of the caller's session keys in the worker (each child joins a fresh one again)
        keyrings = _new_session_keyring(libc)
        # the filter and the Landlock probe need files (libseccomp, /proc): before the empty root
        landlock = _landlock_abi(libc) if "landlock" not in disabled else 0
        seccomp = None
        if "seccomp" not in disabled and libc is not None:
            try:
                seccomp = _seccomp_filter(use_libseccomp="libseccomp" not in disabled)
            except OSError:
                seccomp = None
        ns_error = ""
        init = None
        if "namespaces" not in disabled and libc is not None:
            try:
                # the empty root is mounted over the temporary directory in the worker's own mount
                # namespace: nothing is created on the host's file system, nothing is left there
                namespaces = _enter_namespaces(libc, root, tmp)
                if not namespaces:
                    ns_error = "unshare refused (unprivileged user namespaces not allowed?)"
            except OSError as exc:
                ns_error = _describe(exc)
                namespaces = []
            if namespaces and _probe_answer_user_namespace(libc, root):
                namespaces.append("user-per-answer")
            init = _start_namespace_init(libc) if namespaces else None
            if init is not None:
                namespaces.append("pid")
        chroot = root and "mount" not in namespaces and "namespaces" not in disabled
        if chroot:
            base = tempfile.mkdtemp(prefix=f"{_temp_prefix()}{os.getpid()}-", dir=tmp)
            os.chmod(base, 0o711)
        blockers = [name for name, present in (("seccomp", seccomp is not None), ("landlock", landlock > 0),
                                               ("namespaces", "mount" in namespaces), ("chroot", chroot))
                    if present]
        layers = blockers + (["no_new_privs"] if libc is not None else []) + (["setuid"] if root else []) + ["rlimits"]
        setup = {"libc": libc, "root": root, "base": base, "modules": modules,
                 "reference_modules": reference_modules, "namespaces": namespaces,
                 "init": init, "landlock": landlock, "seccomp": seccomp, "session_keyring": keyrings,
                 "layers": layers}
        hello_sent = True
        _send(proto_out, {"pid": os.getpid(), "base": base, "uid": uid,
                          "python": "%d.%d.%d" % sys.version_info[:3], "executable": sys.executable,
                          "namespaces": namespaces, "namespace_error": ns_error, "chroot": chroot,
                          "setuid": root, "no_new_privs": libc is not None, "landlock": landlock,
                          "seccomp": "allowlist" if seccomp is not None else "",
                          "seccomp_compiler": seccomp[2] if seccomp is not None else "", "rlimits": True,
                          "session_keyring": "own" if keyrings else "",
                          "init_pid": init[2] if init is not None else 0,
                          "file_reads_blocked_by": blockers, "layers": layers})
        request_buf = bytearray(_MAX_MESSAGE)
        result_buf = bytearray(_MAX_RESULT + 2)  # _READY, a report, one byte to see an oversized one
        while True:
            head = _receive_pair_head(proto_in)
            if head is None:
                break
            control, size = head
            wall = control.get("wall")
            if not isinstance(wall, (int, float)) or not 0 < wall < 1e6 or size > len(request_buf):
                break
            view = memoryview(request_buf)[:size]
            if _read_into(proto_in, view, None)[0] < size:
                break
            try:
                status, n = _run_child(view, float(wall), setup, result_buf)
            finally:
                view[:] = bytes(size)  # nothing of this request stays for the next child to find
            # nothing the answer started or made survives it; if that cannot be ensured, this
            # worker ends after its reply and the caller starts a fresh one for the next answer
            intact = _empty_namespaces(setup)
            if not intact:
                status["restart"] = True
            start = 1 if result_buf[:1] == _READY else 0
            try:
                _send_pair(proto_out, status, memoryview(result_buf)[start:n])
            finally:
                result_buf[:n] = bytes(n)
            if not intact:
                break
    except (OSError, SystemExit) as exc:  # the caller went away (EPIPE) or asked us to stop
        if not hello_sent and isinstance(exc, OSError) and proto_out is not None:
            try:  # the set-up failed (a fork for the namespace init, say): say why
                _send(proto_out, {"start_error": _describe(exc)})
            except OSError:
                pass
    finally:
        if base:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__" and len(sys.argv) >= 5 and sys.argv[1] == "--worker":
    _worker_main(sys.argv[3], frozenset(filter(None, sys.argv[4].split(","))))
