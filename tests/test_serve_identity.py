"""Servers the job can prove are its own (issue 53.1-3, 6): real fake servers on loopback, started by
``earnest.backends.serve.serving`` through its supervisor.

* a fixed port already in use is an error naming the port and its holder, before anything starts;
* a process the job did not start that takes the port first (fixed or auto) gets no request, and
  the wait ends at once with an error naming it;
* with ``identity: model`` / ``api_key`` only a server that knows the job's fresh token is taken,
  and an answer that does not echo the token is refused, never cached;
* servers die with the job: SIGKILL of the job, a server that ignores SIGTERM, a worker of its
  process group and a ``setsid()`` daemon: nothing is left (polled generously, no deadline asserted);
* the cache key holds every input of the server (env, files of the command, revision);
* the job's token and API key are written nowhere (the server's log hides them).
"""

from __future__ import annotations

import json
import re
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from earnest.backends import GenerationRequest, load_backend
from earnest.backends.serve import ServerError, check_serve, serving
from helpers import child_env
from openai_server import FakeOpenAI

REPO = Path(__file__).resolve().parents[1]
FAKE = str(REPO / "tests" / "fake_model_server.py")


def _entry(*args, identity="process", port="auto", **extra) -> dict:
    serve = {"command": [sys.executable, FAKE, "--port", "{port}", *args], "identity": identity, "port": port,
             "ready_timeout_s": 120, "stop_timeout_s": 5}
    return {"backend": "openai", "model": "m1", "max_retries": 0, "timeout_s": 60, **extra, "serve": serve}


def _ask(cfg: dict, text: str = "hi"):
    backend = load_backend("m", cfg)
    return backend, backend.generate([GenerationRequest(key="a", messages=[{"role": "user", "content": text}])], 5)[0]


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] != "Z"


def _all_gone(pids, limit: float = 120.0) -> list[int]:
    """The pids still alive after waiting up to ``limit`` s (a safety net against a hang, not a measure)."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        left = [p for p in pids if _alive(p)]
        if not left:
            return []
        time.sleep(0.2)
    return [p for p in pids if _alive(p)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("identity, args", [("process", []), ("model", ["--served-model-name", "{token}"]),
                                            ("api_key", ["--api-key", "{token}"])])
def test_each_identity_mode_serves_and_hides_the_token(tmp_path, identity, args):
    entry = _entry(*args, "--say", "my token is {token}", identity=identity)
    with serving("m", entry, tmp_path / "job.log") as cfg:
        token = (cfg["serve_token"] or {}).get("value", "")
        _, result = _ask(cfg)
        assert result.response == "echo:hi" and result.stop_reason == "eos", result
        assert cfg["serve_identity"]["engine_version"] == {"version": "fake-1.0"}
        assert "{token}" in json.dumps(cfg["serve_identity"]) or identity == "process"
    log = (tmp_path / "job.server.log").read_text()
    assert "my token is [hidden]" in log and "listening on" in log, log
    if token:
        assert token not in log


def test_a_fixed_port_in_use_is_refused_before_the_start_naming_its_holder(tmp_path):
    with FakeOpenAI() as squatter:
        port = int(squatter.url.rsplit(":", 1)[1].split("/")[0])
        entry = _entry(port=port)
        with pytest.raises(ServerError) as err:
            with serving("m", entry, tmp_path / "job.log"):
                pass
        assert squatter.received == []
    message = str(err.value)
    assert f"port {port} of this node is already in use" in message
    assert f"pid {os.getpid()}" in message          # the holder: this test's process
    assert not (tmp_path / "job.server.log").exists()   # nothing was started


@pytest.mark.parametrize("identity, args", [("process", []), ("model", ["--served-model-name", "{token}"]),
                                            ("api_key", ["--api-key", "{token}"])])
@pytest.mark.parametrize("fixed", [True, False])
def test_a_process_that_takes_the_port_first_gets_nothing(tmp_path, identity, args, fixed):
    """The server binds only once told (--wait-file); meanwhile a process of the test's takes its port
    (free at the start: the race of a stale server or another job). The job takes none of its
    answers and sends it no request: the wait ends with an error naming that process."""
    go = tmp_path / "go"
    port = _free_port() if fixed else "auto"
    entry = _entry("--wait-file", str(go), *args, identity=identity, port=port)
    log = tmp_path / "job.server.log"
    squatters, done = [], threading.Event()

    def squat():   # in a thread of the test's process: not a process the job started
        while not (log.exists() and "env key" in log.read_text()):   # the server runs, not yet bound
            if done.is_set():
                return
            time.sleep(0.05)
        chosen = int(log.read_text().split("--port ", 1)[1].split()[0])

        class Squatter(FakeOpenAI):
            def _serve(self, handler, host="127.0.0.1"):
                from http.server import ThreadingHTTPServer

                self.server = ThreadingHTTPServer((host, chosen), handler)
                self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
                return f"http://{host}:{chosen}"

        with Squatter() as squatter:
            squatters.append((chosen, squatter))
            go.write_text("")
            done.wait(600)

    t = threading.Thread(target=squat, daemon=True)
    t.start()
    try:
        with pytest.raises(ServerError) as err:
            with serving("m", entry, tmp_path / "job.log") as cfg:
                _ask(cfg)
    finally:
        done.set()
        t.join(60)
    assert squatters, "the squatter never got the port"
    chosen, squatter = squatters[0]
    posts = [r for r in squatter.received if r["body"] is not None]
    assert posts == [], posts
    message = str(err.value)
    assert f"port {chosen}" in message and f"pid {os.getpid()}" in message, message


def test_a_server_of_the_job_that_never_proves_itself_is_not_taken(tmp_path):
    """identity: model, but the server serves another name (the token only printed): never ready."""
    entry = _entry("--say", "{token}", identity="model")
    entry["serve"]["ready_timeout_s"] = 3
    with pytest.raises(ServerError, match="from the server the job started: identity: model"):
        with serving("m", entry, tmp_path / "job.log"):
            pass


def test_a_bind_failure_ends_the_wait_at_once_with_the_log(tmp_path):
    """A server that cannot bind exits: the wait ends by its exit (not by ready_timeout_s, a day
    here), and the message shows the log's last lines."""
    with FakeOpenAI() as squatter:
        port = int(squatter.url.rsplit(":", 1)[1].split("/")[0])
        # the command binds the squatter's port though the block names another (a misconfiguration)
        entry = _entry(port=_free_port())
        entry["serve"]["command"] = [sys.executable, FAKE, "--port", str(port)]
        entry["serve"]["ready_timeout_s"] = 86400
        with pytest.raises(ServerError) as err:
            with serving("m", entry, tmp_path / "job.log"):
                pass
    message = str(err.value)   # by its exit, or by its log if that is read first
    assert ("exited with status 1" in message or "could not bind" in message) and "Address already in use" in message


def test_a_server_that_cannot_bind_and_stays_is_not_waited_for(tmp_path):
    """A server that logs its bind failure and keeps running (the port taken by a process this job
    may not see, with identity: model): the wait ends at once, by its log, not by ready_timeout_s."""
    with FakeOpenAI() as squatter:
        port = int(squatter.url.rsplit(":", 1)[1].split("/")[0])
        entry = _entry("--served-model-name", "{token}", "--stay", identity="model", port=_free_port())
        entry["serve"]["command"] = [sys.executable, FAKE, "--port", str(port), "--served-model-name", "{token}",
                                     "--stay"]
        entry["serve"]["ready_timeout_s"] = 86400
        with pytest.raises(ServerError, match=f"could not bind port|held by a process the job did not start"):
            with serving("m", entry, tmp_path / "job.log"):
                pass
        assert [r for r in squatter.received if r["body"] is not None] == []


@pytest.mark.parametrize("flag, why", [(["--answer-model", "someone-else"], "names the model"),
                                       (["--nan"], "NaN"), (["--bad-number", "Infinity"], "Infinity"),
                                       (["--bad-number", "1e999"], "1e999"), (["--choices", "3"], "3 choices")])
def test_answers_that_are_not_the_models_are_refused_and_never_cached(tmp_path, flag, why):
    entry = _entry("--served-model-name", "{token}", *flag, identity="model", cache_dir=str(tmp_path / "cache"))
    with serving("m", entry, tmp_path / "job.log") as cfg:
        backend, result = _ask(cfg)
    assert result.stop_reason == "error:bad_response" and why in result.extra["error"], result
    assert not list((tmp_path / "cache").rglob("*.json"))


def test_the_cache_key_holds_every_input_of_the_server(tmp_path, monkeypatch):
    """Same block: the second job reads the first's answers (no request); another env value, a
    changed file the command names, another revision, another argument of the command, another
    engine version (the server's /version answer): asked again."""
    weights = tmp_path / "weights.bin"
    weights.write_bytes(b"1")

    def attempts(**change):
        entry = _entry("--served-model-name", "{token}", "--say", str(weights), *change.get("args", ()),
                       identity="model", cache_dir=str(tmp_path / "cache"))
        entry["serve"]["env"] = change.get("env", {"A": "1"})
        if "revision" in change:
            entry["revision"] = change["revision"]
        with serving("m", entry, tmp_path / "job.log") as cfg:
            backend, result = _ask(cfg)
        assert result.response == "echo:hi"
        return backend.http_attempts

    assert attempts() == 1
    assert attempts() == 0                      # same server: from the cache
    assert attempts(env={"A": "2"}) == 1        # issue 53.2: env alone changed
    os.utime(weights, ns=(1, 1))
    assert attempts(env={"A": "2"}) == 1        # a file the command names changed
    assert attempts(env={"A": "2"}, revision="abc") == 1
    assert attempts(env={"A": "2"}, revision="abc") == 0
    assert attempts(env={"A": "2"}, revision="abc", args=["--choices", "1"]) == 1   # the command alone
    monkeypatch.setenv("FAKE_ENGINE_VERSION", "fake-2.0")                          # the same command, a new engine
    assert attempts(env={"A": "2"}, revision="abc", args=["--choices", "1"]) == 1
    stored = "".join(p.read_text() for p in (tmp_path / "cache").rglob("*.json"))
    assert "earnest-" not in stored             # the token is stored nowhere


JOB = textwrap.dedent("""
    import json, os, sys, time
    sys.path.insert(0, {src!r})
    from earnest.backends.serve import serving
    entry = json.loads(sys.argv[1])
    with serving("m", entry, sys.argv[2]) as cfg:
        print("ready", flush=True)
        if sys.argv[3] == "wait":
            time.sleep(600)
""")


@pytest.mark.parametrize("end", ["sigkill", "success", "sigterm"])
def test_no_server_process_is_left_however_the_job_ends(tmp_path, end):
    """A server that ignores SIGTERM, with a worker of its process group and a setsid() daemon that
    ignore it too: after the job ends (killed outright, or a success) none of them is left."""
    pids = tmp_path / "pids"
    entry = _entry("--ignore-term", "--group-worker", "--daemon", "--pids", str(pids))
    job = subprocess.Popen([sys.executable, "-c", JOB.format(src=str(REPO / "src")), json.dumps(entry),
                            str(tmp_path / "job.log"), "end" if end == "success" else "wait"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(),
                           start_new_session=True)
    assert job.stdout.readline().strip() == "ready", job.communicate()[1][-3000:]
    while not pids.exists() or len(pids.read_text().split()) < 3:   # server, group worker, daemon
        time.sleep(0.05)
    started = [int(p) for p in pids.read_text().split()]
    assert all(_alive(p) for p in started)
    groups = {os.getpgid(p) for p in started}
    assert len(groups) == 2                     # the daemon left the server's group and session
    if end == "sigkill":
        job.kill()
    elif end == "sigterm":
        job.terminate()
    job.communicate(timeout=300)
    assert _all_gone(started) == [], f"left running after the job ended by {end}"


PLANTED_KEY = "sk-planted-" + "Kq7" * 10


@pytest.mark.slow
def test_no_key_or_token_reaches_any_output_of_a_run(tmp_path):
    """A workflow run (generations and scoring, both datasets, the sandbox table) with a started
    server, the API key (api_key_env) planted in the job's environment, which the server inherits and
    prints into its log, and the token as its served model name, then `snakemake --report`: neither
    the key, nor any token, nor an Authorization value is in any file the run wrote (results, logs,
    the server's log, the cache, Snakemake's own logs and metadata, report.html) or in what it printed."""
    import yaml

    tiny = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
    cfg = {k: v for k, v in tiny.items() if k != "models"}
    entry = _entry("--served-model-name", "{token}", "--say", "started with {token}", identity="model",
                   api_key_env="PLANTED_KEY", concurrency=2, cache_dir="results/cache/openai")
    entry["serve"]["command"][0] = sys.executable
    cfg["models"] = {"api": entry}
    # a code prompt too: its answers are scored through the sandbox, whose table the report carries
    cfg["experiments"] = {"ex1_prompt": "gsm", "ex2_prompts": ["simple_code"], "ex2_models": ["api"]}
    cfg["statform"] = {**cfg["statform"], "enabled": False}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    targets = [f"results/scored/api/{p}/{d}.parquet" for p in ("gsm", "simple_code")
               for d in ("gsm_base", "gsm_variants")]
    targets.append("results/tables/sandbox.md")                  # a file the report carries
    env = child_env(PLANTED_KEY=PLANTED_KEY, FAKE_KEY=PLANTED_KEY)
    snakemake = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(tmp_path),
                 "--configfile", str(path), "-c2"]
    run = subprocess.run([*snakemake, *targets], capture_output=True, text=True, timeout=1500, env=env)
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    report = subprocess.run([*snakemake, "--report", "report.html", *targets], capture_output=True, text=True,
                            timeout=900, env=env)
    assert report.returncode == 0, (report.stdout + report.stderr)[-4000:]
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "config.yaml"]
    server_logs = [p for p in written if p.name.endswith(".server.log")]
    assert server_logs and all("env key: [hidden]" in p.read_text() for p in server_logs)
    assert any(p.suffix == ".parquet" and "scored" in str(p) for p in written)
    page = tmp_path / "report.html"
    assert page in written and page.stat().st_size > 10_000     # the report itself, not an empty page
    assert any(".snakemake" in p.parts for p in written)        # Snakemake's own logs and metadata too
    for p in written:
        data = p.read_bytes()
        assert PLANTED_KEY.encode() not in data, p
        assert b"Bearer " not in data and b"Authorization" not in data, p
        assert re.search(rb"earnest-[0-9a-f]{32}", data) is None, p     # a token of a start
    for proc in (run, report):
        printed = proc.stdout + proc.stderr
        assert PLANTED_KEY not in printed and "Bearer " not in printed
        assert re.search(r"earnest-[0-9a-f]{32}", printed) is None
