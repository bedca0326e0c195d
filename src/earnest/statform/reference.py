"""StatFormBench ``fidelity: reference``: the authors' prompts and the behaviour of their evaluator.

Written from reading the release (THU-CongLab/StatFormBench at ccb27357, MIT): ``prompts/prompts.py``,
``src/run_benchmark.py`` and ``src/evaluation/{evaluate_combined,evaluate_case,json_utils,
compare_methods,variable_metrics,role_accuracy}.py``. None of their code is copied; every rule below
is restated and implemented here, and the tests check each one on cases of our own.

**Prompts** (:func:`reference_messages`). Their two prompts are kept byte for byte in
``resources/statform/prompts/reference/`` (``prompt_book.txt``, ``prompt_case.txt``). A request is
a system turn ``"You are a professional statistician"`` and one user turn:
``<prompt>\\n\\nquestion：\\n<input as JSON, ensure_ascii=False, indent=2>\\n\\nPlease output the data
in the required JSON format.`` (``Prompt_case`` for case samples, ``Prompt_book`` otherwise).

**JSON extraction** (:func:`extract_last_json`): three strategies in order, the first that gives an
object wins: (1) brace matching: scan left to right, at each ``{`` count ``{``/``}`` (braces inside
strings count too) to its balancing ``}``; a balanced span is kept and the scan resumes after it,
an unbalanced one moves on by one character; the spans are decoded with ``json.loads`` from the last
to the first; (2) the regular expression of objects nested at most one level, its matches decoded
from the last; (3) from the last ``{`` to its balancing ``}``. Anything that is not a string, or is
empty, gives nothing. ``json.loads`` is Python's: ``NaN``/``Infinity`` are read, a repeated key keeps
its last value.

**Case samples** (:func:`score_case`), answer ``{"category", "variable", "role"}``:
no object -> ``no_json``; keys other than exactly those three -> ``false_json``; ``role`` and
``variable`` not objects with the same files and lists of the same lengths -> ``false_role``; all
six scores 0 in each. Else the variables are the set of ``file + column`` strings (joined without a
separator); JCV = |P∩R|/|P∪R| (1 when both are empty, 0 when one is), PV = |P∩R|/|P|, RV =
|P∩R|/|R| (0 when the denominator's set is empty); VRI by their role rule (:func:`_case_vri`);
ACC_FG = exact string equality; ACC_CG = their coarse rule (:func:`coarse_correct`). An answer
whose columns are not strings, or a coarse lookup of a value that cannot be looked up, ends in
their catch-all: ``evaluation_error``, all 0.

**Book samples** (:func:`score_book`): a non-string output -> ``output_not_string``; one starting
``错误:`` or ``Error:`` -> ``output_error``; no object -> ``output_empty``; no ``category`` or no
``variables`` key -> ``missing_fields``. Values are serialized (object or array:
``json.dumps(sort_keys=True)`` with its default ASCII escapes; anything else ``str``) into a *set*,
so duplicate values count once; a variable that is not an object -> ``pred_variables_error``. VRI
counts reference variables whose *first* predicted variable with an equal value has an equal role
string (``X`` is not ``predictor``), over the number of reference variables (0 when there are none).

Error types score 0 on all six metrics. ACC_CG is 1 when both fine names are in the hierarchy
(:func:`earnest.statform.release.coarse_map`) and map to the same coarse name, else 0 (so a coarse
name given as the answer scores 0).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .data import Sample
from .release import coarse_map, release_input, release_output, release_source

#: the reference prompts' files, by release source
PROMPT_FILES = {"book": "prompt_book.txt", "case": "prompt_case.txt"}
SYSTEM_TURN = "You are a professional statistician"
QUESTION_HEAD = "\n\nquestion：\n"
QUESTION_TAIL = "\n\nPlease output the data in the required JSON format."
#: their sampling temperature (run_benchmark.py); the paper config sets it on the models
TEMPERATURE = 0.2
METRIC_NAMES = ("JCV", "PV", "RV", "ACC@2nd", "ACC@1st", "VRI")
#: the release's metric names -> earnest's per-sample columns
AS_EARNEST = {"JCV": "jcv", "PV": "pv", "RV": "rv", "ACC@2nd": "correct_fg", "ACC@1st": "correct_cg", "VRI": "vri"}
SUCCESS = {"case": "successful", "book": "success"}
#: the one-level-nested object pattern of their second strategy
_NESTED_ONCE = re.compile(r"\{(?:[^{}]|(?:\{[^{}]*\}))*\}")


def reference_prompt_dir() -> Path:
    return Path(__file__).resolve().parents[3] / "resources" / "statform" / "prompts" / "reference"


def load_reference_prompt(source: str, folder: str | Path | None = None) -> str:
    """Their ``Prompt_book`` (``source`` book) or ``Prompt_case`` (case), exactly as released."""
    if source not in PROMPT_FILES:
        raise ValueError(f"reference prompt source must be one of {sorted(PROMPT_FILES)}, got {source!r}")
    path = Path(folder or reference_prompt_dir()) / PROMPT_FILES[source]
    with open(path, encoding="utf-8", newline="") as fh:
        return fh.read()


def render_question(inp: dict) -> str:
    """A sample's input as their user turn writes it."""
    return json.dumps(inp, ensure_ascii=False, indent=2)


def reference_messages(sample: Sample, examples=(), folder: str | Path | None = None,
                       extra: str = "") -> list[dict]:
    """The chat turns of one request as the authors send it. ``examples`` (few-shot, ours: the
    release has none) go before it as user/assistant pairs of the same layout; ``extra`` (the
    definitions strategy, ours) is appended to the prompt."""
    src = release_source(sample)
    prompt = load_reference_prompt(src, folder) + extra
    turns = [{"role": "system", "content": SYSTEM_TURN}]
    for ex in examples:
        turns.append({"role": "user", "content": f"question：\n{render_question(release_input(ex))}{QUESTION_TAIL}"})
        turns.append({"role": "assistant", "content": json.dumps(reference_answer(ex), ensure_ascii=False, indent=2)})
    body = f"{prompt}{QUESTION_HEAD}{render_question(release_input(sample))}{QUESTION_TAIL}"
    turns.append({"role": "user", "content": body})
    return turns


def as_stored(response: str) -> str:
    """A model's answer as their ``run_benchmark.py`` stores it before evaluation: stripped of
    surrounding whitespace, then of one leading ```` ```json ```` or ```` ``` ```` and one trailing
    ```` ``` ````, then stripped again (what the reference scoring of earnest's generations reads)."""
    out = response.strip()
    if out.startswith("```json"):
        out = out[7:]
    elif out.startswith("```"):
        out = out[3:]
    if out.endswith("```"):
        out = out[:-3]
    return out.strip()


def reference_answer(sample: Sample) -> dict:
    """The gold answer in the layout their prompt asks for (few-shot examples)."""
    out = release_output(sample)
    if release_source(sample) == "case":
        return {"category": out.get("category"), "variable": out.get("variable"), "role": out.get("role")}
    return {"category": out.get("category"), "variables": out.get("variable")}


# ---------------------------------------------------------------- JSON extraction


def _balanced_end(text: str, start: int) -> int | None:
    """The index after the ``}`` balancing the ``{`` at ``start`` (string contents not skipped), or None."""
    depth = 0
    for j in range(start, len(text)):
        c = text[j]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return j + 1
    return None


def _first_decodable(spans: list[str]):
    for s in reversed(spans):
        try:
            return json.loads(s)
        except json.JSONDecodeError:
            continue
    return None


def _by_balanced_spans(text: str):
    spans, i = [], 0
    while i < len(text):
        if text[i] == "{":
            end = _balanced_end(text, i)
            if end is not None:
                spans.append(text[i:end])
                i = end
                continue
        i += 1
    return _first_decodable(spans)


def _by_pattern(text: str):
    return _first_decodable(_NESTED_ONCE.findall(text))


def _from_last_open(text: str):
    start = text.rfind("{")
    if start < 0:
        return None
    end = _balanced_end(text, start)
    if end is None:
        return None
    try:
        return json.loads(text[start:end])
    except json.JSONDecodeError:
        return None


def extract_last_json(text: Any):
    """The object their ``extract_last_json_safe`` finds in ``text`` (see module doc), or None.

    A strategy that fails in any other way (nesting too deep for the decoder) counts as finding
    nothing, and the next one is tried.
    """
    if not isinstance(text, str) or not text:
        return None
    for strategy in (_by_balanced_spans, _by_pattern, _from_last_open):
        try:
            got = strategy(text)
        except Exception:  # noqa: BLE001 - their extraction skips a strategy that fails in any way
            continue
        if got is not None:
            return got
    return None


# ---------------------------------------------------------------- set metrics and the coarse rule


def jaccard(a: set, b: set) -> float:
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def share_in(a: set, b: set) -> float:
    """|a ∩ b| / |a|, 0 when ``a`` is empty."""
    return len(a & b) / len(a) if a else 0.0


def coarse_correct(pred: Any, ref: Any, hierarchy: dict[str, str]) -> int:
    """Their coarse rule: 1 when both fine names are in the hierarchy with the same coarse name.
    A value that cannot be looked up (a list, an object) raises TypeError, as a dict lookup does."""
    if pred not in hierarchy or ref not in hierarchy:
        return 0
    return 1 if hierarchy[pred] == hierarchy[ref] else 0


def _zeros(error_type: str, error: str | None = None) -> dict:
    return {"error_type": error_type, **{m: 0 for m in METRIC_NAMES}, "error": error}


# ---------------------------------------------------------------- case samples


def _joined(d: dict) -> list[str]:
    """``file + column`` for every column of every file, in order (TypeError when a column is not text)."""
    out = []
    for file, cols in d.items():
        for c in cols:
            if not isinstance(c, str) or not isinstance(file, str):
                raise TypeError(f"can only concatenate str (not {type(c).__name__!r}) to str")
            out.append(file + c)
    return out


def _same_layout(role: Any, variable: Any) -> bool:
    if not isinstance(role, dict) or not isinstance(variable, dict):
        return False
    if role.keys() != variable.keys():
        return False
    return all(isinstance(role[k], list) and isinstance(variable[k], list) and len(role[k]) == len(variable[k])
               for k in role)


def _case_vri(answer: dict, result: dict) -> float:
    """Their role rule: reference columns (``file + column``) in reference order; a column found in
    the answer scores when the role at the same position of the reference's role lists equals the
    role at the answer's position of that column (compared as ``file + role`` strings)."""
    if "role" not in answer or "role" not in result:
        return 0.0
    a_role, r_role = answer.get("role", {}), result.get("role", {})
    if not a_role and not r_role:
        return 1.0
    if r_role and not a_role:
        return 0.0
    a_v, r_v = _joined(answer.get("variable", {})), _joined(result.get("variable", {}))
    a_r, r_r = _joined(a_role), _joined(r_role)
    correct = 0
    for i, r in enumerate(a_r):
        if a_v[i] not in r_v:   # IndexError when the reference has more roles than columns, as theirs
            continue
        if r == r_r[r_v.index(a_v[i])]:
            correct += 1
    return correct / len(a_v) if a_v else 1.0


def score_case(output: Any, answer: dict, hierarchy: dict[str, str]) -> dict:
    """Their scores for one case-library answer (``answer``: the release's ``output``)."""
    try:
        result = extract_last_json(output)
        if result is None:
            return _zeros("no_json")
        if not isinstance(result, dict) or set(result.keys()) != {"category", "variable", "role"}:
            return _zeros("false_json")
        if not _same_layout(result["role"], result["variable"]):
            return _zeros("false_role")
        pred, ref = set(_joined(result["variable"])), set(_joined(answer["variable"]))
        out = {"error_type": SUCCESS["case"], "JCV": jaccard(pred, ref), "PV": share_in(pred, ref),
               "RV": share_in(ref, pred), "VRI": _case_vri(answer, result)}
        out["ACC@2nd"] = 1 if result["category"] == answer["category"] else 0
        out["ACC@1st"] = coarse_correct(result["category"], answer["category"], hierarchy)
        out["error"] = None
        return {"error_type": out["error_type"], **{m: out[m] for m in METRIC_NAMES}, "error": None}
    except Exception as exc:  # noqa: BLE001 - their catch-all: evaluation_error, all 0
        return _zeros("evaluation_error", str(exc))


# ---------------------------------------------------------------- book samples


def serialize(value: Any) -> str:
    """Their value serialization: object/array as sorted-key JSON with ASCII escapes, else ``str``."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def _values(variables: Any) -> set[str]:
    return {serialize(v.get("value")) for _, v in variables.items()}


def _book_vri(label: dict, pred: dict) -> float:
    total = len(label)
    matched = 0
    try:
        for _, lv in label.items():
            l_val, l_role = lv.get("value"), lv.get("role")
            for _, pv in pred.items():
                p_val = pv.get("value")
                if isinstance(l_val, dict) and isinstance(p_val, dict) or isinstance(l_val, list) and isinstance(p_val, list):
                    same = serialize(l_val) == serialize(p_val)
                else:
                    same = str(l_val) == str(p_val)
                if same:
                    if l_role == pv.get("role"):
                        matched += 1
                    break
    except Exception:  # noqa: BLE001 - their rule: any failure here scores 0 of 1
        matched, total = 0, 1
    return matched / total if total > 0 else 0.0


def score_book(output: Any, label: dict, hierarchy: dict[str, str]) -> dict:
    """Their scores for one textbook answer (``label``: the release's ``output``)."""
    if not isinstance(output, str):
        return _zeros("output_not_string", "output_json is not string")
    if output.startswith("错误:") or output.startswith("Error:"):
        return _zeros("output_error", "output_json contains error message")
    result = extract_last_json(output)
    if result is None:
        return _zeros("output_empty", "output_json is empty")
    if "category" not in result or "variables" not in result:
        return _zeros("missing_fields", "output_json missing category or variables field")
    pred_cat, pred_vars = result.get("category", ""), result.get("variables", {})
    label_cat, label_vars = label.get("category", ""), label.get("variable", {})
    acc_fg = 1 if pred_cat == label_cat else 0
    try:
        acc_cg = coarse_correct(pred_cat, label_cat, hierarchy)
    except Exception:  # noqa: BLE001 - their coarse rule's failures score 0
        acc_cg = 0
    try:
        pred = _values(pred_vars)
    except Exception as exc:  # noqa: BLE001
        return _zeros("pred_variables_error", f"Error processing pred_variables: {exc}")
    try:
        ref = _values(label_vars)
    except Exception as exc:  # noqa: BLE001
        return _zeros("label_variable_error", f"Error processing label_variable: {exc}")
    return {"error_type": SUCCESS["book"], "JCV": jaccard(pred, ref), "PV": share_in(pred, ref),
            "RV": share_in(ref, pred), "ACC@2nd": acc_fg, "ACC@1st": acc_cg,
            "VRI": _book_vri(label_vars, pred_vars), "error": None}


def score_reference(output: Any, sample: Sample, hierarchy: dict[str, str]) -> dict:
    """Their scores for one answer to ``sample`` (case or book evaluator by the sample's source)."""
    label = release_output(sample)
    if release_source(sample) == "case":
        if not isinstance(label, dict) or "category" not in label or "variable" not in label:
            return _zeros("missing_fields", f"Missing fields in output for sample_key {sample.sample_id}")
        return score_case(output, label, hierarchy)
    return score_book(output, label, hierarchy)


def hierarchy_for(taxonomy) -> dict[str, str]:
    """The fine -> coarse hierarchy their coarse rule reads (:func:`earnest.statform.release.coarse_map`)."""
    return coarse_map(taxonomy)
