"""The official GSM-Symbolic release from the Hugging Face hub (gsm_symbolic.source: hub).

There is no network here, so the fetch is exercised against a local huggingface_hub cache laid out
as the hub client lays it out (datasets--<org>--<name>/snapshots/<commit>/<file>), in offline mode
(HF_HUB_OFFLINE=1, set in conftest): huggingface_hub's own cache lookup, our copy and checks, the
local Snakemake rule and the items read from the fetched file are real; the download from the hub
itself is not exercised.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from earnest.config import ConfigError, check_config, validate_schema
from earnest.gsm.datasets import (HUB_RELEASE, DatasetError, fetch_release, package_base_items,
                              package_variant_items, read_release_jsonl, release_items, release_path)
from earnest.gsm.prompts import load_formats

REPO = Path(__file__).resolve().parents[1]
REV = "0123456789abcdef0123456789abcdef01234567"


def write_release(path: Path, templates=(0, 2), n=2) -> Path:
    """The package's items written in the release's format (fields of main/test.jsonl)."""
    base = package_base_items(list(templates))
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        for t in templates:
            b = base[base.template_id == t].iloc[0]
            for v in package_variant_items(t, n, base_seed=5).itertuples():
                fh.write(json.dumps({"id": t, "instance": v.instance, "question": v.question,
                                     "answer": f"steps\n#### {v.answer}", "original_id": 1000 + t,
                                     "original_question": b.question, "original_answer": f"steps\n#### {b.answer}",
                                     "canary": "canary GUID"}) + "\n")
    return path


def hub_cache(root: Path, repo: str = "apple/GSM-Symbolic", rev: str = REV, file: str = "main/test.jsonl") -> Path:
    """A huggingface_hub cache holding one file of a dataset repository at one commit."""
    repo_dir = root / f"datasets--{repo.replace('/', '--')}"
    write_release(repo_dir / "snapshots" / rev / file)
    (repo_dir / "refs").mkdir(parents=True, exist_ok=True)
    (repo_dir / "refs" / "main").write_text(rev)
    return root


def test_fetch_copies_the_pinned_file_from_the_hub_cache(tmp_path):
    cache = hub_cache(tmp_path / "hf")
    dest = tmp_path / release_path("apple/GSM-Symbolic", REV, "main/test.jsonl")
    got = fetch_release("apple/GSM-Symbolic", REV, "main/test.jsonl", dest, cache_dir=cache)
    assert got == dest and dest.read_bytes() == (
        cache / "datasets--apple--GSM-Symbolic" / "snapshots" / REV / "main" / "test.jsonl").read_bytes()
    assert {r["id"] for r in read_release_jsonl(dest)} == {0, 2}
    assert str(dest).endswith(f"apple__GSM-Symbolic/{REV}/main/test.jsonl")


def test_fetch_errors_name_what_was_asked_and_leave_nothing(tmp_path):
    cache = hub_cache(tmp_path / "hf")
    dest = tmp_path / "out" / "test.jsonl"
    other = "f" * 40
    with pytest.raises(DatasetError, match=rf"could not fetch main/test.jsonl of apple/GSM-Symbolic@{other}"):
        fetch_release("apple/GSM-Symbolic", other, "main/test.jsonl", dest, cache_dir=cache)
    # a file that is not a release (a truncated download, the wrong file) never becomes the output
    bad = cache / "datasets--apple--GSM-Symbolic" / "snapshots" / REV / "main" / "test.jsonl"
    bad.write_text(bad.read_text().splitlines()[0][:40] + "\n")
    with pytest.raises(DatasetError, match=rf"apple/GSM-Symbolic@{REV}:main/test.jsonl is not a GSM-Symbolic release"):
        fetch_release("apple/GSM-Symbolic", REV, "main/test.jsonl", dest, cache_dir=cache)
    assert not dest.exists() and not list(dest.parent.glob(".*tmp"))
    with pytest.raises(DatasetError, match="pinned revision"):
        fetch_release("apple/GSM-Symbolic", "", "main/test.jsonl", dest, cache_dir=cache)


def _config(**gsm) -> dict:
    cfg = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
    cfg["gsm_symbolic"] = {"source": "hub", "variants": 2, "seed": 7, **gsm}
    return validate_schema(cfg, REPO / "config" / "schema.yaml")


def test_config_defaults_and_checks(tmp_path, monkeypatch, tiny_model_dir):
    cfg = _config()
    cfg["statform"]["enabled"] = False   # the tiny config's StatFormBench files live in the repository, not in tmp_path
    assert cfg["gsm_symbolic"]["hub"] == {**HUB_RELEASE, "cache_dir": None}   # the schema's pin is the library's
    formats = load_formats(REPO / "resources" / "prompts")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tiny-model").symlink_to(tiny_model_dir, target_is_directory=True)
    assert check_config(cfg, formats, base_dir=tmp_path).templates == list(range(100))   # before the fetch
    paper = _config(hub={"revision": "main"})
    paper["statform"]["enabled"] = False
    paper["paper_mode"] = True
    with pytest.raises(ConfigError, match="gsm_symbolic.hub.revision: paper_mode needs the release pinned"):
        check_config(paper, formats, base_dir=tmp_path)


def test_workflow_fetches_once_and_reads_the_release(tmp_path, tiny_model_dir):
    """The local rule fetch_gsm_symbolic puts the pinned file under results/data/release/, and the
    items rules read it as a jsonl source."""
    from test_workflow import snakemake

    cache = hub_cache(tmp_path / "hf")
    (tmp_path / "tiny-model").symlink_to(tiny_model_dir, target_is_directory=True)
    cfg = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
    cfg["gsm_symbolic"] = {"source": "hub", "templates": [0, 2], "variants": 2, "seed": 7,
                           "hub": {"revision": REV, "cache_dir": str(cache)}}
    proc = snakemake(tmp_path, cfg, "results/data/gsm_base.parquet", "results/data/gsm_variants.parquet")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    fetched = tmp_path / release_path("apple/GSM-Symbolic", REV, "main/test.jsonl")
    records = read_release_jsonl(fetched)
    for ds in ("gsm_base", "gsm_variants"):
        got = pd.read_parquet(tmp_path / f"results/data/{ds}.parquet")
        pd.testing.assert_frame_equal(got, release_items(records, ds, [0, 2], 2))
    assert "fetch_gsm_symbolic" in (tmp_path / "logs" / "fetch_gsm_symbolic.log").read_text()
