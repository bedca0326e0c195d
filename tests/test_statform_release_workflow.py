"""The paper's StatFormBench run (config/paper_statform.yaml) under real Snakemake, offline: the release
copied from a local file in the release's schema (ours), fidelity reference (the authors' prompts and
scoring), two models served by the scripted OpenAI-compatible server on 127.0.0.1, three strategies.

``good`` answers every sample with its reference formulation in the layout the authors' prompt asks
for; ``sloppy`` writes the same answer with the category in lower case, which earnest's scoring
accepts and the authors' does not, so the fidelity-sensitivity table must show the two apart."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from openai_server import ScriptedOpenAI
from test_workflow import snakemake

REPO = Path(__file__).resolve().parents[1]
MINI = REPO / "tests" / "data" / "statform_release" / "mini_release.json"
RELEASE = json.loads(MINI.read_text(encoding="utf-8"))
BY_QUESTION = {rec["input"]["question"]: rec for rec in RELEASE.values()}


def _answer(body: dict) -> str:
    asked = body["messages"][-1]["content"]
    inp = json.loads(asked.split("question：\n", 1)[1].rsplit("\n\nPlease output", 1)[0])
    rec = BY_QUESTION[inp["question"]]
    out = rec["output"]
    cat = out["category"] if body["model"] == "good" else out["category"].lower()
    if rec["source"] == "case":
        answer = {"category": cat, "variable": out["variable"], "role": out["role"]}
    else:
        answer = {"category": cat, "variables": out["variable"]}
    return "```json\n" + json.dumps(answer, ensure_ascii=False, indent=2) + "\n```"


@pytest.mark.slow
def test_paper_config_runs_offline_in_reference_mode(tmp_path, monkeypatch):
    monkeypatch.setenv("STATFORM_API_KEY", "test-key")
    cfg = yaml.safe_load((REPO / "config" / "paper_statform.yaml").read_text())
    with ScriptedOpenAI(_answer, usage={"prompt_tokens": 100, "completion_tokens": 50}) as srv:
        template = next(iter(cfg["models"].values()))
        cfg["models"] = {name: {**copy.deepcopy(template), "base_url": srv.url, "model": name, "paper_name": name,
                                "max_retries": 0, "timeout_s": 30} for name in ("good", "sloppy")}
        sf = cfg["statform"]
        sf.update(models=["good", "sloppy"], resamples=50, min_category_n=0,
                  strategies={k: sf["strategies"][k] for k in ("zero_shot", "definitions", "few_shot_2")})
        sf["release"] = {"path": str(MINI)}
        proc = snakemake(tmp_path, cfg, "statform")
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-5000:]
        sent = [r["body"] for r in srv.received if r["body"] is not None]
    tables = tmp_path / "results" / "statform" / "tables"
    main = pd.read_csv(tables / "main.csv").set_index("model")
    assert main.at["good", "N"] == 5 and main.at["good", "ACC_FG"] == pytest.approx(100.0)
    assert main.at["sloppy", "ACC_FG"] == pytest.approx(0.0) and main.at["sloppy", "ACC_CG"] == pytest.approx(0.0)
    assert main.at["sloppy", "JCV"] == pytest.approx(100.0)
    sens = pd.read_csv(tables / "fidelity_sensitivity.csv").set_index(["model", "prompt"])
    assert sens.at[("sloppy", "zero_shot"), "ACC_FG reference"] == pytest.approx(0.0)
    assert sens.at[("sloppy", "zero_shot"), "ACC_FG earnest"] == pytest.approx(100.0)
    tests = pd.read_csv(tables / "strategy_tests.csv")
    assert set(tests["prompt"]) == {"definitions", "few_shot_2"} and tests["p"].isna().all()   # nothing differs
    assert (tables / "truncation.csv").exists() and (tables / "glmm_fg.csv").exists()
    figures = tmp_path / "results" / "statform" / "figures"
    for name in ("dataset_statistics", "category_accuracy", "fewshot"):
        assert (figures / f"{name}.png").exists()
    # the authors' request: their system turn and prompt, temperature 0.2; few-shot turns before the question
    first = sent[0]
    assert first["messages"][0] == {"role": "system", "content": "You are a professional statistician"}
    assert first["temperature"] == pytest.approx(0.2)
    assert any(len(r["messages"]) == 6 for r in sent)   # system + 2 examples x (user, assistant) + the question
