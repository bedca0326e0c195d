"""Rendering one assignment of a template: the question and the solution with their numbers written
as the language writes them, and the gold answer read from the solution's ``####`` line. Part of
:mod:`earnest.gsm.instantiate`."""

from __future__ import annotations

import re

from earnest.gsm.template_reading import Expr, Template, TemplateError, _FIELD, _PLACEHOLDER, _SCALAR, parse_value

_BIG_NUMBER = re.compile(r"\b\d+(?:\.\d+)\b|\b\d{5,}\b")
_KEEP_AS_IS = re.compile(r"(<<[^>]*>>|####\s*-?\d[\d.,]*)")
_SENTENCE = re.compile(r"([.!?]+\s*)([a-z])")
_FINAL = re.compile(r"####\s*(.+?)\s*$", re.S)


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


