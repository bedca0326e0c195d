"""earnest.config: the schema's defaults and checks, and check_config's errors naming the key or file."""

from __future__ import annotations

import copy
import json
import re
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from earnest.config import ConfigError, check_config, resolve_path, validate_schema
from earnest.gsm.prompts import load_formats

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "config" / "schema.yaml"
TINY = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
FORMATS = load_formats(REPO / "resources" / "prompts")


MODEL_DIR = {}   # the session's tiny model (conftest.tiny_model_dir): a checkpoint folder the check accepts


@pytest.fixture(autouse=True, scope="module")
def _tiny_model(tiny_model_dir):
    MODEL_DIR["path"] = str(tiny_model_dir)


def checked(mutate=None, base_dir=REPO):
    cfg = copy.deepcopy(TINY)
    cfg["models"]["tiny"]["path"] = MODEL_DIR["path"]
    if mutate:
        mutate(cfg)
    validate_schema(cfg, SCHEMA)
    return cfg, check_config(cfg, FORMATS, base_dir=base_dir)


def test_schema_fills_every_default_once():
    cfg, res = checked(lambda c: (c.pop("slurm"), c.pop("statform"), c["generation"].pop("threads"),
                                  c["stats"].pop("shard_runtime")))
    assert cfg["slurm"] == {"gpu_partition": "gpu", "cpu_partition": "cpu", "account": "", "request_gpus": True,
                            "small_job_runtime": 5, "bundle_shards": False}
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


def test_the_paper_config_generates_as_the_authors_run():
    """resources/FIDELITY.md section 7: config/paper.yaml is reference mode with the authors'
    generation length (their BenchmarkConfig's max_new_tokens, 1024) and bfloat16 for every model (their
    A40 path); config/config.yaml keeps earnest mode (the default)."""
    paper = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    assert paper["fidelity"] == "reference" and paper["generation"]["max_new_tokens"] == 1024
    assert paper["models"] and {m["dtype"] for m in paper["models"].values()} == {"bfloat16"}
    from earnest.fidelity import DEFAULT   # config.yaml leaves the mode to the default

    assert yaml.safe_load((REPO / "config" / "config.yaml").read_text()).get("fidelity", DEFAULT) == "earnest"


@pytest.mark.parametrize("mutate, expect", [
    (lambda c: c["stats"].update(resamples="many"), r"^stats\.resamples: 'many' is not of type 'integer'"),
    (lambda c: c["stats"].update(resamples=0), r"^stats\.resamples: 0 is less than the minimum"),
    (lambda c: c.update(colour="red"), r"^colour: unknown key 'colour' \(known keys: paper_mode, fidelity"),
    (lambda c: c["models"]["tiny"].update(resources={"gpus": 1}), r"^models\.tiny\.resources\.gpus: unknown key 'gpus' \(did you mean 'gpu'\?\)"),
])
def test_schema_errors_name_the_key(mutate, expect):
    with pytest.raises(ConfigError, match=expect):
        checked(mutate)


@pytest.mark.parametrize("mutate, expect", [
    (lambda c: c["experiments"].update(ex2_prompts=["simple_code", "haiku"]), r"experiments\.ex2_prompts.*'haiku'"),
    (lambda c: c["experiments"].update(ex1_prompt="gsm8k"), r"experiments\.ex1_prompt.*'gsm8k'"),
    (lambda c: c["models"]["tiny"].update(backend="vllm"), r"^models\.tiny\.backend: unknown backend 'vllm'"),
    # decoding, model_args, trust_remote_code, adapter (earnest.backends.decoding), before any job
    (lambda c: c["models"]["tiny"].update(decoding={"samples": 4}),
     r"^models\.tiny\.decoding\.samples: has no effect with temperature 0"),
    (lambda c: c["models"]["tiny"].update(decoding={"temperature": 1, "samples": 2}),
     r"^models\.tiny\.decoding\.samples: 2 samples, but StatFormBench \(statform\.models\) asks each question once"),
    (lambda c: c["models"]["tiny"].update(decoding={"temperature": 1, "seed": -1}),
     r"^models\.tiny\.decoding\.seed: -1 is less than the minimum of 0"),
    (lambda c: c["models"]["tiny"].update(model_args={"trust_remote_code": True}),
     r"^models\.tiny\.model_args\.trust_remote_code: not a model_args key; set it as models\.tiny\.trust_remote_code"),
    (lambda c: c["models"]["tiny"].update(model_args={"load_in_8bit": True}),
     r"^models\.tiny\.model_args\.load_in_8bit: not among the arguments earnest passes"),
    (lambda c: c["models"]["tiny"].update(adapter={"path": "/nonexistent"}),
     r"^models\.tiny\.adapter\.path: /nonexistent holds no adapter_config\.json"),
    (lambda c: c["models"].update(api={"backend": "openai", "base_url": "http://127.0.0.1:1/v1", "adapter": "a"}),
     r"^models\.api\.adapter: only a transformers model loads weights here"),
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
    _, res = checked(lambda c: c["gsm_symbolic"].update(source="jsonl", jsonl=str(good), variants=1, templates="all"))
    assert res.templates == [3, 7]
    with pytest.raises(ConfigError, match=r"gsm_symbolic\.templates: ids \[0\] do not exist \(available: 3\.\.7\)"):
        checked(lambda c: c["gsm_symbolic"].update(source="jsonl", jsonl=str(good), variants=1, templates=[0, 3]))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(rec) + "\n" + '{"id": 0, "instance": 1, "question": \n')
    with pytest.raises(ConfigError, match=r"bad\.jsonl:2"):
        checked(lambda c: c["gsm_symbolic"].update(source="jsonl", jsonl=str(bad), templates=[3]))
    # a relative path is found next to the workflow (base_dir) when it is not in the working directory
    _, res = checked(lambda c: c["gsm_symbolic"].update(source="jsonl", jsonl="release.jsonl", variants=1, templates=[7, 3]),
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
     r"^statform\.colour: unknown key 'colour'"),
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
           "cache_dir": "results/cache/openai", "temperature": 0, "request_params": {"seed": 1},
           "max_response_bytes": 8388608, "use_proxy": False}
    documented = {line.split(":")[0].strip() for line in openai_http.__doc__.split("::", 1)[1].split("\n\n")[1]
                  .splitlines() if ":" in line}
    assert documented <= set(api), documented - set(api)   # every key the backend documents is tried here
    checked(lambda c: c["models"].update(api=api))


@pytest.mark.parametrize("entry, expect", [
    ({"base_url": "http://user:s3cret@127.0.0.1:8000/v1"}, r"^models\.api\.base_url: holds credentials"),
    ({"request_params": {"max_tokens": 5}}, r"^models\.api\.request_params\.max_tokens: set by earnest "
                                            r"\(generation\.max_new_tokens\)"),
    ({"request_params": {"model": "other"}}, r"^models\.api\.request_params\.model: set by earnest \(models\.api\.model\)"),
    ({"max_response_bytes": 10}, r"^models\.api\.max_response_bytes: 10 is less than the minimum of 1024"),
    ({"use_proxy": "yes"}, r"^models\.api\.use_proxy: 'yes' is not of type 'boolean'"),
])
def test_check_config_finds_the_openai_backend_s_config_errors(entry, expect):
    """earnest check-config refuses what the backend refuses when a job makes it, before any job."""
    api = {"backend": "openai", "base_url": "http://127.0.0.1:8000/v1", **entry}
    with pytest.raises(ConfigError, match=expect) as err:
        checked(lambda c: c["models"].update(api=api))
    assert "s3cret" not in str(err.value)


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


# ---------------------------------------------------------------- issue 24 item 11, issue 20: config mistakes

def _problems(mutate, **kw):
    with pytest.raises(ConfigError) as info:
        checked(mutate, **kw)
    return info.value.problems


def test_misspelt_key_is_named_with_the_key_it_resembles():
    problems = _problems(lambda c: c["stats"].update(resampels=c["stats"].pop("resamples")))
    assert "stats.resampels: unknown key 'resampels' (did you mean 'resamples'?)" in problems
    assert "stats: 'resamples' is a required property" in problems


def test_every_problem_is_shown_not_the_first():
    def mutate(c):
        c["stats"]["alpha"] = float("nan")
        c["power"]["odds_ratios"] = [1.0, float("inf")]
        c["generation"]["max_new_tokns"] = 3
    problems = _problems(mutate)
    assert len(problems) == 3, problems
    assert any(p.startswith("stats.alpha: nan is not a number") for p in problems)
    assert any(p.startswith("power.odds_ratios.1: inf is not a number") for p in problems)
    assert any("unknown key 'max_new_tokns' (did you mean 'max_new_tokens'?)" in p for p in problems)
    # and the semantic checks of several sections together
    def mutate2(c):
        c["experiments"]["ex1_prompt"] = "haiku"
        c["compare"] = {"agq": 5, "item_effects": False}
        c["models"]["tiny"]["path"] = "/no/such/model"
    problems = _problems(mutate2)
    assert len(problems) == 3, problems
    assert any("experiments.ex1_prompt" in p and "'haiku'" in p for p in problems)
    assert any(p.startswith("compare.agq: 5 quadrature points") for p in problems)
    assert any(p.startswith("models.tiny.path: directory not found: /no/such/model") for p in problems)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_numbers_are_refused(value):
    problems = _problems(lambda c: c["stats"].update(alpha=value))
    assert problems == [f"stats.alpha: {value} is not a number a setting can take (NaN and infinity are refused)"]


def test_agq_needs_item_effects():
    with pytest.raises(ConfigError, match=r"^compare\.agq: 3 quadrature points .*item_effects: false"):
        checked(lambda c: c.update(compare={"agq": 3, "item_effects": False}))
    checked(lambda c: c.update(compare={"agq": 3, "item_effects": True}))
    checked(lambda c: c.update(compare={"agq": 1, "item_effects": False}))


def test_missing_model_path_is_named(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"^models\.tiny\.path: directory not found: tiny-model \(a relative path "
                                          r"is read from the working directory, " + str(tmp_path)):
        checked(lambda c: c["models"]["tiny"].update(path="tiny-model"))
    (tmp_path / "tiny-model").mkdir()   # a folder, but no model: refused before any job loads it
    with pytest.raises(ConfigError, match=r"^models\.tiny\.path: tiny-model is not a model checkpoint directory: it "
                                          r"has no config\.json"):
        checked(lambda c: c["models"]["tiny"].update(path="tiny-model"))
    (tmp_path / "tiny-model").rmdir()
    (tmp_path / "tiny-model").symlink_to(MODEL_DIR["path"], target_is_directory=True)
    checked(lambda c: c["models"]["tiny"].update(path="tiny-model"))


@pytest.mark.parametrize("name", ["../../escape", "a/b", ".hidden", "..", "has space", ""])
def test_model_and_strategy_names_must_be_folder_names(name):
    problems = _problems(lambda c: c["models"].update({name: dict(c["models"]["tiny"])}))
    assert problems == [f"models.{name}: the name {name!r} cannot be used: it becomes a folder under results/, so "
                        "it must start with a letter or digit and hold only letters, digits, '.', '_' and '-'"]
    problems = _problems(lambda c: c["statform"].update(strategies={name: {"kind": "zero_shot"}}))
    assert any(p.startswith(f"statform.strategies.{name}: the name") for p in problems), problems
    checked(lambda c: c["models"].update({"llama-3.1-8b_v2": dict(c["models"]["tiny"])}))


def test_prompt_format_names_must_be_folder_names(tmp_path):
    import shutil

    prompts = tmp_path / "prompts"
    shutil.copytree(REPO / "resources" / "prompts", prompts)
    text = (prompts / "formats.yaml").read_text()
    (prompts / "formats.yaml").write_text(text.replace("\nsimple_nl:", "\n../simple_nl:", 1))
    formats = load_formats(prompts)
    assert "../simple_nl" in formats
    cfg = copy.deepcopy(TINY)
    cfg["models"]["tiny"]["path"] = str(REPO / "tests")
    validate_schema(cfg, SCHEMA)
    with pytest.raises(ConfigError, match=r"formats\.yaml: prompt format \.\./simple_nl: the name '\.\./simple_nl'"):
        check_config(cfg, formats, base_dir=REPO)


def test_release_with_fewer_instances_than_variants(tmp_path):
    rec = {"id": 3, "instance": 0, "question": "Q 1", "answer": "x #### 3", "original_id": 5,
           "original_question": "Q 0", "original_answer": "y #### 2"}
    rows = [{**rec, "instance": i} for i in range(3)] + [{**rec, "id": 7, "instance": i} for i in range(2)]
    path = tmp_path / "release.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    def use(n):
        return lambda c: c["gsm_symbolic"].update(source="jsonl", jsonl=str(path), templates="all", variants=n)
    checked(use(2))
    with pytest.raises(ConfigError, match=r"^gsm_symbolic\.variants: 3 variants asked, but the release .*release\.jsonl "
                                          r"holds fewer instances numbered 0\.\.2 for 1 template\(s\) \(template 7: 2\)"):
        checked(use(3))
    # the job that reads the release (a hub file fetched later) says the same
    from earnest.gsm.datasets import DatasetError, read_release_jsonl, release_items

    records = read_release_jsonl(path)
    assert len(release_items(records, "gsm_variants", [3, 7], 2)) == 4
    with pytest.raises(DatasetError, match=r"gsm_symbolic\.variants: 3 variants asked.*template 7: 2"):
        release_items(records, "gsm_variants", [3, 7], 3)


def test_problems_name_the_config_file_and_line(tmp_path):
    from earnest.config import config_locations

    base = tmp_path / "base.yaml"
    base.write_text((REPO / "tests" / "configs" / "tiny.yaml").read_text())
    over = tmp_path / "over.yaml"
    over.write_text("stats:\n  alpha: .nan\n  resampels: 10\n")
    where = config_locations([base, over])
    assert where["stats.alpha"] == f"{over}:2" and where["stats.resampels"] == f"{over}:3"
    assert where["gsm_symbolic.variants"] == f"{base}:7"
    cfg = copy.deepcopy(TINY)
    cfg["stats"].update(alpha=float("nan"), resampels=10)
    with pytest.raises(ConfigError) as info:
        validate_schema(cfg, SCHEMA, locations=where)
    assert info.value.problems == [
        f"{over}:2: stats.alpha: nan is not a number a setting can take (NaN and infinity are refused)",
        f"{over}:3: stats.resampels: unknown key 'resampels' (did you mean 'resamples'?)"]
    assert str(info.value).startswith("2 problems:\n  " + str(over))
    cfg = copy.deepcopy(TINY)
    cfg["models"]["tiny"]["backend"] = "vllm"
    validate_schema(cfg, SCHEMA)
    with pytest.raises(ConfigError, match=r"^" + str(base) + r":12: models\.tiny\.backend: unknown backend 'vllm'"):
        check_config(cfg, FORMATS, base_dir=REPO, locations=where)


def test_check_config_command_names_what_snakemake_cannot(tmp_path):
    """`earnest check-config` runs the workflow's checks on files Snakemake would read itself first:
    a file that is not UTF-8 is named by file, line and byte, not a traceback; a good config passes;
    the second file is merged over the first as Snakemake merges --configfile."""
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[1]
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"stats:\n  alpha: 0.05  # \xff\n")
    nan = tmp_path / "nan.yaml"
    nan.write_text("stats:\n  alpha: .nan\n")

    def run(*files):
        return subprocess.run([sys.executable, "-m", "earnest.cli", "check-config", "--workflow", str(repo),
                               *map(str, files)], capture_output=True, text=True, cwd=tmp_path)

    r = run(bad)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert f"{bad.name}:2: not UTF-8 text (byte 0xff" in r.stderr
    r = run(repo / "config" / "config.yaml", nan)
    assert r.returncode == 1 and "nan.yaml:2: stats.alpha" in r.stderr
    r = run(repo / "config" / "paper.yaml")
    assert r.returncode == 0, r.stderr
    r = run()
    assert r.returncode == 0 and "config.yaml" in r.stdout


@pytest.mark.parametrize("mutate, expect", [
    # a negative seed passed every check, then each bootstrap job ended in numpy's traceback
    (lambda c: c["stats"].update(seed=-1), r"^stats\.seed: -1 is less than the minimum of 0"),
    (lambda c: c.update(compare={"seed": -2}), r"^compare\.seed: -2 is less than the minimum of 0"),
    (lambda c: c["gsm_symbolic"].update(seed=-5), r"^gsm_symbolic\.seed: -5 is less than the minimum of 0"),
    # more resamples than memory holds (the shard plan alone was 8 GB at 10**9)
    (lambda c: c["stats"].update(resamples=10**9), r"^stats\.resamples: 1000000000 is greater than the maximum"),
    # empty lists: a power study of no grid point; the same entry twice: the same work twice
    (lambda c: c.update(power={"templates": []}), r"^power\.templates: \[\] should be non-empty"),
    (lambda c: c.update(power={"odds_ratios": [1.0, 1.0]}), r"^power\.odds_ratios: \[1\.0, 1\.0\] has non-unique"),
    (lambda c: c["experiments"].update(ex2_prompts=["gsm", "gsm"]), r"^experiments\.ex2_prompts: \['gsm', 'gsm'\] has non-unique"),
    # the answers pages' bound (earnest.gsm.report.write_answers)
    (lambda c: c.update(report={"answers_max_rows": 0}), r"^report\.answers_max_rows: 0 is less than the minimum of 1"),
    (lambda c: c.update(report={"answers_max_rows": "all"}), r"^report\.answers_max_rows: 'all' is not of type 'integer'"),
    (lambda c: c.update(report={"answer_rows": 10}), r"^report\.answer_rows: unknown key 'answer_rows' \(did you mean 'answers_max_rows'"),
])
def test_seeds_sizes_and_lists_out_of_range_are_refused(mutate, expect):
    with pytest.raises(ConfigError, match=expect):
        checked(mutate)


def test_power_design_too_large_is_refused_before_any_job():
    """power.templates: [100000000] was accepted; the power job refused it when it started, after
    every other job of the run (the command line refused the same design up front)."""
    with pytest.raises(ConfigError, match=r"^power\.templates: 100000000 with power\.variants 50: 100000000 templates x "
                                          r"\(1 \+ 50 variants\) = 5,100,000,000 answers per simulated data set"):
        checked(lambda c: c.update(power={"templates": [100_000_000]}))
    checked(lambda c: c.update(power={"enabled": False, "templates": [100_000_000]}))   # no power study: no check


def test_a_number_yaml_reads_as_text_says_how_to_write_it(tmp_path):
    """YAML 1.1 (PyYAML, Snakemake's reader) reads 1e300 and 1e3 as text: "'1e300' is not of type
    'number'" named the key but left the user puzzled over a value that is a number."""
    over = tmp_path / "over.yaml"
    over.write_text("stats:\n  alpha: 1e-3\nmodels:\n  tiny:\n    resources: {mem_mb: 8e3}\n")
    base = REPO / "tests" / "configs" / "tiny.yaml"
    from earnest.config import check_workflow_config, merge_config_files
    with pytest.raises(ConfigError) as info:
        check_workflow_config(merge_config_files([base, over]), [base, over], REPO)
    assert (f"{over}:2: stats.alpha: '1e-3' is not of type 'number'; YAML reads '1e-3' as text: write it as a float "
            "with a '.' and a signed exponent (1.0e-3)") in info.value.problems
    assert (f"{over}:5: models.tiny.resources.mem_mb: '8e3' is not of type 'integer'; YAML reads '8e3' as text: "
            "write it as an integer (8000)") in info.value.problems


def test_an_embedded_config_that_is_not_utf8_is_named_by_the_workflow(tmp_path):
    """config/config.yaml edited in place with a Latin-1 byte: Snakemake's own reading of the
    `configfile:` directive ended in a UnicodeDecodeError traceback naming no file; the workflow reads
    it first and names file, line and column (a dry run, nothing planned)."""
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[1]
    wf = tmp_path / "wf"
    wf.mkdir()
    for name in ("Snakefile", "rules", "config", "report", "workflow", "envs", "resources", "profiles"):
        src = repo / name
        if src.is_dir():
            shutil.copytree(src, wf / name, symlinks=True)
        elif src.exists():
            shutil.copy(src, wf / name)
    cfg = wf / "config" / "config.yaml"
    lines = cfg.read_bytes().count(b"\n")
    cfg.write_bytes(cfg.read_bytes() + b"# caf\xe9\n")
    r = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-s", str(wf / "Snakefile"), "-d", str(tmp_path)],
                       capture_output=True, text=True, timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode != 0 and "Traceback" not in out, out[-3000:]
    assert f"earnest: config error: {cfg}:{lines + 1}: not UTF-8 text (byte 0xe9 at column 6)" in out, out[-3000:]


def _check_config(*args, cwd):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "earnest.cli", "check-config", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=300)


def test_check_config_outside_the_workflow_directory(tmp_path):
    """`earnest check-config FILE` from another directory looked for config/schema.yaml there and
    ended in a FileNotFoundError traceback: it now checks against the checkout earnest is imported
    from; a --workflow without config/schema.yaml is named; a file that is not UTF-8 is still named
    by file, line and column from there (the one check Snakemake's own reading of --configfile
    skips, docs/workflow.md)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    mine = elsewhere / "mine.yaml"
    mine.write_text((REPO / "config" / "config.yaml").read_text())
    r = _check_config(mine, cwd=elsewhere)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert f"earnest: config ok ({mine}; workflow {REPO})" in r.stdout
    r = _check_config(cwd=elsewhere)   # no file: the workflow's own config/config.yaml
    assert r.returncode == 0 and str(REPO / "config" / "config.yaml") in r.stdout, r.stderr
    r = _check_config("--workflow", elsewhere, mine, cwd=elsewhere)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert f"earnest: config error: --workflow {elsewhere}: no config/schema.yaml in {elsewhere}" in r.stderr
    bad = elsewhere / "bad.yaml"
    bad.write_bytes(mine.read_bytes() + b"# caf\xe9\n")
    r = _check_config(bad, cwd=elsewhere)
    lines = mine.read_bytes().count(b"\n")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert f"earnest: config error: {bad}:{lines + 1}: not UTF-8 text (byte 0xe9 at column 6)" in r.stderr


@pytest.mark.parametrize("python, expect", [
    ("/no/such/python3", r"^sandbox\.python: '/no/such/python3' does not run: \[Errno 2\] No such file"),
    ("no-such-python-here", r"^sandbox\.python: 'no-such-python-here' is not on PATH"),
    ("/bin/false", r"^sandbox\.python: '/bin/false' does not run as a Python interpreter \(exit status 1"),
])
def test_sandbox_python_is_checked_before_any_job(python, expect, tmp_path):
    """sandbox.python (the interpreter that runs model code) was accepted whatever it named; the
    first scoring job of a code prompt failed, after generation. It is started now, as the scoring
    job starts it, by the workflow's checks and `earnest check-config`."""
    with pytest.raises(ConfigError, match=expect):
        checked(lambda c: c.update(sandbox={"python": python}))
    checked(lambda c: c.update(sandbox={"python": sys.executable}))
    checked(lambda c: c.update(sandbox={"python": ""}))   # the scoring job's own interpreter
    over = tmp_path / "over.yaml"
    over.write_text((REPO / "config" / "config.yaml").read_text() + f"sandbox:\n  python: {python}\n")
    r = _check_config(over, cwd=tmp_path)
    line = over.read_text().count("\n")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert f"earnest: config error: {over}:{line}: sandbox.python: '{python}'" in r.stderr, r.stderr


@pytest.mark.parametrize("mutate, expect", [
    # JSON Schema (draft 6 on) counts 12.0 as an integer: it passed and reached range() in a job
    (lambda c: c["gsm_symbolic"].update(variants=12.0),
     r"^gsm_symbolic\.variants: 12\.0 is not of type 'integer'; write it as an integer \(12\)$"),
    (lambda c: c["gsm_symbolic"].update(variants=12.5), r"^gsm_symbolic\.variants: 12\.5 is not of type 'integer'; write a whole number, e\.g\. 12$"),
    (lambda c: c["gsm_symbolic"].update(variants=1.0e12),
     r"^gsm_symbolic\.variants: 1000000000000\.0 is not of type 'integer'; write an integer, at most 10000$"),
    (lambda c: c["gsm_symbolic"].update(variants=10**12),
     r"^gsm_symbolic\.variants: 1000000000000 is greater than the maximum of 10000; write a value of at most 10000$"),
    (lambda c: c["gsm_symbolic"].update(templates=[0, 1.0]),
     r"^gsm_symbolic\.templates\.1: 1\.0 is not of type 'integer'; write it as an integer \(1\)$"),
    (lambda c: c["models"]["tiny"].update(batch_size=8.0),
     r"^models\.tiny\.batch_size: 8\.0 is not valid under any of the given schemas \(8\.0 is not of type 'integer'; "
     r"'auto' was expected\)$"),
    (lambda c: c.update(compare={"resamples": 5.0}), r"^compare\.resamples: 5\.0 is not of type 'integer', 'null'"),
    (lambda c: c["stats"].update(shards=10**9), r"^stats\.shards: 1000000000 is greater than the maximum of 1000000; write a value of at most 1000000$"),
    (lambda c: c["generation"].update(max_new_tokens=10**12), r"^generation\.max_new_tokens: 1000000000000 is greater"),
    (lambda c: c.update(ex4={"shifts": [10**6]}), r"^ex4\.shifts\.0: 1000000 is greater than the maximum of 15; write a value of at most 15$"),
    (lambda c: c["models"]["tiny"].update(resources={"mem_mb": 8000.0}), r"^models\.tiny\.resources\.mem_mb: 8000\.0 is not"),
])
def test_counts_must_be_integers_of_a_sensible_size(mutate, expect):
    with pytest.raises(ConfigError, match=expect):
        checked(mutate)


def test_integer_options_and_config_files_refuse_floats_and_huge_numbers(tmp_path):
    """The one validator (earnest.schema.validator_class) behind the options, the workflow's checks
    (check_workflow_config, which the Snakefile calls) and `earnest check-config`; an integer of
    more digits than Python converts was PyYAML's ValueError traceback."""
    from earnest.config import check_workflow_config, merge_config_files
    from earnest.schema import check_option

    with pytest.raises(ValueError, match=r"^--resamples: 12\.0 is not of type 'integer' \(as config key stats\.resamples\)"):
        check_option(12.0, "stats.resamples", "--resamples")
    assert check_option(12, "stats.resamples", "--resamples") == 12
    base = REPO / "tests" / "configs" / "tiny.yaml"
    over = tmp_path / "over.yaml"
    over.write_text("gsm_symbolic:\n  variants: 1.0e+12\nstats:\n  resamples: 20.0\n")
    with pytest.raises(ConfigError) as info:
        check_workflow_config(merge_config_files([base, over]), [base, over], REPO)
    assert info.value.problems == [
        f"{over}:2: gsm_symbolic.variants: 1000000000000.0 is not of type 'integer'; write an integer, at most 10000",
        f"{over}:4: stats.resamples: 20.0 is not of type 'integer'; write it as an integer (20)"]
    r = _check_config(base, over, cwd=tmp_path)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert f"{over}:2: gsm_symbolic.variants: 1000000000000.0 is not of type 'integer'" in r.stderr, r.stderr
    over.write_text("stats:\n  seed: " + "1" * 5000 + "\n")
    r = _check_config(base, over, cwd=tmp_path)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert f"earnest: config error: {over}:2: an integer of 5,000 characters, longer than any setting takes" in r.stderr


def test_a_served_model_needs_no_base_url_and_its_serve_block_is_checked():
    """Issue 43.4: an openai entry with a serve block (the job starts the server) needs no base_url;
    a serve block the job could not start is refused before any job, naming the field."""
    def served(block):
        def mutate(c):
            c["models"]["served"] = {"backend": "openai", "model": "m", "serve": block}
        return mutate

    cfg, _ = checked(served({"command": ["vllm", "serve", "m", "--port", "{port}"]}))
    assert cfg["models"]["served"]["serve"]["port"] == "auto" and cfg["models"]["served"]["serve"]["ready_timeout_s"] == 600
    with pytest.raises(ConfigError, match=r"models\.served\.serve\.command: with port: auto"):
        checked(served({"command": ["vllm", "serve", "m"]}))
    with pytest.raises(Exception, match="serve"):
        checked(served({"command": ["vllm", "{port}"], "port": "any"}))


@pytest.mark.parametrize("device, hint", [("gpu", "cuda"), ("GPU:1", "cuda:1"), ("cuda0", "cuda:0"), ("CPU", "cpu"),
                                          ("tpu", None), ("cuda:x", None)])
def test_a_device_the_backend_does_not_run_on_is_refused(device, hint):
    """Issue 43, 6: device gpu (a typo of cuda) passed the check, was routed to a partition and failed
    in torch inside the generation job."""
    problems = _problems(lambda c: c["models"]["tiny"].update(device=device))
    assert problems == [f"models.tiny.device: {device!r} is not a device the transformers backend runs on: cpu, "
                        f"cuda, cuda:N, mps, auto (N = the GPU's index)" + (f" (did you mean {hint}?)" if hint else "")]


@pytest.mark.parametrize("device", ["cpu", "cuda", "cuda:3", "mps", "auto"])
def test_the_devices_the_backend_runs_on_pass(device):
    checked(lambda c: c["models"]["tiny"].update(device=device))


def test_a_folder_that_holds_no_model_is_refused(tmp_path):
    """Issue 43, 6: path: /tmp (a folder, but not a model) failed in the tokenizer inside the job. The
    check reads the folder as the backend loads it: config.json, weights, tokenizer files."""
    src = Path(MODEL_DIR["path"])

    def problem(folder):
        return _problems(lambda c: c["models"]["tiny"].update(path=str(folder)))

    assert problem(tmp_path) == [f"models.tiny.path: {tmp_path} is not a model checkpoint directory: it has no "
                                 f"config.json (give the folder that save_pretrained or a hub download wrote, or "
                                 f"hub: <id>)"]
    (tmp_path / "m.Q4_0.gguf").write_bytes(b"GGUF")
    assert problem(tmp_path) == [f"models.tiny.path: {tmp_path} holds a GGUF file (m.Q4_0.gguf) but no config.json: a "
                                 f"GGUF model is given with gguf: {tmp_path / 'm.Q4_0.gguf'} (converted once into a "
                                 f"checkpoint by the workflow), not path"]
    model = tmp_path / "model"
    model.mkdir()
    shutil.copy(src / "config.json", model)
    assert problem(model)[0].endswith("has a config.json but no weights (model.safetensors, model-*-of-*.safetensors "
                                      "or pytorch_model*.bin)")
    shutil.copy(src / "model.safetensors", model)
    assert "has a model but no tokenizer files (tokenizer.json" in problem(model)[0]
    for f in src.iterdir():
        shutil.copy(f, model)
    checked(lambda c: c["models"]["tiny"].update(path=str(model)))
    # and both problems of one model at once, each naming its key
    assert problem(tmp_path / "nothing") == [f"models.tiny.path: directory not found: {tmp_path / 'nothing'}"]
    problems = _problems(lambda c: c["models"]["tiny"].update(path=str(tmp_path), device="gpu"))
    assert [p.split(":")[0] for p in problems] == ["models.tiny.device", "models.tiny.path"]


def test_check_config_command_names_device_and_path_by_file_and_line(tmp_path):
    import subprocess
    import sys

    cfg = tmp_path / "my.yaml"
    cfg.write_text("models:\n  tiny:\n    device: gpu\n    path: /tmp\n")
    r = subprocess.run([sys.executable, "-m", "earnest.cli", "check-config", "--workflow", str(REPO),
                        str(REPO / "tests" / "configs" / "tiny.yaml"), str(cfg)], capture_output=True, text=True,
                       cwd=tmp_path)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert f"{cfg}:3: models.tiny.device: 'gpu' is not a device the transformers backend runs on" in r.stderr
    assert "(did you mean cuda?)" in r.stderr
    assert f"{cfg}:4: models.tiny.path: /tmp is not a model checkpoint directory: it has no config.json" in r.stderr


def _served(block=None, **entry):
    def mutate(c):
        c["models"]["served"] = {"backend": "openai", "model": "m",
                                 "serve": block or {"command": ["vllm", "serve", "m", "--port", "{port}"]}, **entry}
    return mutate


PLANTED = "sk-proj-" + "Zq8" * 12


@pytest.mark.parametrize("mutate, expect", [
    # issue 53.6: a key in the command, the env or the base_url; with the way to pass it
    (_served({"command": ["vllm", "serve", "m", "--port", "{port}", "--api-key", PLANTED]}),
     r"models\.served\.serve\.command\[6\]: --api-key holds a secret .*export it there .*'\{token\}' with identity: api_key"),
    (_served({"command": ["vllm", "serve", "m", "--port", "{port}", f"--api-key={PLANTED}"]}),
     r"models\.served\.serve\.command\[5\]: --api-key holds a secret"),
    (_served({"command": ["srv", "--port", "{port}", f"--header=Authorization: Bearer {PLANTED}"]}),
     r"models\.served\.serve\.command\[3\]: holds what looks like an API key"),
    (_served({"command": ["vllm", "serve", "m", "--port", "{port}"], "env": {"HF_TOKEN": "hf_" + "a" * 30}}),
     r"models\.served\.serve\.env\.HF_TOKEN: HF_TOKEN holds a secret .*export HF_TOKEN="),
    (_served({"command": ["vllm", "serve", "m", "--port", "{port}"], "env": {"EXTRA": PLANTED}}),
     r"models\.served\.serve\.env\.EXTRA: holds what looks like an API key"),
    (lambda c: c["models"].update(api={"backend": "openai", "base_url": f"http://127.0.0.1:8000/v1?api_key={PLANTED}"}),
     r"models\.api\.base_url: holds what looks like an API key .*api_key_env"),
    # issue 53.6: the other inputs the job later failed or misbehaved on
    (_served({"command": ["vllm", "serve", "m", "--port", "{port}"], "health_path": "/health\r\nX: 1"}),
     r"models\.served\.serve\.health_path: a URL path .*control"),
    (_served({"command": ["vllm", "serve", "m", "--port", "{port}"], "env": {"A=B": "1"}}),
     r"models\.served\.serve\.env: 'A=B' is not an environment variable name"),
    (_served({"command": ["vllm", "serve", "m", "--port", "{port}"], "env": {"A": "x\0y"}}),
     r"models\.served\.serve\.env\.A: holds a NUL character"),
    (_served({"command": ["vllm", "serve", "m\0x", "--port", "{port}"]}),
     r"models\.served\.serve\.command\[2\]: holds a NUL character"),
    (_served({"command": ["vllm", "serve", "m", "--port", "{port}"], "host": "10.1.2.3"}),
     r"models\.served\.serve\.host: '10\.1\.2\.3' is not this machine's loopback"),
    (_served({"command": ["vllm", "serve", "m", "--port", "{port}"], "host": "0.0.0.0"}),
     r"models\.served\.serve\.host: '0\.0\.0\.0' is not this machine's loopback"),
    (_served(base_url="http://127.0.0.1:8000/v1"), r"models\.served: has both serve .* and base_url"),
    (lambda c: c["models"]["tiny"].update(serve={"command": ["x", "{port}"]}),
     r"models\.tiny\.serve: only an openai backend entry starts a server"),
    (_served({"command": ["vllm", "serve", "m", "--port", "{port}"], "identity": "model"}),
     r"models\.served\.serve\.command: identity: model needs the job's token as '\{token\}'"),
])
def test_issue_53_bad_serve_inputs_are_refused_at_check_time(mutate, expect):
    problems = _problems(mutate)
    assert any(re.search(expect, p) for p in problems), problems
    assert not any(PLANTED in p for p in problems), problems   # the secret is not repeated


def test_two_models_on_one_fixed_port_are_refused():
    def mutate(c):
        for name in ("a", "b"):
            c["models"][name] = {"backend": "openai", "model": name,
                                 "serve": {"command": ["vllm", "serve", name, "--port", "{port}"], "port": 8011}}
    problems = _problems(mutate)
    assert any(p.startswith("models.b.serve.port: port 8011 is also models.a.serve.port") for p in problems), problems


def test_the_token_and_a_key_from_the_environment_pass():
    checked(_served({"command": ["vllm", "serve", "m", "--port", "{port}", "--api-key", "{token}"],
                     "identity": "api_key", "env": {"TOKENIZERS_PARALLELISM": "false", "VLLM_API_KEY": "{token}"}},
                    api_key_env="OPENAI_API_KEY"))


def test_a_sandbox_python_too_old_for_the_worker_is_refused_at_check_time(tmp_path):
    """Issue 53.6: sandbox.python 2.7 passed the check; the scoring job then failed. Checked with a
    program that answers the version probe as Python 2.7 does (every machine), and with a real
    Python 2.7 where there is one."""
    fake = tmp_path / "python2.7"
    fake.write_text('#!/bin/sh\nprintf "%s\\n2.7\\n" "$0"\n')     # sys.executable, then the version
    fake.chmod(0o755)
    olds = [str(fake), *(str(p) for p in Path.home().glob(".pyenv/versions/2.7*/bin/python2.7"))]
    for old in olds:
        problems = _problems(lambda c: c.update(sandbox={"python": old}))
        assert any(p.startswith(f"sandbox.python: '{old}' is Python 2.7; the sandbox's worker needs Python 3.9")
                   for p in problems), problems


@pytest.mark.parametrize("mutate, fix", [
    (lambda c: c["stats"].update(resamples="many"), "; write a whole number, e.g. 12"),
    (lambda c: c["stats"].update(resamples=0), "; write a value of at least 1"),
    (lambda c: c.update(models=["tiny"]), "; write a mapping: 'key: value' lines indented under the key"),
    (lambda c: c.update(power={"templates": []}), "; give at least 1 item, or leave the key out for its default"),
    (lambda c: c.update(fidelity="exact"), "; write one of these"),
])
def test_schema_messages_say_what_to_write(mutate, fix):
    """Issue 55.4: a wrong type, a value out of range, an empty list or an unknown choice named the key
    and what was wrong, not what to write instead."""
    with pytest.raises(ConfigError) as err:
        checked(mutate)
    assert fix in str(err.value), str(err.value)


def test_a_config_file_yaml_cannot_read_is_named_with_the_fix(tmp_path):
    """Issue 55.4: a tab in the indentation (Snakemake's reader says only "not valid JSON or YAML")."""
    from earnest.config import check_config_files

    bad = tmp_path / "c.yaml"
    bad.write_text("stats:\n  seed: 1\n\tresamples: 4\n")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(bad))}:3: invalid YAML \(.*\); indent with spaces"):
        check_config_files([bad])
    bad.write_text("stats: [1, 2\nseed: 3\n")
    with pytest.raises(ConfigError, match=r"invalid YAML \(.*\); check that line and the one before"):
        check_config_files([bad])
