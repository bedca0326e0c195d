"""rules/figures.smk and its scripts under real Snakemake: a throw-away Snakefile supplies what
rules/common.smk and rules/stats.smk define (the model and prompt registries, scored paths and a
stats_tables rule that puts a hand-made summaries.csv in place), includes the real rule file,
builds every figure and table, and renders the HTML report with the captions."""

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]

HARNESS = """
import sys
from pathlib import Path
sys.path.insert(0, "{repo}/src")
from earnest.prompts import load_formats

config = {{"stats": {{"alpha": 0.05, "resamples": 200}}}}
report: "{repo}/report/workflow.rst"

BASEDIR = Path("{repo}")
FORMATS = load_formats(BASEDIR / "resources" / "prompts")
EX1_PROMPT = "gsm"
EX2_PROMPTS = ["simple_nl", "simple_code"]
MODELS = {{"SmolLM2-135M": {{}}, "phi-local": {{"paper_name": "phi-2"}}}}
GSM_MODELS = list(MODELS)

wildcard_constraints:
    prompt="gsm|simple_nl|structured_nl|simple_code|structured_code",

def scored_path(model, prompt, dataset):
    return f"results/scored/{{model}}/{{prompt}}/{{dataset}}.parquet"

def scored_files(wildcards=None):
    pairs = [(m, "gsm") for m in MODELS] + [("phi-local", p) for p in EX2_PROMPTS]
    return [scored_path(m, p, d) for m, p in pairs for d in ("gsm_base", "gsm_variants")]

rule stats_tables:
    input: "summaries_in.csv"
    output: directory("results/tables/stats")
    shell: "mkdir -p {{output}} && cp {{input}} {{output}}/summaries.csv"

include: "{repo}/rules/figures.smk"

rule all:
    input: figure_targets()
    default_target: True
"""


def summaries():
    rows = []
    for m, prompts in (("SmolLM2-135M", ["gsm"]), ("phi-local", ["gsm", "simple_nl", "simple_code"])):
        for j, pr in enumerate(prompts):
            for glmm, term in ((1, "variant"), (2, "variant"), (2, "gamma_c")):
                e = -0.6 + 0.2 * j
                rows.append(dict(analysis="all", glmm=glmm, model=m, prompt=pr, term=term, n_resamples=200,
                                 n_clean=190, n_errors=0, n_singular=10, median_log_or=e, odds_ratio=math.exp(e),
                                 ci_low_log=e - 0.4, ci_high_log=e + 0.4, ci_low=math.exp(e - 0.4),
                                 ci_high=math.exp(e + 0.4), p_boot=0.02 if j == 0 else 0.4, acc_base=60.0,
                                 acc_variants=52.0, delta_var=-8.0, n_base=10, n_variants=40))
    return pd.DataFrame(rows)


def write_scored(root: Path):
    rng = np.random.default_rng(0)
    classes = {"gsm": ["", "wrong_answer", "empty_response"], "simple_nl": ["", "wrong_answer", "no_number_found"],
               "simple_code": ["", "wrong_answer", "syntax_error", "none_returned"]}
    pairs = [("SmolLM2-135M", "gsm"), ("phi-local", "gsm"), ("phi-local", "simple_nl"), ("phi-local", "simple_code")]
    for m, p in pairs:
        for ds, n in (("gsm_base", 10), ("gsm_variants", 40)):
            ec = rng.choice(classes[p], size=n)
            df = pd.DataFrame({"item_id": [f"t{i}" for i in range(n)], "model": m, "prompt": p, "dataset": ds,
                               "instance": (np.arange(n) % 4) if ds == "gsm_variants" else -1,
                               "error_class": ec, "correct": ec == ""})
            out = root / "results" / "scored" / m / p / f"{ds}.parquet"
            out.parent.mkdir(parents=True, exist_ok=True)
            df.to_parquet(out)


@pytest.mark.slow
def test_figure_rules_and_report(tmp_path):
    (tmp_path / "Snakefile").write_text(HARNESS.format(repo=REPO))
    summaries().to_csv(tmp_path / "summaries_in.csv", index=False)
    write_scored(tmp_path)
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    run = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", "--quiet"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    figs = tmp_path / "results" / "figures"
    for stem in ("fig1_variant_effect_gsm", "fig1_variant_effect_simple_nl", "fig1_variant_effect_simple_code",
                 "fig2_prompts", "fig3_number_effect", "fig9_errors_nl", "fig10_errors_code",
                 "fig11_errors_code_share"):
        assert (figs / f"{stem}.png").stat().st_size > 5000, stem
        assert (figs / f"{stem}.pdf").exists(), stem
    cmp = pd.read_csv(tmp_path / "results/tables/published_comparison.csv")
    assert cmp["paper_model"].tolist() == ["phi-2"] and cmp["drop_run"].iloc[0] == 8.0
    assert cmp["gsm_variants_run_sd"].notna().all()
    err = pd.read_csv(tmp_path / "results/tables/error_classes.csv", keep_default_na=False)
    assert err["n_responses"].groupby([err.model, err.prompt, err.dataset]).first().sum() == 4 * 50
    assert "wrote" in (tmp_path / "logs/figures/fig2_prompts.log").read_text()
    rep = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "--report", "report.html"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert rep.returncode == 0, rep.stderr[-4000:]
    html = (tmp_path / "report.html").read_text(errors="replace")
    assert "Variant effect with the" in html and "Statistically Earnest" in html
