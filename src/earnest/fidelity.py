"""The two fidelity modes, decided here once.

``reference``: behave as the authors' released code (the-mysh/gsm-symbolic-benchmarking at commit
d063998) behaves at every point where its behaviour changes published numbers: prompt bytes, stop
strings, answer extraction, code-answer classification, correctness, gamma, which fits count as
clean. ``earnest``: this project's deliberate improvements (see resources/FIDELITY.md).
Model code runs in the isolated sandbox in both modes.
"""

from __future__ import annotations

from earnest.schema import schema_default

REFERENCE = "reference"
EARNEST = "earnest"
MODES = (REFERENCE, EARNEST)
#: the mode of a run that names none: config/schema.yaml's ``fidelity`` default
DEFAULT = schema_default("fidelity")
assert DEFAULT in MODES, f"config/schema.yaml: fidelity default {DEFAULT!r} is not a mode"
#: The Python minor version the authors' code requires (its pyproject.toml): model code that uses
#: newer syntax or functions (nested same-quote f-strings, math.sumprod) behaves as there only on it.
REFERENCE_PYTHON = (3, 12)


#: The conda environment (the workflow's envs/) of a scoring job in each mode: reference mode's has the
#: authors' Python 3.12, the interpreter of model code where ``sandbox.python`` leaves it to the job.
#: Every job that scores in a mode takes that mode's (rules/score.smk, and rules/sensitivity.smk for
#: the other mode's column of the sensitivity table).
SCORE_ENVS = {REFERENCE: "envs/score-reference.yaml", EARNEST: "envs/score.yaml"}


def score_env(mode: str) -> str:
    """The conda environment file (relative to the workflow's folder) of scoring in ``mode``."""
    return SCORE_ENVS[check_mode(mode)]


def check_mode(mode: str, where: str = "fidelity") -> str:
    """Return ``mode`` if it is a fidelity mode, else raise ValueError naming ``where``."""
    if mode not in MODES:
        raise ValueError(f"{where}: {mode!r} is not a fidelity mode; use one of {', '.join(MODES)}")
    return mode


def other(mode: str) -> str:
    """The mode that is not ``mode`` (for side-by-side sensitivity runs)."""
    return EARNEST if check_mode(mode) == REFERENCE else REFERENCE
