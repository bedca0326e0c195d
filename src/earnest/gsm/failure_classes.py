"""Every failure class an answer can end in, named once (Appendix F of the GSM-Symbolic
re-evaluation, plus earnest's extra classes).

A scored answer has ``error_class`` "" (correct) or one of the names below. Extraction
(``earnest.gsm.extraction``), the sandbox (``earnest.sandbox``), scoring (``earnest.gsm.scoring``) and the
figures use these names; import them from here instead of writing the strings (the code classes
are defined by the sandbox, which runs the code and knows no benchmark, and re-exported here).

Which classes each fidelity mode (``earnest.fidelity``) produces:

* ``reference`` produces exactly the classes of the authors' code (its ``ErrorType``; the paper's
  Appendix F list), with the same names as earnest where the meaning is the same. Its one
  code-only class of its own is ``forbidden_string`` (the reference's regular-expression check of
  the raw text). Run-time limits the reference does not have (it would hang on ``while True``)
  are reported as ``unclassified``, its catch-all, with the reason in the detail. An answer on
  which the authors' code crashes (nothing scored) is ``crashes_reference``, a labelled outcome.
* both: ``unreadable``, a response that is not text (a lone surrogate), that answer alone.
* ``earnest`` produces ``forbidden_construct`` (the sandbox's static policy) instead of
  ``forbidden_string``, and the extra classes ``timeout`` and ``resource_limit``.
"""

from __future__ import annotations

from dataclasses import dataclass

from earnest.fidelity import EARNEST, MODES, REFERENCE, check_mode
from earnest.sandbox.policy import (ATTRIBUTE_ERROR, CRASHES_REFERENCE, FORBIDDEN_CONSTRUCT, FORBIDDEN_STRING,
                                    NAME_ERROR, NO_FUNCTION, NONE_RETURNED, NOT_A_NUMBER, RESOURCE_LIMIT, SYNTAX_ERROR,
                                    TIMEOUT, TYPE_VALUE_ERROR, UNCLASSIFIED, ZERO_DIVISION_ERROR)

CORRECT = ""

# scoring (both styles)
WRONG_ANSWER = "wrong_answer"
WRONG_ANSWER_LAST_NUMBER = "wrong_answer_last_number"
# text extraction
EMPTY_RESPONSE = "empty_response"
EMPTY_AFTER_TRIMMING = "empty_after_trimming"
NO_NUMBER_FOUND = "no_number_found"
NUMBER_IN_WORDS = "number_in_words"
# both styles: a response that is not text (a lone UTF-16 surrogate, from a JSON escape such as
# "\\ud800": no UTF-8 file can hold it) is that answer's error, not the file's
UNREADABLE = "unreadable"
# code extraction: the classes a run of generated code ends in are named by the sandbox that runs
# it (generic, it imports no benchmark): NO_FUNCTION ... RESOURCE_LIMIT, imported above
# scoring (code): the answer never ran because the machine failed it (RunResult.infrastructure):
# not the model's outcome, so never a wrong answer: left out of every count of right and wrong
INFRASTRUCTURE_ERROR = "infrastructure_error"


@dataclass(frozen=True)
class FailureClass:
    """One failure class.

    name: the value of ``error_class``. label: the legend text (Appendix F's wording where the
    paper has the class). meaning: when an answer ends in it. styles: "text" and/or "code".
    modes: the fidelity modes that produce it. reference_name: the reference code's ``ErrorType``
    member ("" for scoring classes and earnest's extras). paper: whether Appendix F lists it.
    """

    name: str
    label: str
    meaning: str
    styles: tuple[str, ...]
    modes: tuple[str, ...] = MODES
    reference_name: str = ""
    paper: bool = True


_BOTH = (REFERENCE, EARNEST)

#: Every class, in the order figure legends list them.
FAILURE_CLASSES: dict[str, FailureClass] = {c.name: c for c in (
    FailureClass(WRONG_ANSWER, "Wrong answer",
                 "a number was extracted but it is not the gold answer", ("text", "code")),
    FailureClass(WRONG_ANSWER_LAST_NUMBER, "Wrong answer — last number",
                 "a wrong number taken by the last-number fallback (the model did not follow the "
                 "few-shot answer format)", ("text",)),
    FailureClass(EMPTY_RESPONSE, "Empty response", "the response is empty (zero-length)", ("text",),
                 reference_name="EMPTY_RESPONSE"),
    FailureClass(EMPTY_AFTER_TRIMMING, "Empty (after trimming)",
                 "only whitespace before the model began a new question ('Q:')", ("text",),
                 reference_name="EMPTY_AFTER_TRIM"),
    FailureClass(NO_NUMBER_FOUND, "No number found", "every numerical extraction method failed",
                 ("text",), reference_name="NO_NUMBER"),
    FailureClass(NUMBER_IN_WORDS, "Number in words",
                 "another language's answer phrase is followed by a number written in words, which earnest "
                 "does not read (a class of its own, not a wrong number)", ("text",), modes=(EARNEST,),
                 paper=False),
    FailureClass(NO_FUNCTION, "No function", "no function definition could be found in the answer",
                 ("code",), reference_name="NO_FUNCTION"),
    FailureClass(FORBIDDEN_STRING, "Forbidden string",
                 "the extracted function's text matches the reference's dangerous-string patterns "
                 "(open(...), eval(...), exec(...), __import__(...), getattr/setattr(...))",
                 ("code",), modes=(REFERENCE,), reference_name="FORBIDDEN_STRING"),
    FailureClass(FORBIDDEN_CONSTRUCT, "Forbidden construct",
                 "the sandbox's static policy refuses the code (file, process, network or "
                 "interpreter access; a dunder; an import outside the allowed modules); earnest's "
                 "counterpart of 'Forbidden string'", ("code",), modes=(EARNEST,), paper=False),
    FailureClass(SYNTAX_ERROR, "Syntax error", "running the extracted code raised SyntaxError",
                 ("code",), reference_name="SYNTAX_ERROR"),
    FailureClass(NAME_ERROR, "Name error", "a NameError was raised", ("code",),
                 reference_name="NAME_ERROR"),
    FailureClass(TYPE_VALUE_ERROR, "Type/Value error", "a TypeError or ValueError was raised",
                 ("code",), reference_name="TYPE_VALUE_ERROR"),
    FailureClass(ZERO_DIVISION_ERROR, "Zero division error", "a ZeroDivisionError was raised",
                 ("code",), reference_name="ZERO_DIVISION_ERROR"),
    FailureClass(ATTRIBUTE_ERROR, "Attribute error", "an AttributeError was raised", ("code",),
                 reference_name="ATTRIBUTE_ERROR"),
    FailureClass(NONE_RETURNED, "None returned",
                 "the function returned None (no return line, an empty return, or None)",
                 ("code",), reference_name="NONE_RETURNED"),
    FailureClass(NOT_A_NUMBER, "Not a number",
                 "the function returned something that is neither a number nor None", ("code",),
                 reference_name="NOT_A_NUMBER"),
    FailureClass(UNCLASSIFIED, "Unclassified",
                 "any other failure while running the function (in reference mode also the "
                 "sandbox's time and resource limits, which the reference does not have)",
                 ("code",), reference_name="UNCLASSIFIED"),
    FailureClass(CRASHES_REFERENCE, "Crashes the reference",
                 "the authors' code would not score this answer: an exception escapes their extractor or "
                 "correctness check (the evaluation set is dropped) or the answer ends their process "
                 "(resources/FIDELITY.md section 16)", ("code",), modes=(REFERENCE,), paper=False),
    FailureClass(UNREADABLE, "Unreadable",
                 "the response is not text (it holds a lone UTF-16 surrogate): that answer is not read, the "
                 "others are", ("text", "code"), paper=False),
    FailureClass(TIMEOUT, "Timeout", "the sandbox's wall-clock or CPU-time limit ended the run",
                 ("code",), modes=(EARNEST,), paper=False),
    FailureClass(RESOURCE_LIMIT, "Resource limit",
                 "memory, output, recursion or answer-size limit of the sandbox", ("code",),
                 modes=(EARNEST,), paper=False),
    FailureClass(INFRASTRUCTURE_ERROR, "Not run (machine failure)",
                 "the machine could not set up the process for this answer (its uid's key or namespace "
                 "quota, say), so no model code ran: not the model's outcome. The row is kept and shown, "
                 "but left out of accuracies, GLMMs and paired comparisons (:func:`judged`)", ("code",),
                 paper=False),
)}

#: Classes that are wrong numbers, not failures to produce one (kept in Appendix G's
#: reasoning-only analysis).
WRONG_ANSWER_CLASSES = frozenset({CORRECT, WRONG_ANSWER, WRONG_ANSWER_LAST_NUMBER})

#: Classes scoring gives, not an extraction or a run of the answer (the wrong-answer classes, and
#: an answer the machine failed to run).
SCORING_CLASSES = WRONG_ANSWER_CLASSES | {INFRASTRUCTURE_ERROR}

#: Classes an extraction can end in, per style (all modes together; scoring classes excluded).
TEXT_ERROR_CLASSES = tuple(n for n, c in FAILURE_CLASSES.items()
                           if "text" in c.styles and n not in SCORING_CLASSES)
CODE_ERROR_CLASSES = tuple(n for n, c in FAILURE_CLASSES.items()
                           if "code" in c.styles and n not in SCORING_CLASSES)

#: Reference ``ErrorType`` member name -> class name.
FROM_REFERENCE = {c.reference_name: n for n, c in FAILURE_CLASSES.items() if c.reference_name}

#: Legend labels, class name -> text.
LABELS = {n: c.label for n, c in FAILURE_CLASSES.items()}


def classes(style: str, mode: str = EARNEST, *, scoring: bool = True) -> tuple[str, ...]:
    """The classes ``style`` ("text" | "code") can end in under fidelity ``mode``, in legend order;
    with ``scoring`` the wrong-answer classes are included."""
    if style not in ("text", "code"):
        raise ValueError(f"style must be 'text' or 'code', not {style!r}")
    check_mode(mode)
    return tuple(n for n, c in FAILURE_CLASSES.items()
                 if style in c.styles and mode in c.modes
                 and (scoring or n not in SCORING_CLASSES))


def judged(scored):
    """The rows of scored table(s) ``scored`` (a DataFrame with ``error_class``) whose answer was
    judged right or wrong: every row but those the machine failed to run (:data:`INFRASTRUCTURE_ERROR`).
    The one place that decides which answers count: accuracies, GLMM inputs and paired comparisons
    read only these rows. A table without ``error_class`` is returned as it is."""
    if "error_class" not in scored.columns:
        return scored
    return scored[scored["error_class"].astype(str) != INFRASTRUCTURE_ERROR]


def label(name: str) -> str:
    """The legend text of class ``name`` (the name itself for an unknown class)."""
    return LABELS.get(name, name)


def check(name: str, where: str = "error_class") -> str:
    """Return ``name`` if it is "" or a known class, else raise ValueError naming ``where``."""
    if name != CORRECT and name not in FAILURE_CLASSES:
        raise ValueError(f"{where}: {name!r} is not a failure class; known: {', '.join(FAILURE_CLASSES)}")
    return name
