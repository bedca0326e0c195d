"""Matching another language's template to the English one: instance k of a translation carries
the English instance k's numbers where the translation draws numbers by the same law. Part of
:mod:`earnest.gsm.instantiate`."""

from __future__ import annotations

import math
import re

import numpy as np

from earnest.gsm.template_reading import (Template, TemplateError, _SCALAR, _align, _random_context,
                                          load_templates, parse_value)
from earnest.gsm.template_rendering import _final_number
from earnest.gsm.number_drawing import (Draw, Instance, Restriction, Sampler, Unmatchable, _number, instantiate,
                                        restrict)

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
