"""Difficulty covariates of a GSM8K-style item beyond gamma, from its question and reference solution.

The solution's arithmetic is annotated ``<<lhs=result>>`` (GSM8K's calculator annotations). Per item:

* ``n_ops``: arithmetic operations (+ - * / // % **) in all annotations' left-hand sides;
* ``max_digits``: digits of the integral part of the largest |value| the solution computes: every
  annotation's result and every intermediate of its left-hand side (``50-10-5`` has 40 and 35);
* ``carries``: carries of the additions and borrows of the subtractions between integers in the
  annotations, column by column in base 10 (``47+38``: 1; ``50-17``: 1; ``1000-1``: 3);
* ``has_fraction``: the question writes a fraction ``a/b`` or an annotation's division leaves a
  non-integer;
* ``has_decimal``: the question or an annotation writes a decimal number (``2.5``);
* ``number_tokens``: tokens a tokenizer spends on the numbers written in digits in the question,
  each number tokenized as it stands (with the space before it, as BPE vocabularies see it).

``gamma`` (earnest.gsm.gamma) is the paper's. Any of them can be GLMM 2's covariate; centring happens in
the one place gamma is centred (:func:`earnest.stats.glmm.centre_gamma`).
"""

from __future__ import annotations

import ast
import math
import operator
import re
from typing import Callable, Iterable

import pandas as pd

from earnest.gsm.gamma import gamma

COVARIATES = ("gamma", "n_ops", "max_digits", "carries", "has_fraction", "has_decimal", "number_tokens")

_ANNOTATION = re.compile(r"<<([^<>=]*)=([^<>]*)>>")
_FRACTION = re.compile(r"(?<![\d.])\d+\s*/\s*\d+(?![\d.])")
_DECIMAL = re.compile(r"\d*\.\d+")
_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}


def annotations(solution: str) -> list[tuple[str, str]]:
    """The ``(lhs, result)`` pairs of the solution's ``<<lhs=result>>`` annotations."""
    return [(a.strip(), b.strip()) for a, b in _ANNOTATION.findall(solution)]


def _tree(lhs: str) -> ast.expr | None:
    text = lhs.replace(",", "").replace("$", "").replace("x", "*").replace("×", "*").replace("÷", "/")
    text = re.sub(r"(\d)\s*%", r"\1/100", text)
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError:
        return None


def _value(node: ast.expr, out: list[tuple[type, float, float, float]]):
    """Evaluate an annotation's arithmetic, recording each binary operation (op, a, b, result)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _value(node.operand, out)
        return None if v is None else (-v if isinstance(node.op, ast.USub) else v)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        a, b = _value(node.left, out), _value(node.right, out)
        if a is None or b is None:
            return None
        try:
            r = _OPS[type(node.op)](a, b)
        except (ZeroDivisionError, OverflowError):
            return None
        out.append((type(node.op), a, b, r))
        return r
    return None


def _operations(solution: str) -> list[tuple[type, float, float, float]]:
    ops: list = []
    for lhs, _ in annotations(solution):
        tree = _tree(lhs)
        if tree is not None:
            _value(tree, ops)
    return ops


def n_ops(solution: str) -> int:
    """Arithmetic operations in the annotations (``<<2*5+1=11>>`` counts 2)."""
    count = 0
    for lhs, _ in annotations(solution):
        tree = _tree(lhs)
        if tree is None:       # unparsable: count the operator signs between operands
            count += len(re.findall(r"(?<=[\d)])\s*[-+*/x]\s*(?=[\d(.])", lhs))
        else:
            count += sum(isinstance(n, ast.BinOp) for n in ast.walk(tree))
    return count


def _digits(v: float) -> int:
    return len(str(int(abs(v)))) if math.isfinite(v) else 0


def max_digits(solution: str) -> int:
    """Digits of the integral part of the largest |value| computed (results and intermediates)."""
    values = [r for *_, r in _operations(solution)]
    for _, result in annotations(solution):
        try:
            values.append(float(result.replace(",", "").replace("$", "").rstrip("%")))
        except ValueError:
            pass
    return max((_digits(v) for v in values), default=0)


def column_carries(a: int, b: int) -> int:
    """Carries of the column addition ``a + b`` of two non-negative integers."""
    carry = count = 0
    while a or b:
        s = a % 10 + b % 10 + carry
        carry = 1 if s >= 10 else 0
        count += carry
        a //= 10
        b //= 10
    return count


def column_borrows(a: int, b: int) -> int:
    """Borrows of the column subtraction ``a - b`` with ``a >= b >= 0``."""
    borrow = count = 0
    while a or b:
        d = a % 10 - b % 10 - borrow
        borrow = 1 if d < 0 else 0
        count += borrow
        a //= 10
        b //= 10
    return count


def carries(solution: str) -> int:
    """Carries and borrows of the annotations' additions and subtractions between integers."""
    total = 0
    for op, a, b, _ in _operations(solution):
        if op not in (ast.Add, ast.Sub) or not (float(a).is_integer() and float(b).is_integer()):
            continue
        a, b = int(a), int(b)
        if op is ast.Sub:
            b = -b
        if (a >= 0) == (b >= 0):                 # same signs: an addition of magnitudes
            total += column_carries(abs(a), abs(b))
        else:                                    # a subtraction of the smaller magnitude from the larger
            hi, lo = max(abs(a), abs(b)), min(abs(a), abs(b))
            total += column_borrows(hi, lo)
    return total


def has_fraction(question: str, solution: str) -> int:
    """1 when the question writes ``a/b`` or an annotated division leaves a non-integer."""
    if _FRACTION.search(question):
        return 1
    return int(any(op is ast.Div and not float(r).is_integer() for op, _, _, r in _operations(solution)))


def has_decimal(question: str, solution: str) -> int:
    """1 when the question or an annotation writes a decimal number."""
    text = question + " " + " ".join(f"{a}={b}" for a, b in annotations(solution))
    return int(bool(_DECIMAL.search(text.replace(",", ""))))


def number_tokens(question: str, tokenize: Callable[[str], list]) -> int:
    """Tokens ``tokenize`` spends on the numbers written in digits in ``question`` (each with the
    space before it when there is one)."""
    total = 0
    for m in _NUMBER.finditer(question):
        start = m.start()
        if start > 0 and question[start - 1] in "$":
            start -= 1
        piece = question[start:m.end()]
        if start > 0 and question[start - 1] == " ":
            piece = " " + piece
        total += len(tokenize(piece))
    return total


def item_covariates(question: str, solution: str, tokenize: Callable[[str], list] | None = None) -> dict:
    """Every covariate of one item (``number_tokens`` only with a tokenizer)."""
    out = {"gamma": gamma(question), "n_ops": n_ops(solution), "max_digits": max_digits(solution),
           "carries": carries(solution), "has_fraction": has_fraction(question, solution),
           "has_decimal": has_decimal(question, solution)}
    if tokenize is not None:
        out["number_tokens"] = number_tokens(question, tokenize)
    return out


def covariates_table(item_ids: Iterable[str], questions: Iterable[str], solutions: Iterable[str],
                     tokenize: Callable[[str], list] | None = None) -> pd.DataFrame:
    """One row per item: item_id and every covariate."""
    rows = [dict(item_id=i, **item_covariates(q, s, tokenize)) for i, q, s in zip(item_ids, questions, solutions)]
    return pd.DataFrame(rows)


def check_covariate(name: str) -> str:
    if name not in COVARIATES:
        raise ValueError(f"stats.covariate: {name!r} is not one of {', '.join(COVARIATES)}")
    return name


def item_values(items: pd.DataFrame, name: str, source: str = "items",
                tokenize: Callable[[str], list] | None = None) -> pd.Series:
    """Covariate ``name`` of every item of an items table (needs its ``solution`` column; for
    ``number_tokens``, the model's ``tokenize``), by item_id."""
    check_covariate(name)
    ids = items["item_id"].astype(str)
    if name == "gamma":
        return pd.Series(items["gamma"].astype(float).to_numpy(), index=ids)
    if name == "number_tokens":
        if tokenize is None:
            raise ValueError("stats.covariate: number_tokens needs the model's tokenizer")
        return pd.Series([float(number_tokens(str(q), tokenize)) for q in items["question"]], index=ids)
    if "solution" not in items.columns:
        raise ValueError(f"{source}: no 'solution' column for covariate {name} (an items table from before "
                         "solutions were kept: delete results/data and rerun)")
    fn = {"n_ops": lambda q, s: n_ops(s), "max_digits": lambda q, s: max_digits(s), "carries": lambda q, s: carries(s),
          "has_fraction": has_fraction, "has_decimal": has_decimal}[name]
    return pd.Series([float(fn(str(q), str(s))) for q, s in zip(items["question"], items["solution"])],
                     index=items["item_id"].astype(str))


def with_covariate(scored: pd.DataFrame, values: pd.Series, name: str, source: str = "scored table") -> pd.DataFrame:
    """``scored`` with its ``gamma`` column holding covariate ``name``: GLMM 2 has one covariate
    column, centred in the one place gamma is (earnest.stats.glmm.centre_gamma)."""
    if name == "gamma":
        return scored
    got = scored["item_id"].astype(str).map(values)
    if got.isna().any():
        missing = scored.loc[got.isna(), "item_id"].iloc[0]
        raise ValueError(f"{source}: item {missing} has no {name} in the items tables")
    return scored.assign(gamma=got.astype(float).to_numpy())
