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
    _, res = checked(lambda c: c["gsm_symbolic"].update(source="jsonl", jsonl="release.jsonl", templates=[7, 3]),
                     base_dir=tmp_path)
    assert res.templates == [3, 7]


def test_resolve_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "here.txt").write_text("x")
    assert resolve_path("here.txt", "/elsewhere") == Path("here.txt")
    assert resolve_path("there.txt", "/elsewhere") == Path("/elsewhere/there.txt")
    assert resolve_path("/abs/file", "/elsewhere") == Path("/abs/file")


# ---------------------------------------------------------------- issue 17: input errors found before any job

@pytest.mark.parametrize("mutate, expect", [
    (lambda c: c["gsm_symbolic"].update(templates=[4]),
     r"^gsm_symbolic\.templates: \[4\] is a single template; .*need at least 2"),
    (lambda c: c["stats"].update(resamples=3, shards=4),
     r"^stats\.shards: 4 shards for 3 resamples would plan shards without a resample"),
    (lambda c: c["models"].update(api={"backend": "openai"}),
     r"^models\.api\.base_url: the openai backend needs the server's http\(s\) API root, got None"),
    (lambda c: c["statform"].update(enabled=False, colour="red"),
     r"^statform: Additional properties are not allowed \('colour'"),
    (lambda c: c["statform"].update(strategies={"fs": {"kind": "few_shot", "k": 0}}),
     r"^statform\.strategies\.fs\.k: 0 is less than the minimum of 1"),
    (lambda c: c["statform"].update(strategies={"x": {"kind": "guess"}}),
     r"^statform\.strategies\.x\.kind: 'guess' is not one of"),
])
def test_config_errors_found_up_front(mutate, expect):
    with pytest.raises(ConfigError, match=expect):
        checked(mutate)


def test_documented_openai_keys_pass_the_schema():
    from earnest.backends import openai_http

    api = {"backend": "openai", "base_url": "http://127.0.0.1:8000/v1", "model": "m", "api_key_env": None,
           "concurrency": 2, "max_retries": 1, "timeout_s": 30, "backoff_s": 0.5, "max_backoff_s": 10,
           "cache_dir": "results/cache/openai", "temperature": 0, "request_params": {"seed": 1}}
    documented = {line.split(":")[0].strip() for line in openai_http.__doc__.split("::", 1)[1].split("\n\n")[1]
                  .splitlines() if ":" in line}
    assert documented <= set(api), documented - set(api)   # every key the backend documents is tried here
    checked(lambda c: c["models"].update(api=api))


def test_duplicate_yaml_keys_and_bad_bytes_are_named(tmp_path):
    from earnest.config import check_config_files, load_yaml_strict

    path = tmp_path / "my.yaml"
    path.write_text("stats:\n  resamples: 10\n  seed: 1\n  resamples: 2000\nmodels: {}\n")
    with pytest.raises(ConfigError, match=r"my\.yaml:4: key 'resamples' is given twice in the same mapping "
                                          r"\(first on line 2\)"):
        check_config_files([path])
    path.write_text("a: {x: 1, x: 2}\n")
    with pytest.raises(ConfigError, match=r"my\.yaml:1: key 'x' is given twice"):
        load_yaml_strict(path)
    path.write_bytes(b"models:\n  caf\xe9: {}\n")
    with pytest.raises(ConfigError, match=r"my\.yaml:2: not UTF-8 text \(byte 0xe9 at column 6\)"):
        load_yaml_strict(path)
    path.write_text("same: 1\nnested: {same: 2}\nlist: [{k: 1}, {k: 2}]\n")   # equal keys in different mappings
    assert load_yaml_strict(path) == {"same": 1, "nested": {"same": 2}, "list": [{"k": 1}, {"k": 2}]}
    for name in ("config.yaml", "paper.yaml"):
        check_config_files([REPO / "config" / name])
