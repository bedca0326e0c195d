"""The LLM stages of the construction pipeline, one function per stage over sample records.

A *sample record* is a dict that every stage passes on, completed, and never drops::

    sample_id, unit, entry_id, source, metadata     where it comes from
    background, question, answer, data              (B~, Q~, A~, D): the original split sample
    status        "active" | "discarded" (quality filter, reason kept) | "failed" (stage, error kept)
    stage, reason the stage that discarded / failed it and why
    flags         what a reviewer must look at (proposed_category, self_eval_failed, numbers_missing, ...)
    filter, label, variables, rewrite               each stage's result
    log           {stage: {"ok", "error", "attempts": [{"response", "stop_reason", "error"}]}}

Stages act on ``active`` records only. A stage's model answers are validated; invalid ones are
retried (:mod:`.llm`), then the record becomes ``failed`` with every answer kept. Requests that got
no answer raise :class:`~.llm.TransportError` after the whole batch was asked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

from earnest.schema import schema_default

from ..data import CATEGORY_SEP, DataError, _parse_variables
from ..taxonomy import Taxonomy
from .llm import InvalidAnswer, JsonTask, run_json_tasks, raise_transport_errors
from .numcheck import number_check
from .prompts import PromptSet

#: case projects' induction (config/schema.yaml: statform_build.max_questions, max_rounds)
MAX_QUESTIONS = schema_default("statform_build.max_questions")
MAX_INDUCTION_ROUNDS = schema_default("statform_build.max_rounds")


@dataclass
class StageConfig:
    """How a stage talks to its model: the (cached) backend, the prompts, token cap and retries."""

    backend: Any
    prompts: PromptSet
    max_new_tokens: int = 512
    max_retries: int = 2

    def ask(self, tasks: Sequence[JsonTask]):
        return run_json_tasks(self.backend, tasks, self.max_new_tokens, self.max_retries, self.prompts.raw("retry"))


def _dump(obj) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=1)


def _chat(system: str, user: Any) -> list[dict]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user if isinstance(user, str) else _dump(user)}]


def _text(obj: dict, key: str, *, required: bool = True) -> str:
    v = obj.get(key)
    if v is None and not required:
        return ""
    if not isinstance(v, str):
        raise InvalidAnswer(f"field '{key}' must be a string")
    if required and not v.strip():
        raise InvalidAnswer(f"field '{key}' is empty")
    return v.strip()


def _bool(obj: dict, key: str) -> bool:
    v = obj.get(key)
    if isinstance(v, bool):
        return v
    if v in (0, 1):
        return bool(v)
    if isinstance(v, str) and v.strip().lower() in ("true", "false", "1", "0", "yes", "no"):
        return v.strip().lower() in ("true", "1", "yes")
    raise InvalidAnswer(f"field '{key}' must be true or false (got {v!r})")


def _fail(rec: dict, stage: str, error: str) -> None:
    rec.update(status="failed", stage=stage, reason=error)


def new_record(unit: str, sample_id: str, entry: dict, background: str, question: str, answer: str, data) -> dict:
    return {"sample_id": sample_id, "unit": unit, "entry_id": entry.get("entry_id", unit), "source": entry.get("source", "textbook"),
            "metadata": entry.get("metadata", {}), "background": background, "question": question, "answer": answer,
            "data": data, "status": "active", "stage": "", "reason": "", "flags": [], "filter": None, "label": None,
            "variables": None, "rewrite": None, "log": {}}


# ---------------------------------------------------------------- 3. sub-question splitting + flattening

def validate_split(obj: dict) -> dict:
    pairs = obj.get("pairs")
    if not isinstance(pairs, list) or not pairs:
        raise InvalidAnswer("field 'pairs' must be a non-empty list of {\"question\", \"answer\"} objects")
    out = []
    for i, p in enumerate(pairs):
        if not isinstance(p, dict):
            raise InvalidAnswer(f"pairs[{i}] must be an object with question and answer")
        try:
            out.append({"question": _text(p, "question"), "answer": _text(p, "answer", required=False)})
        except InvalidAnswer as exc:
            raise InvalidAnswer(f"pairs[{i}]: {exc}") from None
    return {"background": _text(obj, "background", required=False), "pairs": out}


def flatten(entry: dict, split: dict) -> list[dict]:
    """The deterministic flattening: one record per (question, answer) pair, ids ``<entry>-q<k>``
    (k from 1), each inheriting the entry's background, data, source and metadata."""
    eid = entry["entry_id"]
    return [new_record(eid, f"{eid}-q{k}", entry, split["background"], p["question"], p["answer"], entry.get("data"))
            for k, p in enumerate(split["pairs"], start=1)]


def split_entry(entry: dict, cfg: StageConfig) -> list[dict]:
    """Split one entry into its samples; a failed split is one ``failed`` record ``<entry>-q0``."""
    user = {"question": entry["question"], "answer": entry["answer"], "data": entry.get("data")}
    task = JsonTask(entry["entry_id"], _chat(cfg.prompts.render("split"), user), validate_split)
    out = cfg.ask([task])
    raise_transport_errors(out, "split", f"entry {entry['entry_id']}")
    oc = out[entry["entry_id"]]
    if oc.ok:
        recs = flatten(entry, oc.value)
        for r in recs:
            r["log"]["split"] = oc.record()
        return recs
    rec = new_record(entry["entry_id"], f"{entry['entry_id']}-q0", entry, "", entry["question"], entry["answer"],
                     entry.get("data"))
    _fail(rec, "split", oc.error)
    rec["log"]["split"] = oc.record()
    return [rec]


# ---------------------------------------------------------------- 7. question induction (case library)

def make_induction_validator(max_questions: int):
    def validate(obj: dict) -> dict:
        qs = obj.get("questions")
        if not isinstance(qs, list) or not qs:
            raise InvalidAnswer("field 'questions' must be a non-empty list")
        if len(qs) > max_questions:
            raise InvalidAnswer(f"at most {max_questions} questions, got {len(qs)}")
        out = []
        for i, q in enumerate(qs):
            if not isinstance(q, dict):
                raise InvalidAnswer(f"questions[{i}] must be an object with question, answer, variables")
            try:
                item = {"question": _text(q, "question"), "answer": _text(q, "answer")}
            except InvalidAnswer as exc:
                raise InvalidAnswer(f"questions[{i}]: {exc}") from None
            v = q.get("variables", [])
            item["variables"] = [str(x) for x in v] if isinstance(v, list) else [str(v)]
            out.append(item)
        return {"overview": _text(obj, "overview"), "questions": out}
    return validate


def validate_verdict(obj: dict) -> dict:
    return {"pass": _bool(obj, "pass"), "feedback": _text(obj, "feedback", required=False)}


def induce_project(project: str, report: str, dictionary: dict, cfg: StageConfig, *, max_questions: int = MAX_QUESTIONS,
                   max_rounds: int = MAX_INDUCTION_ROUNDS, source_meta: dict | None = None) -> list[dict]:
    """Overview + independent questions with report-grounded answers, checked and revised up to
    ``max_rounds`` times. Records ``<project>-q<k>`` on success; one ``failed`` record ``<project>-q0``
    (holding the last version and every verdict) when no version passes or no valid answer came."""
    entry = {"entry_id": project, "source": "case", "metadata": dict(source_meta or {})}
    material = {"report": report, "data_dictionary": dictionary}
    messages = _chat(cfg.prompts.render("induce", max_questions=max_questions), material)
    validate = make_induction_validator(max_questions)
    history: list[dict] = []
    current = None
    for round_no in range(max_rounds + 1):
        out = cfg.ask([JsonTask(f"{project}/induce{round_no}", messages, validate)])
        raise_transport_errors(out, "induce", f"project {project}")
        oc = next(iter(out.values()))
        history.append({"round": round_no, "step": "induce" if round_no == 0 else "revise", **oc.record()})
        if not oc.ok:
            break
        current = oc.value
        check_user = {**material, "overview": current["overview"], "questions": current["questions"]}
        verdict = cfg.ask([JsonTask(f"{project}/check{round_no}", _chat(cfg.prompts.render("induce_check"), check_user),
                                    validate_verdict)])
        raise_transport_errors(verdict, "induce_check", f"project {project}")
        vc = next(iter(verdict.values()))
        history.append({"round": round_no, "step": "check", **vc.record(), "verdict": vc.value})
        if vc.ok and vc.value["pass"]:
            recs = [new_record(project, f"{project}-q{k}", entry, current["overview"], q["question"], q["answer"],
                               dictionary) for k, q in enumerate(current["questions"], start=1)]
            for r, q in zip(recs, current["questions"]):
                r["log"]["induce"] = {"ok": True, "rounds": round_no, "history": history}
                r["induced_variables"] = q["variables"]
            return recs
        if round_no == max_rounds:
            break
        feedback = vc.value["feedback"] if vc.ok else f"(the checker gave no usable verdict: {vc.error})"
        messages = messages + [{"role": "assistant", "content": json.dumps(current, ensure_ascii=False)},
                               {"role": "user", "content": cfg.prompts.render("induce_revise", feedback=feedback)}]
    rec = new_record(project, f"{project}-q0", entry, (current or {}).get("overview", ""),
                     json.dumps(current["questions"], ensure_ascii=False) if current else "(no questions induced)", "",
                     dictionary)
    why = ("no version passed the checker" if current is not None else "no valid induction answer")
    _fail(rec, "induce", f"{why} after {len([h for h in history if h['step'] != 'check'])} version(s)")
    rec["log"]["induce"] = {"ok": False, "history": history}
    return [rec]


# ---------------------------------------------------------------- 4. quality filtering

def validate_filter(obj: dict) -> dict:
    j = obj.get("judge")
    if isinstance(j, str) and j.strip() in ("0", "1"):
        j = int(j.strip())
    if isinstance(j, bool):
        j = int(j)
    if j not in (0, 1):
        raise InvalidAnswer(f"field 'judge' must be 1 or 0 (got {j!r})")
    return {"judge": int(j), "explanation": _text(obj, "explanation", required=False)}


def _active(samples):
    return [r for r in samples if r["status"] == "active"]


def filter_samples(samples: list[dict], cfg: StageConfig) -> list[dict]:
    """Retain or discard each active sample (judge 1/0); the explanation is kept either way."""
    samples = [dict(r) for r in samples]
    todo = _active(samples)
    tasks = [JsonTask(r["sample_id"], _chat(cfg.prompts.render("quality_filter"),
                                            {"background": r["background"], "data": r["data"], "question": r["question"],
                                             "answer": r["answer"]}), validate_filter) for r in todo]
    out = cfg.ask(tasks)
    for r in todo:
        oc = out[r["sample_id"]]
        r["log"] = {**r["log"], "filter": oc.record()}
        if oc.transport_error:
            continue
        if not oc.ok:
            _fail(r, "filter", oc.error)
            continue
        r["filter"] = oc.value
        if oc.value["judge"] == 0:
            r.update(status="discarded", stage="filter", reason=oc.value["explanation"] or "judged unsuitable")
    raise_transport_errors(out, "filter", f"unit {samples[0]['unit']}" if samples else "filter")
    return samples


# ---------------------------------------------------------------- 5a. category labelling

def make_label_validator(taxonomy: Taxonomy):
    labels = set(taxonomy.fine_labels())

    def validate(obj: dict) -> dict:
        sug = _text(obj, "suggested_category", required=False)
        new = _text(obj, "proposed_new_category", required=False)
        reason = _text(obj, "reason", required=False)
        if sug and new:
            raise InvalidAnswer("fill either suggested_category or proposed_new_category, not both")
        if not sug and not new:
            raise InvalidAnswer("both suggested_category and proposed_new_category are empty")
        if new:
            return {"category": None, "proposed_new_category": new, "reason": reason}
        label = sug.replace("\\\\", "\\").replace(" \\ ", "\\")
        if CATEGORY_SEP not in label:
            owners = taxonomy.coarse_of(label)
            if len(owners) == 1:
                label = f"{owners[0]}{CATEGORY_SEP}{label}"
        if label not in labels:
            raise InvalidAnswer(f"suggested_category {sug!r} is not an L1\\L2 label of the taxonomy; choose one "
                                "of the listed labels, or leave it empty and fill proposed_new_category")
        return {"category": label, "proposed_new_category": "", "reason": reason}
    return validate


def label_samples(samples: list[dict], cfg: StageConfig, taxonomy: Taxonomy) -> list[dict]:
    """Category of each active sample from the taxonomy (with definitions), or a proposed new one (flagged)."""
    samples = [dict(r) for r in samples]
    todo = _active(samples)
    system = cfg.prompts.render("category", taxonomy=taxonomy.render(definitions=True))
    validate = make_label_validator(taxonomy)
    out = cfg.ask([JsonTask(r["sample_id"], _chat(system, {"background": r["background"], "data": r["data"],
                                                           "question": r["question"]}), validate) for r in todo])
    for r in todo:
        oc = out[r["sample_id"]]
        r["log"] = {**r["log"], "label": oc.record()}
        if oc.transport_error:
            continue
        if not oc.ok:
            _fail(r, "label", oc.error)
            continue
        r["label"] = oc.value
        if oc.value["proposed_new_category"]:
            r["flags"] = r["flags"] + ["proposed_category"]
    raise_transport_errors(out, "label", f"unit {samples[0]['unit']}" if samples else "label")
    return samples


# ---------------------------------------------------------------- 5b. variable extraction

def validate_variables(obj: dict) -> dict:
    raw = obj
    if set(obj) == {"variables"} and isinstance(obj["variables"], (dict, list)):
        raw = obj["variables"]
    try:
        variables = _parse_variables(raw, "answer")
    except DataError as exc:
        raise InvalidAnswer(str(exc).replace("answer: ", "")) from None
    return {v.id: v.to_dict() for v in variables}


def extract_variables(samples: list[dict], cfg: StageConfig) -> list[dict]:
    """Variable objects {id, value, class, role, description} of each active sample, schema-checked."""
    samples = [dict(r) for r in samples]
    todo = _active(samples)
    system = cfg.prompts.render("variables")
    out = cfg.ask([JsonTask(r["sample_id"], _chat(system, {"background": r["background"], "data": r["data"],
                                                           "question": r["question"], "answer": r["answer"]}),
                            validate_variables) for r in todo])
    for r in todo:
        oc = out[r["sample_id"]]
        r["log"] = {**r["log"], "variables": oc.record()}
        if oc.transport_error:
            continue
        if not oc.ok:
            _fail(r, "variables", oc.error)
            continue
        r["variables"] = oc.value
        if not oc.value:
            r["flags"] = r["flags"] + ["no_variables"]
    raise_transport_errors(out, "variables", f"unit {samples[0]['unit']}" if samples else "variables")
    return samples


def merge_annotations(labelled: list[dict], extracted: list[dict]) -> list[dict]:
    """One record per sample from the label and variable files (run side by side on the filter output)."""
    by_id = {r["sample_id"]: r for r in extracted}
    if set(by_id) != {r["sample_id"] for r in labelled}:
        raise ValueError("label and variable files hold different samples; rerun both from the same filter output")
    out = []
    for a in labelled:
        b = by_id[a["sample_id"]]
        rec = dict(a)
        rec["variables"] = b["variables"]
        rec["log"] = {**b["log"], **a["log"]}
        rec["flags"] = list(dict.fromkeys(a["flags"] + b["flags"]))
        if a["status"] == "active" and b["status"] != "active":
            rec.update(status=b["status"], stage=b["stage"], reason=b["reason"])
        out.append(rec)
    return out


# ---------------------------------------------------------------- 6. rewriting + self-evaluation + number check

def validate_rewrite(obj: dict) -> dict:
    return {"background": _text(obj, "background", required=False), "question": _text(obj, "question")}


def _category_of(r: dict) -> str:
    lab = r.get("label") or {}
    return lab.get("category") or lab.get("proposed_new_category") or ""


def _model_of(r: dict) -> dict:
    return {"category": _category_of(r), "variables": r.get("variables") or {}}


def rewrite_samples(samples: list[dict], cfg: StageConfig, taxonomy: Taxonomy) -> list[dict]:
    """Rewrite (B~, Q~) into (B, Q); self-evaluate; correct once when the evaluator or the number
    check objects; evaluate the correction (recorded, not corrected again). A rewrite that still
    fails is kept and flagged (``self_eval_failed`` / ``numbers_missing``) for the reviewers."""
    samples = [dict(r) for r in samples]
    todo = _active(samples)
    unit = samples[0]["unit"] if samples else "rewrite"
    system = cfg.prompts.render("rewrite", taxonomy=taxonomy.render(definitions=True))
    first_msgs = {r["sample_id"]: _chat(system, {"background": r["background"], "data": r["data"],
                                                 "question": r["question"], "target statistical model": _model_of(r)})
                  for r in todo}
    out = cfg.ask([JsonTask(sid, m, validate_rewrite) for sid, m in first_msgs.items()])
    raise_transport_errors(out, "rewrite", f"unit {unit}")
    versions: dict[str, dict] = {}
    for r in todo:
        oc = out[r["sample_id"]]
        r["log"] = {**r["log"], "rewrite": oc.record()}
        if not oc.ok:
            _fail(r, "rewrite", oc.error)
        else:
            versions[r["sample_id"]] = oc.value
    live = [r for r in todo if r["sample_id"] in versions]

    def evaluate(records, tag):
        tasks = [JsonTask(r["sample_id"], _chat(cfg.prompts.render("rewrite_check"), {
            "original problem": {"background": r["background"], "data": r["data"], "question": r["question"]},
            "statistical model": _model_of(r), "derivation reasoning": r["answer"],
            "rewritten problem": {**versions[r["sample_id"]], "data": r["data"]}}), validate_verdict) for r in records]
        res = cfg.ask(tasks)
        raise_transport_errors(res, f"rewrite_check{tag}", f"unit {unit}")
        return res

    first_eval = evaluate(live, "")
    checks = {r["sample_id"]: number_check(f"{r['background']}\n{r['question']}",
                                           "{background}\n{question}".format(**versions[r["sample_id"]])) for r in live}
    info = {r["sample_id"]: {"first": dict(versions[r["sample_id"]]), "self_eval": [first_eval[r["sample_id"]].record()
                                                                                   | {"verdict": first_eval[r["sample_id"]].value}],
                             "number_check": [checks[r["sample_id"]]], "corrected": False} for r in live}
    need = []
    for r in live:
        ev = first_eval[r["sample_id"]]
        ok = ev.ok and ev.value["pass"] and checks[r["sample_id"]]["ok"]
        if not ok:
            fb = []
            if ev.ok and not ev.value["pass"]:
                fb.append(ev.value["feedback"] or "the rewrite does not meet the standards")
            elif not ev.ok:
                fb.append("(no usable verdict from the evaluator)")
            if not checks[r["sample_id"]]["ok"]:
                fb.append("These numbers of the original are missing from the rewrite: "
                          + ", ".join(checks[r["sample_id"]]["missing"]) + ".")
            need.append((r, " ".join(fb)))
    if need:
        corr = cfg.ask([JsonTask(r["sample_id"], first_msgs[r["sample_id"]] + [
            {"role": "assistant", "content": json.dumps(versions[r["sample_id"]], ensure_ascii=False)},
            {"role": "user", "content": cfg.prompts.render("rewrite_correct", feedback=fb)}], validate_rewrite)
            for r, fb in need])
        raise_transport_errors(corr, "rewrite_correct", f"unit {unit}")
        corrected = []
        for r, _ in need:
            oc = corr[r["sample_id"]]
            info[r["sample_id"]]["correction"] = oc.record()
            if oc.ok:
                versions[r["sample_id"]] = oc.value
                info[r["sample_id"]]["corrected"] = True
                corrected.append(r)
        second = evaluate(corrected, "_after_correction")
        for r in corrected:
            sid = r["sample_id"]
            info[sid]["self_eval"].append(second[sid].record() | {"verdict": second[sid].value})
            checks[sid] = number_check(f"{r['background']}\n{r['question']}", "{background}\n{question}".format(**versions[sid]))
            info[sid]["number_check"].append(checks[sid])
    for r in live:
        sid = r["sample_id"]
        last_eval = info[sid]["self_eval"][-1]
        flags = list(r["flags"])
        if not last_eval["ok"]:
            flags.append("self_eval_unusable")
        elif not last_eval["verdict"]["pass"]:
            flags.append("self_eval_failed")
        if not checks[sid]["ok"]:
            flags.append("numbers_missing")
        r["flags"] = flags
        r["rewrite"] = {**versions[sid], **info[sid], "numbers_missing": checks[sid]["missing"],
                        "numbers_added": checks[sid]["added"]}
    return samples
