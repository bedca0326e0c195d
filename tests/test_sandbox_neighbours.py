"""Neighbours cannot sink an innocent answer (issue 53.5): its time limit is its own CPU time, with a
generous wall-clock cap beside it, so answers spinning to their CPU limit on the same cores (three
spinners on two cores, here beside whatever else loads the machine) leave its result as it is alone.
The result is asserted, never a time."""

from __future__ import annotations

import os

from earnest.sandbox import Limits, Sandbox

INNOCENT = ("def solution():\n"
            "    total = 0\n"
            "    for i in range(200000):\n"
            "        total += i % 7\n"
            "    return total\n")
SPINNER = "def solution():\n    while True:\n        pass\n"


def test_an_innocent_answer_beside_three_spinners_on_two_cores_is_as_alone():
    cores = sorted(os.sched_getaffinity(0))[:2]
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cores)   # the workers (and their answers) inherit it
    try:
        with Sandbox(workers=4, limits=Limits()) as alone:
            want = alone.run(INNOCENT)
        assert want.error_class == "" and want.value == float(sum(i % 7 for i in range(200000)))
        with Sandbox(workers=4, limits=Limits()) as box:
            for _ in range(3):
                results = box.run_many([SPINNER, SPINNER, INNOCENT, SPINNER])
                assert results[2] == want, results[2]
                # the spinners end by their own CPU limit, as timeouts
                assert [r.error_class for i, r in enumerate(results) if i != 2] == ["timeout"] * 3
                assert all("CPU time limit" in r.detail for i, r in enumerate(results) if i != 2), results
    finally:
        os.sched_setaffinity(0, before)
