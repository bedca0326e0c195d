"""Small helpers shared by the tests that start child processes."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def child_env(**extra) -> dict:
    """os.environ for a child process (Snakemake, transformers serve, a script) with the library on
    PYTHONPATH. An R embedded in this process may have put R's library folders on LD_LIBRARY_PATH
    (earnest.stats.rbridge restores it; other rpy2 users may not), and a pyenv Python started with
    them loads the system's libpython, so they are dropped."""
    env = {**os.environ, **extra}
    if "/usr/lib/R/lib" in env.get("LD_LIBRARY_PATH", ""):
        env.pop("LD_LIBRARY_PATH")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    return env


# ------------------------------------------------ running tests as the unprivileged user nobody

NOBODY = 65534


def nobody_command() -> list[str] | None:
    """The command prefix that runs a program as ``nobody`` (util-linux), or None."""
    import shutil

    if shutil.which("setpriv"):
        return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
    if shutil.which("runuser"):
        return ["runuser", "-u", "nobody", "--"]
    return None


def nobody_interpreter(drop: list[str], env: dict) -> str | None:
    """A Python that ``nobody`` can run whole, itself and as the sandbox's workers (its
    sys.executable there must be executable by nobody: this one may live under a private /root)."""
    import subprocess
    import sys

    check = "import ctypes, json, decimal, os, sys; sys.exit(0 if os.access(sys.executable, os.X_OK) else 1)"
    for exe in dict.fromkeys(["/usr/bin/python3", sys.executable]):
        if os.path.exists(exe) and subprocess.run(drop + [exe, "-c", check], env=env,
                                                  capture_output=True).returncode == 0:
            return exe
    return None


def nobody_copy(home: Path, tests: list[str]) -> Path:
    """A copy of the package, the schema it takes its defaults from (config/schema.yaml, read at
    import by earnest.schema) and ``tests`` (paths under tests/, files or folders) in ``home``/repo
    that nobody can read (the checkout may live where it cannot)."""
    import shutil

    copy = Path(home) / "repo"
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "src" / "earnest", copy / "src" / "earnest", ignore=skip)
    (copy / "config").mkdir(parents=True)
    shutil.copy(REPO / "config" / "schema.yaml", copy / "config" / "schema.yaml")
    for name in tests:
        src, dst = REPO / "tests" / name, copy / "tests" / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(src, dst) if src.is_dir() else shutil.copy(src, dst)
    for path in [copy, *copy.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return copy


#: The bootstrap-shard and summary rules of the tests' throwaway Snakefiles (format with ``s``, the
#: workflow/scripts folder, and ``engine``): GLMM 2, 4 resamples in two shards, each rule passing every
#: param its script reads, as the workflow's rules do.
GLMM_SHARD_RULES = """
rule shard:
    input: "glmm_input.parquet"
    output: shard="shards/shard-{{i}}.parquet", check="shards/shard-{{i}}.check.parquet"
    params: glmm=2, resamples=4, seed=3, shard=lambda w: int(w.i), n_shards=2, engine="{engine}",
            check_resamples=1, rows="aggregated", fidelity="earnest", prior={{}}
    threads: 1
    log: "logs/shard-{{i}}.log"
    script: "{s}/bootstrap_shard.py"

rule summary:
    input: glmm_input="glmm_input.parquet", shards=expand("shards/shard-{{i}}.parquet", i=range(2)),
           checks=expand("shards/shard-{{i}}.check.parquet", i=range(2))
    output: summary="summary.parquet", refits="refits.parquet"
    params: glmm=2, resamples=4, analysis="all", engine="{engine}", rows="aggregated", fidelity="earnest",
            covariate="gamma", collinearity_threshold=0.9, prior={{}}
    log: "logs/summary.log"
    script: "{s}/glmm_summary.py"
"""


#: The start of a key-quota filler (a script run as root with a uid as argv[1]): it becomes that uid
#: and joins a session keyring of its own; KEYCTL and ADD_KEY are the system call numbers. The rest of
#: the script fills the uid's quota, prints "keys errno fresh-keyring fresh-errno" and holds its keys
#: until its stdin ends.
KEY_FILLER_START = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
uid = int(sys.argv[1])
os.setgroups([]); os.setresgid(uid, uid, uid); os.setresuid(uid, uid, uid)
KEYCTL, ADD_KEY = {"x86_64": (250, 248), "aarch64": (219, 217)}[os.uname().machine]
libc.syscall(KEYCTL, 1, None)  # a session keyring of its own
"""


@contextlib.contextmanager
def key_quota_filled(script: str, uid: int):
    """A process of ``uid`` running ``script`` (:data:`KEY_FILLER_START` and its filling), checked to
    hold the uid's whole key quota (its last key and a new session keyring refused with EDQUOT):
    yields (the process, its number of keys); its stdin is closed and it is waited for at the end."""
    proc = subprocess.Popen([sys.executable, "-c", script, str(uid)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().split()
        assert len(line) == 4, line
        keys, err, fresh, fresh_err = map(int, line)
        assert keys > 0 and err == 122 and fresh < 0 and fresh_err == 122, line  # EDQUOT: the quota is full
        yield proc, keys
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
