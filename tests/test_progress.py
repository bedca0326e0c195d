"""Progress of `earnest glmm` and `earnest power` (earnest.progress): the time-left wording, the plain
line per step when stderr is not a terminal (logs, pipes, CI), and the live line on a terminal (a
real pseudo-terminal for the command)."""

from __future__ import annotations

import io
import math
import os
import re
import subprocess
import sys

import pandas as pd
import pytest

from earnest.progress import UNKNOWN, Progress, format_eta, rate_and_eta
from helpers import child_env


@pytest.mark.parametrize("seconds, text", [
    (None, UNKNOWN), (float("nan"), UNKNOWN), (math.inf, UNKNOWN), (-1, UNKNOWN),
    (0, "0 s"), (0.4, "0 s"), (42.4, "42 s"), (59.6, "1 min 00 s"), (185, "3 min 05 s"),
    (3599, "59 min 59 s"), (7620, "2 h 07 min"), (86399, "23 h 59 min"), (273600, "3 d 04 h"),
])
def test_format_eta(seconds, text):
    assert format_eta(seconds) == text


def test_rate_and_eta():
    assert rate_and_eta(4, 8.0, 6) == (0.5, 12.0)
    rate, eta = rate_and_eta(0, 8.0, 6)
    assert rate == 0 and math.isnan(eta)


class Clock:
    """Seconds the test sets (the progress takes its clock as a parameter)."""
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_a_plain_line_per_step_when_not_a_terminal():
    out, clock = io.StringIO(), Clock()
    p = Progress(5, label="earnest glmm", unit="steps", stream=out, clock=clock)
    assert not p.live   # a StringIO is no terminal
    p.step(1, "m / p: shard 1/4 already done", counted=False)   # found done: not in the rate
    clock.now += 10
    p.step(1, "m / p: shard 2/4, 10 resamples in 10.0 s")
    p.log("WARNING something")
    clock.now += 20
    p.step(1, "m / p: shard 3/4, 10 resamples in 20.0 s")
    clock.now += 15
    p.step(2)
    p.close()
    assert out.getvalue().splitlines() == [
        "m / p: shard 1/4 already done  [1/5 steps, ETA --]",
        "m / p: shard 2/4, 10 resamples in 10.0 s  [2/5 steps, ETA 30 s]",   # 3 left x 10 s
        "WARNING something",
        "m / p: shard 3/4, 10 resamples in 20.0 s  [3/5 steps, ETA 30 s]",  # 2 left x 15 s
        "earnest glmm [5/5 steps, ETA 0 s]",
    ]
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()


def test_the_live_line_counts_down_between_steps():
    out, clock = io.StringIO(), Clock()
    p = Progress(4, label="earnest power", unit="grid points", stream=out, live=True, clock=clock, tick=0)
    clock.now += 60
    p.step(1, "median variant 10x3 OR 1: power 0.050")
    assert p.status() == "1/4 grid points, 25%, 60 s per step, elapsed 1 min 00 s, ETA 3 min 00 s"
    clock.now += 45   # no step for 45 s: the time left counts down
    assert p.eta() == 135 and "ETA 2 min 15 s" in p.line(width=200)
    assert p.line(width=200).startswith("earnest power [#####---------------] 1/4 grid points, 25%")
    assert len(p.line(width=30)) == 29
    p.close()
    text = out.getvalue()
    # the message above the live line, each redraw returning to the line's start and clearing it
    assert "\r\x1b[Kmedian variant 10x3 OR 1: power 0.050\n" in text
    assert text.count("\r\x1b[Kearnest power [") >= 3 and text.endswith("\n")


def _power_cmd(tmp_path):
    return [sys.executable, "-m", "earnest.cli", "power", "--baseline-acc", "0.6", "--ranef-var", "1.0",
            "--templates", "10", "--variants", "3", "--odds-ratios", "1", "0.3", "--sims", "2", "--resamples", "5",
            "--engine", "laplace", "--out", str(tmp_path / "power")]


def test_earnest_power_writes_plain_lines_to_a_pipe(tmp_path):
    r = subprocess.run(_power_cmd(tmp_path), capture_output=True, text=True, timeout=600, env=child_env())
    assert r.returncode == 0, r.stderr[-2000:]
    lines = [x for x in r.stderr.splitlines() if "grid points, ETA" in x]
    assert len(lines) == 2, r.stderr
    assert re.search(r": power \d\.\d{3} .* fits in [\d.]+ s  \[1/2 grid points, ETA [^\]]+\]$", lines[0]), lines
    assert lines[1].endswith("[2/2 grid points, ETA 0 s]")
    assert "\r" not in r.stderr and "\x1b[" not in r.stderr
    assert len(pd.read_csv(tmp_path / "power" / "power.csv")) == 2


def test_earnest_power_draws_a_live_line_on_a_terminal(tmp_path):
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen(_power_cmd(tmp_path), stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                            env=child_env(COLUMNS="120"))
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:   # the terminal's other end closed: the command ended
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=600) == 0
    text = b"".join(chunks).decode("utf-8", "replace")
    assert "\r\x1b[Kearnest power [" in text, text[-2000:]
    last = text.rsplit("\r\x1b[K", 1)[1]
    assert re.match(r"earnest power \[#{20}\] 2/2 grid points, 100%, .*ETA 0 s", last), last
    assert "grid points, ETA" not in text   # no plain-line tails on a terminal


def test_earnest_glmm_writes_a_line_per_shard_and_fit(tmp_path):
    from earnest.stats.simulate import simulate_glmm_input
    path = tmp_path / "in.csv"
    pd.concat([simulate_glmm_input(12, 4, seed=1, model="m1"),
               simulate_glmm_input(12, 4, seed=2, model="m2")]).to_csv(path, index=False)
    out = tmp_path / "glmm"
    cmd = [sys.executable, "-m", "earnest.cli", "glmm", str(path), "--glmm", "1", "--resamples", "6", "--seed", "1",
           "--shards", "2", "--cores", "1", "--engine", "laplace", "--check-resamples", "0", "--out", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=child_env())
    assert r.returncode == 0, r.stderr[-2000:]
    tails = re.findall(r"\[(\d+)/(\d+) steps, ETA ([^\]]+)\]$", r.stderr, re.M)
    n = int(tails[0][1])
    assert [int(k) for k, _, _ in tails] == list(range(1, n + 1)) and tails[-1][2] == "0 s", r.stderr
    assert n == 6 and sum("GLMM 1 summarised" in x for x in r.stderr.splitlines()) == 2   # 2 shards + 1 fit each
    # a rerun finds the shards done: they count, not towards the rate
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=child_env())
    assert r.returncode == 0 and "already done" in r.stderr and f"[{n}/{n} steps, ETA 0 s]" in r.stderr


def test_a_fork_while_the_live_line_ticks(tmp_path):
    """The statistics fork workers while the ticker thread redraws: each fork waits for the line's
    lock, so a child never inherits a half-written stream, and the parent's lock is free after."""
    import multiprocessing

    with open(tmp_path / "tty.txt", "w") as stream:
        p = Progress(3, label="earnest glmm", stream=stream, live=True, tick=0.001)
        ctx = multiprocessing.get_context("fork")
        for _ in range(20):
            child = ctx.Process(target=stream.write, args=("child\n",))
            child.start()
            child.join(timeout=60)
            assert child.exitcode == 0
        p.step(3, "done")
        p.close()
    assert "done" in (tmp_path / "tty.txt").read_text()
