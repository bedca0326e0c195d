"""Issue 41.5: the channels between answers of the authors' single-process run (resources/FIDELITY.md,
section 15), the scanner that finds answers using one (scripts/state_channels.py), and earnest's
isolation of each answer from the last, in reference mode with the real modules."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from earnest.gsm.extraction import extract_code_many
from earnest.sandbox import Sandbox
from helpers import child_env

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "state_channels.py"
_spec = importlib.util.spec_from_file_location("state_channels", SCRIPT)
sc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sc)


@pytest.mark.parametrize("body, channel", [
    ("    math.pi = 3\n    return math.pi\n", "module_attribute"),
    ("    del math.e\n    return 1\n", "module_attribute"),
    ("    fractions.Fraction.limit = 5\n    return 1\n", "module_attribute"),
    ("    typing.functools.reduce = min\n    return 1\n", "module_attribute"),
    ("    decimal.getcontext().prec = 3\n    return 1\n", "decimal_context"),
    ("    ctx = decimal.getcontext()\n    ctx.rounding = decimal.ROUND_DOWN\n    return 1\n", "decimal_context"),
    ("    decimal.setcontext(decimal.BasicContext)\n    return 1\n", "decimal_context"),
    ("    x = decimal.Decimal(1) / 3\n    return int(decimal.getcontext().flags[decimal.Inexact])\n", "decimal_context"),
    ("    return random.randint(1, 6)\n", "random_state"),
    ("    random.seed(3)\n    return 1\n", "random_state"),
    ("    numbers.Number.register(str)\n    return 1\n", "abc_registry"),
    ("    typing.sys.setrecursionlimit(60)\n    return 1\n", "interpreter"),
    ("    typing.sys.set_int_max_str_digits(640)\n    return 1\n", "interpreter"),
    ("    return len(random._os.environ)\n", "interpreter"),
    ("    return len(().__class__.__base__.__subclasses__())\n", "escape"),
    ("    return len('{0.__globals__}'.format(math.floor))\n", "escape"),
    # a program the parser refuses is searched as text
    ("    math.pi = 3\n    x = = 2\n    return 1\n", "module_attribute"),
])
def test_the_scanner_names_each_channel(body, channel):
    got = sc.scan_response(body)
    assert channel in {c for c, _, _ in got["channels"]}, got
    assert set(sc.CHANNELS) >= {c for c, _, _ in got["channels"]}


@pytest.mark.parametrize("body", [
    "    return math.pi * 2\n",
    "    with decimal.localcontext() as ctx:\n        ctx.prec = 3\n        return float(decimal.Decimal(1) / 3)\n",
    "    r = random.Random(3)\n    return r.randint(1, 6)\n",
    "    global total\n    total = 5\n    return total\n",
    "    d = {}\n    d['pi'] = math.pi\n    return fractions.Fraction(1, 3).numerator\n",
    "    return fractions.math.gcd(12, 18) + typing.functools.reduce(min, [3, 4])\n",
])
def test_no_channel_in_ordinary_answers(body):
    # a local context restores the thread's; a Random of its own, a global of the answer's namespace,
    # reading a module attribute or reaching a function through another module carries nothing
    assert sc.scan_response(body)["channels"] == [], sc.scan_response(body)


def test_the_recorded_scan_of_the_answer_sets_in_this_repository(tmp_path):
    """FIDELITY.md section 15 records this run: in the golden code answers one answer draws from
    random (and seeds it first) and one escapes through ().__class__; no other channel."""
    out = tmp_path / "report.json"
    golden = REPO / "tests" / "data" / "golden" / "reference"
    proc = subprocess.run([sys.executable, str(SCRIPT), str(golden / "code_answers.jsonl"),
                           str(golden / "code_answers_versions.jsonl"), "--json", str(out)],
                          capture_output=True, text=True, env=child_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    src = report["sources"]
    assert (src["code_answers.jsonl"]["answers"], src["code_answers.jsonl"]["with_channel"]) == (89, 1)
    assert {c: n for c, n in src["code_answers.jsonl"]["by_channel"].items() if n} == {"random_state": 1}
    assert {c: n for c, n in src["code_answers_versions.jsonl"]["by_channel"].items() if n} == {"escape": 1}
    assert {h["answer"] for h in report["hits"]} == {"code_answers.jsonl:random_seeded",
                                                     "code_answers_versions.jsonl:class_attribute_escape"}


def test_earnest_carries_no_state_from_one_answer_to_the_next():
    """What the authors' run carries (a module attribute, decimal's context, random's generator, an ABC
    registration, the recursion limit) reaches no later answer in earnest's reference mode, although
    its answers see the real modules: every answer runs in a fresh fork of the worker."""
    writer = ("\n    math.pi = 3\n    decimal.getcontext().prec = 3\n    numbers.Number.register(str)\n"
              "    typing.sys.setrecursionlimit(80)\n    return random.random()\n")
    readers = ["\n    return math.pi\n", "\n    return decimal.getcontext().prec\n",
               "\n    return float(numbers.Number.__instancecheck__('a'))\n",
               "\n    return typing.sys.getrecursionlimit()\n", "\n    return random.random()\n"]
    with Sandbox(workers=1) as box:   # one worker: every answer is a fork of the same process
        first = extract_code_many([writer] + readers, box, fidelity="reference")
        again = extract_code_many(readers, box, fidelity="reference")
    import math

    assert first[0].error_class == "" and first[1].value == math.pi, first
    assert first[2].value == 28.0 and first[3].value == 0.0 and first[4].value >= 1000, first
    # random: every answer starts from the authors' seed (theirs would go on from the writer's draw)
    import random

    assert first[5].value == first[0].value == again[4].value == random.Random(42).random()
    assert [r.value for r in first[1:]] == [r.value for r in again]
