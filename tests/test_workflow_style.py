"""The workflow's own checks, as CI runs them (.ci/run): Snakemake's linter finds nothing and every
rule file is formatted as snakefmt (pinned in requirements.txt, settings in pyproject.toml) writes it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import child_env

REPO = Path(__file__).resolve().parents[1]


def test_snakemake_lint_finds_nothing(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--lint", "-s", str(REPO / "Snakefile"),
                           "-d", str(tmp_path)], capture_output=True, text=True, timeout=300, env=child_env())
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]


def test_rule_files_are_formatted():
    snakefmt = shutil.which("snakefmt")
    if snakefmt is None:
        pytest.fail("snakefmt is not installed (requirements.txt pins it; scripts/setup.sh installs it)")
    proc = subprocess.run([snakefmt, "--check", "--diff", "Snakefile", "rules/"], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, "run `snakefmt Snakefile rules/`:\n" + (proc.stdout + proc.stderr)[-4000:]


def test_a_second_checkout_runs_its_own_library(tmp_path):
    """Issue 43.2: the workflow (and every job it starts, through PYTHONPATH) imports the library
    beside its Snakefile, not whichever earnest is installed. A copy of the checkout whose library is
    changed fails with the copy's own message."""
    clone = tmp_path / "clone"
    files = ["Snakefile", "rules", "src", "config", "resources", "workflow", "report", "profiles", "envs"]
    for name in files:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, clone / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        elif src.exists():
            clone.mkdir(exist_ok=True)
            shutil.copy(src, clone / name)
    config_py = clone / "src" / "earnest" / "config.py"
    config_py.write_text(config_py.read_text(encoding="utf-8") + '''

def check_config_files(paths, *args, **kwargs):
    raise ConfigError("this is the second checkout's library")
''', encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(clone / "Snakefile"), "-d", str(tmp_path / "wd"),
                           "-n"], capture_output=True, text=True, env=child_env(), timeout=600)
    assert proc.returncode != 0
    assert "this is the second checkout's library" in proc.stdout + proc.stderr


def test_the_jobs_inherit_the_workflows_library_first(monkeypatch):
    from earnest.libpath import use_library

    monkeypatch.setenv("PYTHONPATH", "/a:/x/src:/b")
    use_library("/x/src")
    assert __import__("os").environ["PYTHONPATH"] == "/x/src:/a:/b"
