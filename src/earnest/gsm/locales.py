"""How each language writes numbers and its final answer: the one locale table of earnest.

Three users read this table, and nothing else decides these questions:

* **rendering** (:func:`render_numbers`): how an instantiated question and solution write their
  numbers. It is the templates package's own rule (``format_numbers_by_language`` of
  multilingual-gsm-symbolic 0.5.5, re-implemented and checked against it in
  tests/test_languages.py), so that earnest's instances of a language read as the package's do:
  comma decimals and dot thousands (``2.700.000``; ``12 000`` in Swedish) in the languages of
  :data:`COMMA_DECIMAL`, Devanagari digits throughout in Hindi and Marathi, English style
  (``12,000``, ``2.5``) everywhere else. English (``eng``) never comes here: its instances keep
  :func:`earnest.gsm.instantiate.render_question`'s own path, byte for byte.
* **reading** (:func:`numbers_in`, :func:`parse_number_text`): how a model's answer or a question's
  numbers are read in a language. Digits of every script are read (``\\d`` in Python is every
  Unicode decimal digit: Arabic-Indic ``٣``, Eastern Arabic-Indic ``۳``, Devanagari ``३``, Bengali,
  ...); a locale says which characters separate thousands (:attr:`Locale.groups`: comma, dot,
  space, no-break space U+00A0, narrow no-break space U+202F, thin space U+2009, apostrophes,
  the Arabic thousands separator U+066C) and which mark decimals (:attr:`Locale.decimals`: the
  point, the comma, the Arabic decimal separator U+066B). A separator is a thousands separator only
  between groups of exactly three digits (``1 234``, ``2.700.000``; Indian grouping ``1,23,456``
  where :attr:`Locale.indian_groups`); a dot that is both (comma-decimal locales) is read as
  thousands when it separates three-digit groups (``1.234`` is 1234 in French) and as a decimal
  point otherwise (``6.5`` is 6.5), the comma as the decimal mark (``6,5`` is 6.5; ``1,234`` is
  1.234 in French).
* **the answer cue** (:attr:`Locale.cues`): the phrases after which the final number stands, the
  translation of "The final answer is" written in the language's GSM prompt
  (resources/prompts/languages/), plus :attr:`Locale.cues_around` for a verb-final language whose
  number stands inside the phrase (Hindi "अंतिम उत्तर ६ है").

The rows with a cue are the languages with a built GSM prompt: French, Hindi, Arabic and the MGSM
languages German, Russian, Chinese, Japanese, Swahili, Telugu, Thai, with Italian and Korean
(docs/languages.md says how each reads numbers: Russian both its own ``2,5`` and the package's
``12,000``; Chinese and Japanese fullwidth digits, never grouping by ``，`` or ``、``).

Languages without their own row read numbers by :data:`DEFAULT` (every separator of a dot-decimal
locale) or, in the comma-decimal languages, by :data:`COMMA_DEFAULT`; they have no cue of their own
(the English cue still counts) and no prompt, which :mod:`earnest.gsm.languages` refuses by name.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace
from decimal import Decimal
from fractions import Fraction

ENGLISH = "eng"

#: The package's comma-decimal languages (``_COMMA_DECIMAL_LANGUAGES`` of its ``_helpers``) and those
#: of them that group thousands with a space (``_SPACE_THOUSANDS_LANGUAGES``); the others a dot.
COMMA_DECIMAL = frozenset({"dan", "nob", "nno", "swe", "deu", "fin", "isl", "nld", "fra", "ita"})
SPACE_THOUSANDS = frozenset({"swe"})
#: The package writes every digit of these languages' instances in Devanagari (and groups nothing).
DEVANAGARI_DIGITS = frozenset({"hin", "mar"})

NBSP, NNBSP, THIN = "\u00a0", "\u202f", "\u2009"
ARABIC_DECIMAL, ARABIC_THOUSANDS = "\u066b", "\u066c"
APOSTROPHES = ("'", "\u2019")
FULLWIDTH_STOP = "\uff0e"


@dataclass(frozen=True)
class Locale:
    """How one language writes numbers (rendering and reading) and its final-answer cue.

    ``digits``: the ten digits the package renders with (ASCII, or Devanagari for hin/mar);
    ``decimal``/``group``: the rendered decimal mark and thousands separator (numbers >= 10000);
    ``decimals``/``groups``: the marks read as decimal point / thousands separator (the first
    decimal is the locale's own); ``indian_groups``: also read ``1,23,456``; ``cues``: regular
    expressions (case-insensitive) of the phrases the final number follows; ``cues_around``:
    expressions with ``{num}`` where the number stands inside the phrase; ``question_labels``:
    the labels that start a new few-shot question (a response is cut there)."""

    code: str
    name: str
    script: str = "Latin"
    digits: str = "0123456789"
    decimal: str = "."
    group: str | None = ","
    decimals: tuple[str, ...] = (".", ARABIC_DECIMAL)
    groups: tuple[str, ...] = (",", " ", NBSP, NNBSP, THIN, *APOSTROPHES, ARABIC_THOUSANDS)
    indian_groups: bool = False
    cues: tuple[str, ...] = ()
    cues_around: tuple[str, ...] = ()
    question_labels: tuple[str, ...] = ("Q:",)

    @property
    def comma_decimal(self) -> bool:
        return self.decimals[0] == ","


#: Dot-decimal reading: thousands by comma, spaces (plain, no-break, narrow, thin), apostrophes and U+066C.
DEFAULT = Locale(code="", name="")
#: Comma-decimal reading: thousands by dot, spaces and apostrophes; the comma is the decimal mark
#: (the dot too where it cannot be a thousands separator).
COMMA_DEFAULT = replace(DEFAULT, decimal=",", group=".", decimals=(",", ".", ARABIC_DECIMAL),
                        groups=(".", " ", NBSP, NNBSP, THIN, *APOSTROPHES))

_ENGLISH_CUE = r"the\s+final\s+answer\s+is"

#: The locale table: languages with a built GSM prompt have their cue and question label here.
LOCALES: dict[str, Locale] = {
    "eng": replace(DEFAULT, code="eng", name="English", cues=(_ENGLISH_CUE,)),
    "fra": replace(COMMA_DEFAULT, code="fra", name="French",
                   cues=(r"la\s+r[ée]ponse\s+finale\s+est(?:\s+de|\s+d['’]\s*|\s+égale\s+à|\s*:)?",
                         r"r[ée]ponse\s+finale\s*:"),
                   question_labels=("Q :", "Q:")),
    "hin": replace(DEFAULT, code="hin", name="Hindi", script="Devanagari", digits="०१२३४५६७८९", group=None,
                   indian_groups=True,
                   cues=(r"अंतिम\s+उत्तर\s+है\s*:?", r"अंतिम\s+उत्तर\s*:", r"अन्तिम\s+उत्तर\s+है\s*:?"),
                   cues_around=(r"अंतिम\s+उत्तर\s+{num}\s+है",),
                   question_labels=("प्रश्न:", "Q:")),
    "ara": replace(DEFAULT, code="ara", name="Arabic", script="Arabic",
                   cues=(r"الإجابة\s+النهائية\s+هي\s*:?", r"الإجابة\s+النهائية\s*:", r"الجواب\s+النهائي\s+هو\s*:?"),
                   question_labels=("س:", "Q:")),
    # the MGSM languages with enough active templates (Spanish and Bengali have 8 and 2: Italian and
    # Korean instead; docs/languages.md)
    "deu": replace(COMMA_DEFAULT, code="deu", name="German",
                   cues=(r"die\s+endg(?:ü|ue)ltige\s+antwort\s+(?:lautet|ist)\s*:?",
                         r"endg(?:ü|ue)ltige\s+antwort\s*:"),
                   question_labels=("F:", "Q:")),
    "ita": replace(COMMA_DEFAULT, code="ita", name="Italian",
                   cues=(r"la\s+risposta\s+finale\s+(?:è|é|e['’])\s*:?", r"risposta\s+finale\s*:"),
                   question_labels=("D:", "Q:")),
    # the package writes Russian numbers in English style (12,000; 2.5) while Russian writes 2,5 and
    # 12 000: a comma before exactly three digits groups thousands, any other comma is a decimal mark
    "rus": replace(DEFAULT, code="rus", name="Russian", script="Cyrillic", decimals=(".", ",", ARABIC_DECIMAL),
                   groups=(",", " ", NBSP, NNBSP, THIN, *APOSTROPHES),
                   cues=(r"окончательный\s+ответ\s*(?::|—|–|-|равен|равно)?", r"итоговый\s+ответ\s*(?::|—|–|-)?"),
                   question_labels=("В:", "Q:")),
    # Chinese (the package's is Traditional) and Japanese: fullwidth digits (\d reads them) and the
    # fullwidth full stop as a decimal point; the ideographic commas ， and 、 separate clauses and list
    # items, never thousands ("100，100 - 30" is two numbers)
    "zho": replace(DEFAULT, code="zho", name="Chinese", script="Han", decimals=(".", FULLWIDTH_STOP, ARABIC_DECIMAL),
                   cues=(r"最[終终](?:的)?答案(?:是|為|为)?\s*[:：]?",),
                   question_labels=("問：", "问：", "問:", "问:", "Q:")),
    "jpn": replace(DEFAULT, code="jpn", name="Japanese", script="Japanese",
                   decimals=(".", FULLWIDTH_STOP, ARABIC_DECIMAL),
                   cues=(r"最終的な答えは\s*[:：]?", r"最終的な答え\s*[:：]", r"最終的な解答は\s*[:：]?"),
                   question_labels=("問：", "問:", "Q:")),
    "kor": replace(DEFAULT, code="kor", name="Korean", script="Hangul",
                   cues=(r"최종\s*(?:답|정답|답변)\s*(?:은|는)?\s*:?",),
                   question_labels=("질문:", "Q:")),
    "swh": replace(DEFAULT, code="swh", name="Swahili",
                   cues=(r"jibu\s+la\s+mwisho\s+ni\s*:?", r"jibu\s+la\s+mwisho\s*:"),
                   question_labels=("S:", "Q:")),
    "tel": replace(DEFAULT, code="tel", name="Telugu", script="Telugu",
                   cues=(r"తుది\s+సమాధానం\s*(?::|=)?", r"చివరి\s+సమాధానం\s*(?::|=)?"),
                   question_labels=("ప్రశ్న:", "Q:")),
    "tha": replace(DEFAULT, code="tha", name="Thai", script="Thai",
                   cues=(r"คำตอบสุดท้าย\s*(?:คือ)?\s*:?",),
                   question_labels=("คำถาม:", "Q:")),
}


def get_locale(code: str) -> Locale:
    """The row of ``code``; a language without one reads numbers by the package's rule for it."""
    if code in LOCALES:
        return LOCALES[code]
    base = COMMA_DEFAULT if code in COMMA_DECIMAL else DEFAULT
    extra = {"digits": "०१२३४५६७८९", "group": None, "script": "Devanagari"} if code in DEVANAGARI_DIGITS else {}
    if code in SPACE_THOUSANDS:
        extra["group"] = " "
    return replace(base, code=code, name=code, **extra)


# ------------------------------------------------------------------------------------ rendering

_RENDER_NUMBER = re.compile(r"\b\d+(?:\.\d+)\b|\b\d{5,}\b")      # the package's _RE_NUMBER_FORMAT
_RENDER_SKIP = re.compile(r"(<<[^>]*>>|####\s*-?\d[\d.,]*)")      # calculator annotations, the #### line
_ASCII_DIGITS = "0123456789"


def render_numbers(text: str, code: str) -> str:
    """``text`` (numbers in Python's ASCII form) with its numbers written as the package writes them
    in language ``code`` (its ``format_numbers_by_language``): see the module docstring."""
    if code in DEVANAGARI_DIGITS:
        return text.translate(str.maketrans(_ASCII_DIGITS, "०१२३४५६७८९"))
    comma = code in COMMA_DECIMAL
    sep = " " if code in SPACE_THOUSANDS else ("." if comma else ",")

    def full(m: re.Match) -> str:
        s = m.group(0)
        if "." in s:
            i, d = s.split(".")
            n = int(i)
            head = f"{n:,}".replace(",", sep) if n >= 10000 else str(n)
            return head + ("," if comma else ".") + d
        n = int(s)
        return f"{n:,}".replace(",", sep) if n >= 10000 else s

    def decimal_only(m: re.Match) -> str:
        s = m.group(0)
        if "." in s and comma:
            i, d = s.split(".")
            return i + "," + d
        return s

    parts = _RENDER_SKIP.split(text)
    return "".join(_RENDER_NUMBER.sub(full if k % 2 == 0 else decimal_only, p) for k, p in enumerate(parts))


# -------------------------------------------------------------------------------------- reading

_MINUS = "-\u2212\u2013"


def ascii_digits(text: str) -> str:
    """Every Unicode decimal digit of ``text`` as its ASCII digit (``٣`` ``۳`` ``३`` -> ``3``)."""
    return "".join(str(unicodedata.decimal(c)) if c.isdecimal() and not c.isascii() else c for c in text)


def _alt(chars) -> str:
    return "|".join(re.escape(c) for c in sorted(set(chars), key=lambda c: (-len(c), c)))


def number_regex(loc: Locale) -> str:
    """The regular expression (no groups of its own) of one number as ``loc`` reads it: grouped or
    plain digits, an optional decimal part, or a bare decimal part (``.5``)."""
    d = _alt(loc.decimals)
    # the same separator throughout ("1 234 567"; "1 234.567" is not one grouping)
    grouped = "|".join(rf"\d{{1,3}}(?:{re.escape(c)}\d{{3}})+(?!\d)" for c in sorted(set(loc.groups)))
    if loc.indian_groups:
        grouped = r"\d{1,2}(?:,\d{2})+,\d{3}(?!\d)|" + grouped
    body = rf"(?:(?:{grouped})(?:(?:{d})\d+)?|\d+(?:(?:{d})\d+)?|(?:{d})\d+)"
    return body


@dataclass(frozen=True)
class Found:
    """A number found in a text: where, the text as written, its value, whether it is an integer
    as written (no decimal part, not part of a fraction)."""

    start: int
    end: int
    text: str
    value: float
    exact: object
    integer: bool


def parse_number_text(text: str, loc: Locale) -> tuple[float, object]:
    """(float, exact Fraction or None) of one number as ``loc`` writes it (no sign, no unit).

    Grouping separators go, the decimal mark becomes a point, digits become ASCII; ValueError for
    anything that is not a number of :func:`number_regex`."""
    s = ascii_digits(text.strip())
    if not re.fullmatch(number_regex(loc), s):
        raise ValueError(f"not a number in {loc.code or 'this locale'}: {text!r}")
    dec = Decimal(_normalise(s, loc))
    value = float(dec)
    # as earnest.gsm.extraction.parse_number: no exact value for absurdly long numbers
    exact = Fraction(dec) if len(dec.as_tuple().digits) <= 1000 and abs(dec.adjusted()) <= 1000 else None
    return value, exact


def _normalise(s: str, loc: Locale) -> str:
    """ASCII digits with separators: the same number with only a decimal point left."""
    decimals = [d for d in loc.decimals]
    # the last decimal mark followed by digits to the end is the decimal mark, unless it separates a
    # three-digit group and is also a thousands separator of the locale (then the number is grouped)
    for i in range(len(s) - 1, -1, -1):
        c = s[i]
        if c.isdigit():
            continue
        tail = s[i + 1:]
        if c in decimals:
            grouped = c in loc.groups and len(tail) == 3 and _grouped_head(s[:i], c)
            if not grouped:
                head = s[:i]
                for sep in loc.groups:
                    head = head.replace(sep, "")
                return head + "." + tail
        break
    out = s
    for sep in loc.groups:
        out = out.replace(sep, "")
    return out


def _grouped_head(head: str, sep: str) -> bool:
    parts = head.split(sep)
    return 1 <= len(parts[0]) <= 3 and all(len(p) == 3 for p in parts[1:]) and all(p.isdigit() for p in parts)


def _signed_pattern(loc: Locale) -> re.Pattern:
    # not glued to a Latin letter ("x2", "A4") or inside a number; letters of other scripts may touch
    # a number (Arabic writes "بـ20")
    return re.compile(rf"(?<![\d.A-Za-z])(?P<sign>[{_MINUS}])?(?P<num>{number_regex(loc)})(?P<frac>\s*/\s*\d+)?")


_PATTERNS: dict[Locale, re.Pattern] = {}


def pattern(loc: Locale) -> re.Pattern:
    if loc not in _PATTERNS:
        _PATTERNS[loc] = _signed_pattern(loc)
    return _PATTERNS[loc]


def _is_minus(text: str, pos: int) -> bool:
    return pos == 0 or not text[pos - 1].isalnum()


def numbers_in(text: str, loc: Locale | str) -> list[Found]:
    """Every number written in digits in ``text`` as ``loc`` writes numbers, in order (signed where
    a minus sign stands before it, not where a hyphen joins two words or numbers)."""
    loc = get_locale(loc) if isinstance(loc, str) else loc
    out = []
    for m in pattern(loc).finditer(text):
        num = m.group("num")
        try:
            value, exact = parse_number_text(num, loc)
        except ValueError:
            continue
        if m.group("sign") and _is_minus(text, m.start()):
            value, exact = -value, (None if exact is None else -exact)
        whole = exact is not None and exact.denominator == 1 and "." not in _normalise(ascii_digits(num), loc)
        out.append(Found(m.start(), m.end(), m.group(0), value, exact, bool(whole and not m.group("frac"))))
    return out


def integers_in(text: str, loc: Locale | str) -> list[int]:
    """Every integer written in digits in ``text`` as ``loc`` writes numbers; decimals (``6,5`` in
    French, ``6.5``) and fractions (``1/2``) are skipped whole; ``2.700.000`` (French) and
    ``१२,०००`` are one integer each."""
    return [int(f.exact) for f in numbers_in(text, loc) if f.integer]


def gold_text(value_text: str, code: str) -> str:
    """The text after ``####`` of a solution in language ``code`` as a plain ASCII number: digits of
    any script to ASCII, a comma-decimal language's decimal comma to a point (the package writes no
    thousands separator on that line), other commas (thousands) and ``$`` removed."""
    s = ascii_digits(value_text).replace("$", "").strip()
    if code in COMMA_DECIMAL and re.fullmatch(r"-?\d+,\d+", s):
        return s.replace(",", ".")
    return s.replace(",", "")
