"""The thin statistics scripts run under Snakemake itself (a throw-away Snakefile), end to end:
scored tables -> GLMM input -> two bootstrap shards -> summary -> tables; and the K-S test. Each rule
passes every param its script reads, as the workflow's rules do (the scripts have no defaults)."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from earnest.stats.simulate import simulate_glmm_input
from helpers import GLMM_SHARD_RULES

SCRIPTS = Path(__file__).resolve().parents[1] / "workflow" / "scripts"

SNAKEFILE = """
rule all:
    input: "tables", "ks/ks.csv"

rule glmm_input:
    input: scored=["scored/gsm_base.parquet", "scored/gsm_variants.parquet"]
    output: "glmm_input.parquet"
    params: reasoning_only=False, covariate="gamma"
    log: "logs/glmm_input.log"
    script: "{s}/glmm_input.py"

""" + GLMM_SHARD_RULES + """
rule summaries:
    input: summaries=["summary.parquet"]
    output: "summaries.parquet"
    params: prompt_labels={{"gsm": "GSM"}}, alpha=0.05, ex2_models=[]
    log: "logs/summaries.log"
    script: "{s}/summaries.py"

rule tables:
    input: summaries="summaries.parquet", refits=["refits.parquet"], glmm_inputs=["glmm_input.parquet"]
    output: directory("tables")
    params: models=["sim"], prompts=["gsm"], code_prompts=[]
    log: "logs/tables.log"
    script: "{s}/stats_tables.py"

rule ks:
    input: base="items/gsm_base.parquet", variants="items/gsm_variants.parquet"
    output: table="ks/ks.csv", figure="ks/number_counts.png", svg="ks/number_counts.svg"
    params: fidelity="earnest"
    log: "logs/ks.log"
    script: "{s}/ks_test.py"
"""


@pytest.mark.slow
def test_stats_scripts_under_snakemake(tmp_path):
    sim = simulate_glmm_input(20, 5, seed=4, gamma_effect=-0.3)
    scored = pd.DataFrame({"item_id": [f"t{t}-{i}" for i, t in enumerate(sim.template)], "model": sim.model,
                           "prompt": sim.prompt, "dataset": np.where(sim.variant == 1, "gsm_variants", "gsm_base"),
                           "template_id": sim.template, "correct": sim.correct.astype(bool), "gamma": sim.gamma,
                           "error_class": np.where(sim.correct == 1, "", "wrong_answer")})
    (tmp_path / "scored").mkdir()
    (tmp_path / "items").mkdir()
    for ds in ("gsm_base", "gsm_variants"):
        scored[scored.dataset == ds].to_parquet(tmp_path / "scored" / f"{ds}.parquet")
    rng = np.random.default_rng(0)
    pd.DataFrame({"question": [f"Tom has {n} apples and {n + 3} pears." for n in rng.integers(1, 30, 50)]}
                 ).to_parquet(tmp_path / "items" / "gsm_base.parquet")
    pd.DataFrame({"question": [f"Tom has {n} apples and {n + 3} pears." for n in rng.integers(10, 90, 200)]}
                 ).to_parquet(tmp_path / "items" / "gsm_variants.parquet")
    (tmp_path / "Snakefile").write_text(SNAKEFILE.format(s=SCRIPTS, engine="laplace"))
    run = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", "--quiet"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    summary = pd.read_parquet(tmp_path / "summary.parquet")
    assert set(summary.term) == {"variant", "gamma_c"} and (summary.n_resamples == 4).all()
    # the laplace engine made the fits, and two of its resamples were checked against lme4
    assert (summary.engine == "laplace").all() and (summary.engine_check_resamples == 2).all()
    assert (summary.engine_check_warning == "").all() and summary.engine_check_max_diff.notna().all()
    assert "Fitted by GLMM 2: the laplace engine, checked against lme4 on 2 resamples" in \
        (tmp_path / "tables" / "glmm2_gamma_c.md").read_text()
    assert (tmp_path / "tables" / "glmm2_gamma_c.tex").exists()
    table = pd.read_parquet(tmp_path / "summaries.parquet")
    assert set(table.prompt_label) == {"GSM"} and "significant_uncorrected" in table and "p_holm" in table
    ks = pd.read_csv(tmp_path / "ks" / "ks.csv")
    assert ks["p"].iloc[0] < 0.01 and (tmp_path / "ks" / "number_counts.pdf").exists()
    assert "<svg" in (tmp_path / "ks" / "number_counts.svg").read_text()[:2000]     # Figure 8 as the report shows it
    assert "shard 2/2" in (tmp_path / "logs" / "shard-1.log").read_text()
