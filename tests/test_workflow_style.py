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
