"""Small helpers shared by the tests that start child processes."""

from __future__ import annotations

import os
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
