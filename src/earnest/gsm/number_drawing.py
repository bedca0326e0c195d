"""Drawing a template's numbers: the package's law by vectorised rejection (or enumeration), the
number-controlled restrictions of Ex4, and the answer checks every instance passes. Part of
:mod:`earnest.gsm.instantiate` (its module docstring states the law)."""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable

import numpy as np

from earnest.gsm.template_reading import (Expr, Template, TemplateError, _PLACEHOLDER, _SCALAR, _align, _divides,
                                          _is_int, _random_context, load_templates, parse_value)
from earnest.gsm.template_rendering import _final_number, _final_text, render_answer, render_question

#: stop rejection after this many draws per template and try exhaustive enumeration
MAX_DRAWS = 2_000_000
#: products of the constrained lines' choices up to this size are enumerated once instead of rejected
ENUMERATE = 1 << 17
#: the package's own limit on the enumerated product
MAX_ENUMERATE = 10_000_000
_BATCH = 1 << 14


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


def instantiate(template_id: int, n: int, seed: int, restriction: Restriction | None = None,
                templates: dict[int, Template] | None = None) -> Draw:
    """``n`` instances of one template from ``seed`` (see the module docstring for the law)."""
    pool = templates if templates is not None else load_templates()
    if template_id not in pool:
        raise TemplateError(f"template {template_id} does not exist (available: {min(pool)}..{max(pool)})")
    return Sampler(pool[template_id], restriction).draw(n, seed)


