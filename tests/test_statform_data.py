"""StatFormBench data loader, shipped sample, taxonomy and prompting strategies."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from earnest.statform.data import DataError, check_disjoint, load_samples, samples_from_frame, samples_to_frame
from earnest.statform.prompts import (build_requests, default_prompt_path, draw_examples, load_prompt_template,
                                      parse_strategy)
from earnest.statform.taxonomy import (TaxonomyError, default_taxonomy_path, derive_taxonomy, load_taxonomy,
                                       taxonomy_for)

RES = Path(__file__).resolve().parents[1] / "resources" / "statform"
SAMPLE, POOL = RES / "sample.jsonl", RES / "fewshot_pool.jsonl"

GOOD = {"sample_id": "t1", "source": "book", "background": "b", "question": "q?", "data": None,
        "category": "Mathematical Calculation\\Expectation",
        "variables": {"p": {"id": "p", "value": 0.1, "class": "numerical", "role": "NR", "description": "d"}}}


def _jsonl(path: Path, records) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def test_shipped_sample_covers_what_the_brief_asks():
    samples = load_samples(SAMPLE)
    assert len(samples) >= 30
    assert len({s.category_cg for s in samples}) >= 8
    assert {s.source for s in samples} == {"textbook", "case"}
    values = [v.value for s in samples for v in s.variables]
    assert any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    assert any(isinstance(v, list) for v in values)
    assert any(isinstance(v, dict) for v in values)
    assert any(isinstance(v, str) and "\\begin{tabular}" in v for v in values)
    assert all(v.role in ("predictor", "response", "both", "N/A") for s in samples for v in s.variables)
    pool = load_samples(POOL)
    check_disjoint(samples, pool)  # raises if they overlap


def test_bad_records_name_file_line_and_field(tmp_path):
    bad_role = dict(GOOD, sample_id="t3", variables={"p": dict(GOOD["variables"]["p"], role="cause")})
    path = _jsonl(tmp_path / "bad.jsonl", [GOOD, dict(GOOD, sample_id="t2"), bad_role])
    with pytest.raises(DataError, match=r"bad\.jsonl:3 .*variables\['p'\]\.role"):
        load_samples(path)
    path = _jsonl(tmp_path / "noq.jsonl", [{k: v for k, v in GOOD.items() if k != "question"}])
    with pytest.raises(DataError, match=r"noq\.jsonl:1 .*'question' is missing"):
        load_samples(path)
    path = _jsonl(tmp_path / "src.jsonl", [dict(GOOD, source="web")])
    with pytest.raises(DataError, match=r"src\.jsonl:1 .*'source'"):
        load_samples(path)
    path = _jsonl(tmp_path / "dup.jsonl", [GOOD, GOOD])
    with pytest.raises(DataError, match=r"dup\.jsonl:2: duplicate sample_id"):
        load_samples(path)
    path = tmp_path / "broken.jsonl"
    path.write_text(json.dumps(GOOD) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"broken\.jsonl:2: not valid JSON"):
        load_samples(path)
    path = _jsonl(tmp_path / "noval.jsonl", [dict(GOOD, variables={"p": {"id": "p", "role": "N/A"}})])
    with pytest.raises(DataError, match=r"noval\.jsonl:1 .*'value' is missing"):
        load_samples(path)
    path = _jsonl(tmp_path / "fine.jsonl", [dict(GOOD, category="Expectation")])
    with pytest.raises(DataError, match=r"fine\.jsonl:1 .*no taxonomy was given"):
        load_samples(path)
    # a reference value no answer can match: NaN, or an infinity inside an aggregate
    path = tmp_path / "nan.jsonl"
    path.write_text(json.dumps(dict(GOOD, variables={"p": dict(GOOD["variables"]["p"], value=float("nan"))})) + "\n"
                    + json.dumps(dict(GOOD, sample_id="t2", variables={"p": dict(GOOD["variables"]["p"],
                                      value={"mean": 1.0, "sd": float("inf")})})) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"nan\.jsonl:1 .*: variables\['p'\]\.value: NaN is no value"):
        load_samples(path)
    path.write_text(path.read_text(encoding="utf-8").split("\n", 1)[1], encoding="utf-8")
    with pytest.raises(DataError, match=r"nan\.jsonl:1 .*: variables\['p'\]\.value\['sd'\]: Infinity is no value"):
        load_samples(path)


def test_non_utf8_bytes_are_named_by_line_and_column(tmp_path):
    good = json.dumps(GOOD).encode()
    for name in ("s.jsonl", "s.json"):
        path = tmp_path / name
        body = good + b"\n" + b'  {"question": "caf\xe9"}' if name.endswith("jsonl") else \
            b"[" + good + b',\n  {"question": "caf\xe9"}]'
        path.write_bytes(body)
        with pytest.raises(DataError, match=rf"{re.escape(name)}:2: not UTF-8 text \(byte 0xe9 at column 20\)"):
            load_samples(path)
    tax = tmp_path / "t.yaml"
    tax.write_bytes(b"Regression:\n  - Linear R\xe9gression\n")
    with pytest.raises(TaxonomyError, match=r"t\.yaml:2: not UTF-8 text \(byte 0xe9 at column 13\)"):
        load_taxonomy(tax)


def test_release_layouts_json_and_parquet(tmp_path):
    # nested layout of the authors' release: fine name only, role codes, object of records
    nested = {"7": {"case_id": "book3\\07.json", "input": {"background": "b", "question": "q?", "data": None},
                    "output": {"variable": {"n": {"id": "n", "value": 5, "class": "numerical", "role": "XY",
                                                  "description": ""}},
                               "category": "Expectation"}, "source": "book", "sample_key": 7}}
    path = tmp_path / "release.json"
    path.write_text(json.dumps(nested), encoding="utf-8")
    tax = load_taxonomy(default_taxonomy_path())
    [s] = load_samples(path, taxonomy=tax)
    assert (s.sample_id, s.source, s.category_cg, s.category_fg) == ("7", "textbook", "Mathematical Calculation", "Expectation")
    assert s.variables[0].role == "both"

    samples = load_samples(SAMPLE)
    frame = samples_to_frame(samples)
    frame.to_parquet(tmp_path / "s.parquet")
    back = load_samples(tmp_path / "s.parquet")
    assert [x.sample_id for x in back] == [x.sample_id for x in samples]
    assert [[v.value for v in x.variables] for x in back] == [[v.value for v in x.variables] for x in samples]
    assert samples_from_frame(pd.read_parquet(tmp_path / "s.parquet"))[5].category == samples[5].category


def test_taxonomy_paper_file_derivation_and_merge(tmp_path):
    tax = load_taxonomy(default_taxonomy_path())
    ht = tax.get("Hypothesis Testing & Interval Estimation")
    assert [c.name for c in ht.children][:3] == ["Independence Test", "Mean Test", "Variance Test"]
    assert len(ht.children) == 11 and len(tax.get("Mathematical Calculation").children) == 6
    samples = load_samples(SAMPLE)
    derived = derive_taxonomy(samples)
    assert set(derived.fine_labels()) == {s.category for s in samples}
    merged = taxonomy_for(samples, default_taxonomy_path())
    assert set(derived.fine_labels()) <= set(merged.fine_labels())
    assert merged.coarse()[:3] == tax.coarse()[:3]  # the file's order comes first
    # a user's fuller file in the short form
    user = tmp_path / "tax.yaml"
    user.write_text("Clustering: {Clustering: Grouping similar observations.}\n", encoding="utf-8")
    assert load_taxonomy(user).render(definitions=True) == "- Clustering\n  - Clustering: Grouping similar observations."
    user.write_text("categories:\n  - {definition: x}\n", encoding="utf-8")
    with pytest.raises(TaxonomyError, match=r"categories\[0\]"):
        load_taxonomy(user)


@pytest.mark.parametrize("name, text, message", [
    ("dup.yaml", "A: [x]\nA: [y]\n", r"dup\.yaml:2: key 'A' is given twice"),
    ("dup.json", '{"A": ["x"], "A": ["y"]}', r"dup\.json: key 'A' appears twice"),
    ("empty.yaml", "categories: []\n", r"empty\.yaml: no categories"),
    ("nulls.yaml", "A: [null, x]\n", r"nulls\.yaml: 'A'\[0\]: a category name must be text, found None"),
    ("blank.yaml", "A: ['  ']\n", r"blank\.yaml: 'A'\[0\]: a category name must not be empty"),
    ("str.yaml", "categories:\n  - name: A\n    children: t-test\n",
     r"str\.yaml: categories\[0\]: 'children' must be a list .*found 't-test'"),
    ("defn.yaml", "categories:\n  - name: A\n    definition: [1]\n", r"categories\[0\]: a definition must be text"),
])
def test_a_taxonomy_that_says_something_else_is_refused(tmp_path, name, text, message):
    """A key given twice (the last was kept), no category, a null name (read as 'None'), children
    given as one string (each character became a fine category), a definition that is no text."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TaxonomyError, match=message):
        load_taxonomy(path)


# The paper's Appendix C formulation prompt as it appears in our copy of the paper's text
# (typesetting lost); the resource must hold the same characters once layout is ignored.
PAPER_PROMPT = (
    'You are a professional statistician. Abstract the statistical formulation of the following problem. '
    'The input format is:{"background": "Relevant description of the problem context (which may also contain some '
    'data)","data": "The data used, presented as a table in LaTeX code","question": "The core problem"}The '
    'statistical formulation includes the following two parts:1. Statistical problem category{statistical problem '
    'taxonomy}2. Relevant variables and their rolesKey requirements:1.Variables refer specifically to data objects '
    'collected for the research objective (e.g., sample size, mean, standard deviation), excluding model parameters, '
    'z-scores, p-values, t-values, or F-values.2.Variable objects can be raw data columns, grouped statistics, '
    'contingency tables, sample sizes, success counts, or time variables.3.For "Mathematical Calculation" problems, '
    'treat numerical objects (probabilities, sample sizes) used in the answer as variables.4.If there is no explicit '
    'data table or ifdatais empty, variables must still be extracted when symbolic variables or statistics appear.5.'
    'When the data have a grouping structure, split them into multiple variables by group.6.If aggregated measures '
    'are provided for multiple variables, create a separate variable object for each, writing measures into '
    'thevaluefield as JSON.7.If the information is insufficient, output an empty JSON object:{}.8.Output must be '
    'valid JSON with variable IDs as top-level keys. Do not include extra text.Field specifications:•Top-level key: '
    'Variable name (extracted or assigned).•id: Must match top-level key.•value: An array for table columns, JSON '
    'for aggregated measures, or the original form (e.g., a TeX table). When multiple numerical values are present, '
    'preserve their order in the source problem.•class: One ofnumerical,categorical,others.•role: One '
    'ofpredictor,response,both, orN/A. Usebothfor an undirected association or a dual role. UseN/Awhen no '
    'directional role is needed, as with identifiers, filters, unsupervised methods, and distribution descriptions.'
    '•description: Brief description.Specialrolecases:•For "Trends Over Time" visualization, assignpredictorto the '
    'time variable andresponseto the changing variable.•If a variable serves as a predictor and is also used to '
    'construct the response, assignpredictor.•If a variable serves as a response and is also used to construct the '
    'predictor, assignresponse.Note: Shallow correlation analyses typically use "Data Visualization." Deeper '
    'analyses of direction, magnitude, or significance use modeling and interpretation. Time series forecasting uses '
    '"Continuous Value Prediction." "Time Series Analysis" focuses on interpretation.Output format: JSON. Example:'
    '{"category": "Relationship Between Continuous Variables","variables": {"height": {"id": "height","value": '
    '{"μ": 138, "σ": 7},"class": "numerical","role": "N/A","description": "Heights of 10-year-old boys modeled as '
    'Normal(μ=138 cm,σ=7 cm)."},"threshold": {"id": "threshold","value": 150,"class": "numerical","role": '
    '"N/A","description": "Cutoff value (150 cm) used in the z-score calculation z=(150-138)/7."}}}'
)


def test_zero_shot_prompt_is_the_papers_text():
    text = load_prompt_template(default_prompt_path())
    squash = lambda s: re.sub(r"\s+", "", s)  # noqa: E731
    assert squash(text) == squash(PAPER_PROMPT)


def test_strategies_build_requests():
    samples = load_samples(SAMPLE)
    pool = load_samples(POOL)
    tax = taxonomy_for(samples + pool, default_taxonomy_path())
    zs = build_requests(samples, tax, "zero_shot")
    assert [r.key for r in zs] == [s.sample_id for s in samples]
    msgs = zs[0].messages
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert "{statistical problem taxonomy}" not in msgs[0]["content"]
    assert "- Mathematical Calculation: [Probability Space, Event Probability & Independence" in msgs[0]["content"]
    assert json.loads(msgs[1]["content"]) == samples[0].input_dict()

    defs = build_requests(samples[:1], tax, "definitions")[0].messages[0]["content"]
    assert "  - Mean Test: Claims or intervals about one or more population means." in defs
    assert "Mean Test: Claims" not in msgs[0]["content"]

    fs = build_requests(samples, tax, "few_shot", k=3, pool=pool, seed=1)
    roles = [m["role"] for m in fs[0].messages]
    assert roles == ["system"] + ["user", "assistant"] * 3 + ["user"]
    ex_ids = {s.question: s for s in pool}
    shown = [json.loads(m["content"])["question"] for m in fs[0].messages[1:-1:2]]
    assert all(q in ex_ids for q in shown) and len(set(shown)) == 3
    answer = json.loads(fs[0].messages[2]["content"])
    assert set(answer) == {"category", "variables"}
    # seeded and per sample: same seed same draw, another seed another draw somewhere
    assert fs[0].messages == build_requests(samples[:1], tax, "few_shot", k=3, pool=pool, seed=1)[0].messages
    draws = {tuple(x.sample_id for x in draw_examples(s.sample_id, pool, 3, seed)) for s in samples for seed in (1, 2)}
    assert len(draws) > 1
    user_layout = build_requests(samples[:1], tax, "zero_shot", layout="user")[0].messages
    assert [m["role"] for m in user_layout] == ["user"] and user_layout[0]["content"].startswith("You are a professional")

    with pytest.raises(DataError, match="share sample ids"):
        build_requests(samples, tax, "few_shot", k=1, pool=samples[:2])
    with pytest.raises(ValueError, match="exceeds"):
        build_requests(samples, tax, "few_shot", k=10, pool=pool)
    assert parse_strategy("fs3", {"kind": "few_shot", "k": 3})["k"] == 3
    with pytest.raises(ValueError, match=r"statform\.strategies\.bad\.kind"):
        parse_strategy("bad", {"kind": "cot"})


def test_shipped_sample_has_every_label_in_the_derived_taxonomy():
    samples = load_samples(SAMPLE)
    counts = Counter(s.category_cg for s in samples)
    assert min(counts.values()) >= 1 and counts.most_common(1)[0][1] < len(samples) / 2


@pytest.mark.parametrize("name, text, message", [
    # a .json dataset: json kept the last of two equal keys; nesting too deep was a RecursionError
    ("dup.json", "[" + json.dumps(GOOD).replace('"question": "q?"', '"question": "a?", "question": "q?"') + "]",
     r"dup\.json: key 'question' appears twice in one object"),
    ("deep.json", "[" + "[" * 100_000 + "]" * 100_000 + "]", r"deep\.json: not readable JSON \(arrays or objects nested"),
    ("bad.json", '[\n{"a": 1,,}]', r"bad\.json: not valid JSON \(Expecting property name .* at line 2, column 9\)"),
    # 'variables' given as a JSON string: the same rules inside it
    ("var.jsonl", json.dumps(dict(GOOD, variables='{"p": {"id": "p"}, "p": {"id": "q"}}')) + "\n",
     r"var\.jsonl:1 .*field 'variables' is a string, and it is: key 'p' appears twice"),
])
def test_json_datasets_are_read_as_strictly_as_jsonl(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError, match=message):
        load_samples(path)
