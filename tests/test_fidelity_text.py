"""Reference fidelity, text side: extraction and correctness as the authors' code gives them.

The expected values, patterns and correctness in tests/data/golden/reference/text_answers.jsonl
were produced by running the reference's own AnswerExtractor and its evaluator's rule outside this
project (tests/data/golden/README.md says how).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from earnest.gsm.extraction import extract_text
from earnest.gsm.failure_classes import FROM_REFERENCE
from earnest.gsm.scoring import final_error_class, is_correct

GOLDEN = Path(__file__).resolve().parent / "data" / "golden" / "reference"
TEXT_ROWS = [json.loads(line) for line in (GOLDEN / "text_answers.jsonl").read_text(encoding="utf-8").splitlines()]
# the reference's AnswerPattern names -> earnest's extraction_pattern in reference mode
PATTERNS = {"GMS8K": "hash_answer", "GSM_SYMBOLIC": "final_answer", "LAST_NUMBER": "last_number"}


def _value(v):
    return {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}.get(v, v) if isinstance(v, str) else v


def test_the_golden_set_is_large_and_varied():
    assert len(TEXT_ROWS) >= 100
    kinds = {r["reference_pattern"] for r in TEXT_ROWS}
    assert kinds == {"GMS8K", "GSM_SYMBOLIC", "LAST_NUMBER", "NO_NUMBER", "EMPTY_RESPONSE", "EMPTY_AFTER_TRIM"}
    assert 20 <= sum(not r["reference_correct"] for r in TEXT_ROWS) <= len(TEXT_ROWS) - 50


@pytest.mark.parametrize("row", TEXT_ROWS, ids=[r["note"] for r in TEXT_ROWS])
def test_reference_text_extraction_matches_the_reference_code(row):
    ex = extract_text(row["response"], fidelity="reference")
    expected = _value(row["reference_value"])
    if expected is None:
        assert ex.value is None
        assert ex.error_class == FROM_REFERENCE[row["reference_pattern"]] and ex.pattern == "none"
    else:
        assert ex.value == expected and math.copysign(1, ex.value) == math.copysign(1, expected)
        assert ex.pattern == PATTERNS[row["reference_pattern"]] and ex.error_class == ""
    ok = is_correct(ex, row["answer"], fidelity="reference")
    assert ok == row["reference_correct"]
    # Appendix F classes: a wrong number from the last-number fallback is its own class
    cls = final_error_class(ex, ok)
    if not ok and ex.value is not None:
        assert cls == ("wrong_answer_last_number" if row["reference_pattern"] == "LAST_NUMBER" else "wrong_answer")


def test_modes_differ_where_the_reference_code_does():
    """A few of the golden responses on which earnest's stricter rules disagree, on purpose."""
    ref = {r["note"]: r for r in TEXT_ROWS}
    # "The answer is .5": the reference reads 5, earnest 0.5 (correct)
    assert extract_text(ref["leading-point decimal"]["response"]).value == 0.5
    # "3/4": the reference reads 3, earnest the fraction
    assert extract_text(ref["fraction answer"]["response"]).value == 0.75
    # "Q:" inside "FAQ:" cuts in reference mode only
    assert extract_text("The final answer is 8.FAQ: is this right? 9", fidelity="reference").value == 8
    assert extract_text("So it is 9.FAQ: is this right? 9 9 10").value == 10
    # the reference accepts "The answer is", earnest only "The final answer is"
    assert extract_text("The answer is 16 legs. Each dog has 4 legs.").pattern == "last_number"


def test_reference_correctness_is_an_absolute_difference_below_1e_5():
    ex = extract_text("The final answer is 0.001009.", fidelity="reference")
    assert is_correct(ex, "0.001", fidelity="reference") and not is_correct(ex, "0.001")
    ex = extract_text("The final answer is 18.00002.", fidelity="reference")
    assert not is_correct(ex, "18", fidelity="reference")
    with pytest.raises(ValueError, match="fidelity"):
        extract_text("The final answer is 1.", fidelity="paper")


def test_earnest_prompt_writes_exactly_the_bytes_the_model_receives(capfdbinary, monkeypatch):
    import io

    from earnest.cli import main
    from earnest.gsm.prompts import load_formats

    cases = json.loads((GOLDEN / "prompts" / "prompts.json").read_text(encoding="utf-8"))
    for case in (cases[0], cases[3], cases[-1]):
        assert main(["prompt", case["format"], case["question"], "--fidelity", "reference"]) == 0
        assert capfdbinary.readouterr().out == (GOLDEN / "prompts" / case["file"]).read_bytes()
    monkeypatch.setattr("sys.stdin", io.StringIO("How many?"))
    assert main(["prompt", "gsm", "-"]) == 0
    assert capfdbinary.readouterr().out == load_formats()["gsm"].render("How many?").encode()
    assert main(["prompt", "gsm-prompt", "How many?"]) == 2
    err = capfdbinary.readouterr().err
    assert b"unknown prompt format" in err and b"structured_code" in err


def test_earnest_extract_in_reference_mode(tmp_path):
    from earnest.cli import main

    rows = TEXT_ROWS[:30]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"response": r["response"], "answer": r["answer"]}) + "\n" for r in rows))
    for mode in ("reference", "earnest"):
        assert main(["extract", "--style", "text", "--fidelity", mode, str(src), str(tmp_path / f"{mode}.jsonl")]) == 0
    ref = [json.loads(line) for line in (tmp_path / "reference.jsonl").read_text().splitlines()]
    assert [o["correct"] for o in ref] == [r["reference_correct"] for r in rows]
    assert [o["extracted"] for o in ref] == [_value(r["reference_value"]) for r in rows]
    ear = [json.loads(line) for line in (tmp_path / "earnest.jsonl").read_text().splitlines()]
    assert [o["correct"] for o in ear] != [o["correct"] for o in ref]


# ---------------------------------------------------------------- gamma and the K-S integers

GAMMA = json.loads((GOLDEN / "gamma.json").read_text(encoding="utf-8"))


def _items(dataset):
    import pandas as pd

    from earnest.gsm.gamma import gamma

    rows = [r for r in GAMMA["questions"] if r["dataset"] == dataset]
    return pd.DataFrame({"item_id": [f"{dataset}-{i}" for i in range(len(rows))], "dataset": dataset,
                         "template_id": range(len(rows)), "instance": -1 if dataset == "gsm_base" else 0,
                         "question": [r["question"] for r in rows], "answer": "1",
                         "gamma": [gamma(r["question"]) for r in rows]}), rows


def test_reference_gamma_and_its_centring_match_the_reference_code():
    """gamma_c of every question equals the reference analyser's sum_logs_c (its own centring over
    GSM-Base + GSM-Variants, questions without digits NaN and left out of the mean): scoring gives
    the reference's gamma, the GLMM input centres it (earnest.stats.glmm.centre_gamma)."""
    import pandas as pd

    from earnest.gsm.scoring import score_table
    from earnest.stats.glmm import centre_gamma
    from earnest.gsm.glmm_input import glmm_input_from_scored

    assert len(GAMMA["questions"]) >= 20
    tables = [_items("gsm_base"), _items("gsm_variants")]
    scored, rows = [], []
    for items, item_rows in tables:
        gens = pd.DataFrame({"item_id": items.item_id, "model": "m", "prompt": "gsm", "dataset": items.dataset,
                             "response": "The final answer is 1.", "prompt_tokens": 1, "new_tokens": 1,
                             "stop_reason": "eos", "seconds": 0.0})
        one = score_table(gens, items, "text", fidelity="reference")
        assert one["correct"].all()
        scored.append(one.assign(model="m", prompt="gsm"))
        rows += item_rows
    gamma_c = centre_gamma(glmm_input_from_scored(scored))
    earnest_c = centre_gamma(glmm_input_from_scored([score_table(
        pd.DataFrame({"item_id": t.item_id, "model": "m", "prompt": "gsm", "dataset": t.dataset,
                      "response": "1", "prompt_tokens": 1, "new_tokens": 1, "stop_reason": "eos", "seconds": 0.0}),
        t, "text").assign(model="m", prompt="gsm") for t, _ in tables]))
    assert not np.allclose(gamma_c.fillna(0), earnest_c.fillna(0))   # the modes' gammas differ
    nan_seen = 0
    for got, row in zip(gamma_c, rows):
        if row["reference_gamma_c"] is None:
            assert math.isnan(got)
            nan_seen += 1
        else:
            assert got == pytest.approx(row["reference_gamma_c"], rel=1e-12, abs=1e-12), row["question"]
    assert nan_seen == 1


def test_reference_ks_integers_match_the_reference_counts():
    from collections import Counter

    from earnest.gsm.ks import integers_of

    for dataset, label in (("gsm_base", "GSM-Base"), ("gsm_variants", "GSM-Variants")):
        _, rows = _items(dataset)
        got = Counter(integers_of([r["question"] for r in rows], fidelity="reference").tolist())
        expected = {float(k): v[label] for k, v in GAMMA["ks_integer_counts"].items() if v[label]}
        assert dict(got) == expected, dataset


@pytest.mark.parametrize("n", [40, 90, 1999])
def test_reference_gamma_takes_numpys_log10_as_the_authors(n):
    """Issue 41.9: the authors' gamma is numpy's log10 summed by the builtin sum; on machines where
    numpy's SIMD log10 differs from the C library's in the last bit (AVX-512: 40, 90, 1999 do), the
    reference mode has numpy's bits and earnest mode the C library's."""
    from earnest.gsm.gamma import gamma

    q = f"Tom has {n} marbles."
    assert gamma(q, fidelity="reference") == float(np.log10(float(n)))
    assert gamma(q) == math.log10(n)
    # the authors' sum: numpy scalars added one after another from 0 (no compensated summation,
    # which Python 3.12 applies to plain floats only)
    q3 = f"{n} apples, {n} pears, 0 plums and {n + 1} figs."
    want = 0
    for v in (n, n, 0, n + 1):
        want = want + (np.log10(float(v)) if v > 0 else 0)
    assert gamma(q3, fidelity="reference") == float(want)


def test_reference_number_reading_differs_from_earnest_as_documented():
    from earnest.gsm.gamma import gamma, integers_in

    q = "A farm has 12,500 chickens and sells 3/4 of them for $2.5 each, .5 kg and 12.00 kg."
    assert integers_in(q) == [12500]
    assert integers_in(q, fidelity="reference") == [12, 500, 3, 4, 5, 12]
    assert gamma(q, fidelity="reference") == pytest.approx(math.log10(12 * 500 * 3 * 4 * 12))
    assert gamma(q) == pytest.approx(math.log10(12500))
    assert math.isnan(gamma("No digits here.", fidelity="reference")) and gamma("No digits here.") == 0.0
