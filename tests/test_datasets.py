"""GSM-Symbolic items from the package templates and from the official release format; gamma."""

import json
import math

import pandas as pd
import pytest

from earnest.gsm.datasets import (DatasetError, ITEM_COLUMNS, gold_answer, package_base_items, package_variant_items,
                              read_release_jsonl, release_items, template_seed)
from earnest.gsm.gamma import gamma, integers_in


@pytest.mark.parametrize("text, ints", [
    ("He has 1,000 apples and 12 pears.", [1000, 12]),
    ("It costs $2.50 or 2.5 dollars, half is 1/2, and 3/4 of 20 is 15.", [20, 15]),
    ("Three cats and twice as many dogs.", []),
    ("The temperature fell to -5 degrees, then 0.", [-5, 0]),
    ("From 3-4 days, about 12.", [3, 4, 12]),
    ("A4 paper, x2 speed, 7th place, a 10-foot shark, 100%.", [7, 10, 100]),
    ("In 2021 it sold 12,345,678 units.", [2021, 12345678]),
])
def test_integers_written_in_digits(text, ints):
    assert integers_in(text) == ints


def test_gamma_is_sum_of_log10():
    assert gamma("1,000 and 10 and 0 and -100") == pytest.approx(3 + 1 + 0 + 2)
    assert gamma("no numbers here") == 0.0
    assert gamma("5 apples") == pytest.approx(math.log10(5))


def test_gold_answer():
    assert gold_answer("so 3 + 4 = 7\n#### 1,200", "x") == "1200"
    with pytest.raises(DatasetError, match="where"):
        gold_answer("no final line", "where")


def test_package_items_are_reproducible_and_per_template():
    base = package_base_items([0, 2])
    assert list(base.columns) == ITEM_COLUMNS
    assert list(base.item_id) == ["t000-base", "t002-base"] and (base.instance == -1).all()
    a = package_variant_items(2, 3, base_seed=11)
    b = package_variant_items(2, 3, base_seed=11)
    pd.testing.assert_frame_equal(a, b)          # byte-identical on every rerun
    assert list(a.item_id) == ["t002-v00", "t002-v01", "t002-v02"]
    assert template_seed(11, 2) != template_seed(11, 3) and template_seed(11, 2) != template_seed(12, 2)
    assert (a.gamma == [gamma(q) for q in a.question]).all()
    with pytest.raises(DatasetError, match="gsm_symbolic.templates"):
        package_base_items([0, 100])


def test_release_jsonl_gives_the_same_table_as_the_package(tmp_path):
    """Write the package's items in the official release format and read them back."""
    base = package_base_items([0, 2])
    variants = pd.concat([package_variant_items(t, 2, base_seed=5) for t in (0, 2)], ignore_index=True)
    path = tmp_path / "GSM_symbolic.jsonl"
    with path.open("w") as fh:
        for v in variants.itertuples():
            b = base[base.template_id == v.template_id].iloc[0]
            fh.write(json.dumps({"id": v.template_id, "instance": v.instance, "question": v.question,
                                 "answer": v.solution, "original_id": 1000 + v.template_id,
                                 "original_question": b.question,
                                 "original_answer": b.solution}) + "\n")
    records = read_release_jsonl(path)
    pd.testing.assert_frame_equal(release_items(records, "gsm_base", None, None), base)
    pd.testing.assert_frame_equal(release_items(records, "gsm_variants", None, None), variants)
    assert len(release_items(records, "gsm_variants", [2], 1)) == 1


def test_release_jsonl_errors_name_file_and_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"id": 0}\n')
    with pytest.raises(DatasetError, match=r"r\.jsonl:1: missing field"):
        read_release_jsonl(path)
    path.write_text('\n{"id": 0, "instance": "x", "question": "q", "answer": "#### 1", "original_id": 1, '
                    '"original_question": "q", "original_answer": "#### 1"}\n')
    with pytest.raises(DatasetError, match=r"r\.jsonl:2: field 'instance'"):
        read_release_jsonl(path)
    with pytest.raises(DatasetError, match="not found"):
        read_release_jsonl(tmp_path / "missing.jsonl")


def _release_record(**kw):
    rec = {"id": 0, "instance": 0, "question": "q?", "answer": "x\n#### 1", "original_id": 1,
           "original_question": "oq?", "original_answer": "y\n#### 2"}
    rec.update(kw)
    return json.dumps(rec)


@pytest.mark.parametrize("line, message", [
    (_release_record(answer=None), r":2: field 'answer' must be non-empty text, got None"),
    (_release_record(question=None), r":2: field 'question' must be non-empty text, got None"),
    (_release_record(answer="so\n#### nan"), r":2: field 'answer': final answer 'nan' is not a finite number"),
    (_release_record(original_answer="#### inf"),
     r":2: field 'original_answer': final answer 'inf' is not a finite number"),
    (_release_record(answer="#### 1e400"), r":2: field 'answer': final answer '1e400' is not a finite number"),
    (_release_record(instance=0), r":2: duplicate item \(id 0, instance 0\); first at .*r\.jsonl:1"),
    (_release_record(instance=True), r":2: field 'instance' must be an integer"),
])
def test_release_records_are_checked_when_read(tmp_path, line, message):
    """Found when the file is read (at DAG time, before any generation), not when a job meets them."""
    path = tmp_path / "r.jsonl"
    path.write_text(_release_record() + "\n" + line + "\n")
    with pytest.raises(DatasetError, match=message):
        read_release_jsonl(path)


def test_non_utf8_bytes_are_named_with_line_and_column(tmp_path):
    path = tmp_path / "r.jsonl"
    good = _release_record().encode()
    path.write_bytes(good + b"\n" + good.replace(b'"q?"', b'"caf\xe9?"') + b"\n")
    with pytest.raises(DatasetError, match=r"r\.jsonl:2: not UTF-8 text \(byte 0xe9 at column \d+\)"):
        read_release_jsonl(path)
    path.write_bytes(b"\xef\xbb\xbf" + good + b"\n")        # a byte order mark is fine
    assert len(read_release_jsonl(path)) == 1


def test_gold_answer_must_be_finite():
    for bad in ("#### nan", "#### -inf", "#### Infinity"):
        with pytest.raises(DatasetError, match="not a finite number"):
            gold_answer(bad, "w")
