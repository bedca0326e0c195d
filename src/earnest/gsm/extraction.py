"""Answer extraction (section 3.3 and Appendix F of the GSM-Symbolic re-evaluation).

Text prompts (GSM, simple NL, structured NL): what the model wrote after it began a new
question (a line starting with ``Q:``) is cut; then the number after "The final answer is" is
taken (pattern ``final_answer``), else the last number in the response (``last_number``). A number
is digits (thousands grouped with "," or not), optional decimals and an optional exponent ("1e5" is
100000; one too large for a float is inf, never a correct answer), or ".5"; "3/4" after the phrase
is a fraction.

Code prompts (simple / structured code): the prompt ends with ``A:\\ndef solution():\\n``, so the
model usually writes only the body. The solution function is located (pattern ``function`` when
the model wrote ``def solution(...)`` itself, ``function_body`` when the header was restored from
the prompt), checked statically and run in the sandbox (``earnest.sandbox``).

Error classes (``error_class``; "" = a number was extracted):

* text: ``empty_response``, ``empty_after_trimming``, ``no_number_found``;
* code: ``no_function``, ``forbidden_construct``, ``syntax_error``, ``name_error``,
  ``type_value_error``, ``zero_division_error``, ``attribute_error``, ``none_returned``,
  ``not_a_number``, ``unclassified``, ``timeout``, ``resource_limit``.

Scoring adds ``wrong_answer`` and ``wrong_answer_last_number`` (see ``earnest.gsm.scoring``).

``fidelity="reference"`` (``earnest.fidelity``) extracts text answers as the authors' released code
does (``AnswerExtractor.extract_answer_textual``, the-mysh/gsm-symbolic-benchmarking @ d063998;
resources/FIDELITY.md, point 3): the response is cut at the first "Q:" anywhere (else at the first
"Question:"); commas are deleted; then the first "#### <number>" (pattern ``hash_answer``), else the
first "The answer is" / "The final answer is" (``final_answer``) followed by anything but digits
and "-" and then a number, else the last number (``last_number``). A number is ``-?\\d+(\\.\\d+)?``
read with ``float``: no fractions, ".5" is 5, "3/4" is 3 (first match) or 4 (last number), a "-"
before a number is always a sign. Classes: the same three text classes.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import TYPE_CHECKING, Sequence

from earnest.gsm.failure_classes import (EMPTY_AFTER_TRIMMING, EMPTY_RESPONSE, NO_FUNCTION, NO_NUMBER_FOUND,
                                         INFRASTRUCTURE_ERROR, NUMBER_IN_WORDS, RESOURCE_LIMIT, UNCLASSIFIED)
from earnest.gsm.failure_classes import TEXT_ERROR_CLASSES  # noqa: F401 - re-exported
from earnest.fidelity import EARNEST, REFERENCE, check_mode

if TYPE_CHECKING:  # pragma: no cover
    from earnest.sandbox.pool import Sandbox

# Numbers with more digits than this keep only their float value (possibly inf): exact
# arithmetic on them is pointless for grade-school answers and slow for runaway output.
_MAX_EXACT_DIGITS = 1000


@dataclass(frozen=True)
class Extraction:
    """What was extracted from one response.

    value: the number (float; may be +-inf for absurdly large numbers) or None.
    pattern: how it was found — text: "final_answer" | "last_number" | "none";
        code: "function" | "function_body" | "none".
    error_class: "" when a number was found, else one of the classes in the module docstring.
    detail: a short human-readable explanation (exception message, violation, ...).
    exact: the exact rational value when known (used for exact integer comparison).
    """

    value: float | None
    pattern: str
    error_class: str
    detail: str = ""
    exact: Fraction | None = field(default=None, compare=False, repr=False)


# --------------------------------------------------------------------------------------------
# Numbers
# --------------------------------------------------------------------------------------------

_MINUS = "-\u2212\u2013"  # ASCII hyphen-minus, Unicode minus, en dash
# A number: thousands-grouped or plain digits, optional decimals, optional exponent ("1e5",
# "2.5E-3": one number, not 1 and 5; not "3e4f", which is no number's notation); or ".5".
_NUMBER_BODY = r"(?:(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+(?!\w))?"


def parse_number(text: str) -> tuple[float, Fraction | None]:
    """Parse "1,234.5", "-18", ".5" (no units) into (float, exact Fraction or None if huge).

    Raises ValueError for anything else.
    """
    cleaned = text.strip().replace(",", "")
    for minus in _MINUS[1:]:
        cleaned = cleaned.replace(minus, "-")
    if not re.fullmatch(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?", cleaned):
        raise ValueError(f"not a number: {text!r}")
    try:
        dec = Decimal(cleaned)
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only valid literals
        raise ValueError(f"not a number: {text!r}") from exc
    value = float(dec)  # Decimal -> float gives inf instead of raising on overflow
    digits = len(dec.as_tuple().digits)
    exact = Fraction(dec) if digits <= _MAX_EXACT_DIGITS and abs(dec.adjusted()) <= _MAX_EXACT_DIGITS else None
    return value, exact


# --------------------------------------------------------------------------------------------
# Text prompts
# --------------------------------------------------------------------------------------------

_NEXT_QUESTION = re.compile(r"^[ \t]*Q:", re.MULTILINE)

# "The final answer is" + optional decoration (":", markdown emphasis, LaTeX, currency) + number.
_FINAL_ANSWER = re.compile(
    r"the\s+final\s+answer\s+is"
    r"[\s:=]*(?:\*\*|__|\*|_)?\s*"                 # "is:", "is **18**"
    r"(?:\\\(|\\\[|\$\$?)?\s*(?:\\boxed\{|\\text\{)?\s*"  # LaTeX wrappers
    rf"(?P<sign1>[{_MINUS}])?\s*"
    r"(?:\\?\$|US\$|USD\s*|€|£)?\s*"              # currency before the number
    rf"(?P<sign2>[{_MINUS}])?"
    rf"(?P<num>{_NUMBER_BODY})"
    r"(?:\s*/\s*(?P<den>\d+)(?!\d|\.\d))?",       # a fraction such as 3/4
    re.IGNORECASE,
)

# Any number; the sign is decided afterwards (a "-" between two numbers is a subtraction).
_ANY_NUMBER = re.compile(rf"(?<![\d.])(?P<sign>[{_MINUS}])?\$?(?P<num>{_NUMBER_BODY})")


def trim_next_question(response: str) -> str:
    """``response`` up to the first line that starts a new few-shot question ("Q:")."""
    m = _NEXT_QUESTION.search(response)
    return response if m is None else response[: m.start()]


def _signed(num: str, negative: bool) -> tuple[float, Fraction | None]:
    value, exact = parse_number(num)
    if negative:
        value, exact = -value, (None if exact is None else -exact)
    return value, exact


def _final_answer(text: str) -> tuple[float, Fraction | None, str] | None:
    for m in _FINAL_ANSWER.finditer(text):
        value, exact = _signed(m.group("num"), bool(m.group("sign1") or m.group("sign2")))
        if m.group("den"):
            den = int(m.group("den"))
            if den == 0:
                continue
            if exact is not None:
                exact = exact / den
                value = float(exact) if abs(exact) < Fraction(10) ** 300 else value / den
            else:
                value = value / den
        return value, exact, m.group(0)
    return None


def _last_number(text: str) -> tuple[float, Fraction | None, str] | None:
    last = None
    for m in _ANY_NUMBER.finditer(text):
        last = m
    if last is None:
        return None
    negative = False
    if last.group("sign"):
        # "15-16" and "x-3" are subtractions; "=-80", "is -3", "(-2" are signs
        prev = text[last.start() - 1] if last.start() > 0 else " "
        negative = not (prev.isalnum() or prev in ")]")
    value, exact = _signed(last.group("num"), negative)
    return value, exact, last.group(0)


def extract_text(response: str, *, fidelity: str = EARNEST, language: str = "eng",
                 english_rules: bool = False) -> Extraction:
    """Extract the numerical answer from a text-prompt response as fidelity mode ``fidelity``
    does (see module docstring). ``language`` other than ``eng``: :func:`extract_text_locale` (the
    language's cue and number style; an unknown code, or a language without a locale row unless
    ``english_rules``, is a :class:`earnest.gsm.locales.LocaleError`); English is read exactly as before."""
    if language != "eng":
        return extract_text_locale(response, language, fidelity=fidelity, english_rules=english_rules)
    if check_mode(fidelity) == REFERENCE:
        return _extract_text_reference(response)
    if response is None or response == "":
        return Extraction(None, "none", EMPTY_RESPONSE, "zero-length response")
    text = trim_next_question(response)
    if not text.strip():
        return Extraction(None, "none", EMPTY_AFTER_TRIMMING,
                          "only whitespace before the next 'Q:'" if response.strip() else "only whitespace")
    found = _final_answer(text)
    if found is not None:
        value, exact, matched = found
        return Extraction(value, "final_answer", "", _clip(matched), exact)
    found = _last_number(text)
    if found is not None:
        value, exact, matched = found
        return Extraction(value, "last_number", "", _clip(matched), exact)
    return Extraction(None, "none", NO_NUMBER_FOUND, "no 'The final answer is <number>' and no number at all")


# -- other languages: the locale's cue and number style (earnest.gsm.locales) --------------------

#: Bidirectional controls (LRM, RLM, ALM, embeddings, isolates) that Arabic-script text may carry
#: around numbers; they are invisible and never part of a number.
_BIDI = dict.fromkeys(map(ord, "\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"))
_DECORATION = (r"[\s:=：]*(?:\*\*|__|\*|_)?\s*(?:\\\(|\\\[|\$\$?)?\s*(?:\\boxed\{|\\text\{)?\s*"
               rf"(?P<sign1>[{_MINUS}])?\s*(?:\\?\$|US\$|USD\s*|€|£|₹|¥|￥|₩|₽|฿|Rs\.?\s*|रु\.?\s*|[KT]?Sh\.?\s*)?\s*"
               rf"(?P<sign2>[{_MINUS}])?")
_LOCALE_CUES: dict = {}


def _locale_cues(loc) -> tuple[list, list]:
    """The compiled cue patterns of a locale, in two tiers: its final-answer phrases and the English
    one (a model that answers a French question with "The final answer is 6" has still given its final
    answer); then its plainer "the answer is" phrases (MGSM's) and the English one."""
    from earnest.gsm.locales import LOCALES, number_regex

    if loc not in _LOCALE_CUES:
        num = rf"(?P<num>{number_regex(loc)})(?:\s*/\s*(?P<den>\d+)(?!\d))?"
        eng = LOCALES["eng"]

        def compiled(phrases, around=()):
            pats = [re.compile(rf"(?:{c}){_DECORATION}{num}", re.IGNORECASE) for c in phrases]
            return pats + [re.compile(c.replace("{num}", rf"(?P<sign1>[{_MINUS}])?\s*{num}"), re.IGNORECASE)
                           for c in around]
        first = list(loc.cues) + [c for c in eng.cues if c not in loc.cues]
        second = list(loc.answer_cues) + [c for c in eng.answer_cues if c not in loc.answer_cues]
        words = [re.compile(rf"(?:{c})[\s:：=*_]*(?P<rest>[^\n]{{0,40}})", re.IGNORECASE) for c in first + second]
        _LOCALE_CUES[loc] = (compiled(first, loc.cues_around), compiled(second), words)
    return _LOCALE_CUES[loc]


def trim_next_question_locale(response: str, loc, answers=None) -> str:
    """``response`` up to the first line that starts a new few-shot question in the locale's labels.
    ``answers`` (a function of a text: whether it holds a final answer): a label line before which
    the response has said no number, and after which (up to the next label) a final answer stands, is
    not a new question (an Arabic answer may write "س:", also the letter of x, before its answer)."""
    labels = "|".join(re.escape(q) for q in loc.question_labels)
    starts = [m.start() for m in re.finditer(rf"^[ \t]*(?:{labels})", response, re.MULTILINE)]
    for k, at in enumerate(starts):
        nxt = starts[k + 1] if k + 1 < len(starts) else len(response)
        if (answers is not None and not re.search(r"\d", response[:at])
                and answers(response[at:nxt].split("\n", 1)[-1])):
            continue
        return response[:at]
    return response


def _cue_match(patterns, text, loc):
    """(match, value, exact) of the earliest cue of ``patterns`` followed by a number, or None."""
    from earnest.gsm.locales import parse_number_text

    best = None
    for pat in patterns:
        for m in pat.finditer(text):
            try:
                value, exact = parse_number_text(m.group("num"), loc)
            except ValueError:
                continue
            if m.group("den") and int(m.group("den")) == 0:
                continue
            if best is None or m.start() < best[0].start():
                best = (m, value, exact)
            break
    return best


def extract_text_locale(response: str | None, language: str, *, fidelity: str = EARNEST,
                        english_rules: bool = False) -> Extraction:
    """The numerical answer of a text-prompt response in ``language`` (earnest mode only: the
    reference, the authors' code, reads English alone).

    The response is cut at the first line that starts a new question (the locale's labels, e.g. "Q :",
    "प्रश्न:", "س:", and "Q:"; not where nothing numeric precedes it and a final answer follows it before
    the next label: :func:`trim_next_question_locale`); then the number after the earliest
    final-answer cue (the language's, e.g. "La réponse finale est", or the English "The final answer
    is") is taken, else after the earliest plainer answer cue (MGSM's "La réponse est", "Ответ:",
    "答案是", or "The answer is"), else the last number; numbers are read as the language writes them
    (decimal commas, thousands by space, dot, apostrophe, no-break spaces, digits of any script,
    fullwidth digits and separators, multiplier words such as 万 or lakh: :mod:`earnest.gsm.locales`).
    A cue followed by words and no digit is ``number_in_words`` (earnest does not read numbers
    written in words)."""
    from earnest.gsm.locales import fullwidth_numbers, multiplier_after, numbers_in, require_locale

    if check_mode(fidelity) == REFERENCE:
        raise ValueError(f"fidelity 'reference' reproduces the authors' English-only extraction; language "
                         f"{language!r} has none (use fidelity 'earnest')")
    loc = require_locale(language, english_rules=english_rules)
    if response is None or response == "":
        return Extraction(None, "none", EMPTY_RESPONSE, "zero-length response")
    first, second, words = _locale_cues(loc)

    def answers(part: str) -> bool:
        part = fullwidth_numbers(part)
        return _cue_match(first, part, loc) is not None or _cue_match(second, part, loc) is not None
    text = fullwidth_numbers(trim_next_question_locale(response.translate(_BIDI), loc, answers))
    if not text.strip():
        return Extraction(None, "none", EMPTY_AFTER_TRIMMING,
                          "only whitespace before the next question" if response.strip() else "only whitespace")
    best = _cue_match(first, text, loc) or _cue_match(second, text, loc)
    if best is not None:
        m, value, exact = best
        groups = m.groupdict()
        if groups.get("sign1") or groups.get("sign2"):
            value, exact = -value, (None if exact is None else -exact)
        if m.group("den"):
            den = int(m.group("den"))
            exact = None if exact is None else exact / den
            value = float(exact) if exact is not None else value / den
        else:
            factor, end = multiplier_after(text, m.end("num"), loc)
            if factor != 1:
                value, exact = value * factor, (None if exact is None else exact * factor)
                return Extraction(value, "final_answer", "", _clip(text[m.start():end]), exact)
        return Extraction(value, "final_answer", "", _clip(m.group(0)), exact)
    for pat in words:
        w = pat.search(text)
        if w and re.search(r"[^\W\d_]", w.group("rest")) and not re.search(r"\d", w.group("rest")):
            return Extraction(None, "none", NUMBER_IN_WORDS, _clip(w.group(0)))
    found = numbers_in(text, loc)
    if found:
        last = found[-1]
        factor, end = multiplier_after(text, last.end, loc)
        if factor != 1:
            return Extraction(last.value * factor, "last_number", "", _clip(text[last.start:end]),
                              None if last.exact is None else last.exact * factor)
        return Extraction(last.value, "last_number", "", _clip(last.text), last.exact)
    return Extraction(None, "none", NO_NUMBER_FOUND, "no final-answer phrase and no number at all")


# -- reference mode: the authors' textual extractor, re-implemented from its behaviour ----------

#: Where the reference cuts a response (its "babbler tokens"): the first "Q:" anywhere; only when
#: there is none, the first "Question:".
REFERENCE_CUTS = ("Q:", "Question:")
# The reference's number: optional "-", digits, optional decimals (no grouping, no leading ".").
_REF_NUMBER = r"(-?\d+(?:\.\d+)?)"
# Its answer phrases, in the order it tries them; between the phrase and the number anything but
# a digit or "-" may stand ("The answer is: $18", "The answer is therefore 18").
_REF_PATTERNS = (
    ("hash_answer", re.compile(r"####\s*[^\d-]*" + _REF_NUMBER)),
    ("final_answer", re.compile(r"[Tt]he (?:final )?answer is:?\s*[^\d-]*" + _REF_NUMBER)),
)
_REF_ANY_NUMBER = re.compile(_REF_NUMBER)


def trim_reference(response: str) -> str:
    """``response`` up to the reference's cut: the first "Q:" anywhere, else the first "Question:"."""
    for token in REFERENCE_CUTS:
        at = response.find(token)
        if at >= 0:
            return response[:at]
    return response


def _extract_text_reference(response: str | None) -> Extraction:
    if not response:
        return Extraction(None, "none", EMPTY_RESPONSE, "zero-length response")
    text = trim_reference(response)
    if not text.strip():
        return Extraction(None, "none", EMPTY_AFTER_TRIMMING, "only whitespace before the first 'Q:'/'Question:'")
    text = text.replace(",", "")
    for pattern_name, pattern in _REF_PATTERNS:
        m = pattern.search(text)
        if m is not None:
            return Extraction(float(m.group(1)), pattern_name, "", _clip(m.group(0)))
    numbers = _REF_ANY_NUMBER.findall(text)
    if numbers:
        return Extraction(float(numbers[-1]), "last_number", "", _clip(numbers[-1]))
    return Extraction(None, "none", NO_NUMBER_FOUND, "no answer phrase and no number")


def _clip(text: str, n: int = 80) -> str:
    return text if len(text) <= n else text[:n] + "..."


# --------------------------------------------------------------------------------------------
# Code prompts
# --------------------------------------------------------------------------------------------

_DEF_SOLUTION = re.compile(r"^(?P<indent>[ \t]*)(?:async[ \t]+)?def[ \t]+solution[ \t]*\(", re.MULTILINE)
_FENCE = re.compile(r"^[ \t]*```[\w+-]*[ \t]*$")
_TOP_LEVEL_CODE = re.compile(r"(?:async\s+def|def|class|import|from)\s|@")
# statements kept above ``def solution`` (earnest): definitions, decorators, imports, constants
_PRE_CODE = re.compile(r"(?:async\s+def|def|class|import|from)\s|@|[A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*\s*(?::[^=]+)?=(?!=)")
FUNCTION_HEADER = "def solution():\n"

#: Longer responses are refused before anything else looks at them (a model answer is bounded by
#: max_new_tokens: 1024 tokens are a few kB; this is far above).
MAX_RESPONSE_CHARS = 200_000


def _width(indent: str) -> int:
    return len(indent.expandtabs(4))


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _block(lines: list[str], start: int, base: int) -> int:
    """Index just past the block opened at ``lines[start]`` (lines indented deeper than ``base``)."""
    i = start + 1
    while i < len(lines):
        line = lines[i]
        if line.strip() and _width(_indent_of(line)) <= base and not line.lstrip().startswith("#"):
            break
        i += 1
    return i


def _following_definitions(lines: list[str], i: int, base: int) -> list[str]:
    """Helper functions, classes and imports the model put after the function, at its level."""
    out: list[str] = []
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if _width(_indent_of(line)) != base or not _TOP_LEVEL_CODE.match(line.lstrip()):
            break  # prose, a call such as print(solution()), ... ends the code
        end = _block(lines, i, base)
        out.extend(lines[i:end])
        i = end
    return out


def _preceding_code(lines: list[str], start: int, base: int) -> int:
    """Index of the first line of the code written directly above ``lines[start]`` (helpers,
    decorators, imports, constants at the function's level, with their blocks); prose ends it."""
    first = start
    i = start - 1
    while i >= 0:
        line = lines[i]
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or _width(_indent_of(line)) > base:
            i -= 1
            continue
        if _width(_indent_of(line)) == base and _PRE_CODE.match(line.lstrip()):
            first = i
            i -= 1
            continue
        break
    # a block's continuation lines above the first statement belong to something that was cut
    while first < start and (not lines[first].strip() or _width(_indent_of(lines[first])) > base):
        first += 1
    return first


def locate_solution(response: str) -> tuple[str | None, str, str]:
    """Find the solution function in a code-prompt response (earnest mode).

    Returns (source or None, pattern, detail). ``source`` is a module defining ``solution`` with
    the code written next to it — helper functions, decorators, imports and constants directly
    above it, helpers after it, imports anywhere above it — run as Python would run the answer;
    pattern is "function" when the model wrote ``def solution(...)``, "function_body" when only
    the body followed the prompt's header (the header is restored), "none" when no function can
    be found.
    """
    text = trim_next_question(response or "")
    lines = [line for line in text.splitlines() if not _FENCE.match(line)]
    if not any(line.strip() for line in lines):
        return None, "none", "empty response" if not (response or "").strip() else "empty after trimming"

    joined = "\n".join(lines)
    m = _DEF_SOLUTION.search(joined)
    if m is not None:
        start = joined.count("\n", 0, m.start())
        base = _width(m.group("indent"))
        first = _preceding_code(lines, start, base)
        # imports written further above, at the function's level
        imports = [line for line in lines[:first]
                   if _width(_indent_of(line)) == base and re.match(r"(?:import|from)\s", line.lstrip())]
        end = _block(lines, start, base)
        tail = lines[start:end] + _following_definitions(lines, end, base)
        code = textwrap.dedent("\n".join(imports + lines[first:start] + tail)) + "\n"
        if first < start and not _parses(code):  # the lines above were not code after all
            code = textwrap.dedent("\n".join(imports + tail)) + "\n"
        return code, "function", ""

    # Body only: the prompt ended with "def solution():\n".
    first = next(i for i, line in enumerate(lines) if line.strip())
    if _indent_of(lines[first]):
        # the body runs until the first non-comment line back at column 0
        end = _block(lines, first, 0)
        code = [FUNCTION_HEADER.rstrip("\n")] + lines[first:end] + _following_definitions(lines, end, 0)
        return "\n".join(code) + "\n", "function_body", ""

    # An unindented body (indentation lost): accept it only if it is Python once indented.
    candidate = FUNCTION_HEADER + textwrap.indent("\n".join(lines[first:]), "    ") + "\n"
    if _parses(candidate) and re.search(r"^\s*return\b", candidate, re.MULTILINE):
        return candidate, "function_body", "body was not indented"
    return None, "none", "no 'def solution' and the text is not an indented function body"


# -- reference mode: the authors' extractor (answer_extractor.py at d063998), re-implemented ----

# where the reference cuts a response: ``trim_reference`` (text part above), shared by both styles
# a zero-argument function at a line start whose body follows on later lines; as in the
# reference, the match runs to the end of the text and is cut line by line afterwards
_REFERENCE_FUNCTION = re.compile(r"^def (\w+)\(\):\s*\n(?:\s+.*|\n)+", re.MULTILINE)
_REFERENCE_IMPORT_LINE = re.compile(r"\s*(?:from \w+ )?import \w+")


def locate_solution_reference(response: str) -> tuple[str | None, str, str]:
    """Find the function as the reference does. Returns (program or None, pattern, detail).

    The reference cuts the response at the first "Q:" (anywhere, else "Question:"), always
    prepends ``def solution():\n``, takes the first zero-argument ``def NAME():`` at a line start
    that has an indented line after it (so a response that repeats the header after a newline
    gives an empty ``solution`` and a syntax error, and a zero-argument helper above ``solution``
    is what runs), blanks every line that starts with an import, and keeps the lines up to the
    first non-blank one that does not start with a space or tab. The program is that function
    followed by ``ret = NAME()``. pattern: "function_body" when the prepended header was used,
    "function" when the model's own ``def`` was, "none".
    """
    text = FUNCTION_HEADER + trim_reference(response or "")
    m = _REFERENCE_FUNCTION.search(text)
    if m is None:
        return None, "none", "no function definition found (reference pattern)"
    lines = m.group().split("\n")
    lines = ["" if _REFERENCE_IMPORT_LINE.match(line) else line for line in lines]
    kept = [lines[0]]
    for line in lines[1:]:
        if line.strip() and not line.startswith((" ", "\t")):
            break
        kept.append(line)
    name = m.group(1)
    program = "\n".join(kept) + f"\nret = {name}()"
    pattern = "function_body" if m.start() == 0 else "function"
    return program, pattern, "" if name == "solution" else f"ran the first zero-argument function, {name}()"


def _parses(source: str) -> bool:
    import ast

    try:
        ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _from_run(result, pattern: str, located_detail: str) -> Extraction:
    detail = "; ".join(d for d in (located_detail, result.detail) if d)
    if result.infrastructure:   # never ran: the machine's failure, not the model's
        return Extraction(None, pattern, INFRASTRUCTURE_ERROR, result.infrastructure)
    if result.error_class:
        return Extraction(None, pattern, result.error_class, detail)
    return Extraction(result.value, pattern, "", detail, result.exact)


def extract_code(response: str, sandbox: "Sandbox | None" = None, *, fidelity: str = EARNEST) -> Extraction:
    """Locate, check and run the solution function of a code-prompt response.

    ``fidelity`` "earnest": ``locate_solution``, the sandbox's static policy and namespace, its
    extra classes ``timeout`` and ``resource_limit``. "reference": ``locate_solution_reference``,
    the reference's forbidden-string check, namespace, return-value rules (a bool is a number,
    a Fraction or Decimal is not) and classes; the sandbox's limits are reported as
    ``unclassified``. Either way the code runs only inside the sandbox, which defaults to a shared
    ``earnest.sandbox.pool.default_sandbox()``.
    """
    return extract_code_many([response], sandbox, fidelity=fidelity)[0]


def extract_code_many(responses: Sequence[str], sandbox: "Sandbox | None" = None, *,
                      fidelity: str = EARNEST) -> list[Extraction]:
    """``extract_code`` for a batch, running the snippets in parallel over the sandbox's workers."""
    from earnest.sandbox.pool import default_sandbox

    check_mode(fidelity)
    reference = fidelity == REFERENCE
    out: list[Extraction | None] = [None] * len(responses)
    located: dict[int, tuple[str, str, str]] = {}
    for i, response in enumerate(responses):
        if response is not None and len(response) > MAX_RESPONSE_CHARS:  # before any parsing
            out[i] = Extraction(None, "none", UNCLASSIFIED if reference else RESOURCE_LIMIT,
                                f"resource limit: response of {len(response)} characters "
                                f"(limit {MAX_RESPONSE_CHARS})")
            continue
        source, pattern, detail = (locate_solution_reference if reference else locate_solution)(response)
        if source is None:
            out[i] = Extraction(None, "none", NO_FUNCTION, detail)
        else:
            located[i] = (source, pattern, detail)
    if located:
        box = sandbox if sandbox is not None else default_sandbox()
        order = list(located)
        results = box.run_many([located[i][0] for i in order], fidelity=fidelity)
        for i, result in zip(order, results):
            out[i] = _from_run(result, located[i][1], located[i][2])
    return out  # type: ignore[return-value]
