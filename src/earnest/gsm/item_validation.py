"""Each language's items checked against their own template, when the items are made (issue 51).

A machine translation can carry a wrong gold answer (the Korean GSM-Base question with exactly the
English question's numbers whose solution computes ``2*5`` where the question says "twice") or a
placeholder the translator left unrendered (``{name}``). Such an item measures the translation, not
the model, and in a cross-lingual comparison it reads as a language effect. So every item is checked
here, and the workflow leaves the failing ones out (``gsm_symbolic.keep_invalid_items`` keeps them):

* **placeholders** (:func:`placeholder_problem`): a brace left in the question or the solution
  (``{name}``, ``{n, 24}``, a lone ``{`` or ``}``) outside the calculator annotations ``<<a*b=c>>``;
* **GSM-Base** (:func:`check_base`): the package's gold answer of the translated original against its
  template's answer program on the item's own numbers. The numbers are the template's ``{var,
  original}`` values (the question the template was annotated from); a value the language's template
  writes only as words (Korean ``{mult_txt,두 배}`` where the line's choices say ``두 번``) is taken
  from the English template's original, but only where the language's question has exactly the English
  question's integers (otherwise its numbers are its own and such a value stays unknown). The program
  is the language template's solution (the ``#### {expression}`` field, as the package computes every
  gold answer), else its ``#answer`` expression, else the English template's. Where no value can be
  known, an item whose question has exactly the English question's integers must have the English gold;
  otherwise the item is ``unchecked`` (counted, never excluded);
* **variant sets** (:func:`check_instance`): each instance's gold (its rendered solution's ``####``
  line) against the answer program on the instance's own values: the language's ``#answer``, else the
  English template's (earnest's instantiator already redraws an instance whose ``#answer`` disagrees;
  this catches the templates whose ``#answer`` is broken).

A problem is a dict of :data:`PROBLEM_COLUMNS`; ``reason`` is one of :data:`REASONS`.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Iterable

import numpy as np
import pandas as pd

from earnest.gsm.template_reading import (_SCALAR, Template, TemplateError, _align, _random_context,
                                          parse_value)
from earnest.gsm.template_rendering import _final_text, render_answer

#: Why an item fails: a gold answer its template's program does not give, or text left unrendered.
WRONG_GOLD, PLACEHOLDER = "wrong_gold", "placeholder"
REASONS = (WRONG_GOLD, PLACEHOLDER)
#: One row per failing item (results/languages/<lang>/data/<dataset>.excluded.tsv and, for all
#: languages together, results/tables/languages/excluded_items.csv): ``kept`` says whether the config
#: kept it (gsm_symbolic.keep_invalid_items).
PROBLEM_COLUMNS = ["language", "dataset", "item_id", "template_id", "reason", "detail", "kept"]

_BRACE = re.compile(r"\{[^{}\n]{0,80}\}|[{}]")
_ANNOTATION = re.compile(r"<<[^>]*>>")


def _number(v) -> bool:
    return isinstance(v, (int, float, Fraction)) and not isinstance(v, bool)


def placeholder_problem(text: str) -> str:
    """The first brace left in ``text`` (a question or a solution; calculator annotations aside), or ""."""
    m = _BRACE.search(_ANNOTATION.sub("", text or ""))
    return m.group(0) if m else ""


def _same_text(a, b) -> bool:
    return re.sub(r"\s+", "", str(a)).casefold() == re.sub(r"\s+", "", str(b)).casefold()


def original_values(t: Template, fallback: dict | None = None) -> tuple[dict | None, str]:
    """The values of the template's variables in the question it was annotated from: each non-derived
    line's ``{var, original}`` values (numbers as written; a word picks the line's choice that says it,
    which gives that choice's numbers), then the derived lines. ``fallback``: values for a line whose
    numbers the question does not tell (the English original's). Returns (values, "") or (None, why)."""
    from earnest.gsm.locales import numbers_in

    values: dict = {}
    for ln in t.lines:
        if ln.kind == "derived":
            continue
        numeric = [i for i in range(len(ln.names)) if ln.choices and all(_number(parse_value(c[i])) for c in ln.choices)]
        cands = list(ln.choices)
        for i, name in enumerate(ln.names):
            if name not in t.defaults:
                continue
            d = parse_value(t.defaults[name].strip())
            if _number(d):
                values[name] = d
                cands = [c for c in cands if _number(parse_value(c[i])) and math.isclose(float(parse_value(c[i])), float(d))]
            else:
                values[name] = t.defaults[name].strip()
                said = [c for c in cands if _same_text(c[i], d)]
                cands = said or cands
        unknown = [ln.names[i] for i in numeric if ln.names[i] not in values]
        if not unknown:
            continue
        known = {tuple(float(parse_value(c[i])) for i in numeric if ln.names[i] in unknown) for c in cands}
        written = [f.value for i, n in enumerate(ln.names) if i not in numeric and n in t.defaults
                   for f in numbers_in(t.defaults[n], t.language)]
        if len(known) == 1 and cands:
            values.update({n: parse_value(v) for n, v in zip(ln.names, cands[0]) if n in unknown})
        elif len(unknown) == 1 and len(written) == 1:       # Thai {mult_txt, 3 เท่า}: the words hold the number
            values[unknown[0]] = int(written[0]) if float(written[0]).is_integer() else written[0]
        elif fallback is not None and all(n in fallback for n in unknown):
            values.update({n: fallback[n] for n in unknown})
        else:
            return None, f"the original's value of {', '.join(unknown)} is not written in the question"
    env = _random_context(np.random.default_rng(0)) | {k: parse_value(v) for k, v in values.items()}
    for ln in t.lines:
        if ln.kind != "derived":
            continue
        try:
            got = ln.expr(env)
        except TemplateError as exc:
            return None, str(exc)
        for name, v in zip(ln.names, [got] if len(ln.names) == 1 else _align(ln.names, got)):
            values[name] = v
            env[name] = parse_value(v)
    return values, ""


def program_answer(t: Template, values: dict, english: Template | None = None) -> tuple[float | None, str]:
    """The answer of ``t``'s program on ``values``: its solution's ``####`` field, else its ``#answer``,
    else ``english``'s ``#answer``; (None, why) when none evaluates to a number."""
    why = []
    try:
        return float(_final_text(render_answer(t, values, numbers=False))), ""
    except (TemplateError, ValueError, KeyError, TypeError, ZeroDivisionError) as exc:
        why.append(f"solution: {exc}")
    for tpl in (t, english):
        if tpl is None or tpl.answer_expr is None:
            continue
        try:
            v = tpl.answer_expr(_SCALAR | {k: parse_value(x) for k, x in values.items()})
            if _number(v):
                return float(v), ""
            why.append(f"{tpl.answer_expr.where}: gives {v!r}")
        except TemplateError as exc:
            why.append(str(exc))
    return None, "; ".join(why)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def _gold(answer: str) -> float:
    return float(answer)


def check_base(question: str, solution: str, gold: str, t: Template, english: Template | None) -> tuple[str, str]:
    """(reason, detail) of a GSM-Base item in ``t``'s language (question, solution and the ASCII gold
    as the package gives them): ``placeholder``, ``wrong_gold``, ``unchecked`` or ``ok``."""
    from earnest.gsm.locales import integers_in

    for text in (question, solution):
        left = placeholder_problem(text)
        if left:
            return PLACEHOLDER, f"{left!r} left in the {'question' if text is question else 'solution'}"
    g = _gold(gold)
    shared = english is not None and english is not t and (
        sorted(integers_in(question, t.language)) == sorted(integers_in(english.question, "eng")))
    fallback = None
    if shared:
        fallback, _ = original_values(english)
    values, why = original_values(t, fallback)
    want = None
    if values is not None:
        want, why = program_answer(t, values, english)
    if want is None and shared:
        want, why = float(_final_text(english.answer)), ""
        source = "the English gold (the question has exactly the English question's integers)"
    else:
        source = "its template's program on the original's numbers"
    if want is None:
        return "unchecked", why
    if not _close(g, want):
        return WRONG_GOLD, f"gold {gold}, {source} gives {want:g}"
    return "ok", ""


def check_instance(question: str, solution: str, gold: str, values: dict, t: Template,
                   english: Template | None) -> tuple[str, str]:
    """(reason, detail) of one drawn instance: ``placeholder``, ``wrong_gold`` or ``ok`` (``unchecked``
    where no ``#answer`` evaluates)."""
    for text in (question, solution):
        left = placeholder_problem(text)
        if left:
            return PLACEHOLDER, f"{left!r} left in the {'question' if text is question else 'solution'}"
    want, why = None, ""
    for tpl in (t, english):
        if tpl is None or tpl.answer_expr is None:
            continue
        try:
            v = tpl.answer_expr(_SCALAR | {k: parse_value(x) for k, x in values.items()})
        except TemplateError as exc:
            why = str(exc)
            continue
        if _number(v):
            want = float(v)
            break
    if want is None:
        return "unchecked", why or "no #answer"
    if not _close(_gold(gold), want):
        return WRONG_GOLD, f"gold {gold}, #answer gives {want:g}"
    return "ok", ""


def problems_frame(rows: Iterable[dict]) -> pd.DataFrame:
    """Problems as a table of :data:`PROBLEM_COLUMNS` (an empty one with those columns)."""
    return pd.DataFrame(list(rows), columns=PROBLEM_COLUMNS)


def excluded_templates(problems: pd.DataFrame) -> list[int]:
    """The templates the cross-lingual comparison leaves out of every language: those with an item
    that failed and was not kept."""
    if problems is None or problems.empty:
        return []
    drop = problems[~problems["kept"].astype(bool)]
    return sorted({int(t) for t in drop["template_id"]})
