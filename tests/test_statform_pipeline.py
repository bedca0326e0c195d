"""StatFormBench end to end: data prep -> generation through the OpenAI backend against a real
HTTP server on 127.0.0.1 -> scoring -> tables, figures, bootstrap intervals and the lme4 GLMM.

The server plays two models from the gold labels of the shipped sample: ``good`` answers with the
reference formulation except for a wrong fine category on every 5th sample; ``weak`` writes the
fine name only, loses the last variable and mislabels the first role, and on every 3rd sample
answers in prose. So every expected number can be counted by hand from the sample.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from openai_server import FakeOpenAI, ScriptedOpenAI

from earnest.statform.analysis import bootstrap_metrics, confusion_frame, strategy_deltas
from earnest.statform.data import load_samples
from earnest.statform.pipeline import analyse, generate, prepare_data, score

RES = Path(__file__).resolve().parents[1] / "resources" / "statform"
SAMPLES = load_samples(RES / "sample.jsonl")
BY_QUESTION = {s.question: (i, s) for i, s in enumerate(SAMPLES)}
WRONG_ROLE = {"predictor": "response", "response": "predictor", "both": "N/A", "N/A": "both"}


def _answer(model: str, i: int, s) -> str:
    variables = {v.id: v.to_dict() for v in s.variables}
    if model == "good":
        cat = s.category if i % 5 else f"{s.category_cg}\\Something Else"
        return "```json\n" + json.dumps({"category": cat, "variables": variables}) + "\n```"
    if i % 3 == 0:
        return "This looks like a statistics question about the data."
    ids = list(variables)
    if ids:
        variables.pop(ids[-1])
        if len(ids) > 1:
            first = variables[ids[0]]
            first["role"] = WRONG_ROLE[first["role"]]
    return "Answer: " + json.dumps({"category": s.category_fg, "variables": variables})


def _oracle(body: dict) -> str:
    """The answer of model ``body["model"]`` to the sample the request asks about."""
    i, s = BY_QUESTION[json.loads(body["messages"][-1]["content"])["question"]]
    return _answer(body["model"], i, s)


def oracle_server() -> ScriptedOpenAI:
    """The real HTTP server playing the models ``good`` and ``weak`` (also used by test_statform_workflow)."""
    return ScriptedOpenAI(_oracle, usage={"prompt_tokens": 100, "completion_tokens": 50})


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("statform")
    counts = prepare_data(RES / "sample.jsonl", RES / "fewshot_pool.jsonl", RES / "taxonomy.yaml",
                          tmp / "samples.parquet", tmp / "pool.parquet", tmp / "taxonomy.yaml")
    assert counts["samples"] == len(SAMPLES)
    scored = []
    with oracle_server() as srv:
        for model in ("good", "weak"):
            cfg = {"backend": "openai", "base_url": srv.url, "model": model, "concurrency": 4,
                   "cache_dir": str(tmp / "cache")}
            strategies = [("zero_shot", {"kind": "zero_shot"})]
            if model == "good":
                strategies.append(("few_shot_2", {"kind": "few_shot", "k": 2, "seed": 3}))
            for name, spec in strategies:
                gen = tmp / f"gen_{model}_{name}.parquet"
                generate(tmp / "samples.parquet", tmp / "pool.parquet", tmp / "taxonomy.yaml", model, cfg, name,
                         spec, 256, gen)
                out = tmp / f"scored_{model}_{name}.parquet"
                score(gen, tmp / "samples.parquet", tmp / "taxonomy.yaml", out)
                scored.append(out)
        sent = len(srv.received)
    return tmp, scored, sent


def _expected():
    """Per-model per-sample expectations counted straight from the sample."""
    rows = []
    for i, s in enumerate(SAMPLES):
        n = len(s.variables)
        rows.append({"model": "good", "item_id": s.sample_id, "correct_cg": True, "correct_fg": i % 5 != 0,
                     "jcv": 1.0, "vri": 1.0})
        if i % 3 == 0:
            rows.append({"model": "weak", "item_id": s.sample_id, "correct_cg": False, "correct_fg": False,
                         "jcv": 0.0, "vri": 0.0})
        else:
            m = max(n - 1, 0)
            jcv = 1.0 if n == 0 else (m / n)
            roles = m - (1 if n > 1 else 0)
            rows.append({"model": "weak", "item_id": s.sample_id, "correct_cg": True, "correct_fg": True,
                         "jcv": jcv, "vri": 1.0 if n == 0 else roles / n})
    return pd.DataFrame(rows)


def test_scores_match_hand_counts(run):
    tmp, scored_paths, sent = run
    scored = pd.concat([pd.read_parquet(p) for p in scored_paths])
    zs = scored[scored["prompt"] == "zero_shot"].merge(_expected(), on=["model", "item_id"], suffixes=("", "_exp"))
    assert len(zs) == 2 * len(SAMPLES)
    for col in ("correct_cg", "correct_fg"):
        assert (zs[col] == zs[f"{col}_exp"]).all(), col
    for col in ("jcv", "vri"):
        assert np.allclose(zs[col], zs[f"{col}_exp"]), col
    weak = zs[zs["model"] == "weak"]
    assert (weak["parse_status"] == "no_json").sum() == len(range(0, len(SAMPLES), 3))
    assert sent == 3 * len(SAMPLES)
    gen = pd.read_parquet(tmp / "gen_good_few_shot_2.parquet")
    assert list(gen.columns) == ["item_id", "model", "prompt", "dataset", "response", "prompt_tokens",
                                 "new_tokens", "stop_reason", "seconds", "prompt_sha256", "fidelity", "decoding"]
    assert (gen["stop_reason"] == "eos").all() and (gen["dataset"] == "statform").all()


def test_bootstrap_intervals_and_paired_deltas(run):
    _, scored_paths, _ = run
    scored = pd.concat([pd.read_parquet(p) for p in scored_paths])
    zs = scored[scored["prompt"] == "zero_shot"]
    a = bootstrap_metrics(zs, ["model"], n_boot=500, seed=7)
    b = bootstrap_metrics(zs, ["model"], n_boot=500, seed=7)
    pd.testing.assert_frame_equal(a, b)
    assert ((a["ci_low"] <= a["estimate"] + 1e-12) & (a["estimate"] <= a["ci_high"] + 1e-12)).all()
    good_cg = a[(a["model"] == "good") & (a["metric"] == "ACC_CG")].iloc[0]
    assert good_cg["estimate"] == 1.0 and good_cg["ci_low"] == 1.0  # no variation, no width
    weak_fg = a[(a["model"] == "weak") & (a["metric"] == "ACC_FG")].iloc[0]
    assert weak_fg["ci_low"] < weak_fg["estimate"] < weak_fg["ci_high"]
    c = bootstrap_metrics(zs, ["model"], n_boot=500, seed=8)
    assert not np.allclose(a["ci_low"], c["ci_low"])
    # the server answers few-shot requests exactly like zero-shot ones: every change is 0
    d = strategy_deltas(scored[scored["model"] == "good"], n_boot=200, seed=1)
    fs = d[d["prompt"] == "few_shot_2"]
    assert fs["is_delta"].all() and np.allclose(fs[["estimate", "ci_low", "ci_high"]], 0.0)


def test_confusion_frame_rows_sum_to_one(run):
    _, scored_paths, _ = run
    scored = pd.concat([pd.read_parquet(p) for p in scored_paths])
    weak = scored[(scored["model"] == "weak") & (scored["prompt"] == "zero_shot")]
    cm = confusion_frame(weak, "coarse")
    assert np.allclose(cm.sum(axis=1), 1.0)
    assert "(unparsed)" in cm.columns
    assert cm["(unparsed)"].sum() > 0
    fine = confusion_frame(weak, "fine", top=5)
    assert len(fine) == 5 and np.allclose(fine.sum(axis=1), 1.0)


@pytest.mark.slow
def test_analysis_tables_figures_and_glmm(run):
    pytest.importorskip("rpy2")
    tmp, scored_paths, _ = run
    files = analyse(scored_paths, tmp / "tables", tmp / "figures", n_boot=300, seed=0)
    names = {p.name for p in files}
    for stem in ("main", "by_source", "category_coarse", "category_fine", "strategies", "glmm_cg", "glmm_fg"):
        assert {f"{stem}.csv", f"{stem}.md", f"{stem}.tex"} <= names, stem
    assert {"confusion_coarse_good.png", "confusion_coarse_good.pdf", "confusion_fine_weak.png"} <= names
    assert (tmp / "figures" / "confusion_coarse_weak.png").read_bytes()[:4] == b"\x89PNG"
    main = pd.read_csv(tmp / "tables" / "main.csv").set_index("model")
    n = len(SAMPLES)
    assert main.at["good", "ACC_CG"] == pytest.approx(100.0)
    assert main.at["good", "ACC_FG"] == pytest.approx(100 * sum(i % 5 != 0 for i in range(n)) / n)
    assert main.at["weak", "unparseable"] == len(range(0, n, 3))
    assert "**100.0 [100.0, 100.0]**" in (tmp / "tables" / "main.md").read_text()
    glmm = pd.read_csv(tmp / "tables" / "glmm_fg.csv")
    assert list(glmm[["model_a", "model_b"]].iloc[0]) == ["good", "weak"]
    assert glmm["p_holm"].between(0, 1).all() and glmm["se"].gt(0).all()
    strategies = pd.read_csv(tmp / "tables" / "strategies.csv")
    assert set(strategies["prompt"]) == {"zero_shot", "few_shot_2"}


def test_confusion_diagonal_holds_every_true_label():
    frame = pd.DataFrame({"category_cg": ["A", "B", "B"], "category_fg": ["a", "b", "b"],
                          "pred_cg": ["B", "B", ""], "pred_fg": ["b", "b", ""], "correct_fg": [False, True, False],
                          "parse_status": ["ok", "ok", "no_json"]})
    cm = confusion_frame(frame, "coarse")
    assert list(cm.index) == ["A", "B"] and list(cm.columns)[:2] == ["A", "B"]
    assert cm.loc["A", "A"] == 0.0 and cm.loc["A", "B"] == 1.0
    assert cm.loc["B", "B"] == 0.5 and cm.loc["B", "(unparsed)"] == 0.5


def test_http_errors_are_not_stored_as_model_answers(tmp_path):
    """HTTP 500s that outlast the retries used to become empty answers scored as model failures;
    now the generation fails after checkpointing the answers it got, and a rerun asks only for the
    missing ones."""
    from earnest.generation import GenerationError

    prepare_data(RES / "sample.jsonl", RES / "fewshot_pool.jsonl", RES / "taxonomy.yaml",
                 tmp_path / "samples.parquet", tmp_path / "pool.parquet", tmp_path / "taxonomy.yaml")
    failing = {s.question for s in SAMPLES[:3]}

    def question(content):
        return json.loads(content)["question"]

    cfg = {"backend": "openai", "model": "m", "concurrency": 2, "max_retries": 1, "backoff_s": 0.01,
           "max_backoff_s": 0.02}
    args = (tmp_path / "samples.parquet", tmp_path / "pool.parquet", tmp_path / "taxonomy.yaml", "m")
    out = tmp_path / "gen.parquet"
    with FakeOpenAI(status_of=lambda c: 500 if question(c) in failing else 200) as srv:
        with pytest.raises(GenerationError, match=r"3 of \d+ requests got no answer \(error:http_500 x3"):
            generate(*args, {**cfg, "base_url": srv.url}, "zero_shot", {"kind": "zero_shot"}, 64, out)
    assert not out.exists()
    with FakeOpenAI() as srv:
        gen = generate(*args, {**cfg, "base_url": srv.url}, "zero_shot", {"kind": "zero_shot"}, 64, out)
        assert sorted(question(r["body"]["messages"][-1]["content"]) for r in srv.received) == sorted(failing)
    assert len(gen) == len(SAMPLES) and gen.item_id.is_unique
    assert (gen.stop_reason == "eos").all() and gen.response.str.startswith("echo:").all()
