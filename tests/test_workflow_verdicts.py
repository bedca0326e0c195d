"""The workflow's statistics on answers with known effects (issue 50): three models served by a real
local OpenAI-compatible server answer a release file of 30 templates x (1 + 10) questions, each
question right or wrong by a hash of (model, question) at a known rate:

* ``clear``: 90% on GSM-Base, 40% on GSM-Variants, a clear drop;
* ``null``: 70% on both, no effect;
* ``ceiling``: every GSM-Base answer right, 80% on GSM-Variants: a real drop at the accuracy ceiling
  (complete separation in the data: the rule before issue 50 called it degenerate).

The answers go through the workflow's own rules (generation, scoring, GLMM input, bootstrap shards,
summaries, the paper's tables), and the published variant-effect table must carry the verdicts the
truth calls for; Fisher's exact test on the pooled 2x2 tables agrees on the same answers.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from helpers import child_env
from openai_server import ScriptedOpenAI

REPO = Path(__file__).resolve().parents[1]
TINY = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
RATES = {"clear": (0.90, 0.40), "null": (0.70, 0.70), "ceiling": (1.0, 0.80)}
TEMPLATES, VARIANTS = 30, 10


def _release(path: Path) -> None:
    """A release file in the official schema: template t's original asks for t + 7 apples, instance k
    for t + k + 20 (gold answers differ, so a question names its own answer)."""
    with path.open("w", encoding="utf-8") as f:
        for t in range(TEMPLATES):
            for k in range(VARIANTS):
                f.write(json.dumps({
                    "id": t, "instance": k, "original_id": 1000 + t,
                    "question": f"Template {t}, variant {k}: Ana has {t + k + 20} apples. How many apples has she?",
                    "answer": f"She has {t + k + 20} apples.\n#### {t + k + 20}",
                    "original_question": f"Template {t}: Ben has {t + 7} pears. How many pears has he?",
                    "original_answer": f"He has {t + 7} pears.\n#### {t + 7}"}) + "\n")


def _config(tmp: Path, url: str) -> dict:
    cfg = {k: v for k, v in TINY.items() if k not in ("models",)}
    cfg["gsm_symbolic"] = {"source": "jsonl", "jsonl": str(tmp / "release.jsonl"), "templates": list(range(TEMPLATES)),
                           "variants": VARIANTS, "seed": 7}
    cfg["models"] = {name: {"backend": "openai", "base_url": url, "model": name, "concurrency": 4, "max_retries": 1,
                            "timeout_s": 30, "backoff_s": 0.01, "max_backoff_s": 0.05} for name in RATES}
    cfg["experiments"] = {"ex1_prompt": "gsm", "ex2_prompts": [], "ex2_models": []}
    cfg["stats"] = {**cfg["stats"], "resamples": 200, "shards": 1, "engine": "laplace", "check_resamples": 0}
    cfg["statform"] = {**cfg["statform"], "enabled": False}
    cfg["sensitivity"] = {"enabled": False}
    cfg["power"] = {**cfg["power"], "enabled": False}
    cfg["compare"] = {**cfg.get("compare", {}), "enabled": False}
    cfg["ex4"] = {"enabled": False}
    return cfg


def _run(workdir: Path, config: dict, *targets: str) -> None:
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory",
                           str(workdir), "--configfile", str(path), "-c2", *targets],
                          capture_output=True, text=True, timeout=1800, env=child_env())
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]


def _right(model: str, question: str, base: bool) -> bool:
    u = int.from_bytes(hashlib.sha256(f"{model}|{question}".encode()).digest()[:4], "big") / 2**32
    return u < RATES[model][0 if base else 1]


@pytest.mark.slow
def test_published_verdicts_on_answers_with_known_effects(tmp_path):
    from scipy.stats import fisher_exact

    _release(tmp_path / "release.jsonl")
    _run(tmp_path, _config(tmp_path, "http://127.0.0.1:9/v1"), "results/data/gsm_base.parquet",
         "results/data/gsm_variants.parquet")
    items = pd.concat([pd.read_parquet(tmp_path / f"results/data/{d}.parquet") for d in ("gsm_base", "gsm_variants")])
    gold = {q: (float(a), d == "gsm_base") for q, a, d in zip(items.question, items.answer, items.dataset)}

    def respond(body):
        question = body["prompt"].rsplit("\nQ: ", 1)[1].split("\nA:", 1)[0]
        value, base = gold[question]
        if not _right(body["model"], question, base):
            value += 1
        return f" So the answer is {value:g}. The final answer is {value:g}."

    with ScriptedOpenAI(respond) as srv:
        _run(tmp_path, _config(tmp_path, srv.url), "results/stats/summaries.parquet", "results/tables/stats")
    s = pd.read_parquet(tmp_path / "results/stats/summaries.parquet")
    v = s[(s.analysis == "all") & (s.glmm == 1) & (s.term == "variant") & (s.prompt == "gsm")].set_index("model")
    assert v.loc["clear", "verdict"] == "significant" and v.loc["clear", "odds_ratio"] < 0.3
    assert v.loc["null", "verdict"] == "not significant"
    # the ceiling: no wrong GSM-Base answer at all, yet a real drop: estimable and significant
    assert v.loc["ceiling", "acc_base"] == 100.0
    assert not v.loc["ceiling", "degenerate"] and v.loc["ceiling", "verdict"] == "significant"
    assert 0 < v.loc["ceiling", "odds_ratio"] < 1 and v.loc["ceiling", "ci_high"] < 1
    assert "penalised" in v.loc["ceiling", "fit_problems"]
    # Fisher's exact test on the pooled 2x2 table of the same answers says the same
    scored = pd.concat([pd.read_parquet(p) for p in (tmp_path / "results/scored").glob("*/gsm/*.parquet")])
    for model, want in (("clear", True), ("null", False), ("ceiling", True)):
        m = scored[scored.model == model]
        tab = m.groupby("dataset")["correct"].agg(["sum", "count"])
        p = fisher_exact([[tab.loc[d, "sum"], tab.loc[d, "count"] - tab.loc[d, "sum"]]
                          for d in ("gsm_base", "gsm_variants")])[1]
        assert bool(p < 0.05) is want, (model, p)
    # the published table (Table 2's layout) shows those verdicts: the significant P values bold, no mark
    table = (tmp_path / "results/tables/stats/glmm1_variant_gsm.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip(): line for line in table.splitlines() if line.startswith("|")}
    assert "**" in rows["clear"] and "**" in rows["ceiling"] and "**" not in rows["null"]
    assert "§" not in rows["ceiling"]
