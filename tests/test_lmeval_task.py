"""The lm-evaluation-harness task earnest ships (resources/lm_eval/gsm_symbolic), loaded by lm-eval
0.4.13's own task loader (`--include_path`): every prompt it renders is byte for byte earnest's GSM
prompt for the same question, the docs keep the template ids, the stop string and the answer filters
are earnest's, and a real `lm_eval run --log_samples` with the tiny model writes samples that
earnest's reader maps to templates and variants without any hand-written YAML.

Needs the optional `lm_eval==0.4.13` (scripts/setup.sh --lm-eval); skipped without it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from earnest.gsm.datasets import package_base_items, package_variant_items
from earnest.gsm.prompts import load_formats

lm_eval = pytest.importorskip("lm_eval")

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "resources" / "lm_eval" / "gsm_symbolic"
TEMPLATES, VARIANTS = [0, 1, 2], 2


def _release(path: Path) -> None:
    """Rows in the official release's format (apple/GSM-Symbolic main/test.jsonl) from earnest's
    package items, with the stray whitespace a release question may carry."""
    base = package_base_items(TEMPLATES).set_index("template_id")
    rows = []
    for t in TEMPLATES:
        for _, v in package_variant_items(t, VARIANTS, 7).iterrows():
            rows.append({"id": t, "instance": int(v.instance), "question": v.question + "\n",
                         "answer": f"Work.\n#### {v.answer}", "original_id": 1000 + t,
                         "original_question": " " + base.at[t, "question"],
                         "original_answer": f"Work.\n#### {base.at[t, 'answer']}"})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture()
def task_dir(tmp_path):
    """The shipped tasks reading a local release file instead of the hub (offline): each local task
    includes the shipped one and overrides only the data source."""
    release = tmp_path / "release.jsonl"
    _release(release)
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    for kind in ("base", "variants"):
        (tasks / f"local_{kind}.yaml").write_text(
            f"include: {SHIPPED / f'gsm_symbolic_{kind}_earnest.yaml'}\ntask: local_gsm_symbolic_{kind}\n"
            f"dataset_path: json\ndataset_name: null\ndataset_kwargs:\n  data_files:\n    test: {release}\n",
            encoding="utf-8")
    return tasks


def _tasks(task_dir):
    from lm_eval.tasks import TaskManager, get_task_dict

    return get_task_dict(["local_gsm_symbolic_base", "local_gsm_symbolic_variants"],
                         TaskManager(include_path=str(task_dir)))


def test_prompts_are_earnest_bytes_and_docs_keep_templates(task_dir):
    gsm = load_formats(REPO / "resources" / "prompts")["gsm"]
    expected = {"local_gsm_symbolic_base": package_base_items(TEMPLATES),
                "local_gsm_symbolic_variants": __import__("pandas").concat(
                    [package_variant_items(t, VARIANTS, 7) for t in TEMPLATES])}
    for name, task in _tasks(task_dir).items():
        task.build_all_requests(limit=None, rank=0, world_size=1)
        items = expected[name]
        assert len(task.instances) == len(items), name
        got = {(i.doc["id"], i.doc["instance"]): i for i in task.instances}
        for _, item in items.iterrows():
            inst = got[(int(item.template_id), int(item.instance))]
            prompt, gen = inst.arguments
            assert prompt == gsm.render(item.question), (name, item.item_id)   # byte for byte
            assert gen["until"] == list(gsm.stop) and gen["do_sample"] is False
            assert task.doc_to_target(inst.doc) == item.answer


@pytest.mark.parametrize("response, strict, flexible", [
    ("Let me see. 3 + 4 = 7. The final answer is 1,234.\n", "1234", "1234"),
    ("The final answer is: $-5.50", "-5.50", "-5.50"),
    ("so 12 and then 30 remain", None, "30"),
])
def test_answer_filters_and_metric(task_dir, response, strict, flexible):
    task = _tasks(task_dir)["local_gsm_symbolic_variants"]
    task.build_all_requests(limit=1, rank=0, world_size=1)
    inst = task.instances[0]
    inst.resps = [response]
    task.apply_filters()
    out = {name: inst.filtered_resps[name] for name in ("strict-match", "flexible-extract")}
    for name, want in (("strict-match", strict), ("flexible-extract", flexible)):
        if want is None:   # no match: lm-eval's regex filter gives its fallback
            assert out[name] == "[invalid]", out
            continue
        doc = {**inst.doc, "answer": f"x #### {want.replace(',', '')}"}
        assert task.process_results(doc, [out[name]])["exact_match"] == 1.0, (name, out)
        doc = {**inst.doc, "answer": "x #### 999999"}
        assert task.process_results(doc, [out[name]])["exact_match"] == 0.0, (name, out)


@pytest.mark.slow
def test_lm_eval_run_with_the_tiny_model_maps_to_templates(task_dir, tiny_model_dir, tmp_path):
    """A real `lm_eval run --log_samples` (hf model, CPU) on the shipped tasks: its samples files read by
    earnest with the base task named, every (template, variant) of the data once."""
    from earnest.readers.lmeval import Mapping, read_samples

    exe = shutil.which("lm_eval") or shutil.which("lm-eval")
    cmd = [exe] if exe else [sys.executable, "-m", "lm_eval"]
    out = tmp_path / "out"
    proc = subprocess.run(cmd + ["run", "--model", "hf", "--model_args", f"pretrained={tiny_model_dir},dtype=float32",
                                 "--device", "cpu", "--include_path", str(task_dir), "--tasks",
                                 "local_gsm_symbolic_base,local_gsm_symbolic_variants", "--gen_kwargs",
                                 "max_gen_toks=8", "--batch_size", "4", "--log_samples", "--output_path", str(out)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    samples = sorted(out.rglob("samples_*.jsonl"))
    assert len(samples) == 2, samples
    rows = read_samples(samples, mapping=Mapping(base_tasks=("local_gsm_symbolic_base",)), filter_name="strict-match")
    assert sorted(set(rows["template"])) == TEMPLATES
    per = rows.groupby(["template", "variant"]).size()
    assert per.xs(0, level="variant").tolist() == [1] * len(TEMPLATES)          # one GSM-Base doc each
    assert per.xs(1, level="variant").tolist() == [VARIANTS] * len(TEMPLATES)   # the variants
    assert set(rows["correct"]) <= {0, 1}


def test_the_shipped_task_is_what_earnest_lm_eval_task_writes(tmp_path):
    """resources/lm_eval/gsm_symbolic is the command's output (earnest mode, the hub at the pinned
    revision): rewriting it changes nothing, so the shipped task never drifts from the prompt files."""
    from earnest.gsm.lmeval_task import write_task

    written = write_task(tmp_path / "task")
    assert sorted(p.name for p in written) == sorted(p.name for p in SHIPPED.iterdir() if p.is_file()
                                                      and p.suffix != ".pyc")
    for path in written:
        assert path.read_bytes() == (SHIPPED / path.name).read_bytes(), path.name


@pytest.mark.parametrize("fidelity", ["earnest", "reference"])
def test_the_written_task_renders_the_modes_bytes_offline(tmp_path, monkeypatch, fidelity):
    """Issue 43.1: `earnest lm-eval-task --release FILE --fidelity MODE` reads a local release (no
    hub: HF_DATASETS_OFFLINE), renders every prompt byte for byte as `earnest prompt gsm Q --fidelity
    MODE` (reference: the untrimmed question and the trailing space) through lm-eval's few-shot
    machinery (8 shots), with the mode's stop strings."""
    from lm_eval.tasks import TaskManager

    from earnest.gsm.lmeval_task import task_names, write_task

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    release = tmp_path / "release.jsonl"
    _release(release)
    write_task(tmp_path / "task", fidelity=fidelity, release=release)
    gsm = load_formats(REPO / "resources" / "prompts", fidelity=fidelity)["gsm"]
    _, base, variants = task_names(fidelity)
    assert base == f"gsm_symbolic_base_{fidelity}" and variants == f"gsm_symbolic_variants_{fidelity}"
    tasks = TaskManager(include_path=str(tmp_path / "task")).load([base, variants])
    tasks = tasks.get("tasks", tasks) if isinstance(tasks, dict) else tasks
    seen = 0
    for name, task in dict(tasks).items():
        task.build_all_requests(limit=None, rank=0, world_size=1)
        assert task.config.num_fewshot == 8, name
        for inst in task.instances:
            prompt, gen = inst.arguments
            assert prompt == gsm.render(inst.doc["question"]), (name, inst.doc["id"], inst.doc["instance"])
            assert gen["until"] == list(gsm.stop)
            seen += 1
    assert seen == len(TEMPLATES) * (1 + VARIANTS)
    if fidelity == "reference":
        assert gsm.render("x").endswith("step. ") and " Q:" in gsm.stop


def test_a_release_that_is_not_a_file_is_named(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "earnest.cli", "lm-eval-task", str(tmp_path / "t"), "--release",
                           str(tmp_path / "missing.jsonl")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "--release:" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_lm_eval_offline_then_earnest_glmm_as_the_docs_say(tiny_model_dir, tmp_path):
    """The documented path end to end with no network: `earnest lm-eval-task --release`, a real
    `lm_eval run` (the tiny model; reference mode, as config/paper.yaml), then the documented
    `earnest glmm` line on its samples, which now names the filter."""
    import os

    from helpers import child_env

    release = tmp_path / "release.jsonl"
    _release(release)
    env = {**child_env(), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    task = tmp_path / "task"
    proc = subprocess.run([sys.executable, "-m", "earnest.cli", "lm-eval-task", str(task), "--fidelity", "reference",
                           "--release", str(release)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    exe = shutil.which("lm_eval") or shutil.which("lm-eval")
    out = tmp_path / "out"
    proc = subprocess.run(([exe] if exe else [sys.executable, "-m", "lm_eval"])
                          + ["run", "--model", "hf", "--model_args", f"pretrained={tiny_model_dir},dtype=float32",
                             "--device", "cpu", "--include_path", str(task), "--tasks", "gsm_symbolic_reference",
                             "--gen_kwargs", "max_gen_toks=8", "--batch_size", "4", "--log_samples",
                             "--output_path", str(out)], capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    samples = sorted(out.rglob("samples_gsm_symbolic_*_reference_*.jsonl"))
    assert len(samples) == 2, samples
    proc = subprocess.run([sys.executable, "-m", "earnest.cli", "glmm", "--lm-eval", *map(os.fspath, samples),
                           "--lm-eval-base-task", "gsm_symbolic_base_reference", "--lm-eval-filter", "strict-match",
                           "--glmm", "1", "--resamples", "20", "--seed", "1", "--engine", "laplace",
                           "--out", str(tmp_path / "glmm")], capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "glmm" / "summary_glmm1.csv").is_file()


@pytest.mark.parametrize("content, why", [(b"", "no records"), (b"not json\n", ":1"),
                                         (b'{"id": 1}\n', "missing field")])
def test_a_release_file_that_is_not_one_is_refused(tmp_path, content, why):
    """Issue 53.6: `earnest lm-eval-task --release` with an empty or non-JSON file exited 0."""
    import subprocess
    import sys

    from helpers import child_env

    bad = tmp_path / "release.jsonl"
    bad.write_bytes(content)
    run = subprocess.run([sys.executable, "-m", "earnest.cli", "lm-eval-task", str(tmp_path / "task"), "--release",
                          str(bad)], capture_output=True, text=True, env=child_env(), timeout=300)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert run.stderr.startswith("earnest lm-eval-task: --release: ") and why in run.stderr, run.stderr
    assert str(bad) in run.stderr, run.stderr     # the file, and its line where there is one
    assert not (tmp_path / "task").exists()


def test_the_release_written_from_the_package_loads_in_lm_eval(tmp_path, monkeypatch):
    """Issue 55.3: the offline route in one command: `earnest lm-eval-task --release-from-package`
    writes the release's rows from the installed templates package beside the task, and lm-eval's
    own loader reads them (no network) into the workflow's items: GSM-Base the originals, GSM-Variants
    the package source's instances, template ids kept."""
    from lm_eval.tasks import TaskManager

    from earnest.gsm.lmeval_task import task_names

    env = {**__import__("helpers").child_env(), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    task = tmp_path / "task"
    # the variants and their seed are the config's gsm_symbolic.variants/seed, which have no default: asked for
    short = subprocess.run([sys.executable, "-m", "earnest.cli", "lm-eval-task", str(task), "--release-from-package",
                            "--templates", "0"], capture_output=True, text=True, env=env, timeout=300)
    assert short.returncode == 2 and "needs --variants and --seed" in short.stderr and not task.exists()
    proc = subprocess.run([sys.executable, "-m", "earnest.cli", "lm-eval-task", str(task), "--release-from-package",
                           "--templates", "0,2", "--variants", "3", "--seed", "7", "--instantiator", "earnest"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (task / "release.jsonl").is_file()
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    _, base, variants = task_names("earnest")
    tasks = TaskManager(include_path=str(task)).load([base, variants])
    tasks = dict(tasks.get("tasks", tasks) if isinstance(tasks, dict) else tasks)
    docs = {name: list(t.test_docs()) for name, t in tasks.items()}
    want_base = package_base_items([0, 2])
    assert [(d["id"], d["question"]) for d in docs[base]] == list(zip(want_base.template_id, want_base.question))
    want = [(t, int(v.instance), v.question) for t in (0, 2)
            for _, v in package_variant_items(t, 3, 7, "earnest").iterrows()]
    assert [(d["id"], d["instance"], d["question"]) for d in docs[variants]] == want
