"""The GSM-Symbolic workflow with ``backend: openai`` against a local OpenAI-compatible server:
generation, scoring and the bootstrap GLMMs end to end; then a run killed with kill -9 mid-way
that the same command, run again, finishes."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from helpers import child_env
from openai_server import FakeOpenAI

REPO = Path(__file__).resolve().parents[1]
TINY = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
SUMMARIES = [f"results/stats/all/glmm{g}/api/gsm/summary.parquet" for g in (1, 2)]


def _config(url: str, **generation) -> dict:
    cfg = {k: v for k, v in TINY.items() if k != "models"}
    cfg["models"] = {"api": {"backend": "openai", "base_url": url, "model": "served-model", "concurrency": 2,
                             "max_retries": 1, "timeout_s": 20, "backoff_s": 0.01, "max_backoff_s": 0.05}}
    cfg["experiments"] = {"ex1_prompt": "gsm", "ex2_prompts": [], "ex2_models": []}
    cfg["statform"] = {**cfg["statform"], "enabled": False}   # its models are the tiny config's, not "api"
    cfg["generation"] = {**cfg["generation"], **generation}
    return cfg


def _cmd(workdir: Path, config: dict, *targets: str) -> list[str]:
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(workdir),
            "--configfile", str(path), "-c2", *targets]


def _run(workdir: Path, config: dict, *targets: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(_cmd(workdir, config, *targets), capture_output=True, text=True, timeout=900,
                          env=child_env())
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return proc


def _answers(workdir: Path):
    """The server's answers: the gold answer for about two thirds of the questions, gold + 1 for the
    rest (chosen by a hash of the question), so both outcomes occur in every template."""
    items = pd.concat([pd.read_parquet(workdir / f"results/data/{d}.parquet") for d in ("gsm_base", "gsm_variants")])
    gold = dict(zip(items.question, items.answer))

    def answer(prompt: str) -> str:
        question = prompt.rsplit("\nQ: ", 1)[1].split("\nA:", 1)[0]
        value = float(gold[question])
        if hashlib.sha256(question.encode()).digest()[0] % 3 == 0:
            value += 1
        return f" {question[:20]} ... so the answer is {value:g}. The final answer is {value:g}.\n\nQ: next question"
    return answer, gold


@pytest.mark.slow
def test_gsm_workflow_with_the_openai_backend(tmp_path):
    _run(tmp_path, _config("http://127.0.0.1:9/v1"), "results/data/gsm_base.parquet",
         "results/data/gsm_variants.parquet")
    answer, gold = _answers(tmp_path)
    with FakeOpenAI(answer=answer) as srv:
        _run(tmp_path, _config(srv.url), *SUMMARIES)
        n_requests = len(srv.received)
    assert n_requests == len(gold) == 3 + 3 * 2
    assert all(r["path"] == "/v1/completions" and r["body"]["model"] == "served-model" for r in srv.received)
    # the prompt format's stop strings (formats.yaml) travel with every request
    assert all("\nQ:" in r["body"]["stop"] for r in srv.received)
    for ds, n in (("gsm_base", 3), ("gsm_variants", 6)):
        gen = pd.read_parquet(tmp_path / f"results/generations/api/gsm/{ds}.parquet")
        assert len(gen) == n and gen.item_id.is_unique and not gen.stop_reason.str.startswith("error").any()
        assert not gen.response.str.contains("next question").any()
        scored = pd.read_parquet(tmp_path / f"results/scored/api/gsm/{ds}.parquet")
        expected = [hashlib.sha256(q.encode()).digest()[0] % 3 != 0 for q in
                    pd.read_parquet(tmp_path / f"results/data/{ds}.parquet").set_index("item_id")
                    .loc[scored.item_id, "question"]]
        assert scored.correct.astype(bool).tolist() == expected
    for path in SUMMARIES:
        summary = pd.read_parquet(tmp_path / path)
        assert len(summary) and (summary.n_resamples == TINY["stats"]["resamples"]).all()


@pytest.mark.slow
def test_kill_9_of_snakemake_then_the_same_command_finishes(tmp_path):
    """docs/workflow.md, "Rebuilding one result": after a killed Snakemake, running the same command
    again continues (no --unlock)."""
    _run(tmp_path, _config("http://127.0.0.1:9/v1"), "results/data/gsm_base.parquet",
         "results/data/gsm_variants.parquet")
    answer, _ = _answers(tmp_path)
    config = _config("", checkpoint_every=1)
    targets = ["results/scored/api/gsm/gsm_variants.parquet", "results/scored/api/gsm/gsm_base.parquet"]
    with FakeOpenAI(answer=answer, delay_s=0.7) as slow:
        config["models"]["api"]["base_url"] = slow.url
        config["models"]["api"]["concurrency"] = 1
        proc = subprocess.Popen(_cmd(tmp_path, config, *targets), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=child_env(), start_new_session=True)
        ckpt = tmp_path / "results/generations/api/gsm"
        deadline = time.time() + 300
        while time.time() < deadline and proc.poll() is None:
            if any(ckpt.glob(".*.partial/part-*.parquet")):
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)   # Snakemake and its jobs, as a crash would
        proc.wait()
    assert any((tmp_path / ".snakemake" / "locks").glob("*.lock"))   # the killed run's locks are left
    with FakeOpenAI(answer=answer) as srv:
        config["models"]["api"]["base_url"] = srv.url
        out = _run(tmp_path, config, *targets)
    assert "stale" in (out.stdout + out.stderr)
    for ds, n in (("gsm_base", 3), ("gsm_variants", 6)):
        assert len(pd.read_parquet(tmp_path / f"results/scored/api/gsm/{ds}.parquet")) == n
