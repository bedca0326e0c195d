"""The StatFormBench construction pipeline end to end, stage by stage, against a scripted
OpenAI-compatible server on 127.0.0.1 (tests/sfb_script.py says what each entry exercises):
broken JSON retried, a refusal recorded as a failure, a discarded sample, a proposed category, a
rewrite that drops a number (caught by the deterministic check), HTTP 500 (the stage fails, a
rerun asks only what is missing), case-library induction with a revision round, review export and
import, the released-format output read back and evaluated, and a rerun that sends nothing."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from openai_server import ScriptedOpenAI
from sfb_script import ENTRIES, NEW_CATEGORY, Annotator

from earnest.statform.build import files as F
from earnest.statform.build.datadict import project_dictionary
from earnest.statform.build.entries import EntryError, read_entries, scan_cases
from earnest.statform.build.llm import TransportError
from earnest.statform.build.numcheck import number_check
from earnest.statform.build.review import ReviewError, read_decisions
from earnest.statform.data import load_samples
from earnest.schema import schema_default

ROOT = Path(__file__).resolve().parents[1]
RES = ROOT / "resources" / "statform"
CASES = RES / "build_example" / "cases"
TAXONOMY = RES / "taxonomy.yaml"
# the schema's defaults, as the workflow passes them (max_questions, max_rounds, report_chars)
INDUCE_OPTIONS = [schema_default(f"statform_build.{k}") for k in ("max_questions", "max_rounds", "report_chars")]


def _llm(url, cache):
    return {"model": "annotator", "model_cfg": {"backend": "openai", "base_url": url, "model": "annotator",
                                                "concurrency": 2, "max_retries": 1, "backoff_s": 0.01,
                                                "max_backoff_s": 0.02, "timeout_s": 10},
            "cache_dir": str(cache), "max_new_tokens": 300, "max_retries": 2}


def build(out: Path, entries_file: Path, llm: dict, cases: Path = CASES) -> tuple[dict, list[dict], dict]:
    """Every per-unit stage, as the workflow runs them; returns (units, excluded projects, errors by unit)."""
    entries = {e["entry_id"]: e for e in read_entries(entries_file)}
    projects, excluded = scan_cases(cases)
    errors = {}
    for unit in list(entries) + list(projects):
        try:
            if unit in entries:
                F.write_entry(entries[unit], out / "entries" / f"{unit}.json")
                F.run_split(out / "entries" / f"{unit}.json", out / "split" / f"{unit}.jsonl", llm)
                samples = out / "split" / f"{unit}.jsonl"
            else:
                F.run_datadict(unit, Path(projects[unit]["report"]).parent, projects[unit]["data"], 0,
                               out / "datadict" / f"{unit}.json")
                F.run_induce(unit, projects[unit]["report"], out / "datadict" / f"{unit}.json",
                             out / "induce" / f"{unit}.jsonl", llm, *INDUCE_OPTIONS)
                samples = out / "induce" / f"{unit}.jsonl"
            F.run_filter(samples, out / "filter" / f"{unit}.jsonl", llm)
            F.run_label(out / "filter" / f"{unit}.jsonl", out / "label" / f"{unit}.jsonl", llm, TAXONOMY)
            F.run_variables(out / "filter" / f"{unit}.jsonl", out / "variables" / f"{unit}.jsonl", llm)
            F.run_rewrite(out / "label" / f"{unit}.jsonl", out / "variables" / f"{unit}.jsonl",
                          out / "rewrite" / f"{unit}.jsonl", llm, TAXONOMY)
        except TransportError as exc:
            errors[unit] = str(exc)
    units = {**{u: e["source"] for u, e in entries.items()}, **{u: "case" for u in projects}}
    return units, excluded, errors


def finalize(out: Path, units, excluded, decisions=()):
    rewrite = sorted((out / "rewrite").glob("*.jsonl"))
    F.run_review_export(rewrite, out / "review", 4)
    return F.run_finalize(rewrite, list(decisions), TAXONOMY, False, out / "statformbench.jsonl",
                          out / "status.parquet", out / "taxonomy.yaml", out / "stats", units, excluded)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sfbuild")
    entries = tmp / "entries.jsonl"
    entries.write_text("".join(json.dumps(e) + "\n" for e in ENTRIES), encoding="utf-8")
    script = Annotator()
    with ScriptedOpenAI(script) as srv:
        llm = _llm(srv.url, tmp / "cache")
        units, excluded, errors = build(tmp / "out", entries, llm)
        first_errors = dict(errors)
        sent_first = len(srv.received)
        # the server recovers; a rerun of everything sends only the request that got no answer
        script.state["fail500"] = False
        units, excluded, errors = build(tmp / "out", entries, llm)
        sent_rerun = len(srv.received) - sent_first
        counts = finalize(tmp / "out", units, excluded)
        # a third run, into a fresh folder, is served entirely from the cache
        sent_before = len(srv.received)
        build(tmp / "again", entries, llm)
        sent_third = len(srv.received) - sent_before
    return {"sent_third": sent_third, "tmp": tmp, "out": tmp / "out", "units": units, "excluded": excluded, "first_errors": first_errors,
            "errors": errors, "counts": counts, "sent_first": sent_first, "sent_rerun": sent_rerun, "entries": entries}


def _records(out, stage, unit):
    return F.read_records(out / stage / f"{unit}.jsonl")


def test_server_error_fails_the_stage_and_a_rerun_asks_only_what_is_missing(built):
    assert list(built["first_errors"]) == ["err"]
    assert "filter" in built["first_errors"]["err"] and "error:http_500" in built["first_errors"]["err"]
    assert not built["errors"]
    # everything answered the first time came from the cache: the rerun sent only err's filter request
    # and the err unit's later stages (label, variables, rewrite, check)
    assert built["sent_rerun"] == 5


def test_split_retries_broken_json_and_flattens(built):
    out = built["out"]
    two = _records(out, "split", "two")
    assert [r["sample_id"] for r in two] == ["two-q1", "two-q2"]
    assert all(r["background"].startswith("TAG:two In a clinic 12%") for r in two)
    assert two[1]["question"].startswith("What is the expected number")
    broken = _records(out, "split", "broken")[0]
    attempts = broken["log"]["split"]["attempts"]
    assert len(attempts) == 2 and "no JSON object" in attempts[0]["error"] and attempts[1]["error"] == ""


def test_filter_discards_with_reason_and_refusal_is_recorded_not_dropped(built):
    out = built["out"]
    define = _records(out, "filter", "define")[0]
    assert define["status"] == "discarded" and "concept recall" in define["reason"]
    refuse = _records(out, "rewrite", "refuse")[0]
    assert refuse["status"] == "failed" and refuse["stage"] == "variables"
    answers = [a["response"] for a in refuse["log"]["variables"]["attempts"]]
    assert len(answers) == 3 and all("can't help" in a for a in answers)  # 1 try + max_retries 2
    fails = pd.read_csv(out / "stats" / "failures.csv").set_index("sample_id")
    assert fails.at["refuse-q1", "stage"] == "variables" and fails.at["refuse-q1", "answers"] == 3
    assert fails.at["define-q1", "status"] == "discarded"


def test_labels_are_checked_against_the_taxonomy(built):
    out = built["out"]
    broken = _records(out, "label", "broken")[0]
    assert broken["label"]["category"] == "Hypothesis Testing & Interval Estimation\\Mean Test"  # L2 name resolved
    drops = _records(out, "label", "drops")[0]
    assert len(drops["log"]["label"]["attempts"]) == 2
    assert "not an L1\\L2 label of the taxonomy" in drops["log"]["label"]["attempts"][0]["error"]
    newcat = _records(out, "label", "newcat")[0]
    assert newcat["label"]["proposed_new_category"] == NEW_CATEGORY and "proposed_category" in newcat["flags"]


def test_rewrite_number_check_and_one_shot_correction(built):
    out = built["out"]
    broken = _records(out, "rewrite", "broken")[0]
    rw = broken["rewrite"]
    # the evaluator passed the first rewrite, the deterministic check did not: one correction
    assert rw["self_eval"][0]["verdict"]["pass"] is True
    assert rw["number_check"][0]["missing"] == ["1020"] and rw["corrected"] is True
    assert "1020" in rw["question"] and rw["numbers_missing"] == [] and broken["flags"] == []
    drops = _records(out, "rewrite", "drops")[0]
    assert drops["rewrite"]["numbers_missing"] == ["116"] and "numbers_missing" in drops["flags"]
    newcat = _records(out, "rewrite", "newcat")[0]
    assert [e["verdict"]["pass"] for e in newcat["rewrite"]["self_eval"]] == [False, True]
    assert "survival" not in newcat["rewrite"]["question"]


def test_case_library_data_dictionary_and_induction(built):
    out = built["out"]
    assert [e["project"] for e in built["excluded"]] == ["survey-notes"]
    d = json.loads((out / "datadict" / "clinic-waits.json").read_text())
    t = d["tables"][0]
    assert t["shape"] == [24, 4] and t["missing"]["wait_min"] == 2
    raw = pd.read_csv(CASES / "clinic-waits" / "waits.csv")
    preview = pd.DataFrame(t["preview_simulated"])
    assert len(preview) == 5
    # simulated, not copied: within the column's range, no preview row equals a raw row
    w = preview["wait_min"].dropna()
    assert w.between(raw["wait_min"].min(), raw["wait_min"].max()).all()
    assert preview["clinic"].isin(["North", "South"]).all()
    raw_rows = {tuple(r) for r in raw.astype(str).to_numpy()}
    assert not any(tuple(r) in raw_rows for r in preview.astype(str).to_numpy())
    case = _records(out, "induce", "clinic-waits")
    assert [r["sample_id"] for r in case] == ["clinic-waits-q1", "clinic-waits-q2"]
    hist = case[0]["log"]["induce"]["history"]
    assert [h["step"] for h in hist] == ["induce", "check", "revise", "check"]
    assert "hour of arrival" in case[1]["question"] and case[0]["source"] == "case"
    # the induction model saw preview rows the model wrote from the summary (the paper's way)
    assert case[0]["metadata"]["preview"] == {"waits.csv": "written by the model from the table's summary"}


def test_preview_rows_fall_back_to_the_simulation_labelled(tmp_path):
    from earnest.statform.build.datadict import model_previews

    files = [str(CASES / "clinic-waits" / "waits.csv")]
    d = project_dictionary("clinic-waits", CASES / "clinic-waits", files, seed=3)
    script = Annotator()
    script.state["bad_preview"] = True
    with ScriptedOpenAI(script) as srv:
        cfg, backend = F.stage_config(_llm(srv.url, tmp_path / "cache"))
        try:
            shown = model_previews(d, cfg)
        finally:
            backend.close()
        asked = len(srv.received)
    t = shown["tables"][0]
    assert asked == 3                                   # the first answer and max_retries = 2 more
    assert t["preview"] == d["tables"][0]["preview_simulated"] and "preview_simulated" not in t
    assert t["preview_source"].startswith("simulated (seeded fallback; the model's rows were unusable: row 1, column")
    assert "is not a number in [" in t["preview_source"]


def test_data_dictionary_is_deterministic(tmp_path):
    files = [str(CASES / "clinic-waits" / "waits.csv")]
    a = project_dictionary("clinic-waits", CASES / "clinic-waits", files, seed=3)
    b = project_dictionary("clinic-waits", CASES / "clinic-waits", files, seed=3)
    c = project_dictionary("clinic-waits", CASES / "clinic-waits", files, seed=4)
    assert a == b and a["tables"][0]["preview_simulated"] != c["tables"][0]["preview_simulated"]


def test_final_samples_statistics_and_review_sheets(built):
    out = built["out"]
    assert built["counts"] == {"final": 6, "discarded": 1, "failed": 1, "pending_review": 2}
    final = load_samples(out / "statformbench.jsonl")
    ids = {s.sample_id for s in final}
    assert ids == {"two-q1", "two-q2", "broken-q1", "err-q1", "clinic-waits-q1", "clinic-waits-q2"}
    two = next(s for s in final if s.sample_id == "two-q1")
    assert two.background.startswith("We keep records.") and two.category_fg == "Event Probability & Independence"
    assert {v.id for v in two.variables} == {"p_noshow", "n_booked"}
    stages = pd.read_csv(out / "stats" / "stages.csv").set_index("stage")
    assert stages.at["split", "entered"] == 7 and stages.at["split", "passed"] == 7
    assert stages.at["samples created", "entered"] == 10
    assert stages.at["filter", "discarded"] == 1 and stages.at["variables", "failed"] == 1
    assert (stages.at["rewrite", "entered"], stages.at["rewrite", "passed"]) == (8, 8)
    assert stages.at["review", "entered"] == 8 and stages.at["review", "passed"] == 6
    assert stages.at["review", "pending"] == 2 and stages.at["review", "lost"] == 2
    assert stages.at["selection (case projects)", "discarded"] == 1
    cats = pd.read_csv(out / "stats" / "categories.csv").set_index("category")
    assert cats.at["Hypothesis Testing & Interval Estimation\\Mean Test", "final"] == 3
    assert "## stages" in (out / "stats" / "summary.md").read_text()
    sheets = sorted((out / "review").glob("batch-*.csv"))
    assert [p.name for p in sheets] == ["batch-001.csv", "batch-002.csv"]  # 8 active samples, batches of 4
    rows = [r for p in sheets for r in csv.DictReader(open(p, encoding="utf-8"))]
    assert len(rows) == 8 and {r["sample_id"] for r in rows if r["flags"]} == {"newcat-q1", "drops-q1"}
    index = (out / "review" / "index.html").read_text()
    assert "refuse-q1" in index and "define-q1" in index


def test_review_decisions_adopt_a_category_and_reject(built, tmp_path):
    out = built["out"]
    rows = [r for p in sorted((out / "review").glob("batch-*.csv")) for r in csv.DictReader(open(p, encoding="utf-8"))]
    for r in rows:
        if r["sample_id"] == "newcat-q1":
            r.update(decision="accept", category_final=NEW_CATEGORY, note="adopted")
        if r["sample_id"] == "drops-q1":
            r.update(decision="reject")
        if r["sample_id"] == "two-q1":
            r.update(decision="accept", question_final="How likely is it that all 4 booked patients come?",
                     variables_final=json.dumps({"p_show": {"id": "p_show", "value": 0.88, "class": "numerical",
                                                            "role": "N/A", "description": "show-up rate"}}))
    filled = tmp_path / "filled.csv"
    with open(filled, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    dst = tmp_path / "out"
    shutil.copytree(out, dst)
    counts = finalize(dst, built["units"], built["excluded"], [filled])
    assert counts == {"final": 7, "discarded": 1, "failed": 1, "rejected": 1}
    final = {s.sample_id: s for s in load_samples(dst / "statformbench.jsonl")}
    assert final["newcat-q1"].category == NEW_CATEGORY
    assert final["two-q1"].question.startswith("How likely is it that all 4")
    assert [v.id for v in final["two-q1"].variables] == ["p_show"]
    assert "Survival Analysis" in (dst / "taxonomy.yaml").read_text()
    # a bad decision names file, line and column
    rows[0]["decision"] = "maybe"
    with open(filled, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    with pytest.raises(ReviewError, match=r"filled.csv:2: column decision: 'maybe'"):
        read_decisions([filled], {r["sample_id"] for r in rows})


def test_a_rerun_sends_nothing(built):
    assert built["sent_third"] == 0
    a = [json.loads(x) for x in (built["out"] / "rewrite" / "two.jsonl").read_text().splitlines()]
    b = [json.loads(x) for x in (built["tmp"] / "again" / "rewrite" / "two.jsonl").read_text().splitlines()]
    assert a == b


def test_built_benchmark_runs_through_the_evaluation(built, tmp_path):
    from earnest.statform.pipeline import generate, prepare_data, score

    out = built["out"]
    prepare_data(out / "statformbench.jsonl", None, out / "taxonomy.yaml", tmp_path / "samples.parquet",
                 tmp_path / "pool.parquet", tmp_path / "taxonomy.yaml")
    final = {s.question: s for s in load_samples(out / "statformbench.jsonl")}

    def oracle(body):  # answers every sample with its reference formulation
        s = final[json.loads(body["messages"][-1]["content"])["question"]]
        return json.dumps({"category": s.category, "variables": {v.id: v.to_dict() for v in s.variables}})

    with ScriptedOpenAI(oracle) as srv:
        cfg = {"backend": "openai", "base_url": srv.url, "model": "oracle", "max_retries": 0}
        generate(tmp_path / "samples.parquet", tmp_path / "pool.parquet", tmp_path / "taxonomy.yaml", "oracle", cfg,
                 "zero_shot", {"kind": "zero_shot"}, 256, tmp_path / "gen.parquet")
    scored = score(tmp_path / "gen.parquet", tmp_path / "samples.parquet", tmp_path / "taxonomy.yaml",
                   tmp_path / "scored.parquet")
    assert len(scored) == 6 and scored["correct_fg"].all()


def test_number_check():
    assert number_check("Of 1,250 bulbs 12% failed in 5 days", "Of 1250 bulbs, twelve percent... 5 days")["ok"]
    r = number_check("mean 0.50 over 40 runs", "mean 0.5 over forty runs, up from 30")
    assert r == {"missing": ["40"], "added": ["30"], "ok": False}


def test_bad_entries_name_file_and_line(tmp_path):
    p = tmp_path / "e.jsonl"
    p.write_text('{"entry_id": "a", "question": "q", "answer": "x"}\n{"entry_id": "b c", "question": "q", "answer": ""}\n')
    with pytest.raises(EntryError, match=r"e.jsonl:2: field 'entry_id'"):
        read_entries(p)
    p.write_text('{"entry_id": "a", "question": "q"}\n')
    with pytest.raises(EntryError, match=r"e.jsonl:1 \(entry a\): field 'answer' is missing"):
        read_entries(p)
    p.write_text('{"entry_id": "a", "question": "q", "answer": ""}\n{"entry_id": "a", "question": "r", "answer": ""}\n')
    with pytest.raises(EntryError, match="duplicate entry_id 'a'"):
        read_entries(p)


def _config(mutate, model_dir):
    import copy

    import yaml

    from earnest.config import check_config, validate_schema
    from earnest.gsm.prompts import load_formats

    cfg = copy.deepcopy(yaml.safe_load((ROOT / "tests" / "configs" / "tiny.yaml").read_text()))
    cfg["models"]["tiny"]["path"] = str(model_dir)   # a checkpoint folder (the checks read it; nothing is loaded)
    cfg["statform_build"] = {"enabled": True, "entries": str(RES / "build_example" / "entries.jsonl"),
                             "cases": str(CASES), "model": "tiny"}
    mutate(cfg)
    validate_schema(cfg, ROOT / "config" / "schema.yaml")
    return cfg, check_config(cfg, load_formats(ROOT / "resources" / "prompts"), base_dir=ROOT)


def test_config_checks_read_entries_and_cases_before_any_job(tmp_path, tiny_model_dir):
    from earnest.config import ConfigError

    cfg, checked = _config(lambda c: None, tiny_model_dir)
    assert list(checked.build_entries) == ["ex-noshow", "ex-bulbs", "ex-define"]
    assert list(checked.build_cases) == ["clinic-waits"] and checked.build_excluded[0]["project"] == "survey-notes"
    assert cfg["statform_build"]["max_retries"] == 2 and cfg["statform_build"]["review"]["require"] is True
    with pytest.raises(ConfigError, match=r"statform_build.stage_models.rewrite: 'gpt' is not a configured model"):
        _config(lambda c: c["statform_build"].update(stage_models={"rewrite": "gpt"}), tiny_model_dir)
    bad = tmp_path / "e.jsonl"
    bad.write_text('{"entry_id": "a", "question": "q", "answer": "x"}\nnot json\n')
    with pytest.raises(ConfigError, match=r"e.jsonl:2"):
        _config(lambda c: c["statform_build"].update(entries=str(bad)), tiny_model_dir)
    with pytest.raises(ConfigError, match="statform_build, which is not enabled"):
        _config(lambda c: (c["statform_build"].update(enabled=False),
                           c.setdefault("statform", {}).update(enabled=True, models=["tiny"],
                                                               dataset="results/statform_build/statformbench.jsonl")),
                tiny_model_dir)


def test_request_cache_serves_any_backend_and_never_stores_errors(tmp_path):
    from earnest.backends import GenerationRequest, load_backend
    from earnest.backends.cache import CachedBackend, model_identity

    state = {"down": True}

    def respond(body):
        text = body["messages"][-1]["content"]
        return 503 if (text == "b" and state["down"]) else f"answer to {text}"

    with ScriptedOpenAI(respond) as srv:
        cfg = {"backend": "openai", "base_url": srv.url, "model": "m", "max_retries": 0, "concurrency": 2}
        built_backends = []

        def factory():
            built_backends.append(load_backend("m", cfg))
            return built_backends[-1]

        reqs = [GenerationRequest(key=k, messages=[{"role": "user", "content": k}]) for k in ("a", "b")]
        cache = CachedBackend(factory, tmp_path / "cache", model_identity("m", {**cfg, "concurrency": 9}))
        first = cache.generate(reqs, 16)
        assert first[0].response == "answer to a" and first[1].stop_reason.startswith("error:")
        state["down"] = False
        cache2 = CachedBackend(factory, tmp_path / "cache", model_identity("m", cfg))  # concurrency is not identity
        second = cache2.generate(reqs, 16)
        assert [r.response for r in second] == ["answer to a", "answer to b"]
        assert (cache2.hits, cache2.misses) == (1, 1) and len(srv.received) == 3
        cache3 = CachedBackend(factory, tmp_path / "cache", model_identity("m", cfg))
        seen = []
        third = cache3.generate(reqs, 16, on_result=seen.append)
        assert [r.response for r in third] == ["answer to a", "answer to b"] and len(seen) == 2
        assert len(built_backends) == 2 and len(srv.received) == 3  # all cached: no backend built, nothing sent
        # another token cap is another request
        assert CachedBackend(factory, tmp_path / "cache", model_identity("m", cfg)).generate(reqs[:1], 17)[0].extra.get("cached") is not True


def _sheet(path, rows, header=("sample_id", "decision", "variables_final", "note"), encoding="utf-8", prefix=b""):
    buf = __import__("io").StringIO()
    w = csv.writer(buf)
    w.writerow(header)
    w.writerows(rows)
    path.write_bytes(prefix + buf.getvalue().encode(encoding))
    return path


def test_review_sheets_as_spreadsheets_save_them(tmp_path):
    """What spreadsheet programs and hand edits do to a filled sheet: a byte order mark, a cell
    beyond csv's 128 KiB default, a quoted cell over several lines are read; a file that is not
    UTF-8, a row with a stray comma, a header column twice, and variables_final JSON that is nested
    too deep, gives a key twice, or holds NaN, Infinity or a lone surrogate are errors naming file
    and line."""
    var = {"x": {"id": "x", "value": list(range(30000)), "class": "numerical", "role": "N/A"}}
    big = json.dumps(var)
    assert len(big) > 131072
    ok = _sheet(tmp_path / "ok.csv", [["s1", "accept", big, "fine"], ["s2", "reject", "", "two\nlines, kept"],
                                      ["s3", "accept", "", ""]], prefix=b"\xef\xbb\xbf")
    got = read_decisions([ok], {"s1", "s2", "s3"})
    assert got["s1"]["variables_final"]["x"]["value"][-1] == 29999
    assert got["s2"]["note"] == "two\nlines, kept" and got["s3"]["where"].endswith("ok.csv:5")
    bad = [
        (_sheet(tmp_path / "latin.csv", [["s1", "accept", "", "caf\u00e9"]], encoding="latin-1"),
         r"latin.csv:2: not UTF-8 text \(byte 0xe9 at column 15\)"),
        (_sheet(tmp_path / "ragged.csv", [["s1", "accept", "", "a", "b"]]), r"ragged.csv:2: 5 cells, the header has 4"),
        (_sheet(tmp_path / "head.csv", [["s1", "accept", "", ""]], header=("sample_id", "decision", "note", "note")),
         r"head.csv:1: column\(s\) \['note'\] appear twice"),
        (_sheet(tmp_path / "deep.csv", [["s1", "accept", "[" * 5000 + "]" * 5000, ""]]),
         r"deep.csv:2: column variables_final: not readable JSON \(arrays or objects nested"),
        (_sheet(tmp_path / "twice.csv", [["s1", "accept", '{"x": {"value": 1, "role": "N/A"}, "x": {}}', ""]]),
         r"twice.csv:2: column variables_final: key 'x' appears twice"),
        (_sheet(tmp_path / "nan.csv", [["s1", "accept", '{"x": {"value": NaN, "role": "N/A"}}', ""]]),
         r"nan.csv:2: column variables_final: NaN is not a JSON number"),
        (_sheet(tmp_path / "inf.csv", [["s1", "accept", '{"x": {"value": 1e400, "role": "N/A"}}', ""]]),
         r"inf.csv:2: column variables_final: 1e400 \(beyond the float range\)"),
        (_sheet(tmp_path / "sur.csv", [["s1", "accept", '{"x": {"value": "\\ud800", "role": "N/A"}}', ""]]),
         r"sur.csv:2: column variables_final: x.value: a lone surrogate escape \(U\+D800\)"),
    ]
    for path, message in bad:
        with pytest.raises(ReviewError, match=message):
            read_decisions([path])


def test_data_dictionary_of_a_column_with_infinities(tmp_path):
    """inf in a CSV is no part of a distribution: statistics and preview come from the finite values,
    `infinite` counts the rest, and the dictionary is strict JSON (a column of infinities only too)."""
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "t.csv").write_text("x,y,z\n1.5,inf,1\n-inf,inf,2\n2.5,inf,3\n", encoding="utf-8")
    d = project_dictionary("p", proj, [str(proj / "t.csv")], seed=1)
    json.dumps(d, allow_nan=False)
    st = d["tables"][0]["statistics"]
    assert st["x"]["infinite"] == 1 and st["x"]["mean"] == 2.0 and st["x"]["max"] == 2.5
    assert st["y"]["infinite"] == 3 and st["y"]["mean"] is None and "infinite" not in st["z"]
    prev = d["tables"][0]["preview_simulated"]
    assert all(1.5 <= r["x"] <= 2.5 for r in prev) and all(r["y"] is None for r in prev)
