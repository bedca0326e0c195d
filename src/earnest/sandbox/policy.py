"""The static policy: which model-written sources run, and the classes a run can end in.

It classifies; it does not contain model code (the kernel layers do: :mod:`earnest.sandbox`).
Shared by the calling process and the worker (``earnest.sandbox.worker``), so it imports only the
standard library.
"""

from __future__ import annotations

import ast
import re
import threading
import warnings
from dataclasses import dataclass, field
from fractions import Fraction

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

_EARNEST, _REFERENCE = "earnest", "reference"  # = earnest.fidelity's names (standard library only here)

#: Classes a run can end in ("" = it returned a number). The sandbox knows no benchmark: these names
#: are defined here, and the failure-class taxonomy that scores the answers imports them
#: (earnest.gsm.failure_classes, Appendix F; tests/test_failure_classes.py checks the order). The
#: worker's code writes them as strings (tests/test_failure_classes.py checks every such string of
#: the package); ``validate_reply`` turns any name that is not one of them into ``unclassified``.
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
#: reference mode only: the authors' code would not score this answer (an exception escapes their
#: extractor or correctness check, or the process ends: FIDELITY.md section 16)
CRASHES_REFERENCE = "crashes_reference"
#: earnest mode's classes, in the taxonomy's legend order; reference mode's (no limits, the
#: reference's forbidden-string check instead of earnest's static one)
ERROR_CLASSES = (NO_FUNCTION, FORBIDDEN_CONSTRUCT, SYNTAX_ERROR, NAME_ERROR, TYPE_VALUE_ERROR, ZERO_DIVISION_ERROR,
                 ATTRIBUTE_ERROR, NONE_RETURNED, NOT_A_NUMBER, UNCLASSIFIED, TIMEOUT, RESOURCE_LIMIT)
REFERENCE_ERROR_CLASSES = (NO_FUNCTION, FORBIDDEN_STRING, SYNTAX_ERROR, NAME_ERROR, TYPE_VALUE_ERROR,
                           ZERO_DIVISION_ERROR, ATTRIBUTE_ERROR, NONE_RETURNED, NOT_A_NUMBER, UNCLASSIFIED,
                           CRASHES_REFERENCE)
_KNOWN_CLASSES = frozenset(ERROR_CLASSES + REFERENCE_ERROR_CLASSES)


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
    #: not "" when the answer never ran because the machine failed it (its process could not be
    #: set up: the key or namespace quota of the answers' uid, say): what happened. error_class is
    #: then "unclassified"; the answer is not the model's failure, and only this answer is affected
    infrastructure: str = ""
    #: reference mode, when asked (the state-channel scanner): the names of the process state the
    #: answer changed (module attributes, classes' attributes, getters' results), see
    #: ``earnest.sandbox.worker._state_snapshot``
    channels: tuple[str, ...] = ()


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


def _short(text: str, n: int = 300) -> str:
    return text if len(text) <= n else text[:n] + "..."


def _describe(exc: BaseException) -> str:
    try:
        return _short(f"{type(exc).__name__}: {exc}")
    except Exception:  # str() of the exception itself may fail (huge int arguments)
        return type(exc).__name__
