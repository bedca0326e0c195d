"""The large-number metric gamma (section 3.4 of the GSM-Symbolic re-evaluation).

gamma(question) = sum over every integer written in digits in the question of log10(|n|),
with 0 counted as 1 (log10 1 = 0). Number words ("three", "twice") are not integers written in
digits; fractions ("1/2") and decimals ("2.5") are not integers; "1,000" is one integer.
"""

from __future__ import annotations

import math
import re

# A run of digits with optional thousands groups ("1,000", "12,345,678"), optionally signed.
# Look-arounds keep us from starting inside a longer number or a word ("x2", "A4").
_NUMBER = re.compile(
    r"(?<![\w.,/])"                      # not glued to a word, a decimal point, a comma group or a slash
    r"(?P<sign>-)?"
    r"(?P<int>\d{1,3}(?:,\d{3})+|\d+)"
    r"(?P<tail>(?:\.\d+)|(?:/\d+))?"     # a decimal or fraction tail disqualifies the match
    r"(?![\d/])"
)


def integers_in(text: str) -> list[int]:
    """Every integer written in digits in ``text``, in order, signed.

    Decimals (``2.5``) and fractions (``1/2``, ``3/4``) are skipped whole; ``$1,200`` gives 1200;
    a sentence-final period after an integer ("... 12.") does not make it a decimal.
    """
    out: list[int] = []
    for m in _NUMBER.finditer(text):
        if m.group("tail"):
            continue
        # "1,000" must not be mistaken for "1" "000" when written without the grouping check
        digits = m.group("int").replace(",", "")
        value = int(digits)
        if m.group("sign") and _is_minus_sign(text, m.start()):
            value = -value
        out.append(value)
    return out


def _is_minus_sign(text: str, pos: int) -> bool:
    """A '-' directly before digits is a minus sign unless it joins two words or numbers ("3-4", "well-known")."""
    return pos == 0 or not text[pos - 1].isalnum()


def gamma(text: str) -> float:
    """Sum of log10 of every integer written in digits (|n|, 0 counted as 1)."""
    return float(sum(math.log10(max(abs(n), 1)) for n in integers_in(text)))
