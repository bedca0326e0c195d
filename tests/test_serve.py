"""A server started by the generation job itself (issue 43.4): a real ``transformers serve`` on the CPU.

The lifecycle of ``earnest.backends.serve.serving``: the job starts the model entry's command on a
free port, waits for its health path, sends the requests, and stops the server's whole process group
on success, on an error, on Ctrl-C, on a scheduler's SIGTERM, and (through the parent-death signal)
when the job is killed outright; a server that exits early or never answers is an error naming the
entry and showing its log. The answers through the server are the in-process backend's (greedy) on
the embedded model, and a job killed mid-run resumes from its checkpoint with the same answers.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from earnest.backends import GenerationRequest, load_backend
from earnest.backends.serve import ServerError, check_serve, serving
from earnest.gsm.prompts import load_formats
from helpers import child_env

REPO = Path(__file__).resolve().parents[1]
SERVE = shutil.which("transformers")
needs_serve = pytest.mark.skipif(SERVE is None, reason="no `transformers` command (transformers[serving])")


@pytest.fixture(scope="module")
def embedded_checkpoint(tmp_path_factory) -> Path:
    """The embedded config's model (SmolLM2-135M's GGUF) dequantized once into a checkpoint directory,
    as the workflow converts it (earnest.backends.hf.convert_gguf): what a server loads."""
    import yaml

    from earnest.backends.hf import convert_gguf

    entry = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["models"]
    gguf = next(m["gguf"] for m in entry.values() if m.get("gguf"))
    out = tmp_path_factory.mktemp("smol")
    convert_gguf(gguf, out)
    return out


def _serve_block(model_dir: Path, **extra) -> dict:
    return {"command": [SERVE, "serve", str(model_dir), "--port", "{port}", "--host", "{host}"],
            "ready_timeout_s": 600, **extra}


def _group_alive(pgid: int) -> bool:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                return True
    return False


def _wait_gone(pgid: int, limit: float = 120.0) -> bool:
    """Whether the process group is gone within ``limit`` s (a safety net against a hang, not a measure)."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if not _group_alive(pgid):
            return True
        time.sleep(0.2)
    return False


@pytest.mark.parametrize("block, message", [
    ({}, "serve.command: a non-empty list"),
    ({"command": "vllm serve m"}, "serve.command: a non-empty list"),
    ({"command": ["vllm", "serve", "m"]}, "must take the port as '{port}'"),
    ({"command": ["x", "{port}"], "port": 70000}, "serve.port"),
    ({"command": ["x", "{port}"], "ready_timeout_s": 0}, "serve.ready_timeout_s"),
    ({"command": ["x", "{port}"], "health_path": "health"}, "serve.health_path"),
    ({"command": ["x", "{port}"], "wait": 3}, "serve.wait: unknown key"),
])
def test_a_bad_serve_block_is_named(block, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("{", r"\{")):
        check_serve("models.m", block)


def test_a_server_that_exits_or_never_answers_is_an_error_with_its_log(tmp_path):
    exits = {"command": [sys.executable, "-c", "import sys; print('cannot load the weights'); sys.exit(3)", "{port}"]}
    with pytest.raises(ServerError, match="exited with status 3(.|\n)*cannot load the weights"):
        with serving("m", {"backend": "openai", "serve": exits}, tmp_path / "job.log"):
            pass
    mute = {"command": [sys.executable, "-c", "import os, time; print(os.getpgid(0), flush=True); time.sleep(600)",
                        "{port}"], "ready_timeout_s": 2}
    with pytest.raises(ServerError, match="no answer from .* within ready_timeout_s"):
        with serving("m", {"backend": "openai", "serve": mute}, tmp_path / "job2.log"):
            pass
    pgid = int((tmp_path / "job2.server.log").read_text().splitlines()[1])
    assert _wait_gone(pgid), "the server that never answered was left running"


@needs_serve
@pytest.mark.slow
def test_answers_through_transformers_serve_are_the_in_process_ones(embedded_checkpoint, tmp_path):
    """The embedded model (its GGUF converted once, as the workflow converts it) answers the GSM prompt
    through a started `transformers serve` exactly as in process (greedy), and no server is left."""
    fmt = load_formats()["gsm"]
    questions = ["There are 15 trees in the grove. 6 more are planted. How many trees are there now?",
                 "Olivia has $23. She bought five bagels for $3 each. How much money does she have left?",
                 "A farmer has 12 cows and buys 7 more. How many cows does he have?"]
    reqs = [GenerationRequest(key=f"q{k}", prompt=fmt.render(q), stop=tuple(fmt.stop)) for k, q in enumerate(questions)]
    local = load_backend("smol", {"backend": "transformers", "path": str(embedded_checkpoint), "device": "cpu",
                                  "batch_size": 1})
    want = [(r.response, r.stop_reason) for r in local.generate(reqs, 48)]
    entry = {"backend": "openai", "model": str(embedded_checkpoint), "concurrency": 1, "timeout_s": 600,
             "serve": _serve_block(embedded_checkpoint)}
    with serving("smol", entry, tmp_path / "job.log") as cfg:
        # the cache and the generations table name the command (the port left open), not the port it got
        assert cfg["base_url"].startswith("http://127.0.0.1:") and "--port {port}" in cfg["served_by"]
        backend = load_backend("smol", cfg)
        got = [(r.response, r.stop_reason) for r in backend.generate(reqs, 48)]
        pgid = int(subprocess.run(["ps", "-o", "pgid=", "-p", str(_server_pid(tmp_path / "job.server.log"))],
                                  capture_output=True, text=True).stdout.strip() or 0)
    assert got == want, (got, want)
    assert any(r for r, _ in want), "the embedded model answered nothing: the comparison says little"
    assert backend.describe()["served_by"].startswith(SERVE)
    assert pgid and _wait_gone(pgid), "the server outlived the job"


def _server_pid(log: Path) -> int:
    """The pid of the server whose log this is (its command line names the log's port)."""
    first = log.read_text().splitlines()[0]
    port = first.split("--port ")[1].split()[0]
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"serve" in cmd and port.encode() in cmd:
                return int(entry)
    return 0


JOB = textwrap.dedent("""
    import json, os, sys, time
    sys.path.insert(0, {src!r})
    from earnest.backends.serve import serving
    entry = json.loads(sys.argv[1])
    with serving("m", entry, sys.argv[2]) as cfg:
        print(json.dumps({{"pgid": os.getpgid(0), "base_url": cfg["base_url"]}}), flush=True)
        if sys.argv[3] == "fail":
            raise RuntimeError("the job failed")
        time.sleep(600)
""")


@needs_serve
@pytest.mark.slow
@pytest.mark.parametrize("end", ["fail", "ctrl-c", "sigterm", "sigkill"])
def test_no_server_is_left_however_the_job_ends(tiny_model_dir, tmp_path, end):
    entry = {"backend": "openai", "serve": _serve_block(tiny_model_dir)}
    job = subprocess.Popen([sys.executable, "-c", JOB.format(src=str(REPO / "src")), json.dumps(entry),
                            str(tmp_path / "job.log"), "fail" if end == "fail" else "wait"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(),
                           start_new_session=True)
    line = job.stdout.readline()
    assert line, job.communicate()[1][-3000:]
    pid = _server_pid(tmp_path / "job.server.log")
    assert pid, (tmp_path / "job.server.log").read_text()[-2000:]
    server_group = os.getpgid(pid)
    assert server_group != os.getpgid(job.pid)               # a group of its own: killed as one
    if end == "ctrl-c":
        os.kill(job.pid, signal.SIGINT)
    elif end == "sigterm":
        os.kill(job.pid, signal.SIGTERM)
    elif end == "sigkill":
        os.kill(job.pid, signal.SIGKILL)
    job.communicate(timeout=300)
    if end == "fail":
        assert job.returncode == 1
    assert _wait_gone(server_group), f"the server outlived a job that ended by {end}"


@needs_serve
@pytest.mark.slow
def test_a_job_killed_mid_run_resumes_with_the_same_answers(tiny_model_dir, tmp_path):
    """The generation job's own path (workflow/scripts/generate.py's): items through a started server
    with checkpoints; killed after its first checkpoint, rerun, it ends with every answer once, each the
    uninterrupted run's."""
    from earnest.generation import generate_dataset

    items = pd.DataFrame({"item_id": [f"t{i}" for i in range(12)], "question": [f"How many are {i} + 2?" for i in range(12)],
                          "template_id": range(12), "instance": 0, "answer": "1"})
    fmt = load_formats()["gsm"]
    entry = {"backend": "openai", "model": str(tiny_model_dir), "concurrency": 2, "serve": _serve_block(tiny_model_dir)}

    def run(out):
        with serving("tiny", entry, tmp_path / "job.log") as cfg:
            generate_dataset(items, fmt, load_backend("tiny", cfg), model="tiny", dataset="gsm_variants", output=out,
                             max_new_tokens=6, checkpoint_every=4)

    run(tmp_path / "whole.parquet")
    whole = pd.read_parquet(tmp_path / "whole.parquet").set_index("item_id")
    script = textwrap.dedent(f"""
        import sys, os, signal
        sys.path.insert(0, {str(REPO / 'src')!r}); sys.path.insert(0, {str(REPO / 'tests')!r})
        import pandas as pd, earnest.generation as G
        from earnest.backends import load_backend
        from earnest.backends.serve import serving
        from earnest.gsm.prompts import load_formats
        items = pd.read_parquet({str(tmp_path / 'items.parquet')!r})
        entry = {entry!r}
        real = G.write_parquet_atomic
        calls = []
        def write(frame, path):
            real(frame, path)
            calls.append(path)
            if len(calls) == 1:
                os.kill(os.getpid(), signal.SIGTERM)   # as a scheduler's time limit, after one checkpoint
        G.write_parquet_atomic = write
        with serving("tiny", entry, {str(tmp_path / 'cut.log')!r}) as cfg:
            G.generate_dataset(items, load_formats()["gsm"], load_backend("tiny", cfg), model="tiny",
                               dataset="gsm_variants", output={str(tmp_path / 'cut.parquet')!r}, max_new_tokens=6,
                               checkpoint_every=4)
    """)
    items.to_parquet(tmp_path / "items.parquet")
    cut = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=child_env(), timeout=900)
    assert cut.returncode != 0 and not (tmp_path / "cut.parquet").exists(), cut.stderr[-3000:]
    pid_left = _server_pid(tmp_path / "cut.server.log")
    assert pid_left == 0 or _wait_gone(os.getpgid(pid_left)), "the killed job's server was left"
    run(tmp_path / "cut.parquet")
    again = pd.read_parquet(tmp_path / "cut.parquet").set_index("item_id")
    assert sorted(again.index) == sorted(whole.index)
    assert again.loc[whole.index, "response"].tolist() == whole["response"].tolist()
