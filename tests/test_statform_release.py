"""StatFormBench as its authors released it: the release's two schemas, their prompts byte for byte,
their evaluator's rules (reference fidelity), and ``earnest statform-score``.

The release file here (tests/data/statform_release/mini_release.json) is ours, written in the
release's schema: two case-library samples and three textbook samples. Every expected score below is
worked out by hand from the authors' rules as docs/statform.md restates them.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from earnest.cli import main as cli_main
from earnest.statform import reference as R
from earnest.statform.data import DataError, load_samples, samples_from_frame, samples_to_frame
from earnest.statform.metrics import score_generations
from earnest.statform.release import coarse_map, load_any, read_release, release_taxonomy_path
from earnest.statform.taxonomy import load_taxonomy

MINI = Path(__file__).resolve().parent / "data" / "statform_release" / "mini_release.json"
TAX = load_taxonomy(release_taxonomy_path())
H = coarse_map(TAX)
#: sha256 of THU-CongLab/StatFormBench prompts/prompts.py at ccb27357259a43a2c3b6d1e11c031e8a93c498f6, read once
#: with the search tool's read_file (20,372 characters)
PROMPTS_PY_SHA256 = "f483de09e3913463b42253c6628b839bbc3938097402dac0ffacd2a1408a34ca"


def _raw():
    return json.loads(MINI.read_text(encoding="utf-8"))


# ---------------------------------------------------------------- the release's schemas


def test_both_schemas_convert_without_loss():
    samples = load_any(MINI)
    assert [s.sample_id for s in samples] == ["1", "2", "3", "4", "5"]
    assert [s.source for s in samples] == ["case", "case", "textbook", "textbook", "textbook"]
    raw = _raw()
    case = samples[0]
    assert case.category_fg == "Interpretation of Regression Coefficient Significance and Direction"
    assert case.category_cg == "Model Interpretation"
    # case: every (file, column, role) kept, a column's value is its file and name
    assert [(v.value["file"], v.value["column"], v.role) for v in case.variables] == [
        ("bakery.pkl", "footfall", "predictor"), ("bakery.pkl", "rain", "predictor"), ("bakery.pkl", "sales", "response")]
    two_files = samples[1]
    assert [v.id for v in two_files.variables] == ["visits.pkl:gallery", "visits.pkl:visits", "areas.pkl:gallery",
                                                    "areas.pkl:area_m2"]
    # book: values and roles kept, the release's role code in the record
    book = samples[2]
    assert [(v.id, v.value, v.role) for v in book.variables] == [
        ("runners", {"n": 12, "mean": 58.1, "sd": 6.2}, "predictor"),
        ("non_runners", {"n": 15, "mean": 71.4, "sd": 8.0}, "response")]
    for s in samples:
        rec = raw[s.sample_id]
        assert s.release["input"] == rec["input"] and s.release["output"] == rec["output"]
        assert list(s.release["input"]) == list(rec["input"])      # key order, which the prompt shows
    # "Likelihood Ratio Test" is listed under two coarse categories: the later one, as a dict keeps it
    assert samples[4].category_cg == "Model Comparison (Variable Selection)"
    # through the samples table and back: nothing lost
    assert samples_from_frame(samples_to_frame(samples)) == samples


def test_release_taxonomy_is_the_prompts_framework():
    assert len(TAX.coarse()) == 20 and len(TAX.pairs()) == 86 and len({b for _, b in TAX.pairs()}) == 85
    assert TAX.coarse_of("Likelihood Ratio Test") == ["Hypothesis Testing and Interval Estimation",
                                                      "Model Comparison (Variable Selection)"]


@pytest.mark.parametrize("edit, message", [
    (lambda r: r["1"]["output"].pop("variable"), "record '1' (sample_key 1): field 'output.variable' is missing"),
    (lambda r: r["3"]["output"].pop("variable"), "record '3' (sample_key 3): field 'output.variable' is missing"),
    (lambda r: r["1"]["output"]["role"]["bakery.pkl"].pop(), "output.variable['bakery.pkl'] has 3 columns but"),
    (lambda r: r["2"]["output"]["role"].pop("areas.pkl"), "name different files"),
    (lambda r: r["1"]["output"].update(category="Regression Magic"), "'Regression Magic' is no fine category"),
    (lambda r: r["1"]["output"]["role"]["bakery.pkl"].__setitem__(0, "cause"), "'cause' is not one of X, Y, XY, NR"),
    (lambda r: r["4"].update(sample_key=3), "record '4': duplicate sample_key '3' (first at record '3')"),
    (lambda r: r["5"].update(source="lecture"), "record '5': field 'source': 'lecture'"),
])
def test_bad_release_records_name_file_record_and_field(tmp_path, edit, message):
    raw = _raw()
    edit(raw)
    path = tmp_path / "release.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(DataError) as err:
        read_release(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_an_empty_release_is_an_error(tmp_path):
    path = tmp_path / "release.json"
    path.write_text("{}", encoding="utf-8")
    with pytest.raises(DataError, match="holds no samples"):
        read_release(path)


def test_install_release_checks_the_pinned_sha256(tmp_path):
    from earnest.statform.release import install_release, sha256_of

    got = install_release(tmp_path / "r.json", local=MINI)
    assert got == {"sha256": sha256_of(MINI), "samples": 5, "origin": str(MINI)}
    with pytest.raises(DataError, match="statform.release.sha256"):
        install_release(tmp_path / "s.json", local=MINI, sha256="0" * 64)
    assert not (tmp_path / "s.json").exists()


# ---------------------------------------------------------------- their prompts


def test_reference_prompts_are_the_released_bytes():
    book, case = R.load_reference_prompt("book"), R.load_reference_prompt("case")
    prompts_py = f"Prompt_book='''{book}'''\n\n\nPrompt_case='''{case}'''\n"
    assert len(prompts_py) == 20372
    assert hashlib.sha256(prompts_py.encode("utf-8")).hexdigest() == PROMPTS_PY_SHA256


def test_reference_messages_are_their_request():
    samples = load_any(MINI)
    for s, name in ((samples[0], "case"), (samples[2], "book")):
        turns = R.reference_messages(s)
        assert turns[0] == {"role": "system", "content": "You are a professional statistician"}
        body = (R.load_reference_prompt(name) + "\n\nquestion：\n"
                + json.dumps(_raw()[s.sample_id]["input"], ensure_ascii=False, indent=2)
                + "\n\nPlease output the data in the required JSON format.")
        assert turns[1:] == [{"role": "user", "content": body}]
    assert "Résumé" in R.reference_messages(samples[4])[-1]["content"]   # not escaped (ensure_ascii=False)


def test_statform_prompt_command_prints_the_request(capsys):
    assert cli_main(["statform-prompt", "--release", str(MINI), "--fidelity", "reference", "4"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("=== system ===\nYou are a professional statistician\n=== user ===\n\nYou are a professional")
    assert '"question": "What is the chance of a free drink in 10 throws?"' in out


# ---------------------------------------------------------------- their JSON extraction


def test_extraction_takes_the_last_balanced_object_and_falls_back():
    assert R.extract_last_json('a {"x": 1} b {"y": {"z": 2}} c') == {"y": {"z": 2}}       # the outer, last one
    assert R.extract_last_json('{"x": 1} then {"y": 2,}') == {"x": 1}                    # last invalid: the one before
    # braces are counted inside strings too: a "}" in a string cuts every strategy's span short
    assert R.extract_last_json('{"a": "}", "b": 1}') is None
    # an invalid outer object: the one-level pattern finds the object nested in it, before the last "{" would
    assert R.extract_last_json('{"a": {"b": {"c": 1}}, x}') == {"b": {"c": 1}}
    assert R.extract_last_json('{"a": 1, {"b": 2}, "c"}') == {"b": 2}                    # from the last "{"
    assert R.extract_last_json('{"a": {"b": 1} ') == {"b": 1}                            # unclosed outer object
    for nothing in ("", "no json", None, b'{"a": 1}', 3, '{"a": 1 // note\n}'):
        assert R.extract_last_json(nothing) is None
    assert R.extract_last_json('{"a": NaN, "a": 2}') == {"a": 2}                         # Python's json.loads


# ---------------------------------------------------------------- case answers


CASE_REF = {"variable": {"d.pkl": ["x", "y", "z"]}, "role": {"d.pkl": ["X", "X", "Y"]}, "category": "Mean Test"}


def _case(cat="Mean Test", var=None, role=None, **extra):
    obj = {"category": cat, "variable": var if var is not None else {"d.pkl": ["x", "y", "z"]},
           "role": role if role is not None else {"d.pkl": ["X", "X", "Y"]}, **extra}
    return json.dumps(obj)


def _metrics(got):
    return [got[m] for m in R.METRIC_NAMES]


def test_case_error_types_score_zero():
    assert R.score_case("prose only", CASE_REF, H)["error_type"] == "no_json"
    assert R.score_case(_case(answer="because"), CASE_REF, H)["error_type"] == "false_json"     # an extra key
    assert R.score_case(_case(role={"d.pkl": ["X", "Y"]}), CASE_REF, H)["error_type"] == "false_role"
    assert R.score_case(_case(role={"e.pkl": ["X", "X", "Y"]}), CASE_REF, H)["error_type"] == "false_role"
    bad = R.score_case(_case(var={"d.pkl": ["x", 2, "z"]}), CASE_REF, H)
    assert bad["error_type"] == "evaluation_error"
    for answer in ("prose only", _case(answer="because"), _case(var={"d.pkl": ["x", 2, "z"]})):
        assert _metrics(R.score_case(answer, CASE_REF, H)) == [0] * 6


def test_case_sets_of_file_and_column():
    # right columns in another file: nothing matches
    got = R.score_case(_case(var={"e.pkl": ["x", "y", "z"]}, role={"e.pkl": ["X", "X", "Y"]}), CASE_REF, H)
    assert (got["JCV"], got["PV"], got["RV"]) == (0.0, 0.0, 0.0)
    # x twice, w extra: P = {x, w}, R = {x, y, z}
    got = R.score_case(_case(var={"d.pkl": ["x", "x", "w"]}, role={"d.pkl": ["X", "Y", "X"]}), CASE_REF, H)
    assert (got["JCV"], got["PV"], got["RV"]) == (0.25, 0.5, pytest.approx(1 / 3))
    # their role rule: x's role is read at x's first position in the answer (X), y and z are missing
    assert got["VRI"] == pytest.approx(1 / 3)
    exact = R.score_case(_case(), CASE_REF, H)
    assert exact["error_type"] == "successful" and _metrics(exact) == [1.0, 1.0, 1.0, 1, 1, 1.0]
    roles_swapped = R.score_case(_case(role={"d.pkl": ["Y", "X", "Y"]}), CASE_REF, H)
    assert roles_swapped["VRI"] == pytest.approx(2 / 3)


def test_case_role_rule_with_empty_sets():
    empty = {"variable": {}, "role": {}, "category": "Clustering"}
    got = R.score_case(_case(cat="Clustering", var={}, role={}), empty, H)
    assert _metrics(got) == [1.0, 0.0, 0.0, 1, 1, 1.0]          # JCV 1, PV = RV = 0, VRI 1: their rules
    got = R.score_case(_case(cat="Clustering"), empty, H)
    assert got["VRI"] == 0.0 and got["JCV"] == 0.0


def test_categories_exact_and_their_coarse_rule():
    def acc(cat):
        got = R.score_case(_case(cat=cat), CASE_REF, H)
        return got["ACC@2nd"], got["ACC@1st"]

    assert acc("Mean Test") == (1, 1)
    assert acc("mean test") == (0, 0) and acc("Mean Test.") == (0, 0) and acc(" Mean Test") == (0, 0)
    assert acc("Variance Test") == (0, 1)                           # same coarse category
    assert acc("Hypothesis Testing and Interval Estimation") == (0, 0)   # a coarse name is no fine name
    assert acc("Hypothesis Testing and Interval Estimation\\Mean Test") == (0, 0)
    assert acc("Likelihood Ratio Test") == (0, 0)                   # mapped to Model Comparison (the later row)
    assert R.score_case(_case(cat=["Mean Test"]), CASE_REF, H)["error_type"] == "evaluation_error"


# ---------------------------------------------------------------- book answers


BOOK_REF = {"variable": {"n": {"id": "n", "value": 14, "role": "NR"},
                         "grp": {"id": "grp", "value": {"μ": 3.5, "a": [1, 2]}, "role": "X"},
                         "lab": {"id": "lab", "value": "14", "role": "Y"}},
            "category": "Mean Test"}


def _book(variables, cat="Mean Test"):
    return json.dumps({"category": cat, "variables": {k: {"id": k, **v} for k, v in variables.items()}})


def test_book_error_types():
    assert R.score_book(b"{}", BOOK_REF, H)["error_type"] == "output_not_string"
    assert R.score_book('错误: Request timed out. {"category": "Mean Test", "variables": {}}', BOOK_REF, H)["error_type"] == "output_error"
    assert R.score_book("Error: boom", BOOK_REF, H)["error_type"] == "output_error"
    assert R.score_book("no object here", BOOK_REF, H)["error_type"] == "output_empty"
    assert R.score_book('{"category": "Mean Test", "variable": {}}', BOOK_REF, H)["error_type"] == "missing_fields"
    assert R.score_book('{"category": "Mean Test", "variables": {"a": 3}}', BOOK_REF, H)["error_type"] == "pred_variables_error"
    # no variable credit without valid JSON: a // comment makes the object undecodable
    assert _metrics(R.score_book('{"category": "Mean Test", // why\n "variables": {}}', BOOK_REF, H)) == [0] * 6


def test_book_sets_of_serialized_values():
    # 14 and "14" serialize alike (one set element); 14.0 does not; keys sorted, ASCII escapes on both sides
    got = R.score_book(_book({"a": {"value": 14, "role": "NR"}, "b": {"value": {"a": [1, 2], "μ": 3.5}, "role": "Y"},
                              "c": {"value": 14.0, "role": "Y"}}), BOOK_REF, H)
    assert got["error_type"] == "success"
    # P = {"14", grp, "14.0"}, R = {"14", grp}: |P∩R| = 2
    assert (got["JCV"], got["PV"], got["RV"]) == (pytest.approx(2 / 3), pytest.approx(2 / 3), 1.0)
    # VRI: n (14, NR) -> first equal value a (NR) ✓; grp -> b (Y) ✗; lab ("14", Y) -> first equal a (NR) ✗, never c
    assert got["VRI"] == pytest.approx(1 / 3)
    assert (got["ACC@2nd"], got["ACC@1st"]) == (1, 1)


def test_book_empty_reference():
    empty = {"variable": {}, "category": "Expectation"}
    got = R.score_book(_book({}, "Expectation"), empty, H)
    assert _metrics(got) == [1.0, 0.0, 0.0, 1, 1, 0.0]             # JCV 1, VRI 0: their rules


def test_reference_scoring_in_the_scored_table_and_bytes_answers():
    samples = load_any(MINI)
    good = json.dumps({"category": "Mean Test", "variables": _raw()["3"]["output"]["variable"]})
    gens = pd.DataFrame({"item_id": ["3", "3", "3", "4", "1"], "model": ["m"] * 5, "prompt": ["zero_shot"] * 5,
                         "response": [good, good.encode("utf-8"), b"\xff\xfe{", 7, "{}"],
                         "stop_reason": ["eos", "eos", "max_new_tokens", "eos", "eos"]})
    scored = score_generations(gens, samples, TAX, fidelity="reference")
    assert list(scored["parse_status"]) == ["ok", "ok", "not_text", "not_text", "no_category"]
    assert list(scored["reference_error_type"]) == ["success", "success", "output_not_string", "output_not_string",
                                                    "false_json"]
    assert list(scored["jcv"]) == [1.0, 1.0, 0.0, 0.0, 0.0] and list(scored["hit_max_tokens"]) == [False, False, True,
                                                                                                 False, False]
    assert list(scored["correct_cg"]) == [True, True, False, False, False]
    # earnest mode reads the same answers with its own rules, side by side
    assert list(scored["earnest_jcv"]) == [1.0, 1.0, 0.0, 0.0, 0.0]
    earnest = score_generations(gens, samples, TAX, fidelity="earnest")
    assert list(earnest["scoring_fidelity"]) == ["earnest"] * 5


def test_earnest_mode_reads_case_answers_by_file_and_column():
    samples = load_any(MINI)
    answer = _case(cat="Interpretation of Regression Coefficient Significance and Direction",
                   var={"bakery.pkl": ["footfall", "sales"]}, role={"bakery.pkl": ["x", "Y"]})
    gens = pd.DataFrame({"item_id": ["1"], "model": ["m"], "prompt": ["p"], "response": [answer]})
    row = score_generations(gens, samples, TAX, fidelity="earnest").iloc[0]
    # earnest: roles compared case-insensitively (x = X), one-to-one: 2 matched of 3
    assert (row["earnest_jcv"], row["earnest_rv"], row["earnest_vri"]) == (pytest.approx(2 / 3), pytest.approx(2 / 3),
                                                                           pytest.approx(2 / 3))
    # reference: role strings exact, so footfall's "x" is not "X"
    assert (row["reference_jcv"], row["reference_vri"]) == (pytest.approx(2 / 3), pytest.approx(1 / 3))


# ---------------------------------------------------------------- earnest statform-score


def test_statform_score_reproduces_recorded_scores(tmp_path):
    good = json.dumps({"category": "Mean Test", "variables": _raw()["3"]["output"]["variable"]})
    rows = pd.DataFrame({"sample_key": ["3", "3", "1.0", "99"], "model_name": ["a", "b", "a", "a"],
                         "output_json": [good, "Error: quota", "{}", "{}"],
                         "error_type": ["success", "output_error", "false_json", "sample_not_found"],
                         "JCV": [1.0, 0.0, 0.0, 0.0], "PV": [1.0, 0, 0, 0], "RV": [1.0, 0, 0, 0],
                         "ACC@2nd": [1, 0, 0, 0], "ACC@1st": [1, 0, 0, 1], "VRI": [1.0, 0, 0, 0]})
    src, out = tmp_path / "in.csv", tmp_path / "out.csv"
    rows.to_csv(src, index=False)
    assert cli_main(["statform-score", "--release", str(MINI), "--fidelity", "reference", str(src), str(out)]) == 0
    got = pd.read_csv(out)
    assert list(got["error_type"]) == ["success", "output_error", "false_json", "sample_not_found"]
    assert list(got["reproduced"]) == [True, True, True, False]   # the last row's ACC@1st was recorded wrong
    assert list(got["recorded_ACC@1st"]) == [1, 0, 0, 1]


def test_statform_score_names_a_missing_column(tmp_path):
    src = tmp_path / "in.csv"
    pd.DataFrame({"sample_key": [1], "output_json": ["{}"]}).to_csv(src, index=False)
    with pytest.raises(DataError, match=r"in.csv: header line 1 lacks the column\(s\) \['model_name'\]"):
        cli_main(["statform-score", "--release", str(MINI), str(src), str(tmp_path / "o.csv")])


def test_consistency_of_recorded_scores():
    from earnest.statform.results_csv import consistency_problem

    answer = _case()
    ok = {"error_type": "successful", "JCV": 0.5, "PV": 2 / 3, "RV": 2 / 3, "ACC@2nd": 0, "ACC@1st": 1, "VRI": 0.25}
    assert consistency_problem(answer, "case", ok, H) is None
    # three columns cannot give PV 1/8
    bad = {**ok, "JCV": 1 / 9, "PV": 0.125, "RV": 0.5}
    assert "fit no reference" in consistency_problem(answer, "case", bad, H)
    no_json = {"error_type": "no_json", **{m: 0 for m in R.METRIC_NAMES}}
    assert "passes every check" in consistency_problem(answer, "case", no_json, H)
    assert consistency_problem("错误: timed out", "case", no_json, H) is None


def test_reference_few_shot_takes_examples_of_the_samples_own_source():
    from earnest.statform.prompts import build_requests

    samples = load_any(MINI)
    pool = load_any(Path(__file__).resolve().parents[1] / "resources" / "statform" / "fewshot_pool_release.json")
    reqs = build_requests(samples, TAX, "few_shot", k=2, pool=pool, seed=1, fidelity="reference")
    for s, req in zip(samples, reqs):
        shown = [json.loads(t["content"]) for t in req.messages if t["role"] == "assistant"]
        assert len(shown) == 2
        assert all(("role" in ex) == (s.source == "case") for ex in shown)   # case answers for case questions
        assert req.messages[-1]["content"].startswith(R.load_reference_prompt("case" if s.source == "case" else "book"))
    with pytest.raises(ValueError, match="exceeds the few-shot pool's 5 case samples"):
        build_requests(samples, TAX, "few_shot", k=6, pool=pool, seed=1, fidelity="reference")
    defs = load_taxonomy(Path(__file__).resolve().parents[1] / "resources" / "statform" / "taxonomy_release_definitions.yaml")
    req = build_requests(samples[:1], defs, "definitions", fidelity="reference")[0]
    assert "Definitions of the categories:\n- Data Preprocessing: Preparing raw data before analysis." in req.messages[-1]["content"]
    with pytest.raises(ValueError, match="the definitions strategy needs a taxonomy with definitions"):
        build_requests(samples[:1], TAX, "definitions", fidelity="reference")


def test_answers_are_stored_as_their_runner_stores_them():
    assert R.as_stored('  ```json\n{"a": 1}\n```  ') == '{"a": 1}'
    assert R.as_stored("```\nError: x```") == "Error: x"
    # stripped first: leading spaces do not hide their error prefix
    samples = load_any(MINI)
    gens = pd.DataFrame({"item_id": ["3"], "model": ["m"], "prompt": ["p"], "response": ["  Error: rate limited"]})
    assert score_generations(gens, samples, TAX, fidelity="reference")["reference_error_type"].tolist() == ["output_error"]
