"""Recognise the locks of a workflow run that no longer exists, so that after a killed run the same
command can simply be run again.

Snakemake locks the working directory's outputs in ``.snakemake/locks/`` while it runs and removes
the locks when it ends; a Snakemake killed with SIGKILL (or a crashed login node) leaves them, and
the next run refuses to start until ``snakemake --unlock``. The workflow records which process owns
a run (:func:`record_owner` when it starts, :func:`release_owner` when it ends, one file per run in
``.snakemake/earnest-owners/``). :func:`clear_stale_locks` removes the locks only when every
recorded owner ran on this host and is gone (the process id is free, or is now another process
started later); a run on another host, or locks of unknown owner, are left alone.

Files only: nothing here imports Snakemake.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path

OWNERS = "earnest-owners"


def _start_time(pid: int) -> str | None:
    """The kernel's start time of process ``pid`` (Linux /proc), or None where it cannot be read."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]   # field 22: starttime (clock ticks after boot)


def _alive(pid: int, start: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    now = _start_time(pid)
    return start is None or now is None or now == start


def record_owner(state_dir: str | Path = ".snakemake") -> Path:
    """Record this process as the owner of a run in ``state_dir``; returns the record's path."""
    owners = Path(state_dir) / OWNERS
    owners.mkdir(parents=True, exist_ok=True)
    pid = os.getpid()
    path = owners / f"{socket.gethostname()}-{pid}.json"
    path.write_text(json.dumps({"host": socket.gethostname(), "pid": pid, "start": _start_time(pid)}))
    return path


def release_owner(state_dir: str | Path = ".snakemake") -> None:
    """Remove this process's owner record (the run ended and removed its locks itself)."""
    (Path(state_dir) / OWNERS / f"{socket.gethostname()}-{os.getpid()}.json").unlink(missing_ok=True)


def clear_stale_locks(state_dir: str | Path = ".snakemake") -> str | None:
    """Remove ``state_dir``'s locks when every run that could hold them has gone; returns what was
    done (for the log), or None when there was nothing to do or the locks may be live."""
    state = Path(state_dir)
    locks = state / "locks"
    if not locks.is_dir() or not any(locks.iterdir()):
        return None
    owners = state / OWNERS
    records = sorted(owners.glob("*.json")) if owners.is_dir() else []
    if not records:
        return None      # locks of unknown origin: Snakemake says what to do (--unlock)
    host = socket.gethostname()
    dead = []
    for path in records:
        try:
            rec = json.loads(path.read_text())
            if rec["host"] != host or _alive(int(rec["pid"]), rec.get("start")):
                return None
        except (OSError, ValueError, KeyError, TypeError):
            return None
        dead.append(rec["pid"])
    shutil.rmtree(locks, ignore_errors=True)
    for path in records:
        path.unlink(missing_ok=True)
    return (f"removed the stale locks of a Snakemake run that no longer exists (process {', '.join(map(str, dead))} "
            f"on {host})")
