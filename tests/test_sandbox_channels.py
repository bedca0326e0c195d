"""Channels between answers and out of the sandbox's protocol, through the scoring path (issue 39).

- An answer that writes the worker's own failure ({"fork_error": ...}, {"setup_error": ...}) on its
  result pipe once ended the whole batch (the caller retried and raised SandboxUnavailable): the
  worker's failures now come from its status alone, so the forger's answer is classified and the
  batch, innocent answers included, is scored — through ``score_table`` and ``earnest extract``.
- Two answers running at once could pass a value through a futex keyed by a page of libc (a file
  both map): the seccomp allowlist now allows process-private futex operations only. The receiver
  is scored against the value its sender tries to pass; the control, with the allowlist off (and
  the namespaces and Landlock on: the channel crosses both), shows the channel carrying it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

from earnest.gsm.scoring import score_table
from earnest.sandbox import Limits, Sandbox
from helpers import child_env

#: the reference mode's one line to the worker's os module (its namespace holds ``random``)
FORGER = ("def solution():\n    o = random.Random.seed.__globals__['_os']\n"
          "    o.write(3, b'{{\"{key}\": \"forged by the answer\"}}')\n    o._exit(0)\n")
INNOCENT = [("def solution():\n    return 6 * 7\n", "42"), ("def solution():\n    return sum(range(10))\n", "45"),
            ("import math\ndef solution():\n    return math.factorial(5)\n", "120")]


def _frames(entries: list[tuple[str, str]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    items = pd.DataFrame([dict(item_id=f"t{i:03d}-v01", dataset="gsm_variants", template_id=i, instance=1,
                               question=f"question {i}", answer=gold, gamma=1.0)
                          for i, (_, gold) in enumerate(entries)])
    gens = pd.DataFrame([dict(item_id=f"t{i:03d}-v01", model="m", prompt="simple_code", dataset="gsm_variants",
                              response=response, prompt_tokens=1, new_tokens=1, stop_reason="eos", seconds=0.1)
                         for i, (response, _) in enumerate(entries)])
    return items, gens


@pytest.mark.parametrize("key", ["fork_error", "setup_error"])
def test_a_forged_worker_failure_costs_only_the_forgers_answer(key):
    entries = []
    for response, gold in INNOCENT:
        entries += [(FORGER.format(key=key), "1"), (response, gold)]
    items, gens = _frames(entries)
    with Sandbox(workers=2) as box:
        scored = score_table(gens, items, "code", sandbox=box, fidelity="reference")
    forgers, innocent = scored.iloc[::2], scored.iloc[1::2]
    assert innocent["correct"].all(), innocent
    assert (forgers["error_class"] == "unclassified").all() and not forgers["correct"].any(), forgers


def test_earnest_extract_scores_the_batch_around_a_forger(tmp_path):
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    lines = [FORGER.format(key="fork_error"), INNOCENT[0][0], FORGER.format(key="setup_error"), INNOCENT[1][0]]
    src.write_text("".join(json.dumps({"response": r}) + "\n" for r in lines))
    proc = subprocess.run([sys.executable, "-m", "earnest.cli", "extract", "--style", "code", "--fidelity",
                           "reference", "--any-python", str(src), str(out)], capture_output=True, text=True, env=child_env(),
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert [g["extracted"] for g in got] == [None, 42, None, 45]
    assert [g["error_class"] for g in got] == ["unclassified", "", "unclassified", ""]


# the value 165 passed from a sender to a receiver running at the same time: the sender wakes every
# waiter of a futex on a word of libc's text (a shared futex: no FUTEX_PRIVATE_FLAG) for 7 s; the
# receiver waits on it for up to 7 s and says 165 when woken (nothing else wakes that futex)
CHANNEL = """import ctypes, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
FUTEX = %d
ADDR = ctypes.cast(libc.getpid, ctypes.c_void_p).value & ~3
def send():
    end = time.monotonic() + 7
    while time.monotonic() < end:
        libc.syscall(FUTEX, ctypes.c_void_p(ADDR), 1, 0x7fffffff, None, None, 0)  # FUTEX_WAKE
        time.sleep(0.002)
    return 0
def receive():
    word = ctypes.c_uint32.from_address(ADDR).value
    timeout = (ctypes.c_long * 2)(7, 0)
    rc = libc.syscall(FUTEX, ctypes.c_void_p(ADDR), 0, word, timeout, None, 0)  # FUTEX_WAIT
    return 165 if rc == 0 else -ctypes.get_errno()
""" % (202 if os.uname().machine == "x86_64" else 98)  # the answer may not ask (uname is refused)


def _hidden(call: str) -> str:
    """A reference-mode answer that escapes to the real builtins (as tests/hostile_scoring.py's
    corpus does) and runs CHANNEL's ``call`` with them."""
    source = CHANNEL + f"def solution():\n    return {call}()\n"
    return "def solution():\n" + textwrap.indent(
        "b = typing.get_origin.__globals__['__builtins__']\n"
        "B = b if b.__class__ is {}.__class__ else b.__dict__\n"
        f"src = B['bytes'].fromhex('{source.encode().hex()}').decode()\n"
        "g = {'__builtins__': B}\nB['exec'](src, g)\nreturn g['solution']()\n", "    ")


def _channel(disable: tuple) -> pd.DataFrame:
    entries = [(_hidden("send"), "0"), (_hidden("receive"), "165")]
    items, gens = _frames(entries)
    with Sandbox(workers=2, limits=Limits(cpu_seconds=5, wall_seconds=9.0), disable=disable) as box:
        return score_table(gens, items, "code", sandbox=box, fidelity="reference")


def test_two_answers_at_once_pass_no_value_through_a_shared_futex():
    scored = _channel(())
    receiver = scored.iloc[1]
    assert not receiver["correct"], scored
    assert receiver["extracted"] == -1.0, scored  # EPERM: the allowlist refused the shared futex


def test_the_control_shared_futexes_cross_namespaces_and_landlock():
    """Without the allowlist (namespaces and Landlock on) the value gets through: the test above
    means something (both answers are started together and overlap for seconds)."""
    scored = _channel(("seccomp",))
    assert scored.iloc[1]["correct"], scored
