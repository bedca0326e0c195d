"""earnest.api, the library's public names: each resolves to its owner's object, importing the module
is light (no torch, R or pandas until a name is used), and the README's library example runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from earnest import api

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", sorted(api.NAMES))
def test_every_name_is_its_owner_object(name):
    module, _, attr = api.NAMES[name].partition(":")
    obj = getattr(api, name)
    assert obj is getattr(__import__(module, fromlist=[attr]), attr)
    assert callable(obj) and (obj.__doc__ or "").strip(), f"{name}: no docstring"


def test_unknown_name_is_an_error_naming_the_known_ones():
    with pytest.raises(AttributeError, match="run_glmm"):
        api.fit_everything  # noqa: B018


def test_import_is_light():
    code = "import sys, earnest.api; print(sorted(m for m in ('torch', 'rpy2', 'pandas', 'transformers') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"}).stdout
    assert out.strip() == "[]"


def test_readme_library_example_runs():
    text = (REPO / "README.md").read_text()
    section = text.split("## The library", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert "from earnest import api" in code
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    first, power = proc.stdout.split("\n")[:2]
    assert first.split()[0] in ("5", "5.0")
    assert 0.0 < float(power) < 1.0


def test_engine_for_returns_the_engine_object():
    from earnest.stats.engines import Engine, get_engine

    eng = api.engine_for("laplace")
    assert isinstance(eng, Engine) and eng is get_engine("laplace") and eng.name == "laplace"
    assert api.engine_for("laplace", rows="answers") is get_engine("lme4")
