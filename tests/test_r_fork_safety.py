"""The bootstrap on several cores forks R workers out of a Python process that may run other
threads (a progress-bar monitor, the sandbox's readers, the caller's own). A forked worker must
never wait for the GIL: it once did (rpy2's R event hook is a Python callback), and whenever
another thread held the GIL at the fork, the worker and the bootstrap hung for ever.

Each case runs in a fresh interpreter beside a thread that keeps the GIL busy, so that the fork
happens while that thread holds it; a hang shows as the time limit, a wrong shard as a mismatch
with the same resamples fitted on one core."""

import json
import os
import signal
import subprocess
import sys

import pytest

SCRIPT = r"""
import json, sys, threading
import pandas as pd
from earnest.stats import compare as C, engines as E, glmm as G
from earnest.stats.simulate import simulate_glmm_input

busy = True
def spin():
    n = 0
    while busy:
        n += 1
threading.Thread(target=spin, daemon=True).start()

which = sys.argv[1]
if which == "glmm":
    frame = G.model_frame(G.validate_glmm_input(simulate_glmm_input(20, 6, variant_effect=-0.5, seed=4), 1),
                          1, aggregate=True)
    run = lambda cores: E.run_bootstrap(frame, 1, [4, 0, 6, 2, 5], base_seed=11, cores=cores)
else:
    data = C.validate_compare_input(C.simulate_paired(12, 4, log_or=-0.8, seed=3))
    pairs = C.paired_rows(data, "models", "p", "a", "b")
    run = lambda cores: C.bootstrap_pair(pairs, 5, 7, cores=cores)
forked = run(2)
busy = False
one = run(1)
pd.testing.assert_frame_equal(one, forked, check_exact=True)
print(json.dumps({"rows": len(forked), "resamples": int(forked["resample"].nunique())}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("which", ["glmm", "compare"])
def test_forked_r_workers_finish_while_another_python_thread_runs(which):
    # a session of its own, so that a hang takes its forked R workers down with it
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, which], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"the {which} bootstrap on 2 cores hung while another Python thread ran")
    assert proc.returncode == 0, stderr[-3000:]
    out = json.loads(stdout.strip().splitlines()[-1])
    assert out["resamples"] == 5 and out["rows"] >= 5


def test_the_event_hook_and_the_wakeup_descriptor_come_back_after_an_r_call():
    """R's event hook and Python's signal wakeup descriptor are replaced only for the call, and come
    back also when the call failed."""
    import signal

    from rpy2.rinterface_lib import openrlib

    from earnest.stats import rbridge

    ro = rbridge.r()
    before = openrlib.rlib.ptr_R_ProcessEvents
    assert before != openrlib.ffi.NULL
    r, w = os.pipe()
    os.set_blocking(w, False)
    previous = signal.set_wakeup_fd(w)
    try:
        ro.r("earnest_test_hook <- function(fail) { if (fail) stop('a failure inside') else 1L }")
        assert rbridge.call("earnest_test_hook", False)[0] == 1
        with pytest.raises(rbridge.RError, match="earnest_test_hook failed: .*a failure inside"):
            rbridge.call("earnest_test_hook", True)
        assert signal.set_wakeup_fd(previous) == w
    finally:
        signal.set_wakeup_fd(previous)
        os.close(r)
        os.close(w)
    assert openrlib.rlib.ptr_R_ProcessEvents == before
