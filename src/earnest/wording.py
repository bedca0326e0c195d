"""Wording and display, decided once: what the tables, figures, captions and JSON call things.

* GLMM terms: the names the engines return (:data:`TERMS`, :data:`EFFECTS`; lme4's names, which
  the R engine's ``earnest_terms`` must match, tests/test_wording.py) and the labels printed for
  them (:data:`TERM_LABEL`, :func:`effect_label`, :func:`effect_title`, :data:`EFFECT_NAME`).
* P values: :func:`format_p`, the one display of a P value (three decimals, ``<0.001`` below).
* Holm-Bonferroni families in words (:func:`holm_family_text`, built from the family's grouping
  keys so the text cannot drift from :data:`earnest.stats.summary.HOLM_FAMILY`) and how a missing
  P value counts per fidelity mode (:data:`HOLM_MISSING_TEXT`).
* The clean-fit rule per fidelity mode in words (:data:`CLEAN_RULE`; the decision itself is
  :func:`earnest.stats.summary.clean_mask`).
* Marks and notes of the tables and figures: :data:`DAGGER`, :data:`DEGENERATE_MARK`,
  :data:`DEGENERATE_NOTE`, :func:`significance_text`.

Generic: this module imports no benchmark (only :mod:`earnest.fidelity`, for the mode names).
Benchmark-specific display names live in their benchmark, once each: the GSM prompt formats'
labels in ``formats.yaml`` (``paper_name``) with :func:`earnest.gsm.prompts.prompt_noun`, the
StatFormBench unparsed column in :data:`earnest.statform.analysis.UNPARSED_LABEL`.
"""

from __future__ import annotations

import math
from typing import Sequence

from earnest import fidelity as F

# ---------------------------------------------------------------- GLMM terms
#: lme4's name of the intercept, and the model frame's (and so the fit's) names of the effects.
INTERCEPT = "(Intercept)"
VARIANT = "variant"
GAMMA_C = "gamma_c"
#: Every fixed-effect term each GLMM returns, in the engines' order.
TERMS = {1: (INTERCEPT, VARIANT), 2: (INTERCEPT, VARIANT, GAMMA_C)}
#: The effects each GLMM is read for (its terms without the intercept).
EFFECTS = {g: tuple(t for t in terms if t != INTERCEPT) for g, terms in TERMS.items()}

#: The label a table or figure prints for a term (the paper's "Variant" and "γc").
TERM_LABEL = {INTERCEPT: "(Intercept)", VARIANT: "Variant", GAMMA_C: "γc"}
#: Each effect of the project in words, in display order (GLMM 1's variant effect, GLMM 2's
#: large-number effect, GLMM 2's corrected variant effect).
EFFECT_NAME = {(1, VARIANT): "variant effect",
               (2, GAMMA_C): "large-number effect",
               (2, VARIANT): "variant effect corrected for the large-number effect"}
#: Display order of (glmm, term) pairs.
EFFECT_ORDER = tuple(EFFECT_NAME)


def term_label(term: str) -> str:
    """The printed label of ``term`` (the term's own name when it has none)."""
    return TERM_LABEL.get(term, term)


def effect_label(glmm: int, term: str) -> str:
    """Short label of one effect, as a table cell: 'GLMM 1 Variant', 'GLMM 2 γc'."""
    return f"GLMM {int(glmm)} {term_label(term)}"


def effect_name(glmm: int, term: str) -> str:
    """One effect in words ('variant effect', 'large-number effect', ...); its label otherwise."""
    return EFFECT_NAME.get((int(glmm), term), f"effect of {effect_label(glmm, term)}")


def effect_title(glmm: int, term: str, covariate: str = "") -> str:
    """A figure panel's title: 'Variant effect (Variant in GLMM 1)', 'Large-number effect (γc in
    GLMM 2, per unit of γ)'; with ``covariate`` (GLMM 2's covariate when not gamma) it names it."""
    name = effect_name(glmm, term)
    unit = ""
    if term == GAMMA_C:
        unit = f", covariate {covariate}" if covariate and covariate != "gamma" else ", per unit of γ"
    return f"{name[0].upper()}{name[1:]} ({term_label(term)} in GLMM {int(glmm)}{unit})"


def effect_rank(glmm: int, term: str) -> int:
    """Position of an effect in :data:`EFFECT_ORDER` (unknown effects last)."""
    try:
        return EFFECT_ORDER.index((int(glmm), term))
    except ValueError:
        return len(EFFECT_ORDER)


# ---------------------------------------------------------------- P values
#: P values below this print as "<0.001"; others with P_DECIMALS decimals (the paper's display).
P_FLOOR = 0.001
P_DECIMALS = 3


def format_p(p, alpha: float | None = None, missing: str = "", bound=None, below: bool = False) -> str:
    """The display of a P value: three decimals, ``<0.001`` below 0.001, ``missing`` for None/NaN.

    ``bound`` (a bootstrap P of 0 from n estimates: 1/n, :func:`earnest.stats.summary.p_bound`): a P
    of 0 displays as ``<`` the bound, rounded up (``<0.005`` from 200 estimates), never as 0 or as a
    floor the bootstrap cannot reach; a bound below 0.001 displays as ``<0.001``. ``below``: ``p``
    is itself such a bound (a Holm-corrected bound), displayed the same way.

    With ``alpha`` the display never crosses it: a P value below ``alpha`` that rounds up to it
    (0.0495 at alpha 0.05) gets as many more decimals as it takes (``0.0495``), so that a bold
    (significant) cell never reads "0.050". Raises ValueError for a P value outside [0, 1].
    """
    if p is None:
        return missing
    p = float(p)
    if math.isnan(p):
        return missing
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"a P value must lie in [0, 1], not {p!r}")
    if p == 0 and bound is not None and not math.isnan(float(bound)):
        p, below = float(bound), True
    if below and p > P_FLOOR:
        digits = P_DECIMALS
        while math.ceil(p * 10 ** digits) / 10 ** digits >= 2 * p and digits < 12:
            digits += 1
        return f"<{math.ceil(p * 10 ** digits) / 10 ** digits:.{digits}f}"
    if p < P_FLOOR:
        return f"<{P_FLOOR:.{P_DECIMALS}f}"
    digits = P_DECIMALS
    text = f"{p:.{digits}f}"
    from earnest.stats.verdict import below      # the one comparison of a P value with alpha

    if alpha is not None and below(p, alpha):
        while not below(float(text), alpha) and digits < 12:
            digits += 1
            text = f"{p:.{digits}f}"
    return text


def _field(row, name, default=None):
    try:
        v = row[name]
    except (KeyError, IndexError, TypeError):
        return default
    return default if v is None or (isinstance(v, float) and math.isnan(v)) else v


def format_fit_p(row, alpha: float | None = None, corrected: bool = False, missing: str = "") -> str:
    """The P value of one fit's record (:mod:`earnest.stats.verdict`) as every table prints it: the
    verdict's ``p_value`` (``p_holm`` with ``corrected``), shown "<" its value where it is the
    bootstrap's bound (every estimate on one side of 0: below 2/n, never 0). Records written before
    the verdict's columns show ``p_boot`` with its bound."""
    bound_used = _field(row, "p_source", "") == "bootstrap bound"
    p = _field(row, "p_value")
    if p is None:
        p = _field(row, "p_boot")
        b = _field(row, "p_bound")
        bound_used = p == 0 and b is not None
        if bound_used and not corrected:
            p = b
    if corrected:
        p = _field(row, "p_holm")
    return format_p(p, alpha, below=bool(bound_used), missing=missing)


def unresolved_text(row) -> str:
    """' (unresolved: B >= N)' for a fit the verdict calls unresolved at this B ('' otherwise)."""
    if not bool(_field(row, "unresolved", False)):
        return ""
    return f" (unresolved: B ≥ {int(_field(row, 'resolving_resamples', 0))})"


# ---------------------------------------------------------------- significance, marks
#: A double dagger after a P value: the Wald significance call differs from the bootstrap's.
DAGGER = "‡"
#: The mark of a degenerate fit (earnest.stats.diagnostics.fit_problems).
DEGENERATE_MARK = "§"
#: What a degenerate fit is, for a caption or a figure's note.
DEGENERATE_TEXT = ("not estimable: no correct or no wrong answer at all, no clean resample, a covariate collinear "
                   "with the effect, or (unpenalised fits only) a median or interval built from estimates beyond "
                   "±10 log-odds; the estimate carries no information; see verdict_reason and fit_problems")
DEGENERATE_NOTE = f"{DEGENERATE_MARK} not estimable ({DEGENERATE_TEXT})."


#: decimals of an odds ratio and its interval bounds in every table
OR_DECIMALS = 2
#: an odds ratio beyond this (or below its inverse) is shown as ">1000000" ("<0.000001")
OR_DISPLAY_LIMIT = 1e6


def format_estimate(x, degenerate: bool = False, digits: int = OR_DECIMALS, missing: str = "") -> str:
    """An odds ratio (or one of its interval bounds) as every table prints it: ``digits`` decimals;
    for a degenerate fit the degenerate mark alone, since its number carries no information
    (:data:`DEGENERATE_TEXT`; a separated fit's odds ratio can run to hundreds of digits);
    ``missing`` for None/NaN."""
    if x is None:
        return missing
    x = float(x)
    if math.isnan(x):
        return missing
    if degenerate:
        return DEGENERATE_MARK
    # an unpenalised separated fit (the reference's) can reach e^400: shown as beyond a bound, never as
    # hundreds of digits or as 0
    if x >= OR_DISPLAY_LIMIT:
        return f">{OR_DISPLAY_LIMIT:.0f}"
    if 0 <= x <= 1 / OR_DISPLAY_LIMIT:
        return f"<{1 / OR_DISPLAY_LIMIT:.{len(str(int(OR_DISPLAY_LIMIT))) - 1}f}"
    return f"{x:.{digits}f}"


def format_or_interval(odds_ratio, low, high, degenerate: bool = False, digits: int = OR_DECIMALS,
                       missing: str = "n/a") -> str:
    """``OR [low, high]`` as every table prints an estimate with its interval (:func:`format_estimate`):
    the degenerate mark alone for a degenerate fit, ``missing`` where the odds ratio is missing."""
    if degenerate:
        return DEGENERATE_MARK
    shown = format_estimate(odds_ratio, digits=digits)
    if not shown:
        return missing
    return (f"{shown} [{format_estimate(low, digits=digits, missing=missing)}, "
            f"{format_estimate(high, digits=digits, missing=missing)}]")


def significant_label(alpha: float) -> str:
    """A figure legend's entry for a significant effect (uncorrected P, fit not degenerate)."""
    return f"significant (p < {alpha:g})"


def not_significant_label(alpha: float) -> str:
    """A figure legend's entry for an effect that is not significant (the hatched bars)."""
    return f"not significant (p ≥ {alpha:g} or degenerate)"


def significance_text(alpha: float, corrected: bool = False) -> str:
    """What 'significant' means in a caption: 'P < α = 0.05 (uncorrected; fit not degenerate)'."""
    which = "Holm-Bonferroni-corrected" if corrected else "uncorrected"
    return f"P < α = {alpha:g} ({which}; a degenerate fit never)"


# ---------------------------------------------------------------- Holm-Bonferroni families
#: How each grouping key reads in a family's text: (plural of what varies, singular of what is fixed).
_FAMILY_WORDS = {"model": ("models", "model"), "prompt": ("prompt formats", "prompt format")}


def holm_family_text(keys: Sequence[str]) -> str:
    """A Holm family in words from its grouping keys (:data:`earnest.stats.summary.HOLM_FAMILY`):
    keys with ``prompt`` and not ``model`` correct 'across the models of each prompt format', and
    the other way round. Every family is also within one analysis, GLMM and term."""
    keys = set(keys)
    fixed = [k for k in _FAMILY_WORDS if k in keys]
    varying = [k for k in _FAMILY_WORDS if k not in keys]
    if len(fixed) != 1 or len(varying) != 1:
        raise ValueError(f"a Holm family groups by exactly one of model, prompt; got keys {sorted(keys)}")
    return f"across the {_FAMILY_WORDS[varying[0]][0]} of each {_FAMILY_WORDS[fixed[0]][1]}"


#: How a fit without a P value counts in its family's size, per fidelity mode (earnest.stats.summary.holm).
HOLM_MISSING_TEXT = {
    F.REFERENCE: "a fit without a P value counts in its family's size, as the authors' statsmodels call counts it",
    F.EARNEST: "a fit without a P value tests nothing and does not count in its family's size",
}


# ---------------------------------------------------------------- clean fits
#: Clean fits, in words, per fidelity mode (the captions and FIDELITY.md quote these; the rule
#: itself is earnest.stats.summary.clean_mask).
CLEAN_RULE = {
    F.REFERENCE: "no lme4 convergence message (optinfo$conv$lme4$messages) and not singular, as the "
                 "paper authors' results_analyser/glmm.py decides, and an optimiser that converged",
    F.EARNEST: "no warning of any kind while fitting (lme4's convergence messages, optimiser warnings) "
               "and no error; a singular fit (template variance 0) counts",
}
