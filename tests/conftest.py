import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A tiny random Llama checkpoint directory with a BPE tokenizer and a chat template."""
    from tinymodel import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """With pytest-xdist (``-n 2 --dist loadgroup``): the tests of a module that share one of its
    module-scoped fixtures (one finished workflow run, one server, one loaded model) go to one worker,
    so that the fixture is built once, not once per worker (an autouse one, which every test of the
    module takes, does not bind them). Tests that must not run beside each other carry their own
    ``xdist_group`` mark (the local Slurm cluster, processes of uid 65534)."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
        if any(d and d[-1].scope == "module" and not getattr(d[-1], "_autouse", False) for d in defs.values()):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))



def pytest_configure(config):
    """Where Slurm is installed but its controller is down, every Snakemake start waits about 10 s:
    snakemake-executor-plugin-slurm runs ``scontrol show config`` as it is imported (every Snakemake
    start imports it), which waits for the controller before it fails. A warning says so (once: in
    the pytest-xdist controller, not its workers)."""
    import shutil
    import subprocess

    if hasattr(config, "workerinput") or shutil.which("sinfo") is None or shutil.which("scontrol") is None:
        return
    try:
        ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return
    if "DOWN" in ping.stdout:
        config.issue_config_time_warning(pytest.PytestWarning(
            "Slurm is installed but its controller is down: every Snakemake start in these tests waits about "
            "10 s for it (snakemake-executor-plugin-slurm asks `scontrol show config` on import); start the "
            "local cluster first (sudo scripts/slurm-up.sh; tests/test_slurm.py does it too)"), stacklevel=2)
