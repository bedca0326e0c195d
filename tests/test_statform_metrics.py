"""Parsing of model answers and the six metrics (paper section 5, Appendix E.1), on hand-worked cases."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from earnest.statform.data import Sample, Variable
from earnest.statform.metrics import (aggregate, category_scores, match_counts, resolve_category, score_generations,
                                      score_response, serialize_value, variable_scores)
from earnest.statform.parsing import parse_response
from earnest.statform.taxonomy import Category, Taxonomy

TAX = Taxonomy([
    Category("Mathematical Calculation", "", [Category("Expectation"), Category("Other")]),
    Category("Hypothesis Testing & Interval Estimation", "", [Category("Mean Test"), Category("Likelihood Ratio Test")]),
    Category("Model Comparison", "", [Category("Likelihood Ratio Test"), Category("Cross-Validation")]),
])


def _sample(variables, cg="Hypothesis Testing & Interval Estimation", fg="Mean Test", sid="s1"):
    return Sample(sid, "textbook", "b", "q", None, cg, fg,
                  [Variable(i, v, "numerical", r) for i, v, r in variables])


def _answer(category, variables: dict) -> str:
    return json.dumps({"category": category, "variables": variables})


# ---------------------------------------------------------------- parsing


def test_parse_fences_prose_and_several_objects():
    body = {"category": "Mean Test", "variables": {"x": {"id": "x", "value": [1, 2], "role": "response"}}}
    fenced = "Here is my answer:\n```json\n" + json.dumps(body, indent=2) + "\n```\nHope it helps {not json}."
    p = parse_response(fenced)
    assert p.status == "ok" and p.category == "Mean Test" and p.variables[0].value == [1, 2]
    prose = "Thinking... {\"draft\": 1} then the final: " + json.dumps(body) + " done."
    assert parse_response(prose).category == "Mean Test"
    # two formulation objects: the last one counts
    two = _answer("Expectation", {}) + "\nCorrection: " + _answer("Mean Test", {})
    assert parse_response(two).category == "Mean Test"


def test_parse_statuses():
    assert parse_response("").status == "empty"
    assert parse_response(None).status == "empty"
    assert parse_response("The category is Mean Test.").status == "no_json"
    assert parse_response('{"category": "Mean Test"').status == "no_json"  # truncated
    assert parse_response('{"variables": {}}').status == "no_category"
    assert parse_response('{"category": "Mean Test"}').status == "no_variables"
    assert parse_response('{"category": "Mean Test", "variables": 3}').status == "bad_variables"
    # the prompt's rule 8 layout: variable ids at the top level
    p = parse_response('{"category": "Mean Test", "n": {"id": "n", "value": 5, "role": "N/A"}}')
    assert p.status == "ok" and [v.value for v in p.variables] == [5]
    p = parse_response('{"category": "Mean Test", "variables": {"n": 5, "m": {"id": "m", "role": "NR"}}}')
    assert p.n_malformed == 2 and p.variables[1].role == "N/A"


# ---------------------------------------------------------------- serialization and matching


def test_serialization_rule():
    assert serialize_value({"b": 1, "a": [1, 2]}) == serialize_value({"a": [1, 2], "b": 1})
    assert serialize_value(14) == serialize_value("14") == "14"
    assert serialize_value(14) != serialize_value(14.0)
    assert serialize_value([1, 2]) != serialize_value([2, 1])  # order is part of the value
    assert serialize_value("50%") != serialize_value(50)       # no normalization (Appendix E.1)
    assert serialize_value({"μ": 138}) == '{"μ": 138}'


def test_one_to_one_matching_with_ties():
    # two reference variables share value 5; one prediction of 5 matches only one of them
    ref = [(5, "N/A"), (5, "predictor"), ([1, 2], "response")]
    assert match_counts([(5, "predictor")], ref) == (1, 1)      # pairs with the role-agreeing one
    assert match_counts([(5, "both"), (5, "both"), (5, "both")], ref) == (2, 0)
    s = variable_scores([(5, "predictor"), ([1, 2], "both"), (9, "N/A")], ref)
    # |M| = 2, |V̂| = 3, |V| = 3: JCV = 2/4, PV = 2/3, RV = 2/3, VRI = 1/3
    assert (s["n_matched"], s["n_role_correct"]) == (2, 1)
    assert s["jcv"] == pytest.approx(0.5) and s["pv"] == pytest.approx(2 / 3)
    assert s["rv"] == pytest.approx(2 / 3) and s["vri"] == pytest.approx(1 / 3)


def test_empty_set_edge_cases():
    both = variable_scores([], [])
    assert (both["jcv"], both["pv"], both["rv"], both["vri"]) == (1.0, 1.0, 1.0, 1.0)
    no_pred = variable_scores([], [(1, "N/A")])
    assert (no_pred["jcv"], no_pred["pv"], no_pred["rv"], no_pred["vri"]) == (0.0, 0.0, 0.0, 0.0)
    no_ref = variable_scores([(1, "N/A")], [])
    assert (no_ref["jcv"], no_ref["pv"], no_ref["rv"], no_ref["vri"]) == (0.0, 0.0, 0.0, 0.0)
    unread = variable_scores(None, [])
    assert (unread["jcv"], unread["pv"], unread["rv"], unread["vri"]) == (0.0, 0.0, 0.0, 0.0)


# ---------------------------------------------------------------- categories


def test_category_resolution():
    assert resolve_category("Mean Test", TAX) == (["Hypothesis Testing & Interval Estimation"], "Mean Test")
    assert resolve_category("hypothesis testing & interval estimation\\mean  test", TAX) == (
        ["Hypothesis Testing & Interval Estimation"], "Mean Test")
    assert resolve_category("Model Comparison: Cross-Validation", TAX) == (["Model Comparison"], "Cross-Validation")
    assert resolve_category("Likelihood Ratio Test", TAX)[0] == ["Hypothesis Testing & Interval Estimation",
                                                                  "Model Comparison"]
    assert resolve_category("Model Comparison", TAX) == (["Model Comparison"], None)
    assert resolve_category("Regression", TAX) == ([], "Regression")


@pytest.mark.parametrize("pred, cg, fg", [
    ("Mean Test", True, True),
    ("Hypothesis Testing & Interval Estimation\\Mean Test", True, True),
    ("Hypothesis Testing & Interval Estimation\\Likelihood Ratio Test", True, False),
    ("Hypothesis Testing & Interval Estimation", True, False),
    ("Mathematical Calculation\\Mean Test", False, False),   # right L2 under the wrong L1: FG implies CG
    ("Expectation", False, False),
    (None, False, False),
])
def test_classification_correctness(pred, cg, fg):
    s = _sample([])
    parsed = parse_response(None if pred is None else _answer(pred, {}))
    out = category_scores(parsed, s, TAX)
    assert (out["correct_cg"], out["correct_fg"]) == (cg, fg)


def test_ambiguous_fine_name_counts_for_the_reference_coarse():
    s = _sample([], cg="Model Comparison", fg="Likelihood Ratio Test")
    out = category_scores(parse_response(_answer("Likelihood Ratio Test", {})), s, TAX)
    assert out["correct_cg"] and out["correct_fg"] and out["pred_cg"] == "Model Comparison"


# ---------------------------------------------------------------- whole responses and aggregation


def test_score_response_and_aggregate():
    s1 = _sample([("n", 36, "N/A"), ("agg", {"mean": 497.8, "sd": 6.0}, "N/A")], sid="s1")
    s2 = _sample([("x", [1, 2, 3], "predictor"), ("y", [2, 4, 6], "response")], cg="Model Comparison",
                 fg="Cross-Validation", sid="s2")
    s3 = _sample([("p", 0.1, "N/A")], cg="Mathematical Calculation", fg="Expectation", sid="s3")
    r1 = "```json\n" + _answer("Mean Test", {"size": {"id": "size", "value": "36", "role": "NR"},
                                             "w": {"id": "w", "value": {"sd": 6.0, "mean": 497.8}, "role": "both"}}) + "\n```"
    r2 = _answer("Model Comparison\\Cross-Validation", {"x": {"id": "x", "value": [1, 2, 3], "role": "response"},
                                                       "y": {"id": "y", "value": [2, 4, 6], "role": "response"},
                                                       "z": {"id": "z", "value": 7, "role": "N/A"}})
    r3 = "I cannot answer this."
    gens = pd.DataFrame({"item_id": ["s1", "s2", "s3"], "model": "m", "prompt": "zero_shot",
                         "response": [r1, r2, r3]})
    scored = score_generations(gens, [s1, s2, s3], TAX)
    assert scored["parse_status"].tolist() == ["ok", "ok", "no_json"]
    assert scored["correct_cg"].tolist() == [True, True, False]
    assert scored["correct_fg"].tolist() == [True, True, False]
    # s1: both match ("36" == 36, key order ignored), roles 1 of 2; s2: 2 of 3 predicted match, 1 role right
    assert scored["jcv"].tolist() == pytest.approx([1.0, 2 / 3, 0.0])
    assert scored["pv"].tolist() == pytest.approx([1.0, 2 / 3, 0.0])
    assert scored["rv"].tolist() == pytest.approx([1.0, 1.0, 0.0])
    assert scored["vri"].tolist() == pytest.approx([0.5, 0.5, 0.0])
    agg = aggregate(scored).iloc[0]
    assert agg["ACC_CG"] == pytest.approx(2 / 3) and agg["ACC_FG"] == pytest.approx(2 / 3)
    assert agg["JCV"] == pytest.approx((1 + 2 / 3) / 3) and agg["VRI"] == pytest.approx(1 / 3)
    assert agg["N"] == 3 and agg["unparseable"] == 1
    with pytest.raises(KeyError, match="nope"):
        score_generations(pd.DataFrame({"item_id": ["nope"], "response": ["{}"]}), [s1], TAX)


def test_unparsed_answer_is_wrong_even_for_an_empty_reference():
    s = _sample([])
    assert score_response("no json here", s, TAX)["jcv"] == 0.0
    assert score_response(_answer("Mean Test", {}), s, TAX)["jcv"] == 1.0


def test_hostile_json_in_an_answer_is_scored_not_a_crash(tmp_path):
    """Model output can be nested past the decoder's limit, hold an integer past Python's digit
    limit, escape a lone surrogate, or give a key twice: each is scored, with a note, and the scored
    table still writes as parquet."""
    s = _sample([("n", 36, "N/A")])
    deep = '{"category": "Mean Test", "variables": ' + "[" * 100000 + "]" * 100000 + "}"
    p = parse_response(deep)
    assert p.status == "no_json" and "nested too deep" in p.notes[0]
    # an answer before the deep part still counts
    p = parse_response(_answer("Mean Test", {"n": {"value": 36}}) + " " + '{"a":' * 50000 + "1" + "}" * 50000)
    assert p.status == "ok" and p.variables[0].value == 36 and "nested too deep" in p.notes[0]
    huge = '{"category": "Mean Test", "variables": {"n": {"value": ' + "9" * 5000 + ', "role": "N/A"}}}'
    p = parse_response(huge)
    assert p.status == "ok" and p.variables[0].value == float("inf") and "5000 digits" in p.notes[0]
    assert score_response(huge, s, TAX)["jcv"] == 0.0
    lone = '{"category": "Mean Test\\ud800", "variables": {"n\\udc00": {"value": 36, "role": "\\ud800"}}}'
    p = parse_response(lone)
    assert p.category == "Mean Test\ufffd" and p.variables[0].id == "n\ufffd" and p.variables[0].raw_role == "\ufffd"
    twice = '{"category": "Expectation", "category": "Mean Test", "variables": {}}'
    p = parse_response(twice)
    assert p.category == "Mean Test" and p.notes == ["key 'category' given twice: the last value is read"]
    gens = pd.DataFrame({"item_id": ["s1"] * 4, "model": "m", "response": [deep, huge, lone, twice]})
    scored = score_generations(gens, [s], TAX)
    assert scored["parse_status"].tolist() == ["no_json", "ok", "ok", "ok"]
    scored.to_parquet(tmp_path / "scored.parquet")
    assert pd.read_parquet(tmp_path / "scored.parquet")["pred_category"].tolist()[2] == "Mean Test\ufffd"


def test_hostile_answers_parse_in_linear_time_and_the_longest_is_capped():
    """Each failed decode counted lines from the text's start (100,000 '{' took 25 s), the fence
    pattern backtracked over a long language tag (100,000 characters after ``` took 30 s), and no
    answer was too long to read. Correctness only here (benchmarks/statform_parse.py times them):
    the answer after each hostile prefix is still read, and a longer answer than the one limit is
    unparseable, with a note."""
    from earnest.statform import parsing

    good = _answer("Mean Test", {"n": {"id": "n", "value": 36, "role": "N/A"}})
    for junk in ("{" * 50_000, '{"' * 25_000, "{ \n" * 20_000, "```" + "a" * 50_000 + " ", "{" * 20_000 + "```json"):
        p = parse_response(junk + " " + good)
        assert p.status == "ok" and p.category == "Mean Test" and p.variables[0].value == 36, junk[:10]
    # code fences are read as before: ```lang, spaces, a newline; an unclosed fence is no fence
    assert parsing.fenced_blocks("a ```json \n{}``` b ```\nx``` ```") == ["{}", "x"]
    assert parsing.fenced_blocks("``````") == [""] and parsing.fenced_blocks("```python") == []
    # a key repeated many times: one note per key, not a quadratic search of the notes
    many = "{" + ",".join(f'"k{i}": 1, "k{i}": 2' for i in range(20_000)) + ', "category": "Mean Test"}'
    p = parse_response(many)
    assert p.status == "no_variables" and len(p.notes) == 20_000 and p.notes[-1] == "key 'k19999' given twice: the last value is read"
    # failing objects nested in failing objects: each level re-reads the rest, so the re-reading is
    # capped (RESCAN_FACTOR times the text); an answer before them still counts
    nested = good + " " + '{"a": ' * 40 + "[" + "1, " * 20_000
    p = parse_response(nested)
    assert p.status == "ok" and p.variables[0].value == 36
    assert p.notes == [f"failed JSON decodes read the text {parsing.RESCAN_FACTOR} times over by character "
                       f"{len(good) + 1 + 6 * parsing.RESCAN_FACTOR}: the rest of the text is not read"]
    # the one limit on an answer's length
    cap = parsing.MAX_ANSWER_CHARS
    assert cap >= 1_000_000
    at_cap = good + " " * (cap - len(good))
    assert parse_response(at_cap).status == "ok"
    p = parse_response(at_cap + " ")
    assert p.status == "too_long" and not p.parseable and "too_long" in parsing.UNPARSEABLE
    assert p.notes == [f"an answer of {cap + 1:,} characters, longer than the {cap:,} read (statform.max_answer_chars)"]
    s = _sample([("n", 36, "N/A")])
    gens = pd.DataFrame({"item_id": ["s1", "s1"], "model": "m", "response": [good, at_cap + " "]})
    scored = score_generations(gens, [s], TAX)
    assert scored["parse_status"].tolist() == ["ok", "too_long"]
    assert scored["jcv"].tolist() == [1.0, 0.0] and scored["correct_cg"].tolist() == [True, False]
    assert aggregate(scored).iloc[0]["unparseable"] == 1
