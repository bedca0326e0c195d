"""The OpenAI-compatible HTTP backend against real HTTP servers on 127.0.0.1.

* A small OpenAI chat-completions server (``openai_server.FakeOpenAI``, ``http.server``) that fails
  chosen requests with 429/500 first and counts what it receives: retries, order, cache, keys, errors.
* ``transformers serve`` with a tiny randomly initialised Llama saved as a checkpoint directory
  (tokenizer built locally, no hub): the backend speaks to a real implementation. Slow (model load).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from helpers import child_env
from openai_server import ESCAPES, FakeOpenAI, RecordingProxy
from tinymodel import build_tiny_model

from earnest.backends import GenerationRequest, load_backend
from earnest.backends.openai_http import OpenAIBackend


def _reqs(*contents):
    return [GenerationRequest(key=f"k{i}", messages=[{"role": "system", "content": "sys"},
                                                     {"role": "user", "content": c}])
            for i, c in enumerate(contents)]


def _cfg(url, tmp_path, **kw):
    cfg = {"backend": "openai", "base_url": url, "model": "tiny", "concurrency": 3, "max_retries": 3,
           "timeout_s": 5, "backoff_s": 0.01, "max_backoff_s": 0.05, "cache_dir": str(tmp_path / "cache")}
    cfg.update(kw)
    return cfg


def test_retries_order_and_cache(tmp_path):
    plan = {"b": [429, 500], "d": [503]}
    with FakeOpenAI(plan) as srv:
        backend = load_backend("m", _cfg(srv.url, tmp_path))
        assert isinstance(backend, OpenAIBackend)
        res = backend.generate(_reqs("a", "b", "c", "d"), max_new_tokens=16)
        assert [r.key for r in res] == ["k0", "k1", "k2", "k3"]
        assert [r.response for r in res] == ["echo:a", "echo:b", "echo:c", "echo:d"]
        assert all(r.stop_reason == "eos" and r.prompt_tokens == 7 and r.new_tokens == 3 for r in res)
        assert srv.count("b") == 3 and srv.count("d") == 2 and srv.count("a") == 1
        assert res[1].extra["attempts"] == 3 and not res[1].extra["cached"]
        body = srv.received[0]["body"]
        assert body["temperature"] == 0 and body["max_tokens"] == 16 and body["model"] == "tiny"
        n_before = len(srv.received)

        # a rerun (new backend object, same cache dir) sends nothing and returns the same answers
        again = load_backend("m", _cfg(srv.url, tmp_path)).generate(_reqs("a", "b", "c", "d"), 16)
        assert len(srv.received) == n_before
        assert [r.response for r in again] == [r.response for r in res]
        assert all(r.extra["cached"] for r in again)

        # a different parameter is a different cache key: one new request
        load_backend("m", _cfg(srv.url, tmp_path)).generate(_reqs("a"), 17)
        assert len(srv.received) == n_before + 1


def test_exhausted_retries_become_error_results_and_are_not_cached(tmp_path):
    with FakeOpenAI(always={"bad": 500, "client": 400}) as srv:
        backend = load_backend("m", _cfg(srv.url, tmp_path, max_retries=2))
        res = backend.generate(_reqs("ok", "bad", "client"), 8)
        assert res[0].response == "echo:ok"
        assert res[1].stop_reason == "error:http_500" and res[1].response == ""
        assert srv.count("bad") == 3  # first try + 2 retries
        assert res[2].stop_reason == "error:http_400" and srv.count("client") == 1  # 4xx: no retry
        # failures are not cached: the rerun asks again
        backend.generate(_reqs("bad"), 8)
        assert srv.count("bad") == 6


@pytest.mark.parametrize("mode", ["truncate", "choices_abc", "usage_text", "not_json", "no_text"])
def test_malformed_answers_are_retried_and_never_cached(tmp_path, mode):
    """A body cut short or a payload that is not a valid completion is retried like a 5xx; if it
    keeps coming it ends as a transport error (not an answer), and nothing of it is cached."""
    with FakeOpenAI(plan={"flaky": [mode, mode]}, always={"broken": mode}) as srv:
        backend = load_backend("m", _cfg(srv.url, tmp_path, max_retries=2))
        res = backend.generate(_reqs("flaky", "broken", "fine"), 8)
        assert res[0].response == "echo:flaky" and res[0].stop_reason == "eos" and res[0].extra["attempts"] == 3
        assert res[1].response == "" and res[1].stop_reason.startswith("error:")
        assert res[1].stop_reason == ("error:truncated" if mode == "truncate" else "error:bad_response")
        assert srv.count("broken") == 3
        assert res[2].response == "echo:fine"
        stored = [json.loads(p.read_text()) for p in (tmp_path / "cache").rglob("*.json")]
        assert sorted(s["payload"]["choices"][0]["message"]["content"] for s in stored) == ["echo:fine", "echo:flaky"]
        # the rerun serves the two good answers from the cache and asks again for the broken one
        again = load_backend("m", _cfg(srv.url, tmp_path, max_retries=0)).generate(_reqs("flaky", "broken", "fine"), 8)
        assert [r.extra["cached"] for r in again] == [True, False, True]
        assert srv.count("broken") == 4 and srv.count("flaky") == 3


def test_invalid_cached_answer_is_asked_again(tmp_path):
    with FakeOpenAI() as srv:
        backend = load_backend("m", _cfg(srv.url, tmp_path))
        first = backend.generate(_reqs("a"), 8)[0]
        path = next((tmp_path / "cache").rglob("*.json"))
        stored = json.loads(path.read_text())
        stored["payload"] = {"choices": "abc"}
        path.write_text(json.dumps(stored))
        again = load_backend("m", _cfg(srv.url, tmp_path)).generate(_reqs("a"), 8)[0]
        assert again.response == first.response == "echo:a" and not again.extra["cached"]
        assert srv.count("a") == 2
        assert json.loads(path.read_text())["payload"]["choices"][0]["message"]["content"] == "echo:a"


def test_deadline_bounds_the_whole_attempt(tmp_path):
    """A server that sends one byte every 0.2 s never lets a single read time out; the deadline of
    the attempt (timeout_s) still ends it."""
    with FakeOpenAI(always={"slowly": "drip"}) as srv:
        backend = load_backend("m", _cfg(srv.url, tmp_path, timeout_s=1.0, max_retries=1))
        t0 = time.monotonic()
        res = backend.generate(_reqs("slowly"), 8)[0]
        elapsed = time.monotonic() - t0
    # the answer is ~250 bytes: dripped whole it takes ~50 s per attempt
    assert res.stop_reason == "error:timeout" and res.extra["attempts"] == 2
    assert elapsed < 10, elapsed


def test_stop_strings_are_sent_and_honoured(tmp_path):
    reqs = [GenerationRequest(key="a", prompt="one\nQ: two", stop=("\nQ:", "Question:")),
            GenerationRequest(key="b", prompt="plain")]
    for honour in (True, False):   # a server that ignores `stop`: the answer is still cut here
        with FakeOpenAI(honour_stop=honour) as srv:
            res = OpenAIBackend("m", _cfg(srv.url, tmp_path, cache_dir=None)).generate(reqs, 8)
            sent = {r["body"]["prompt"]: r["body"].get("stop") for r in srv.received}
            assert sent == {"one\nQ: two": ["\nQ:", "Question:"], "plain": None}
            assert [r.response for r in res] == ["echo:one", "echo:plain"]
            assert res[0].stop_reason == ("eos" if honour else "stop_string")
            assert res[1].stop_reason == "max_new_tokens"


def test_connection_refused_and_timeout(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    backend = OpenAIBackend("m", _cfg(f"http://127.0.0.1:{port}/v1", tmp_path, max_retries=1))
    res = backend.generate(_reqs("x"), 8)
    assert res[0].stop_reason == "error:connection" and res[0].extra["attempts"] == 2

    with FakeOpenAI(delay_s=1.0) as srv:
        backend = OpenAIBackend("m", _cfg(srv.url, tmp_path, timeout_s=0.2, max_retries=1))
        res = backend.generate(_reqs("slow"), 8)
        assert res[0].stop_reason == "error:timeout"
        assert srv.count("slow") == 2


def test_api_key_from_env_concurrency_and_completions(tmp_path, monkeypatch):
    monkeypatch.setenv("EARNEST_TEST_KEY", "sk-local-test")
    with FakeOpenAI(delay_s=0.3) as srv:
        backend = OpenAIBackend("m", _cfg(srv.url, tmp_path, api_key_env="EARNEST_TEST_KEY", concurrency=4,
                                          cache_dir=None))
        backend.generate(_reqs("1", "2", "3", "4"), 8)
        assert all(h.get("Authorization") == "Bearer sk-local-test" for h in srv.headers)
        assert srv.max_inflight >= 2  # requests overlapped on the server
        res = backend.generate([GenerationRequest(key="p", prompt="raw text")], 8)
        assert srv.received[-1]["path"] == "/v1/completions"
        assert res[0].response == "echo:raw text" and res[0].stop_reason == "max_new_tokens"
    # the key never reaches the cache
    with FakeOpenAI() as srv:
        b = OpenAIBackend("m", _cfg(srv.url, tmp_path, api_key_env="EARNEST_TEST_KEY"))
        b.generate(_reqs("secret?"), 8)
    stored = "".join(p.read_text() for p in (tmp_path / "cache").rglob("*.json"))
    assert "sk-local-test" not in stored and "secret?" in stored


def test_a_redirect_is_not_followed_and_the_key_never_leaves(tmp_path, monkeypatch):
    """A 302 to another origin: nothing (no key, no request) reaches it, its answer is not taken or
    cached, the result says where the redirect pointed, and a rerun asks the configured server again."""
    monkeypatch.setenv("EARNEST_TEST_KEY", "sk-local-test")
    with FakeOpenAI() as other, FakeOpenAI(always={"moved": "redirect"}, redirect_to=other.url) as srv:
        cfg = _cfg(srv.url, tmp_path, api_key_env="EARNEST_TEST_KEY")
        res = load_backend("m", cfg).generate(_reqs("moved", "fine"), 8)
        assert other.received == [] and other.headers == []
        assert res[0].stop_reason == "error:redirect" and res[0].response == ""
        assert f"redirect to {other.url}/chat/completions" in res[0].extra["error"]
        assert "base_url" in res[0].extra["error"]
        assert srv.count("moved") == 1   # not retried
        assert res[1].response == "echo:fine"
        stored = [json.loads(p.read_text()) for p in (tmp_path / "cache").rglob("*.json")]
        assert [s["payload"]["choices"][0]["message"]["content"] for s in stored] == ["echo:fine"]
        again = load_backend("m", cfg).generate(_reqs("moved"), 8)[0]
        assert again.stop_reason == "error:redirect" and srv.count("moved") == 2 and other.received == []


@pytest.mark.parametrize("chat", [True, False])
def test_a_lone_surrogate_becomes_u_fffd_and_is_counted(tmp_path, chat):
    """JSON allows the escape \\ud800 alone; no UTF-8 file can hold the character. The answer comes
    back with U+FFFD in its place, counted; the cache stores the answer as sent (ASCII JSON) and no
    temporary file is left."""
    with FakeOpenAI(always={"odd": "surrogate"}) as srv:
        reqs = _reqs("odd", "fine") if chat else [GenerationRequest(key="k0", prompt="odd"),
                                                  GenerationRequest(key="k1", prompt="fine")]
        res = load_backend("m", _cfg(srv.url, tmp_path)).generate(reqs, 8)
        assert res[0].response == "ec\ufffdho:odd" and res[0].extra["invalid_unicode"] == 1
        assert res[0].stop_reason in ("eos", "max_new_tokens") and res[0].extra["attempts"] == 1
        assert res[1].response == "echo:fine" and res[1].extra["invalid_unicode"] == 0
        files = sorted(p.name for p in (tmp_path / "cache").rglob("*") if p.is_file())
        assert len(files) == 2 and all(f.endswith(".json") and not f.startswith(".") for f in files), files
        raw = "".join(p.read_bytes().decode("utf-8") for p in (tmp_path / "cache").rglob("*.json"))
        assert "\\ud800" in raw
        again = load_backend("m", _cfg(srv.url, tmp_path)).generate(reqs, 8)
        assert [r.response for r in again] == [r.response for r in res] and all(r.extra["cached"] for r in again)
        assert again[0].extra["invalid_unicode"] == 1 and srv.count("odd") == 1


def test_the_request_cache_stores_a_surrogate_answer_and_its_notes(tmp_path):
    """The backend-independent cache (CachedBackend) over the API backend: the repaired answer and
    the backend's notes (invalid_unicode, empty_answer) are stored and come back."""
    from earnest.backends.cache import cached_backend

    with FakeOpenAI(always={"odd": "surrogate"}, plan={"gap": ["null_content"]}) as srv:
        cfg = _cfg(srv.url, tmp_path, cache_dir=None)
        first = cached_backend("m", cfg, tmp_path / "rc").generate(_reqs("odd", "gap"), 8)
        again = cached_backend("m", cfg, tmp_path / "rc").generate(_reqs("odd", "gap"), 8)
    assert [r.response for r in first] == [r.response for r in again] == ["ec\ufffdho:odd", "echo:gap"]
    assert all(r.extra["cached"] for r in again)
    assert [r.extra["invalid_unicode"] for r in again] == [1, 0]
    assert [r.extra["empty_answer"] for r in again] == [None, "transient"]
    assert [p.name for p in (tmp_path / "rc").rglob("*") if p.is_file() and not p.name.endswith(".json")] == []


def test_empty_answers_are_retried_then_kept_and_marked(tmp_path):
    """content null or "" at finish "length": retried; text on a retry -> "transient"; empty on every
    attempt -> kept as the answer, "persistent", stored with the mark; "" at finish "stop" is an
    answer (the model ended at once). A stored empty answer without the mark is asked again."""
    plan = {"gap": ["null_content"], "cut": ["empty_length", "empty_length"]}
    with FakeOpenAI(plan=plan, always={"none": "null_content", "short": "empty_length", "mixed": 500}) as srv:
        srv.plan["mixed"] = ["null_content"]
        cfg = _cfg(srv.url, tmp_path, max_retries=2)
        res = load_backend("m", cfg).generate(_reqs("gap", "cut", "none", "short", "mixed"), 8)
        assert [r.response for r in res] == ["echo:gap", "echo:cut", "", "", ""]
        assert [r.extra["empty_answer"] for r in res] == ["transient", "transient", "persistent", "persistent",
                                                          "persistent"]
        assert [r.extra["attempts"] for r in res] == [2, 3, 3, 3, 3]
        assert [r.stop_reason for r in res] == ["eos", "eos", "eos", "max_new_tokens", "eos"]
        assert [srv.count(c) for c in ("gap", "cut", "none", "short", "mixed")] == [2, 3, 3, 3, 3]
        n = len(srv.received)
        again = load_backend("m", cfg).generate(_reqs("gap", "cut", "none", "short", "mixed"), 8)
        assert len(srv.received) == n and all(r.extra["cached"] for r in again)
        assert [r.extra["empty_answer"] for r in again] == [r.extra["empty_answer"] for r in res]
        # a stored empty answer without the mark (cached before empty answers were retried): asked again
        for path in (tmp_path / "cache").rglob("*.json"):
            stored = json.loads(path.read_text())
            if stored["empty_answer"] == "persistent":
                del stored["empty_answer"]
                path.write_text(json.dumps(stored))
        load_backend("m", cfg).generate(_reqs("none"), 8)
        assert srv.count("none") == 6
    with FakeOpenAI(answer=lambda content: "") as srv:   # "" at finish "stop": the model's answer
        res = load_backend("m", _cfg(srv.url, tmp_path / "b")).generate(_reqs("x"), 8)[0]
        assert res.response == "" and res.extra["attempts"] == 1 and res.extra["empty_answer"] is None


def test_config_errors_name_the_key(monkeypatch, tmp_path):
    monkeypatch.delenv("EARNEST_MISSING_KEY", raising=False)
    with pytest.raises(ValueError, match=r"models\.m\.api_key_env"):
        OpenAIBackend("m", {"base_url": "http://127.0.0.1:1/v1", "api_key_env": "EARNEST_MISSING_KEY"})
    with pytest.raises(ValueError, match=r"models\.m\.base_url"):
        OpenAIBackend("m", {"base_url": "127.0.0.1:1"})
    with pytest.raises(ValueError, match=r"models\.m\.concurrency"):
        OpenAIBackend("m", {"base_url": "http://127.0.0.1:1/v1", "concurrency": 0})
    # 100,000 threads would fail to start half-way through a job; the bound is the schema's
    from earnest.backends.openai_http import MAX_CONCURRENCY
    from earnest.schema import schema_node

    assert schema_node("models")["additionalProperties"]["properties"]["concurrency"]["maximum"] == MAX_CONCURRENCY
    with pytest.raises(ValueError, match=r"models\.m\.concurrency: an integer from 1 to 1024 is required, got 100000"):
        OpenAIBackend("m", {"base_url": "http://127.0.0.1:1/v1", "concurrency": 100000})


# ---------------------------------------------------------------- transformers serve



def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_against_transformers_serve(tmp_path):
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    model_dir = tmp_path / "tiny-llama"
    env = child_env(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    build_tiny_model(model_dir)
    port = _free_port()
    cli = Path(sys.executable).with_name("transformers")
    log = open(tmp_path / "serve.log", "w")
    proc = subprocess.Popen([str(cli), "serve", "--host", "127.0.0.1", "--port", str(port), "--device", "cpu",
                             str(model_dir)], stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.time() + 240
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                raise AssertionError("transformers serve did not come up:\n" + (tmp_path / "serve.log").read_text()[-3000:])
            time.sleep(1)
        cfg = {"backend": "openai", "base_url": f"http://127.0.0.1:{port}/v1", "model": str(model_dir),
               "concurrency": 2, "max_retries": 2, "timeout_s": 120, "backoff_s": 0.5,
               "cache_dir": str(tmp_path / "cache")}
        backend = load_backend("tiny", cfg)
        reqs = _reqs("first question", "second question")
        res = backend.generate(reqs, max_new_tokens=6)
        assert [r.key for r in res] == ["k0", "k1"]
        assert all(not r.stop_reason.startswith("error") for r in res), [r.extra for r in res]
        assert all(0 < r.new_tokens <= 6 and r.prompt_tokens > 0 for r in res)
        assert backend.http_attempts == 2
        again = load_backend("tiny", cfg).generate(reqs, max_new_tokens=6)
        assert [r.response for r in again] == [r.response for r in res]
        assert all(r.extra["cached"] for r in again)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.mark.parametrize("status", [301, 303, 307, 308])
def test_no_redirect_status_is_followed_even_to_the_same_host(tmp_path, monkeypatch, status):
    """301/303/307/308 to the same host on another port (another origin): not followed, no key sent,
    nothing cached, as a 302."""
    monkeypatch.setenv("EARNEST_TEST_KEY", "sk-local-test")
    with FakeOpenAI() as other, FakeOpenAI(always={"moved": f"redirect_{status}"}, redirect_to=other.url) as srv:
        res = load_backend("m", _cfg(srv.url, tmp_path, api_key_env="EARNEST_TEST_KEY")).generate(_reqs("moved"), 8)[0]
        assert other.received == [] and res.stop_reason == "error:redirect"
        assert f"HTTP {status} redirect to {other.url}/chat/completions" in res.extra["error"]
        assert not list((tmp_path / "cache").rglob("*.json"))


@pytest.mark.parametrize("mode, kind, message", [
    # arrays nested 100,000 deep: json's RecursionError escaped generate() and ended the whole job
    ("deep", "bad_response", "answer nests deeper than JSON can be read"),
    # {"content": "first answer", "content": "echo:x"}: json kept the last without a word
    ("content_twice", "bad_response", "answer gives the key 'content' twice in one object"),
    # a body larger than the limit was read whole into memory (300 MB: 600 MB of RSS per worker)
    ("padded", "too_large", "answer larger than 50,000 bytes (Content-Length 100"),
])
def test_answers_that_are_no_completion_are_retried_then_errors_not_cached(tmp_path, mode, kind, message):
    with FakeOpenAI(plan={"x": [mode, mode]}, always={"y": mode}) as srv:
        backend = load_backend("m", _cfg(srv.url, tmp_path, max_retries=2))
        if mode == "padded":   # the limit (8 MiB by default) low enough for a test body
            backend = load_backend("m", _cfg(srv.url, tmp_path, max_retries=2, max_response_bytes=50_000))
        res = backend.generate(_reqs("x", "y", "fine"), 8)
        assert res[0].response == "echo:x" and res[0].extra["attempts"] == 3      # a good third attempt
        assert res[1].stop_reason == f"error:{kind}" and message in res[1].extra["error"], res[1].extra
        assert res[2].response == "echo:fine"
        stored = sorted(json.loads(p.read_text())["payload"]["choices"][0]["message"]["content"]
                        for p in (tmp_path / "cache").rglob("*.json"))
        assert stored == ["echo:fine", "echo:x"]


# ---------------------------------------------------------------- what a server sends, bounded


@pytest.mark.parametrize("mode, message", [
    # "created": 777...7 (5,000 digits): json.loads raised ValueError (Python's 4,300-digit limit)
    # out of generate(), and the whole job ended
    ("big_int", "answer holds an integer of 5,000 digits"),
    # usage.prompt_tokens of 4,000 digits: readable, but the check of a token count raised
    # OverflowError (no float holds it)
    ("huge_usage", "usage.prompt_tokens is not a token count"),
    # "finish_reason": []: the look-up in the known reasons raised TypeError (unhashable)
    ("finish_list", "unknown finish_reason []"),
])
def test_numbers_and_values_json_cannot_hold_are_bad_responses_not_a_crash(tmp_path, mode, message):
    with FakeOpenAI(always={"y": mode}) as srv:
        res = load_backend("m", _cfg(srv.url, tmp_path, max_retries=1)).generate(_reqs("y", "fine"), 8)
        assert res[0].stop_reason == "error:bad_response" and message in res[0].extra["error"], res[0].extra
        assert res[0].extra["attempts"] == 2 and srv.count("y") == 2   # retried as any bad answer
        assert res[1].response == "echo:fine"
        stored = [json.loads(p.read_text())["payload"]["choices"][0]["message"]["content"]
                  for p in (tmp_path / "cache").rglob("*.json")]
        assert stored == ["echo:fine"]


def test_an_answer_over_max_response_bytes_is_an_error_and_not_stored(tmp_path):
    """A valid answer of 9 MiB (a 60 MB one was accepted and cached): over the default cap of 8 MiB,
    with Content-Length (refused unread) or without (read in chunks up to the cap, then refused);
    a body that never ends stops at the cap too, long before the attempt's deadline."""
    with FakeOpenAI(always={"big": "big", "unframed": "big_unframed", "flood": "flood"}) as srv:
        backend = load_backend("m", _cfg(srv.url, tmp_path, max_retries=0, timeout_s=120))
        res = backend.generate(_reqs("big", "unframed", "flood", "fine"), 8)
        assert [r.stop_reason for r in res] == ["error:too_large"] * 3 + ["eos"], [r.extra for r in res]
        assert "answer larger than 8,388,608 bytes (Content-Length 94" in res[0].extra["error"]
        assert "answer larger than 8,388,608 bytes (Content-Length not given)" in res[1].extra["error"]
        assert "models.m.max_response_bytes" in res[2].extra["error"]
        stored = [json.loads(p.read_text())["payload"]["choices"][0]["message"]["content"]
                  for p in (tmp_path / "cache").rglob("*.json")]
        assert stored == ["echo:fine"]


def test_max_response_bytes_is_a_model_key(tmp_path):
    """A padded answer (~100 kB) passes a cap above its size, not one below; the key is checked."""
    with FakeOpenAI(always={"x": "padded"}) as srv:
        big = load_backend("m", _cfg(srv.url, tmp_path, max_response_bytes=200_000)).generate(_reqs("x"), 8)[0]
        small = load_backend("m", _cfg(srv.url, tmp_path / "b", max_response_bytes=50_000, max_retries=0))
        assert big.response == "echo:x"
        assert small.generate(_reqs("x"), 8)[0].stop_reason == "error:too_large"
    from earnest.backends.openai_http import MAX_RESPONSE_BYTES_RANGE
    from earnest.schema import schema_node

    key = schema_node("models")["additionalProperties"]["properties"]["max_response_bytes"]
    assert (key["minimum"], key["maximum"]) == MAX_RESPONSE_BYTES_RANGE   # one range, the schema's and the backend's
    for bad in (0, 1023, 2**30 + 1, "8MB", True, 1.5e6):
        with pytest.raises(ValueError, match=r"models\.m\.max_response_bytes: an integer from 1024 to 1073741824"):
            OpenAIBackend("m", {"base_url": "http://127.0.0.1:1/v1", "max_response_bytes": bad})


def test_a_body_the_deadline_cuts_off_is_a_timeout_not_an_answer(tmp_path):
    """A body without Content-Length ends when the server closes the connection; the deadline's
    shutdown of the socket looks the same to a read. The valid answer followed by a space every
    0.05 s, never ended: what was read by the deadline parses, but it is no complete answer."""
    with FakeOpenAI(always={"slow": "endless"}) as srv:
        res = load_backend("m", _cfg(srv.url, tmp_path, max_retries=0, timeout_s=1)).generate(_reqs("slow"), 8)[0]
        assert res.stop_reason == "error:timeout" and res.response == "", res.extra
        assert not list((tmp_path / "cache").rglob("*.json"))


def test_an_error_body_is_read_no_further_than_the_message_shows(tmp_path):
    """HTTP 500 with a body of 64 MiB (no Content-Length): only its first 300 bytes, the ones the
    message shows, are read, and the connection is closed (it was read whole into memory, under no
    deadline: a body that never ends held the attempt for ever)."""
    with FakeOpenAI(always={"x": "error_flood"}) as srv:
        res = load_backend("m", _cfg(srv.url, tmp_path, max_retries=0, timeout_s=60)).generate(_reqs("x"), 8)[0]
        assert res.stop_reason == "error:http_500" and res.extra["error"] == "HTTP 500: server error " + "x" * 287
        deadline = time.monotonic() + 120   # the answer's thread ends when the client leaves, or after 64 MiB
        while srv.trickled == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert srv.hung_up == 1


def _unprintable(text: str) -> list[str]:
    """The control characters (C0 but tab and newline, DEL, C1) and lone surrogates in ``text``."""
    return [ch for ch in text if (ord(ch) < 32 and ch not in "\t\n") or 0x7f <= ord(ch) <= 0x9f
            or 0xd800 <= ord(ch) <= 0xdfff]


@pytest.mark.parametrize("mode, kind, shown", [
    # a JSON string for an answer: its text went into the message as it was
    ("escapes_json", "bad_response", "answer is not a JSON object: \\x1b[2J\\x1b]0;pwned\\x07\\x1b[31mred\\x9b0m\\ud800"),
    ("escapes_400", "http_400", "HTTP 400: \\x1b[2J\\x1b]0;pwned\\x07\\x1b[31mred\\x9b0m"),
    ("escapes_location", "redirect", "redirect to http://127.0.0.1:9/\\x1b[2J\\x1b]0;pwned\\x07\\x1b[31mred0m"),
])
def test_server_text_in_error_messages_is_escaped(tmp_path, caplog, mode, kind, shown):
    """ESC sequences (clear the screen, retitle the terminal, colour), BEL, the C1 CSI and a lone
    surrogate from a server reach neither the result's message nor the log raw: they are escapes."""
    assert "\x1b" in ESCAPES
    with FakeOpenAI(always={"x": mode}) as srv, caplog.at_level("INFO"):
        res = load_backend("m", _cfg(srv.url, tmp_path, max_retries=1)).generate(_reqs("x"), 8)[0]
    message = res.extra["error"]
    assert res.stop_reason == f"error:{kind}" and shown in message, message
    assert _unprintable(message) == []
    logged = [r.getMessage() for r in caplog.records]
    assert any(shown in m for m in logged) and all(_unprintable(m) == [] for m in logged), logged
    message.encode("utf-8")   # writable to any log or table


def test_the_shared_escape_helper():
    from earnest.text import printable

    assert printable("ok \x1b[2J\x07\x00\x7f\x9b\ud800 \u202e é\ttab\nline") == \
        "ok \\x1b[2J\\x07\\x00\\x7f\\x9b\\ud800 \\u202e é\\ttab\\nline"
    assert printable("a\tb\nc\x1b", keep="\t\n") == "a\tb\nc\\x1b"


# ---------------------------------------------------------------- proxies, credentials, request_params


@pytest.fixture
def proxy(monkeypatch):
    """A recording proxy named by every proxy variable of the environment (as a cluster's login
    profile sets them), no_proxy cleared."""
    with RecordingProxy() as prx:
        for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
            monkeypatch.setenv(name, prx.url)
        for name in ("no_proxy", "NO_PROXY"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("EARNEST_TEST_KEY", "sk-local-test")
        yield prx


@pytest.mark.parametrize("use_proxy", [False, True])
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "127.1", "2130706433", "0x7f.1", "0177.0.0.1"])
def test_a_loopback_server_is_never_reached_through_a_proxy(tmp_path, proxy, use_proxy, host):
    """http_proxy set: a server on this machine got the request through the proxy, the API key
    included, and the proxy's answer was stored as the model's. Now the proxy sees nothing, opted in
    or not, whichever spelling of loopback the C library accepts (issue 53.6: 127.1 and 2130706433
    sent the key to the proxy); the server gets the key and its answer is the one stored."""
    with FakeOpenAI() as srv:
        url = srv.url.replace("127.0.0.1", host)
        cfg = _cfg(url, tmp_path, api_key_env="EARNEST_TEST_KEY", use_proxy=use_proxy)
        res = load_backend("m", cfg).generate(_reqs("a"), 8)[0]
        assert proxy.received == []
        assert res.response == "echo:a" and srv.headers[0]["Authorization"] == "Bearer sk-local-test"
        stored = [json.loads(p.read_text())["payload"]["choices"][0]["message"]["content"]
                  for p in (tmp_path / "cache").rglob("*.json")]
        assert stored == ["echo:a"]


def test_a_proxy_gets_the_request_and_key_only_when_opted_in(tmp_path, proxy):
    """A server elsewhere (a name that resolves nowhere, so only a proxy could answer for it): without
    ``use_proxy`` the proxy of the environment is not used (the request fails, and its message says
    how to opt in); with ``use_proxy: true`` the request, key included, goes through it."""
    url = "http://api.earnest-test.invalid/v1"
    res = load_backend("m", _cfg(url, tmp_path, api_key_env="EARNEST_TEST_KEY", max_retries=0)).generate(
        _reqs("a"), 8)[0]
    assert proxy.received == []
    assert res.stop_reason == "error:connection", res.extra
    assert "models.m.use_proxy: true" in res.extra["error"] and proxy.url not in res.extra["error"]
    assert not list((tmp_path / "cache").rglob("*.json"))

    cfg = _cfg(url, tmp_path, api_key_env="EARNEST_TEST_KEY", max_retries=0, use_proxy=True)
    res = load_backend("m", cfg).generate(_reqs("a"), 8)[0]
    assert [(r["method"], r["target"]) for r in proxy.received] == [("POST", url + "/chat/completions")]
    assert proxy.received[0]["headers"]["Authorization"] == "Bearer sk-local-test"
    assert res.response == RecordingProxy.ANSWER
    with pytest.raises(ValueError, match=r"models\.m\.use_proxy: true or false is required, got 'yes'"):
        OpenAIBackend("m", {"base_url": url, "use_proxy": "yes"})


def _own_address() -> str | None:
    """An address of this machine that is not loopback (the one a route out would use), or None."""
    for target in ("192.0.2.1", "10.255.255.255", "198.51.100.1"):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:
                s.connect((target, 9))   # UDP: nothing is sent, the kernel only picks a source address
            except OSError:
                continue
            address = s.getsockname()[0]
        if not address.startswith("127.") and address != "0.0.0.0":
            return address
    return None


def test_a_server_elsewhere_is_reached_directly_despite_the_proxy_variables(tmp_path, proxy):
    """A server on a non-loopback address with http_proxy set: reached directly (the proxy sees
    nothing, the key goes to the server only) unless ``use_proxy`` is true."""
    address = _own_address()
    if address is None:
        pytest.skip("this machine has no address but loopback")
    with FakeOpenAI(host=address) as srv:
        res = load_backend("m", _cfg(srv.url, tmp_path, api_key_env="EARNEST_TEST_KEY")).generate(_reqs("a"), 8)[0]
        assert proxy.received == [] and res.response == "echo:a"
        assert srv.headers[0]["Authorization"] == "Bearer sk-local-test"
        cfg = _cfg(srv.url, tmp_path / "b", api_key_env="EARNEST_TEST_KEY", use_proxy=True)
        res = load_backend("m", cfg).generate(_reqs("b"), 8)[0]
        assert [r["target"] for r in proxy.received] == [srv.url + "/chat/completions"]
        assert res.response == RecordingProxy.ANSWER and srv.count("b") == 0


@pytest.mark.parametrize("url", ["http://user:s3cret@127.0.0.1:8000/v1", "https://s3cret@api.example.com/v1",
                                 "http://:s3cret@127.0.0.1/v1"])
def test_credentials_in_base_url_are_refused(url):
    """user:password@ in base_url was accepted without a word (sent nowhere as a login, but kept in
    every generations table's decoding column). Refused, naming the field, the secret not repeated."""
    with pytest.raises(ValueError, match=r"^models\.m\.base_url: holds credentials") as err:
        OpenAIBackend("m", {"base_url": url})
    assert "s3cret" not in str(err.value) and "api_key_env" in str(err.value)
    for bad in ("http:///v1", "http://127.0.0.1:port/v1"):
        with pytest.raises(ValueError, match=r"^models\.m\.base_url: "):
            OpenAIBackend("m", {"base_url": bad})


@pytest.mark.parametrize("key", ["model", "max_tokens", "max_completion_tokens", "prompt", "messages", "stop",
                                 "temperature", "stream", "echo"])
def test_request_params_cannot_override_what_earnest_sends(key):
    """request_params {"max_tokens": 5} overrode generation.max_new_tokens without a word (and
    "model" the model, "messages" the question...). Refused, naming the field."""
    with pytest.raises(ValueError, match=rf"^models\.m\.request_params\.{key}: set by earnest"):
        OpenAIBackend("m", {"base_url": "http://127.0.0.1:1/v1", "request_params": {key: 1}})


def test_request_params_reach_the_server_beside_earnest_s_fields(tmp_path):
    import datetime

    with FakeOpenAI() as srv:
        cfg = _cfg(srv.url, tmp_path, request_params={"seed": 3, "top_p": 0.5})
        assert load_backend("m", cfg).generate(_reqs("a"), 16)[0].response == "echo:a"
        body = srv.received[0]["body"]
        assert (body["seed"], body["top_p"], body["max_tokens"], body["model"]) == (3, 0.5, 16, "tiny")
    # a value JSON cannot send (a YAML date) or a key that is not text crashed the first request
    for params, match in (({"seed": datetime.date(2024, 1, 1)}, r"request_params: not sendable as JSON"),
                          ({1: "a"}, r"request_params: the key 1 is not text"),
                          (["seed"], r"request_params: a mapping is required")):
        with pytest.raises(ValueError, match=rf"^models\.m\.{match}"):
            OpenAIBackend("m", {"base_url": "http://127.0.0.1:1/v1", "request_params": params})
