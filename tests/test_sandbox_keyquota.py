"""No shared uid for answers (issue 53.4): a process of uid 65534 that fills its uid's key quota (the
kernel's ``keys/maxkeys``, 200 keys for a uid other than root) cannot sink a batch.

Before, every answer of a root batch ran as 65534 and each needed a new session keyring: a full
quota of 65534, anywhere on the machine, ended the batch with ``SandboxUnavailable`` and nothing
scored. Now, as root, a batch's answers run under a uid of its own (``Sandbox.answer_uid``), and where
an answer's process cannot be set up all the same (a batch told to use 65534 here) that answer alone
is marked as the machine's failure (``RunResult.infrastructure``), never the batch; scoring counts it
as that answer's ``infrastructure_error``, never a wrong answer.
"""

from __future__ import annotations

import os

import pytest

from earnest.sandbox import Sandbox
from earnest.sandbox.kernel.namespaces import ANSWER_UID_RANGE
from helpers import KEY_FILLER_START, key_quota_filled

pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a process of uid 65534 and a root batch)"),
              # never beside the tests that run as nobody (pytest-xdist): the filler holds its whole key quota
              pytest.mark.xdist_group("uid65534")]

#: fills the quota by its number of keys (one-byte keys into @s until the kernel refuses one)
FILLER = KEY_FILLER_START + """
n = 0
while libc.syscall(ADD_KEY, b"user", b"k%d" % n, b"x", 1, -3) >= 0:   # into @s until the quota is full
    n += 1
err = ctypes.get_errno()
fresh = libc.syscall(KEYCTL, 1, None)                # what an answer's child does: a new keyring
print(n, err, fresh, ctypes.get_errno(), flush=True)
sys.stdin.read()                                     # hold the keys until the test ends
"""

INNOCENT = "def solution():\n    return sum(range(10)) * 3\n"


def _fill(uid: int):
    """A process of ``uid`` holding that uid's whole key quota, until the block ends."""
    if os.uname().machine not in ("x86_64", "aarch64"):
        pytest.skip("system call numbers for x86_64 and aarch64 only")
    # the quota is full: a new keyring for uid 65534 is refused (EDQUOT), as it was for every answer
    with key_quota_filled(FILLER, uid) as (_, keys):
        yield keys


@pytest.fixture()
def quota_filler():
    yield from _fill(65534)


@pytest.fixture()
def own_uid_filled():
    """A uid no one else uses, its key quota full (65534's can free up meanwhile: other processes of
    nobody on this machine end and their keys are collected)."""
    from earnest.sandbox.kernel.namespaces import pick_answer_uid

    uid = pick_answer_uid()
    for keys in _fill(uid):
        yield uid


def test_a_full_key_quota_of_65534_does_not_touch_a_root_batch(quota_filler):
    with Sandbox(workers=2) as sandbox:
        assert ANSWER_UID_RANGE[0] <= sandbox.answer_uid < ANSWER_UID_RANGE[1]
        results = sandbox.run_many([INNOCENT] * 12)
        caps = sandbox.capabilities()
    assert [(r.error_class, r.value, r.infrastructure) for r in results] == [("", 135.0, "")] * 12
    assert "setuid" in caps["layers"]


def test_where_an_answer_cannot_be_set_up_only_that_answer_is_marked(own_uid_filled):
    """Answers under a uid whose key quota another process holds whole (as 65534's was): every
    child's keyring fails; each answer comes back as the machine's failure, named, and the batch
    does not raise."""
    with Sandbox(workers=2, answer_uid=own_uid_filled) as sandbox:
        results = sandbox.run_many([INNOCENT] * 3)
    for r in results:
        assert r.error_class == "unclassified" and r.value is None
        assert "could not be set up" in r.infrastructure and "key quota" in r.infrastructure, r


def test_the_answer_uid_is_the_batch_s_own():
    with Sandbox(workers=1) as a, Sandbox(workers=1) as b:
        assert a.answer_uid != b.answer_uid
        assert 65534 not in (a.answer_uid, b.answer_uid)


def test_scoring_counts_an_answer_not_run_as_the_machine_s_never_as_wrong(own_uid_filled, tmp_path):
    """The scored table and `earnest extract` mark each answer whose process could not be set up as
    ``infrastructure_error`` (the cause kept), score the batch's other answers, and every count of
    right and wrong (GLMM input, paired comparisons) leaves it out."""
    import json

    import pandas as pd

    from earnest.gsm.failure_classes import INFRASTRUCTURE_ERROR, judged
    from earnest.gsm.glmm_input import glmm_input_from_scored
    from earnest.gsm.scoring import run_extract, score_table
    from earnest.stats.compare import compare_input_from_scored

    ids = ["t000-base", "t000-v00", "t001-base", "t001-v00"]
    items = pd.DataFrame({"item_id": ids, "dataset": ["gsm_base", "gsm_variants"] * 2, "template_id": [0, 0, 1, 1],
                          "instance": [-1, 0, -1, 0], "question": [f"q{i}" for i in range(4)],
                          "answer": ["135", "135", "7", "7"], "gamma": [1.0, 2.0, 1.0, 2.0]})
    # two answers that would run (the machine fails them) and two without a function (the model's failure)
    responses = [INNOCENT, "no code at all", INNOCENT, "still no code"]
    gen = pd.DataFrame({"item_id": ids, "model": "m", "prompt": "code", "dataset": items["dataset"],
                        "response": responses, "prompt_tokens": 1, "new_tokens": 1, "stop_reason": "eos",
                        "seconds": 0.0})
    with Sandbox(workers=2, answer_uid=own_uid_filled) as sandbox:
        scored = score_table(gen, items, "code", sandbox)
        lines = tmp_path / "in.jsonl"
        lines.write_text("".join(json.dumps({"response": r, "answer": a}) + "\n"
                                 for r, a in zip(responses, items["answer"])))
        assert run_extract(str(lines), str(tmp_path / "out.jsonl"), "code", sandbox) == 4
    assert scored["error_class"].tolist() == [INFRASTRUCTURE_ERROR, "no_function"] * 2
    assert len(judged(scored)) == 2 and (judged(scored)["error_class"] == "no_function").all()
    glmm = glmm_input_from_scored(scored)                       # only the model's own failures count
    assert len(glmm) == 2 and glmm["variant"].tolist() == [1, 1] and glmm["correct"].tolist() == [0, 0]
    pairs = compare_input_from_scored(judged(pd.concat([scored, scored.assign(model="m2")])))
    assert sorted(pairs["item"].unique()) == ["t000-v00", "t001-v00"]
    out = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [o["error_class"] for o in out] == [INFRASTRUCTURE_ERROR, "no_function"] * 2
    assert [o["correct"] for o in out] == [None, False, None, False]
    assert "could not be set up" in out[0]["infrastructure"] and "key quota" in out[0]["infrastructure"]
