"""earnest.config: the schema's defaults and checks, and check_config's errors naming the key or file."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from earnest.config import ConfigError, check_config, resolve_path, validate_schema
from earnest.prompts import load_formats

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "config" / "schema.yaml"
TINY = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
FORMATS = load_formats(REPO / "resources" / "prompts")


def checked(mutate=None, base_dir=REPO):
    cfg = copy.deepcopy(TINY)
    if mutate:
        mutate(cfg)
    validate_schema(cfg, SCHEMA)
    return cfg, check_config(cfg, FORMATS, base_dir=base_dir)


def test_schema_fills_every_default_once():
    cfg, res = checked(lambda c: (c.pop("slurm"), c.pop("statform"), c["generation"].pop("threads")))
    assert cfg["slurm"] == {"gpu_partition": "gpu", "cpu_partition": "cpu", "account": "", "request_gpus": True}
    assert cfg["generation"]["threads"] == 2 and cfg["stats"]["shard_runtime"] == 60
    assert cfg["fetch"]["cache_dir"] == "results/models/hub"
    assert cfg["models"]["tiny"]["backend"] == "transformers" and cfg["models"]["tiny"]["gsm_symbolic"] is True
    assert cfg["statform"]["enabled"] is False and cfg["statform"]["strategies"] == {"zero_shot": {"kind": "zero_shot"}}
    assert cfg["experiments"]["ex2_models"] == ["tiny"]  # given values stay
    assert res.templates == [0, 1, 2]
    # a default object is a copy, not the schema's own dict
    other, _ = checked(lambda c: c.pop("statform"))
    other["statform"]["models"].append("x")
    assert cfg["statform"]["models"] == []


def test_the_embedded_and_paper_configs_pass():
    for name in ("config.yaml", "paper.yaml"):
        cfg = validate_schema(yaml.safe_load((REPO / "config" / name).read_text()), SCHEMA)
        assert check_config(cfg, FORMATS, base_dir=REPO).templates


@pytest.mark.parametrize("mutate, expect", [
    (lambda c: c["stats"].update(resamples="many"), r"^stats\.resamples: 'many' is not of type 'integer'"),
    (lambda c: c["stats"].update(resamples=0), r"^stats\.resamples: 0 is less than the minimum"),
    (lambda c: c.update(colour="red"), r"Additional properties are not allowed \('colour'"),
    (lambda c: c["models"]["tiny"].update(resources={"gpus": 1}), r"^models\.tiny\.resources: Additional prop"),
])
def test_schema_errors_name_the_key(mutate, expect):
    with pytest.raises(ConfigError, match=expect):
        checked(mutate)


@pytest.mark.parametrize("mutate, expect", [
    (lambda c: c["experiments"].update(ex2_prompts=["simple_code", "haiku"]), r"experiments\.ex2_prompts.*'haiku'"),
    (lambda c: c["experiments"].update(ex1_prompt="gsm8k"), r"experiments\.ex1_prompt.*'gsm8k'"),
    (lambda c: c["models"]["tiny"].update(backend="vllm"), r"^models\.tiny\.backend: unknown backend 'vllm'"),
    (lambda c: c["models"]["tiny"].update(hub="org/m"), r"^models\.tiny: give exactly one of gguf, path or hub"),
    (lambda c: c["experiments"].update(ex2_models=["tiny", "big"]), r"^experiments\.ex2_models: 'big' is not"),
    (lambda c: c["gsm_symbolic"].update(templates=[0, 100]), r"^gsm_symbolic\.templates: ids \[100\] do not exist"),
    (lambda c: c["gsm_symbolic"].update(source="jsonl"), r"^gsm_symbolic\.jsonl: source is jsonl but no file"),
    (lambda c: c.update(statform={"enabled": True, "models": ["nobody"]}), r"^statform\.models: 'nobody'"),
    (lambda c: c.update(statform={"enabled": True, "models": ["tiny"], "dataset": "no/such.jsonl"}),
     r"^statform\.dataset: file not found: 'no/such\.jsonl'"),
    (lambda c: c.update(statform={"enabled": True, "models": ["tiny"], "main_strategy": "few_shot"}),
     r"^statform\.main_strategy: 'few_shot' is not one of statform\.strategies"),
])
def test_check_config_errors_name_the_key(mutate, expect):
    with pytest.raises(ConfigError, match=expect):
        checked(mutate)


def test_paper_mode_needs_pinned_hub_models():
    def mutate(c):
        c["paper_mode"] = True
        c["models"]["tiny"] = {"hub": "org/model"}
    with pytest.raises(ConfigError, match=r"^models\.tiny\.revision: paper_mode"):
        checked(mutate)
    checked(lambda c: c["models"].update(tiny={"hub": "org/model"}))  # fine outside paper mode


def test_missing_gguf_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match=r"^models\.tiny\.gguf: file not found: .*no\.gguf"):
        checked(lambda c: c["models"].update(tiny={"gguf": str(tmp_path / "no.gguf")}))


def test_release_jsonl_templates_and_bad_lines(tmp_path):
    rec = {"id": 3, "instance": 0, "question": "Q 1", "answer": "x #### 3", "original_id": 5,
           "original_question": "Q 0", "original_answer": "y #### 2"}
    good = tmp_path / "release.jsonl"
    good.write_text(json.dumps(rec) + "\n" + json.dumps({**rec, "id": 7}) + "\n")
    _, res = checked(lambda c: c["gsm_symbolic"].update(source="jsonl", jsonl=str(good), templates="all"))
    assert res.templates == [3, 7]
    with pytest.raises(ConfigError, match=r"gsm_symbolic\.templates: ids \[0\] do not exist \(available: 3\.\.7\)"):
        checked(lambda c: c["gsm_symbolic"].update(source="jsonl", jsonl=str(good), templates=[0, 3]))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(rec) + "\n" + '{"id": 0, "instance": 1, "question": \n')
    with pytest.raises(ConfigError, match=r"bad\.jsonl:2"):
        checked(lambda c: c["gsm_symbolic"].update(source="jsonl", jsonl=str(bad), templates=[3]))
    # a relative path is found next to the workflow (base_dir) when it is not in the working directory
    _, res = checked(lambda c: c["gsm_symbolic"].update(source="jsonl", jsonl="release.jsonl", templates=[7]),
                     base_dir=tmp_path)
    assert res.templates == [7]


def test_resolve_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "here.txt").write_text("x")
    assert resolve_path("here.txt", "/elsewhere") == Path("here.txt")
    assert resolve_path("there.txt", "/elsewhere") == Path("/elsewhere/there.txt")
    assert resolve_path("/abs/file", "/elsewhere") == Path("/abs/file")
