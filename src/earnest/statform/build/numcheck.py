"""The deterministic check beside the rewrite self-evaluation: every number of the original survives.

Numbers are read as unsigned decimals (``1,020`` = ``1020``, ``0.50`` = ``0.5``, ``12%`` = ``12``); a
number written as a word from zero to twenty counts as that number. The check compares the sets of
values in the original background + question and in the rewrite; it reports those the rewrite
lost and those it added (the self-evaluation prompt's "no unauthorized new data").
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_NUMBER = re.compile(r"(?<![\d.])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)")
_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
          "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"]
_WORD = re.compile(r"\b(" + "|".join(_WORDS) + r")\b", re.IGNORECASE)


def _norm(token: str) -> str:
    try:
        value = Decimal(token.replace(",", ""))
    except InvalidOperation:
        return token
    text = format(value.normalize(), "f")
    return text


def numbers_in(text: str | None, words: bool = False) -> set[str]:
    """The numeric values written in ``text`` (normalized strings); with ``words``, also zero..twenty."""
    if not text:
        return set()
    found = {_norm(m.group(1)) for m in _NUMBER.finditer(text)}
    if words:
        found |= {str(_WORDS.index(m.group(1).lower())) for m in _WORD.finditer(text)}
    return found


def number_check(original: str, rewritten: str) -> dict:
    """``{"missing": [...], "added": [...], "ok": bool}``: ok when nothing of the original is missing."""
    before = numbers_in(original)
    after = numbers_in(rewritten, words=True)
    missing = sorted(before - after, key=lambda s: (len(s), s))
    added = sorted(numbers_in(rewritten) - before, key=lambda s: (len(s), s))
    return {"missing": missing, "added": added, "ok": not missing}
