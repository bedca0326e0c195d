"""earnest.runlock: a dead local run's Snakemake locks are removed, anything that may be live is kept."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

from earnest.runlock import OWNERS, clear_stale_locks, record_owner, release_owner


def _locks(state):
    (state / "locks").mkdir(parents=True)
    (state / "locks" / "0.output.lock").write_text("results/x.parquet\n")


def _owner(state, **rec):
    (state / OWNERS).mkdir(parents=True, exist_ok=True)
    rec = {"host": socket.gethostname(), "start": None, **rec}
    (state / OWNERS / f"{rec['host']}-{rec['pid']}.json").write_text(json.dumps(rec))


def _dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(proc.stdout)


def test_locks_of_a_dead_run_on_this_host_are_removed(tmp_path):
    _locks(tmp_path)
    _owner(tmp_path, pid=_dead_pid())
    assert "no longer exists" in clear_stale_locks(tmp_path)
    assert not (tmp_path / "locks").exists() and not list((tmp_path / OWNERS).iterdir())


def test_live_foreign_or_unknown_owners_keep_the_locks(tmp_path):
    _locks(tmp_path)
    assert clear_stale_locks(tmp_path) is None                     # no record: unknown origin
    record_owner(tmp_path)                                         # this process: alive
    assert clear_stale_locks(tmp_path) is None
    release_owner(tmp_path)
    _owner(tmp_path, pid=_dead_pid(), host="another-login-node")   # cannot tell from here
    assert clear_stale_locks(tmp_path) is None
    assert (tmp_path / "locks" / "0.output.lock").exists()


def test_a_reused_process_id_is_not_the_old_run(tmp_path):
    _locks(tmp_path)
    _owner(tmp_path, pid=os.getpid(), start="1")   # this pid, but a different start time
    assert clear_stale_locks(tmp_path) is not None
    assert not (tmp_path / "locks").exists()


def test_nothing_to_do_without_locks(tmp_path):
    _owner(tmp_path, pid=_dead_pid())
    assert clear_stale_locks(tmp_path) is None
