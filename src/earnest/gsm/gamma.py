"""The large-number metric gamma (section 3.4 of the GSM-Symbolic re-evaluation).

Other languages (``language=``) read their integers by the locale table (:mod:`earnest.gsm.locales`).

gamma(question) = sum over every integer written in digits in the question of log10(|n|),
with 0 counted as 1 (log10 1 = 0). Number words ("three", "twice") are not integers written in
digits; fractions ("1/2") and decimals ("2.5") are not integers; "1,000" is one integer.

``fidelity="reference"`` (``earnest.fidelity``) reads numbers as the authors' released code does
(the-mysh/gsm-symbolic-benchmarking @ d063998, ``results_analyser/multi_variant_multi_model.py``;
resources/FIDELITY.md, point 6), which uses two patterns:

* gamma (``get_number_effect_glmm_data``): every match of ``\\d*\\.?\\d+`` read as a float; the
  integral ones count (``np.log10(n)``: numpy's log10, as theirs; 0 for 0). So "12,500" is 12 and 500, "3/4" is 3 and 4,
  "2.5" and ".5" count nothing, "-3" is 3. A question without any digit has gamma NaN (it
  leaves the GLMM), not 0.
* the K-S integers (``get_number_counts``, ``NUMBER_PATTERN``): every match of
  ``\\d+(?:\\.\\d+)?`` read as a float, the integral ones kept: "12,500" is 12 and 500, "3/4" is
  3 and 4, "12.0" is 12, ".5" is 5.
"""

from __future__ import annotations

import math
import re

from earnest.fidelity import EARNEST, REFERENCE, check_mode

# A run of digits with optional thousands groups ("1,000", "12,345,678"), optionally signed.
# Look-arounds keep us from starting inside a longer number or a word ("x2", "A4").
_NUMBER = re.compile(
    r"(?<![\w.,/])"                      # not glued to a word, a decimal point, a comma group or a slash
    r"(?P<sign>-)?"
    r"(?P<int>\d{1,3}(?:,\d{3})+|\d+)"
    r"(?P<tail>(?:\.\d+)|(?:/\d+))?"     # a decimal or fraction tail disqualifies the match
    r"(?![\d/])"
)


# the reference's two number patterns (see the module docstring)
_REFERENCE_GAMMA_NUMBER = re.compile(r"\d*\.?\d+")
_REFERENCE_KS_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def integers_in(text: str, *, fidelity: str = EARNEST) -> list[int]:
    """Every integer written in digits in ``text``, in order, signed (earnest) or unsigned (reference).

    earnest: decimals (``2.5``) and fractions (``1/2``, ``3/4``) are skipped whole; ``$1,200``
    gives 1200; a sentence-final period after an integer ("... 12.") does not make it a decimal.
    reference: the K-S integers of the authors' code (module docstring).
    """
    if check_mode(fidelity) == REFERENCE:
        return [int(v) for v in (float(m) for m in _REFERENCE_KS_NUMBER.findall(text)) if v % 1 == 0]
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


def gamma(text: str, *, fidelity: str = EARNEST, language: str = "eng") -> float:
    """Sum of log10 of every integer written in digits (|n|, 0 counted as 1).

    reference: the authors' sum over the integral matches of their gamma pattern; NaN when the
    text has no digit at all (module docstring). ``language`` other than ``eng``: the integers as
    that language writes them (:func:`earnest.gsm.locales.integers_in`: ``2.700.000`` is one
    integer in French, ``1,5`` a decimal, ``१२`` twelve); English is read exactly as before.
    """
    if language != "eng":
        if check_mode(fidelity) == REFERENCE:
            raise ValueError(f"fidelity 'reference' reproduces the authors' English-only gamma; language "
                             f"{language!r} has none (use fidelity 'earnest')")
        from earnest.gsm.locales import integers_in as locale_integers
        return float(sum(math.log10(max(abs(n), 1)) for n in locale_integers(text, language)))
    if check_mode(fidelity) == REFERENCE:
        matches = _REFERENCE_GAMMA_NUMBER.findall(text)
        if not matches:
            return math.nan
        import numpy as np

        values = (float(m) for m in matches)
        # the authors' expression as they wrote it: numpy's log10 (its SIMD loops on AVX-512 machines
        # differ from the C library's log10 in the last bit for some integers: 40, 90, 1999), summed
        # by the builtin sum from 0, which adds numpy scalars one after another (Python 3.12's
        # compensated summation applies to plain floats only, so not to these)
        return float(sum((np.log10(v) if v > 0 else 0) for v in values if not v % 1))
    return float(sum(math.log10(max(abs(n), 1)) for n in integers_in(text)))


def magnitude(question: str, *, fidelity: str = EARNEST) -> float:
    """The size of a question's numbers: the sum of log10(1 + |n|) over its integers. The one
    statistic Ex4's matching is judged by (:func:`earnest.gsm.ks.template_shift`) and balanced on
    (:class:`earnest.gsm.instantiate.Restriction`'s ``balance``)."""
    return float(sum(math.log10(1.0 + abs(n)) for n in integers_in(str(question), fidelity=fidelity)))
