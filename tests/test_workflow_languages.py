"""The workflow with gsm_symbolic.languages (issue 44.5) on the tiny random model: an English-only
config plans no language job; adding French runs its items, generations, scoring and the
cross-lingual GLMM; adding Hindi afterwards plans only Hindi's jobs and the cross-lingual job."""

from __future__ import annotations

import copy

import pandas as pd
import pytest
import yaml

from test_workflow import REPO, planned, snakemake
from tinymodel import build_tiny_model

BASE = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
BASE["gsm_symbolic"].update(instantiator="earnest", templates=[0, 1, 2, 3])
BASE["experiments"]["ex2_prompts"] = []
BASE["statform"]["enabled"] = False
BASE["sensitivity"]["enabled"] = False
LANGUAGE_RULES = {"language_items", "language_generate", "language_score", "language_glmm1", "cross_lingual"}


def config(languages):
    cfg = copy.deepcopy(BASE)
    if languages is not None:
        cfg["gsm_symbolic"]["languages"] = languages
    return cfg


def targets(languages):
    others = [x for x in languages if x != "eng"]
    out = ["results/tables/languages/cross_lingual.md", "results/figures/languages/variant_effect_by_language.png"]
    out += [f"results/tables/languages/published_{x}.md" for x in others]
    out += [f"results/languages/{x}/generations/tiny/gsm/{d}.parquet"
            for x in others for d in ("gsm_base", "gsm_variants")]
    return out


@pytest.fixture(scope="module")
def french_run(tmp_path_factory):
    wd = tmp_path_factory.mktemp("wf_lang")
    build_tiny_model(wd / "tiny-model")
    proc = snakemake(wd, config(["eng", "fra"]), *targets(["eng", "fra"]))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return wd


def test_english_only_plans_no_language_job(tmp_path):
    build_tiny_model(tmp_path / "tiny-model")
    jobs = planned(snakemake(tmp_path, config(None), "-n"))
    assert jobs and not (set(jobs) & LANGUAGE_RULES)


@pytest.mark.slow
def test_french_end_to_end(french_run):
    wd = french_run
    items = pd.read_parquet(wd / "results/languages/fra/data/gsm_variants.parquet")
    assert set(items["language"]) == {"fra"} and set(items["numbers"]) == {"shared", "own"}
    english = pd.read_parquet(wd / "results/data/gsm_variants.parquet")
    m = items.merge(english, on="item_id", suffixes=("", "_eng"))
    assert (m.loc[m["numbers"] == "shared", "answer"] == m.loc[m["numbers"] == "shared", "answer_eng"]).all()
    scored = pd.read_parquet(wd / "results/languages/fra/scored/tiny/gsm/gsm_base.parquet")
    assert len(scored) == 4
    md = (wd / "results/tables/languages/cross_lingual.md").read_text(encoding="utf-8")
    assert "French" in md and "English" in md
    note = (wd / "results/tables/languages/published_fra.md").read_text(encoding="utf-8")
    assert "No published GSM-Symbolic numbers exist for language 'fra'" in note
    # issue 51: the exclusion table (French and English items pass their checks), the columns of the
    # table, the provenance note, and each answer's prompt checked against the context
    excluded = pd.read_csv(wd / "results/tables/languages/excluded_items.csv")
    assert list(excluded.columns) == ["language", "dataset", "item_id", "template_id", "reason", "detail", "kept"]
    assert excluded.empty
    assert "Items left out" in md and "Answers in the language (%)" in md and "Prompt mode" in md
    assert "French from the package's dan templates" in md
    context = pd.read_csv(wd / "results/languages/fra/generations/tiny/gsm/gsm_base.context.tsv", sep="\t")
    assert list(context["item_id"]) == list(scored["item_id"]) and (context["shots"] == 8).all()
    assert (context["prompt_tokens"] + context["max_new_tokens"] <= context["context"]).all()


@pytest.mark.slow
def test_per_language_glmm1_jobs_give_the_one_job_table(french_run):
    """Each language's GLMM 1 is its own job; the cross-lingual job's table is the one its own fits
    of every language gave before the fits were jobs of their own."""
    from earnest.gsm.languages import cross_lingual_input, run_cross_lingual

    wd = french_run
    for x in ("eng", "fra"):
        assert (wd / f"results/languages/{x}/glmm1/tiny/gsm.parquet").exists()
    scored = {x: [pd.read_parquet(wd / (f"results/scored/tiny/gsm/{d}.parquet" if x == "eng" else
                                        f"results/languages/{x}/scored/tiny/gsm/{d}.parquet"))
                  for d in ("gsm_base", "gsm_variants")] for x in ("eng", "fra")}
    stats = BASE["stats"]
    _, glmm1 = run_cross_lingual(cross_lingual_input(scored), stats["resamples"], stats["seed"],
                                 alpha=stats["alpha"])
    got = (wd / "results/tables/languages/glmm1_by_language.csv").read_text(encoding="utf-8")
    assert got == glmm1.to_csv(index=False)


@pytest.mark.slow
def test_adding_a_language_plans_only_its_jobs(french_run):
    jobs = planned(snakemake(french_run, config(["eng", "fra", "hin"]), "-n", *targets(["eng", "fra", "hin"])))
    # Hindi's items, generations and scores (two datasets), its GLMM 1 (one model); English's and
    # French's GLMM 1 jobs are not planned again, only the cross-lingual job that takes them all
    assert jobs == {"language_items": 2, "language_generate": 2, "language_score": 2, "language_glmm1": 1,
                    "cross_lingual": 1}


def test_a_language_without_a_prompt_stops_the_run(tmp_path):
    proc = snakemake(tmp_path, config(["eng", "pol"]), "-n")
    assert proc.returncode != 0
    assert "no 'gsm' prompt is built for language 'pol'" in proc.stdout + proc.stderr


def test_multilingual_config_plans_the_study(tmp_path):
    """config/multilingual.yaml: four models x twelve other languages x two datasets, GLMM 1 per model and
    language (English's too), planned without weights."""
    import subprocess
    import sys

    from helpers import child_env

    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory",
                           str(tmp_path), "--configfile", str(REPO / "config" / "multilingual.yaml"), "-n"],
                          capture_output=True, text=True, timeout=1800, env=child_env())
    jobs = planned(proc)
    # three models: gemma-2-9b-it left out, its sliding window shorter than these prompts (issue 52's plan)
    assert jobs["language_items"] == 24 and jobs["language_generate"] == 72 and jobs["language_score"] == 72
    assert jobs["language_glmm1"] == 39 and jobs["cross_lingual"] == 1 and jobs["generate"] == 6
