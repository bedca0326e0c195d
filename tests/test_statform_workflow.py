"""The four StatFormBench workflow scripts under real Snakemake, with the snakemake.input/params/
output names their docstrings promise (a throwaway Snakefile; the project's rules live elsewhere).
Generation goes through the OpenAI backend to the test's HTTP server on 127.0.0.1."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from helpers import child_env
from test_statform_pipeline import oracle_server

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "workflow" / "scripts"
RES = ROOT / "resources" / "statform"

SNAKEFILE = """
MODELS = {{"good": {{"backend": "openai", "base_url": "{url}", "model": "good", "concurrency": 2}},
          "weak": {{"backend": "openai", "base_url": "{url}", "model": "weak", "concurrency": 2}}}}

rule all:
    input: "out/tables", "out/figures"

rule data:
    input: dataset="{res}/sample.jsonl", pool="{res}/fewshot_pool.jsonl", taxonomy="{res}/taxonomy.yaml"
    params: limit=12, seed=0
    output: samples="out/samples.parquet", pool="out/pool.parquet", taxonomy="out/taxonomy.yaml"
    log: "logs/data.log"
    script: "{scripts}/statform_data.py"

rule generate:
    input: samples="out/samples.parquet", pool="out/pool.parquet", taxonomy="out/taxonomy.yaml",
           template="{res}/prompts/formulation_zero_shot.txt"
    params: model=lambda w: w.model, model_cfg=lambda w: MODELS[w.model], strategy="zero_shot",
            strategy_cfg={{"kind": "zero_shot"}}, max_new_tokens=256, checkpoint_every=4, fidelity="earnest"
    output: "out/gen/{{model}}.parquet"
    log: "logs/gen_{{model}}.log"
    script: "{scripts}/statform_generate.py"

rule score:
    input: generations="out/gen/{{model}}.parquet", samples="out/samples.parquet", taxonomy="out/taxonomy.yaml"
    params: fidelity="earnest", max_chars=1000000
    output: "out/scored/{{model}}.parquet"
    log: "logs/score_{{model}}.log"
    script: "{scripts}/statform_score.py"

rule analysis:
    input: samples="out/samples.parquet", scored=expand("out/scored/{{model}}.parquet", model=list(MODELS))
    params: main_strategy="zero_shot", baseline="zero_shot", n_boot=200, seed=1, min_category_n=0, top_fine=15,
            glmm=False, fidelity="earnest", strategies={{"zero_shot": {{"kind": "zero_shot"}}}}
    output: tables=directory("out/tables"), figures=directory("out/figures")
    log: "logs/analysis.log"
    script: "{scripts}/statform_analysis.py"
"""


@pytest.mark.slow
def test_scripts_under_snakemake(tmp_path):
    if shutil.which("snakemake") is None:
        pytest.skip("snakemake is not installed")
    with oracle_server() as srv:
        (tmp_path / "Snakefile").write_text(SNAKEFILE.format(url=srv.url, res=RES, scripts=SCRIPTS), encoding="utf-8")
        env = child_env()
        proc = subprocess.run([shutil.which("snakemake"), "--cores", "1", "--quiet", "rules", "all"], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=600)
        logs = "".join(p.read_text() for p in (tmp_path / "logs").glob("*.log")) if (tmp_path / "logs").exists() else ""
        assert proc.returncode == 0, proc.stderr[-4000:] + logs[-4000:]
    main = pd.read_csv(tmp_path / "out" / "tables" / "main.csv").set_index("model")
    assert main.at["good", "ACC_CG"] == pytest.approx(100.0) and main.at["good", "N"] == 12
    # limit 12: a seeded sample stratified by source and category; weak answers every 3rd sample of the file in prose
    from earnest.statform.data import stratified_limit
    from test_statform_pipeline import SAMPLES

    picked = {s.sample_id for s in stratified_limit(SAMPLES, 12, seed=0)}
    assert main.at["weak", "unparseable"] == sum(1 for i, s in enumerate(SAMPLES) if i % 3 == 0 and s.sample_id in picked)
    assert (tmp_path / "out" / "figures" / "confusion_coarse_weak.pdf").exists()
