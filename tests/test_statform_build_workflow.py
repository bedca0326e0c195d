"""rules/statform_build.smk under real Snakemake with the scripted OpenAI-compatible server: the
whole construction DAG, the built benchmark evaluated by the StatFormBench rules, and incremental
planning (adding an entry, or editing one, plans only that entry's jobs and the aggregates)."""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from openai_server import ScriptedOpenAI
from sfb_script import ENTRIES, Annotator
from test_workflow import TINY, planned, snakemake

REPO = Path(__file__).resolve().parents[1]
BUILT = "results/statform_build/statformbench.jsonl"
TARGETS = [BUILT, "results/statform_build/stats", "results/statform_build/review", "results/statform/tables"]
FIRST = ["two", "broken", "define"]


def _config(url: str) -> dict:
    cfg = copy.deepcopy(TINY)
    cfg["models"]["annotator"] = {"backend": "openai", "base_url": url, "model": "annotator", "concurrency": 2,
                                  "max_retries": 0, "gsm_symbolic": False}
    cfg["statform_build"] = {"enabled": True, "entries": "entries.jsonl", "cases": "cases", "model": "annotator",
                             "max_new_tokens": 200, "review": {"batch_size": 10, "require": False}}
    cfg["statform"] = {"enabled": True, "models": ["annotator"], "dataset": BUILT, "limit": 0, "resamples": 50,
                       "strategies": {"zero_shot": {"kind": "zero_shot"}}}
    return cfg


def _write_entries(wd: Path, ids, edit=None) -> None:
    rows = [dict(e) for e in ENTRIES if e["entry_id"] in ids]
    for r in rows:
        if edit and r["entry_id"] in edit:
            r["answer"] = edit[r["entry_id"]]
    (wd / "entries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _units(proc) -> set[str]:
    return set(re.findall(r"wildcards: [^\n]*?\bunit=([^,\s]+)", proc.stdout + proc.stderr))


@pytest.mark.slow
def test_dag_evaluation_and_incremental_planning(tmp_path, tiny_model_dir):
    wd = tmp_path
    # the tiny config's model folder must hold a model (config check); its jobs are not run here
    (wd / "tiny-model").symlink_to(tiny_model_dir, target_is_directory=True)
    shutil.copytree(REPO / "resources" / "statform" / "build_example" / "cases", wd / "cases")
    _write_entries(wd, FIRST)
    script = Annotator()
    script.state["fail500"] = False
    with ScriptedOpenAI(script) as srv:
        cfg = _config(srv.url)
        proc = snakemake(wd, cfg, *TARGETS)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-5000:]
        lines = (wd / BUILT).read_text().splitlines()
        ids = {json.loads(x)["sample_id"] for x in lines}
        assert ids == {"two-q1", "two-q2", "broken-q1", "clinic-waits-q1", "clinic-waits-q2"}
        # the evaluation rules read the built benchmark
        main = pd.read_csv(wd / "results" / "statform" / "tables" / "main.csv")
        assert int(main["N"].iloc[0]) == 5
        stages = pd.read_csv(wd / "results" / "statform_build" / "stats" / "stages.csv").set_index("stage")
        assert stages.at["filter", "discarded"] == 1 and stages.at["review", "passed"] == 5
        assert (wd / "results" / "statform_build" / "review" / "batch-001.csv").exists()

        # adding an entry plans only its jobs (and the aggregates over every unit)
        _write_entries(wd, FIRST + ["drops"])
        proc = snakemake(wd, cfg, "-n", *TARGETS)
        jobs = planned(proc)
        assert _units(proc) == {"drops"}
        assert {k: v for k, v in jobs.items() if k.startswith("sfb_")} == {
            "sfb_entry": 1, "sfb_stage": 5, "sfb_review": 1, "sfb_final": 1}  # split, filter, label, variables, rewrite
        # editing one entry replans that entry alone
        _write_entries(wd, FIRST, edit={"broken": "z = 2.108 > 1.645, so we reject H0."})
        proc = snakemake(wd, cfg, "-n", *TARGETS)
        assert _units(proc) == {"broken"}
