"""A bootstrap that runs for hours must stop when its user stops it, and leave nothing behind.

Ctrl-C (SIGINT to the terminal's process group, or to the Python process alone) stops an R call
on one core or many with KeyboardInterrupt, and R's forked workers go with it; a caller killed
outright (SIGTERM, SIGKILL: a scheduler's time limit, the out-of-memory killer) takes its workers
(R's or the laplace engine's processes) with it instead of leaving them fitting for nobody on a
shared node. Each case runs a bootstrap far longer than its time limit in a session of its own:
a run that ignores the signal shows as the limit, a leftover as a process still in the session.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

SCRIPT = r"""
import sys
from earnest.stats import compare as C, engines as E, glmm as G
from earnest.stats.simulate import simulate_glmm_input

which, cores = sys.argv[1], int(sys.argv[2])
if which in ("lme4", "laplace"):
    # hours of fits: about 17 resamples/s with lme4 on one core here, 1,200/s with laplace on two
    n = 100_000 if which == "lme4" else 400_000
    frame = G.model_frame(G.validate_glmm_input(simulate_glmm_input(60, 20, variant_effect=-0.5, seed=4), 1),
                          1, aggregate=True)
    run = lambda: E.run_bootstrap(frame, 1, range(n), base_seed=11, cores=cores, engine=which)
else:
    data = C.validate_compare_input(C.simulate_paired(40, 10, log_or=-0.8, seed=3))
    pairs = C.paired_rows(data, "models", "p", "a", "b")
    run = lambda: C.bootstrap_pair(pairs, 100_000, 7, cores=cores)
print("start", flush=True)
run()
print("finished", flush=True)
"""

#: s for a signalled run to end, and for a bootstrap's workers to start: a safety net against a
#: hang, not a measure (a loaded machine may take minutes); the runs themselves take far longer,
#: and one that ignored the signal would also print "finished"
LIMIT = 900


def _procs():
    """pid -> (parent pid, session id) of every process now."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        out[int(entry)] = (int(fields[1]), int(fields[3]))
    return out


def _session(sid):
    return [pid for pid, (_, s) in _procs().items() if s == sid]


def _children(pid):
    return [c for c, (ppid, _) in _procs().items() if ppid == pid]


def _start(which, cores):
    """The bootstrap, once it computes: on ``cores`` > 1 once its workers exist."""
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, which, str(cores)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout.readline().strip() == "start", proc.communicate()[1][-3000:]
    deadline = time.monotonic() + LIMIT
    while cores > 1 and len(_children(proc.pid)) < cores:
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "the bootstrap's workers never started"
        time.sleep(0.2)
    time.sleep(2)  # into the fits
    assert proc.poll() is None, proc.communicate()[1][-3000:]
    return proc


def _wait_gone(sid):
    deadline = time.monotonic() + LIMIT
    while _session(sid) and time.monotonic() < deadline:
        time.sleep(0.5)
    left = _session(sid)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left


def _finish(proc):
    try:
        return proc.communicate(timeout=LIMIT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        _wait_gone(proc.pid)
        pytest.fail(f"the bootstrap ran on for {LIMIT} s after the signal")


@pytest.mark.parametrize("which, cores, target", [
    ("lme4", 1, "group"),       # Ctrl-C on one core: R relays nothing by itself
    ("lme4", 2, "group"),       # workers and parent all signalled, as by a terminal
    ("lme4", 2, "parent"),      # the parent alone, waiting on its workers in R's select()
    ("compare", 2, "parent"),
    ("laplace", 2, "group"),
])
def test_ctrl_c_stops_the_bootstrap_with_keyboardinterrupt_and_no_worker_left(which, cores, target):
    proc = _start(which, cores)
    (os.killpg if target == "group" else os.kill)(proc.pid, signal.SIGINT)
    stdout, stderr = _finish(proc)
    left = _wait_gone(proc.pid)
    assert "finished" not in stdout
    assert proc.returncode == -signal.SIGINT, stderr[-3000:]
    assert "KeyboardInterrupt" in stderr.splitlines()[-1], stderr[-3000:]
    assert not left, f"processes left after Ctrl-C: {left}"


@pytest.mark.parametrize("which", ["lme4", "compare", "laplace"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_workers_end_with_their_killed_parent(which, sig):
    proc = _start(which, 2)
    workers = _children(proc.pid)
    os.kill(proc.pid, sig)
    # not communicate(): a worker left alive keeps the output pipes open, and the test must then
    # fail (and kill it) rather than wait for their end
    proc.wait(timeout=LIMIT)
    left = _wait_gone(proc.pid)
    proc.stdout.close()
    proc.stderr.close()
    assert proc.returncode == -sig
    assert not left, f"{which}: workers {workers} went on after their parent was killed: {left} left"


AGAIN = r"""
import json, os, signal, sys, threading
import pandas as pd
from rpy2.rinterface_lib import openrlib
from earnest.stats import engines as E, glmm as G
from earnest.stats.simulate import simulate_glmm_input

cores = int(sys.argv[1])
frame = G.model_frame(G.validate_glmm_input(simulate_glmm_input(60, 20, variant_effect=-0.5, seed=4), 1),
                      1, aggregate=True)
E.run_bootstrap(frame, 1, [0], base_seed=11)  # R started, before the clock
hook = openrlib.rlib.ptr_R_ProcessEvents
threading.Timer(3, os.kill, (os.getpid(), signal.SIGINT)).start()
try:
    E.run_bootstrap(frame, 1, range(100_000), base_seed=11, cores=cores)
    interrupted = False
except KeyboardInterrupt:
    interrupted = True
again = E.run_bootstrap(frame, 1, [3, 1, 4], base_seed=11, cores=2)
pd.testing.assert_frame_equal(again, E.run_bootstrap(frame, 1, [3, 1, 4], base_seed=11, cores=1), check_exact=True)
print(json.dumps({"interrupted": interrupted, "pending": int(openrlib.rlib.R_interrupts_pending),
                  "hook_back": openrlib.rlib.ptr_R_ProcessEvents == hook,
                  "wakeup_fd": signal.set_wakeup_fd(-1), "rows": len(again)}))
"""


@pytest.mark.parametrize("cores", [1, 2])
def test_after_ctrl_c_the_same_r_session_fits_as_before(cores):
    """As in a notebook: a bootstrap stopped with Ctrl-C, then the next one in the same process gives
    the same fits as ever, on one core and on several; nothing of the interruption is left set."""
    proc = subprocess.Popen([sys.executable, "-c", AGAIN, str(cores)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    stdout, stderr = _finish(proc)
    assert proc.returncode == 0, stderr[-3000:]
    out = json.loads(stdout.strip().splitlines()[-1])
    assert out == {"interrupted": True, "pending": 0, "hook_back": True, "wakeup_fd": -1, "rows": out["rows"]}
    assert out["rows"] >= 3
    assert not _wait_gone(proc.pid)


AT_START = r"""
import rpy2.robjects as ro
# a Ctrl-C that arrives while R loads lme4, the first seconds of every run: sent by R itself from
# lme4's load hook, so it lands there on any machine
ro.r('setHook(packageEvent("lme4", "onLoad"), function(...) tools::pskill(Sys.getpid(), tools::SIGINT))')
from earnest.stats import rbridge
try:
    rbridge.r()
    print("R started", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def test_ctrl_c_while_r_starts_is_not_lost():
    """R's start (loading lme4, sourcing earnest's R code) runs inside the bridge's guard like every R
    call: a Ctrl-C then stops it with KeyboardInterrupt. Outside the guard, rpy2's event hook raised it
    inside a callback that ignores it, and the run went on fitting for hours."""
    proc = subprocess.run([sys.executable, "-c", AT_START], capture_output=True, text=True, timeout=LIMIT)
    assert proc.stdout.strip() == "interrupted", proc.stdout + proc.stderr[-3000:]
