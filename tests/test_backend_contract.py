"""Every registered backend against the same contract (earnest.backends.base.Backend).

The transformers backend runs a tiny random Llama; the OpenAI backend talks to the local HTTP
test server of test_openai_backend.py. Both must: be Backend subclasses, accept ``on_result`` and
call it once per request, return results in request order with the requests' keys, use only the
shared stop-reason names, and end an answer at a request's stop string.
"""

from __future__ import annotations

import contextlib

import pytest

from earnest.backends import BACKENDS, STOP_REASONS, Backend, GenerationRequest, load_backend
from earnest.backends.base import check_stop_reason, cut_at_stop
from openai_server import FakeOpenAI

PROMPTS = ["Q: Tom has 3 apples and buys 4 more. How many apples?\nA:",
           "Q: A train travels 60 km in 2 hours. What is its speed?\nA:",
           "Q: What is 12 times 7?\nA:"]


@contextlib.contextmanager
def _backend(kind, tiny_model_dir, tmp_path):
    if kind == "transformers":
        backend = load_backend("tiny", {"backend": "transformers", "path": str(tiny_model_dir), "batch_size": 2})
        try:
            yield backend
        finally:
            backend.close()
    else:
        # the server's answer is the prompt reversed, so answers differ and contain several characters
        with FakeOpenAI(answer=lambda text: text[::-1]) as srv:
            yield load_backend("api", {"backend": "openai", "base_url": srv.url, "model": "m", "concurrency": 2,
                                       "max_retries": 0, "timeout_s": 5, "cache_dir": None})


def test_every_registered_backend_is_covered():
    assert set(BACKENDS) == {"transformers", "openai"}


@pytest.mark.parametrize("kind", sorted(BACKENDS))
def test_backend_contract(kind, tiny_model_dir, tmp_path):
    with _backend(kind, tiny_model_dir, tmp_path) as backend:
        assert isinstance(backend, Backend)
        requests = [GenerationRequest(key=f"r{i}", prompt=p) for i, p in enumerate(PROMPTS)]
        seen = []
        results = backend.generate(requests, 12, on_result=seen.append)
        assert [r.key for r in results] == ["r0", "r1", "r2"]
        assert sorted(id(r) for r in seen) == sorted(id(r) for r in results)   # once each, the same objects
        for r in results:
            assert r.stop_reason in STOP_REASONS and check_stop_reason(r.stop_reason, "test")
            assert isinstance(r.response, str) and isinstance(r.prompt_tokens, int) and isinstance(r.new_tokens, int)
        assert backend.generate([], 12, on_result=seen.append) == [] and len(seen) == 3
        assert [r.response for r in backend.generate(requests, 12)] == [r.response for r in results]


@pytest.mark.parametrize("kind", ["transformers", "openai"])
def test_backend_honours_stop_strings(kind, tiny_model_dir, tmp_path):
    with _backend(kind, tiny_model_dir, tmp_path) as backend:
        requests = [GenerationRequest(key=f"r{i}", prompt=p) for i, p in enumerate(PROMPTS)]
        results = backend.generate(requests, 12)
        # stop strings: a piece of each answer becomes that request's stop string; the answer must
        # end just before it, with stop reason "stop_string"
        stops = {}
        for req, res in zip(requests, results):
            text = res.response
            if len(text.strip()) >= 3:
                piece = text[len(text) // 2: len(text) // 2 + 2]
                if piece.strip():
                    stops[req.key] = (piece, "never-appearing-stop")
        assert stops, [r.response for r in results]
        stopped = backend.generate([GenerationRequest(key=q.key, prompt=q.prompt, stop=stops.get(q.key, ()))
                                    for q in requests], 12)
        for req, before, after in zip(requests, results, stopped):
            if req.key in stops:
                assert after.response == cut_at_stop(before.response, stops[req.key])[0]
                assert after.stop_reason == "stop_string" or (kind == "openai" and after.stop_reason == "eos")
            else:
                assert after.response == before.response


def test_a_class_that_is_not_a_backend_is_refused(monkeypatch):
    monkeypatch.setitem(BACKENDS, "plain", "earnest.backends.base:GenerationResult")
    with pytest.raises(TypeError, match="does not implement"):
        load_backend("m", {"backend": "plain"})


class _NoGenerate(Backend):
    pass


def test_backend_without_generate_cannot_be_built():
    with pytest.raises(TypeError):
        _NoGenerate()
