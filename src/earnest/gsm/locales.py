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
from functools import lru_cache

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
    the labels that start a new few-shot question (a response is cut there); ``answer_cues``: the
    plainer "the answer is" phrases (MGSM's exemplars end with them: "La réponse est", "Ответ:",
    "答案是"), read where no ``cues`` phrase stands; ``group_from``: the smallest number the language
    groups in thousands with a mark that is also its decimal mark (a lone ``1,250`` in Russian, which
    writes ``12 000`` and ``1,25``, is the decimal 1.25; the package's ``12,000`` stays twelve
    thousand), and a leading ``0`` never heads a thousands group (``0,125``); ``multipliers``:
    words after a number that multiply it (regular expression, factor: 万, lakh, Mio., тыс.);
    ``currency_prefixes``: letters that may touch a number (Swahili ``Sh50``); ``markers``: frequent
    words of a Latin-script language, which tell its answers from English ones (the answer-language
    rate: earnest.gsm.answer_language)."""

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
    answer_cues: tuple[str, ...] = ()
    group_from: int = 1000
    multipliers: tuple[tuple[str, int], ...] = ()
    currency_prefixes: tuple[str, ...] = ()
    markers: tuple[str, ...] = ()

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
# a multiplier word is not the start of a longer word (letters of any script may not follow it)
_END = r"(?![^\W\d_])"
_LATIN_MILLIONS = ((rf"\s*(?:million|millions){_END}", 10**6), (rf"\s*(?:billion|billions){_END}", 10**9))

#: The locale table: languages with a built GSM prompt have their cue and question label here.
LOCALES: dict[str, Locale] = {
    "eng": replace(DEFAULT, code="eng", name="English", cues=(_ENGLISH_CUE,), answer_cues=(r"the\s+answer\s+is\s*:?",),
                   markers=("the", "is", "and", "of", "so", "has", "are", "total", "answer", "then")),
    "fra": replace(COMMA_DEFAULT, code="fra", name="French",
                   cues=(r"la\s+r[ée]ponse\s+finale\s+est(?:\s+de|\s+d['’]\s*|\s+égale\s+à|\s*:)?",
                         r"r[ée]ponse\s+finale\s*:"),
                   question_labels=("Q :", "Q:"),
                   answer_cues=(r"la\s+r[ée]ponse\s+est(?:\s+de|\s+d['’]\s*|\s*:)?", r"r[ée]ponse\s*:"),
                   multipliers=((rf"\s*(?:millions?|M€){_END}", 10**6), (rf"\s*milliards?{_END}", 10**9)),
                   markers=("le", "la", "les", "est", "et", "de", "donc", "des", "il", "elle", "réponse", "une")),
    "hin": replace(DEFAULT, code="hin", name="Hindi", script="Devanagari", digits="०१२३४५६७८९", group=None,
                   indian_groups=True,
                   cues=(r"अंतिम\s+उत्तर\s+है\s*:?", r"अंतिम\s+उत्तर\s*:", r"अन्तिम\s+उत्तर\s+है\s*:?"),
                   cues_around=(r"अंतिम\s+उत्तर\s+{num}\s+है",),
                   question_labels=("प्रश्न:", "Q:"),
                   answer_cues=(r"उत्तर\s*(?::|है)",),
                   multipliers=((r"\s*(?:लाख|lakhs?)", 10**5), (r"\s*(?:करोड़|करोड|crores?)", 10**7),
                                (r"\s*(?:हज़ार|हजार)", 1000)),
                   currency_prefixes=("Rs", "Rs.")),
    "ara": replace(DEFAULT, code="ara", name="Arabic", script="Arabic",
                   cues=(r"الإجابة\s+النهائية\s+هي\s*:?", r"الإجابة\s+النهائية\s*:", r"الجواب\s+النهائي\s+هو\s*:?"),
                   question_labels=("س:", "Q:"),
                   answer_cues=(r"الإجابة\s*(?::|هي)", r"الجواب\s*(?::|هو)"),
                   multipliers=((r"\s*مليون", 10**6), (r"\s*مليار", 10**9), (r"\s*(?:ألف|آلاف)", 1000))),
    # the MGSM languages with enough active templates (Spanish and Bengali have 8 and 2: Italian and
    # Korean instead; docs/languages.md)
    "deu": replace(COMMA_DEFAULT, code="deu", name="German",
                   cues=(r"die\s+endg(?:ü|ue)ltige\s+antwort\s+(?:lautet|ist)\s*:?",
                         r"endg(?:ü|ue)ltige\s+antwort\s*:"),
                   question_labels=("F:", "Q:"),
                   answer_cues=(r"die\s+antwort\s+(?:lautet|ist)\s*:?", r"antwort\s*:"),
                   multipliers=((rf"\s*(?:Mio\.|Mio{_END}|Millionen{_END}|Million{_END})", 10**6),
                                (rf"\s*(?:Mrd\.|Mrd{_END}|Milliarden{_END}|Milliarde{_END})", 10**9),
                                (rf"\s*(?:Tsd\.|Tausend{_END})", 1000)),
                   markers=("der", "die", "das", "ist", "und", "also", "sie", "er", "insgesamt", "antwort", "hat")),
    "ita": replace(COMMA_DEFAULT, code="ita", name="Italian",
                   cues=(r"la\s+risposta\s+finale\s+(?:è|é|e['’])\s*:?", r"risposta\s+finale\s*:"),
                   question_labels=("D:", "Q:"),
                   answer_cues=(r"la\s+risposta\s+(?:è|é|e['’])\s*:?", r"risposta\s*:"),
                   multipliers=((rf"\s*(?:milioni|milione|mln\.?){_END}", 10**6),
                                (rf"\s*(?:miliardi|miliardo|mld\.?){_END}", 10**9), (rf"\s*mila{_END}", 1000)),
                   markers=("il", "la", "è", "e", "di", "quindi", "ha", "sono", "risposta", "che", "un")),
    # the package writes Russian numbers in English style (12,000; 2.5) while Russian writes 2,5 and
    # 12 000: a comma before exactly three digits groups thousands, any other comma is a decimal mark
    "rus": replace(DEFAULT, code="rus", name="Russian", script="Cyrillic", decimals=(".", ",", ARABIC_DECIMAL),
                   groups=(",", " ", NBSP, NNBSP, THIN, *APOSTROPHES),
                   cues=(r"окончательный\s+ответ\s*(?::|—\s|–\s|-\s|равен|равно)?",
                         r"итоговый\s+ответ\s*(?::|—\s|–\s|-\s)?"),
                   question_labels=("В:", "Q:"), group_from=10000,
                   answer_cues=(r"ответ\s*(?::|—\s|–\s|-\s|равен|равно)",),
                   multipliers=((rf"\s*(?:млн\.?|миллион(?:а|ов)?{_END})", 10**6),
                                (rf"\s*(?:млрд\.?|миллиард(?:а|ов)?{_END})", 10**9),
                                (rf"\s*(?:тыс\.?|тысяч[аи]?{_END})", 1000))),
    # Chinese (the package's is Traditional) and Japanese: fullwidth digits (\d reads them) and the
    # fullwidth full stop as a decimal point; the ideographic commas ， and 、 separate clauses and list
    # items, never thousands ("100，100 - 30" is two numbers)
    "zho": replace(DEFAULT, code="zho", name="Chinese", script="Han", decimals=(".", FULLWIDTH_STOP, ARABIC_DECIMAL),
                   cues=(r"最[終终](?:的)?答案(?:是|為|为)?\s*[:：]?",),
                   question_labels=("問：", "问：", "問:", "问:", "Q:"),
                   answer_cues=(r"答案(?:是|為|为)\s*[:：]?", r"答案\s*[:：]"),
                   multipliers=((r"[萬万]", 10**4), (r"[億亿]", 10**8), (r"千(?![克米瓦卡])", 1000))),
    "jpn": replace(DEFAULT, code="jpn", name="Japanese", script="Japanese",
                   decimals=(".", FULLWIDTH_STOP, ARABIC_DECIMAL),
                   cues=(r"最終的な答えは\s*[:：]?", r"最終的な答え\s*[:：]", r"最終的な解答は\s*[:：]?"),
                   question_labels=("問：", "問:", "Q:"),
                   answer_cues=(r"答えは\s*[:：]?", r"答え\s*[:：]"),
                   multipliers=((r"万", 10**4), (r"億", 10**8))),
    "kor": replace(DEFAULT, code="kor", name="Korean", script="Hangul",
                   cues=(r"최종\s*(?:답|정답|답변)\s*(?:은|는)?\s*:?",),
                   question_labels=("질문:", "Q:"),
                   answer_cues=(r"(?:정)?답(?:은|는)\s*:?", r"(?:정)?답\s*:"),
                   multipliers=((r"만", 10**4), (r"억", 10**8), (r"천", 1000))),
    "swh": replace(DEFAULT, code="swh", name="Swahili",
                   cues=(r"jibu\s+la\s+mwisho\s+ni\s*:?", r"jibu\s+la\s+mwisho\s*:"),
                   question_labels=("S:", "Q:"),
                   answer_cues=(r"jibu\s+ni\s*:?", r"jibu\s*:"),
                   multipliers=((rf"\s+milioni{_END}", 10**6),),
                   currency_prefixes=("KSh", "TSh", "Tsh", "Sh", "sh"),
                   markers=("na", "ya", "ni", "kwa", "wa", "hivyo", "jibu", "za", "la", "ana", "kila")),
    "tel": replace(DEFAULT, code="tel", name="Telugu", script="Telugu",
                   cues=(r"తుది\s+సమాధానం\s*(?::|=)?", r"చివరి\s+సమాధానం\s*(?::|=)?"),
                   question_labels=("ప్రశ్న:", "Q:"),
                   answer_cues=(r"సమాధానం\s*(?::|=)", r"జవాబు\s*(?::|=)"),
                   multipliers=((r"\s*(?:లక్షలు|లక్ష|lakhs?)", 10**5), (r"\s*(?:కోట్లు|కోటి|crores?)", 10**7),
                                (r"\s*(?:వేలు|వేల)", 1000))),
    "tha": replace(DEFAULT, code="tha", name="Thai", script="Thai",
                   cues=(r"คำตอบสุดท้าย\s*(?:คือ)?\s*:?",),
                   question_labels=("คำถาม:", "Q:"),
                   answer_cues=(r"คำตอบ(?:คือ)\s*:?", r"คำตอบ\s*:"),
                   multipliers=((r"\s*ล้าน", 10**6), (r"\s*แสน", 10**5), (r"\s*หมื่น", 10**4), (r"\s*พัน", 1000))),
}


class LocaleError(ValueError):
    """A language code earnest does not know, or a language whose answers it cannot read."""


@lru_cache(maxsize=1)
def known_languages() -> tuple[str, ...]:
    """The language codes earnest knows: the templates package's (109 in 0.5.5) and the locale table's."""
    from earnest.gsm.template_reading import TemplateError, package_dir

    try:
        root = package_dir("eng").parent
        found = {p.name for p in root.iterdir() if (p / "symbolic").is_dir()}
    except (TemplateError, OSError):
        found = set()
    return tuple(sorted(found | set(LOCALES)))


def check_code(code: str, key: str = "language") -> str:
    """``code`` when earnest knows it, else :class:`LocaleError` naming the known codes."""
    known = known_languages()
    if code not in known:
        near = [k for k in known if k[:2] == str(code)[:2]]
        raise LocaleError(f"{key}: unknown language code {code!r}" + (f" (did you mean {', '.join(near)}?)" if near else "")
                          + f"; the known codes (multilingual-gsm-symbolic's): {', '.join(known)}")
    return code


def require_locale(code: str, *, english_rules: bool = False) -> Locale:
    """The locale row that reads answers in ``code``: refused (:class:`LocaleError`) for a language
    without a row of its own (its cue, its decimal and grouping rules are unknown: "6,5" would be
    read as 5) unless ``english_rules`` (config ``gsm_symbolic.english_rules``), which reads it with
    English rules."""
    check_code(code)
    if code in LOCALES:
        return LOCALES[code]
    if english_rules:
        return replace(LOCALES[ENGLISH], code=code, name=code)
    raise LocaleError(f"language {code!r} has no extractor locale (earnest.gsm.locales.LOCALES: "
                      f"{', '.join(LOCALES)}): its answer cue and number style are unknown; add its row, or read "
                      "it with English rules (config gsm_symbolic.english_rules, or english_rules=True)")


def get_locale(code: str) -> Locale:
    """The row of ``code``; a language without one reads numbers by the package's rule for it (an
    unknown code is a :class:`LocaleError` naming the known ones)."""
    if code in LOCALES:
        return LOCALES[code]
    check_code(code)
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
            head = s[:i]
            # a thousands group needs a head that is not 0 ("0,125" is a decimal) and, where the mark is
            # also the decimal mark and no other group says so, a number the language groups
            grouped = (c in loc.groups and len(tail) == 3 and _grouped_head(head, c)
                       and head.split(c)[0].strip("0") != "")
            if grouped and c not in head:
                grouped = int(head + tail) >= loc.group_from
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
    # not glued to a Latin letter ("x2", "A4": numbers_in checks the letters before a number against the
    # locale's currency prefixes, "Sh50") or inside a number; letters of other scripts may touch a
    # number (Arabic writes "بـ20")
    return re.compile(rf"(?<![\d.])(?P<sign>[{_MINUS}])?(?P<num>{number_regex(loc)})(?P<frac>\s*/\s*\d+)?")


_LATIN_BEFORE = re.compile(r"[A-Za-z.]+$")


def _glued(text: str, start: int, loc: Locale) -> bool:
    """A number at ``start`` glued to the Latin letters before it ("x2", "A4"), unless they are a
    currency prefix of the locale ("Sh50" in Swahili)."""
    if start == 0 or not re.match(r"[A-Za-z]", text[start - 1]):
        return False
    letters = _LATIN_BEFORE.search(text[max(0, start - 8):start]).group(0)
    return letters not in loc.currency_prefixes


#: Fullwidth digits with their fullwidth separators ("１，２３４", "１２．５"): read as the ASCII number.
_FULLWIDTH_RUN = re.compile(r"[０-９](?:[０-９]|[，．](?=[０-９]))*")
_FULLWIDTH = str.maketrans("０１２３４５６７８９，．", "0123456789,.")


def fullwidth_numbers(text: str) -> str:
    """``text`` with every run of fullwidth digits and the fullwidth comma and full stop between them
    in ASCII, character for character (positions unchanged): the ideographic comma between ASCII
    digits still separates clauses ("100，100 - 30" is two numbers), "１，２３４" is 1,234."""
    return _FULLWIDTH_RUN.sub(lambda m: m.group(0).translate(_FULLWIDTH), text)


def multiplier_after(text: str, end: int, loc: Locale) -> tuple[int, int]:
    """(factor, end) of a multiplier word right after a number ending at ``end`` (3万, 2 lakh,
    1,5 Mio., 2 тыс.), or (1, end)."""
    for regex, factor in loc.multipliers:
        m = re.compile(regex, re.IGNORECASE).match(text, end)
        if m:
            return factor, m.end()
    return 1, end


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
    text = fullwidth_numbers(text)
    for m in pattern(loc).finditer(text):
        if _glued(text, m.start(), loc):
            continue
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
