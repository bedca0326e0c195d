"""Is an answer written in the language it was asked in? (issue 51; MGSM reports it too.)

A script and character-set check, not a language identifier: an answer is in language L when most
of its letters are in L's script (:attr:`earnest.gsm.locales.Locale.script`; Japanese needs kana
besides the Han characters, Chinese none), and, for the Latin-script languages, when L's frequent
words (:attr:`earnest.gsm.locales.Locale.markers`) are not outnumbered by English's (a French
answer that switched to English is in Latin script too). The text read is the answer up to the next few-shot
question (:func:`earnest.gsm.extraction.trim_next_question_locale`); an answer with no letter at all
(numbers only) is not counted either way.
"""

from __future__ import annotations

import re
from typing import Iterable

from earnest.gsm.locales import ENGLISH, LOCALES, get_locale

#: Letters of each script the locale table names (Unicode blocks).
SCRIPT_LETTERS = {
    "Latin": "A-Za-z\u00c0-\u024f",
    "Devanagari": "\u0900-\u0963\u0966-\u097f",
    "Arabic": "\u0620-\u064a\u066e-\u06d3\u06fa-\u06ff",
    "Cyrillic": "\u0400-\u04ff",
    "Han": "\u3400-\u4dbf\u4e00-\u9fff",
    "Japanese": "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff",
    "Hangul": "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f",
    "Telugu": "\u0c00-\u0c7f",
    "Thai": "\u0e00-\u0e7f",
}
_KANA = re.compile("[\u3040-\u30ff]")
_LETTER = re.compile(r"[^\W\d_]")
_WORD = re.compile(r"[^\W\d_]+")


def answer_language(text: str, language: str) -> bool | None:
    """Whether ``text`` is written in ``language`` (None: it has no letter)."""
    loc = get_locale(language)
    letters = _LETTER.findall(text or "")
    if not letters:
        return None
    own = re.compile(f"[{SCRIPT_LETTERS.get(loc.script, SCRIPT_LETTERS['Latin'])}]")
    share = sum(1 for c in letters if own.match(c)) / len(letters)
    if share < 0.5:
        return False
    if loc.script == "Japanese":
        return bool(_KANA.search(text))
    if loc.script == "Han":
        return not _KANA.search(text)
    if loc.script != "Latin" or language == ENGLISH or not loc.markers:
        return True
    words = [w.casefold() for w in _WORD.findall(text)]
    mine = sum(w in loc.markers for w in words)
    english = sum(w in LOCALES[ENGLISH].markers for w in words)
    return mine >= english          # more English words than the language's: an English answer


def answer_language_rate(responses: Iterable[str], language: str) -> float:
    """The share of ``responses`` (cut at the next few-shot question) written in ``language``, over
    those with any letter (NaN when none has)."""
    from earnest.gsm.extraction import trim_next_question_locale

    loc = get_locale(language)
    verdicts = [answer_language(trim_next_question_locale(r or "", loc), language) for r in responses]
    counted = [v for v in verdicts if v is not None]
    return sum(counted) / len(counted) if counted else float("nan")
