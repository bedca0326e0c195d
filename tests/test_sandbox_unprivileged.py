"""The hostile checks again as the unprivileged user ``nobody`` (issue 17.3).

CI runs as root, where the sandbox adds chroot, setuid and a network namespace; on a Slurm
cluster it runs as an ordinary user and only no_new_privs, Landlock, seccomp, rlimits and the
process group remain. This test drops privileges itself (``setpriv``, else ``runuser``) and runs
tests/hostile_checks.py (standard library + earnest only) as ``nobody``, from a copy of the
package and the checks in a directory ``nobody`` can read (the checkout may live where it cannot).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from helpers import NOBODY, nobody_command, nobody_copy, nobody_interpreter

# run as nobody: never beside tests/test_sandbox_keyquota.py's filler of nobody's key quota (pytest-xdist)
pytestmark = pytest.mark.xdist_group("uid65534")
from hostile_checks import CHECKS

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_hostile_checks_hold_as_nobody():
    if os.geteuid() != 0:
        pytest.skip("not root: tests/test_sandbox_hostile.py already runs unprivileged")
    drop = nobody_command()
    assert drop is not None, "neither setpriv nor runuser is installed (util-linux)"
    home = tempfile.mkdtemp(prefix="earnest-nobody-")
    try:
        os.chown(home, NOBODY, NOBODY)
        env = {"PATH": "/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LC_ALL": "C.UTF-8",
               "PYTHONDONTWRITEBYTECODE": "1"}
        assert subprocess.run(drop + ["id", "-u"], capture_output=True, text=True,
                              env=env).stdout.strip() == str(NOBODY)
        exe = nobody_interpreter(drop, env)
        assert exe is not None, "no Python interpreter is readable by nobody"
        copy = nobody_copy(Path(home), ["data/hostile", "hostile_checks.py"])
        proc = subprocess.run(drop + [exe, str(copy / "tests" / "hostile_checks.py")], cwd=home,
                              env=env, capture_output=True, text=True, timeout=600)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, out[-6000:]
        assert "uid 65534;" in out and "'chroot': False" in out, out[:2000]
        assert sorted(line.split()[1] for line in proc.stdout.splitlines() if line.startswith("ok ")) == sorted(CHECKS)
        # nothing of this run's survives it: no process started from its copy of the sandbox (other
        # runs as nobody on the machine are not counted); a worker still being reaped as the run
        # exits gets a few seconds, a survivor stays
        def survivors():
            left = []
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    if os.stat(f"/proc/{pid}").st_uid == NOBODY and home.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                        left.append(pid)
                except OSError:
                    continue
            return left

        deadline = time.monotonic() + 5
        while survivors() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert survivors() == [], survivors()
        assert not [p for p in Path(home).iterdir() if p.name.startswith("earnest-")], list(Path(home).iterdir())
        assert str(copy / "src") in out  # the copy, not the checkout, was imported
    finally:
        shutil.rmtree(home, ignore_errors=True)
