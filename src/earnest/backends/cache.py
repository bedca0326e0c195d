"""An on-disk request cache in front of any backend: a rerun of the same requests pays nothing.

:class:`CachedBackend` keys every request by the SHA-256 of (the model's identity, the request's
prompt or messages and stop strings, ``max_new_tokens``) and stores the answer as one JSON file
under ``cache_dir``. Misses go to the wrapped backend, which is built only on the first miss, so a
job whose requests are all cached never loads weights or opens a connection. Results whose
``stop_reason`` starts with ``error:`` (no answer: a transport failure after the backend's own
retries) are never stored, so a rerun asks again. A backend's note on how an answer came
(:data:`KEPT_EXTRA`: the OpenAI backend's ``empty_answer`` and ``invalid_unicode``) is stored with
it and comes back in ``extra``. Files are ASCII JSON, so any text (a lone surrogate too) is stored as
it came; a file that cannot be written is left out (a warning) and the answer is still returned.

The model's identity is its config entry without the keys that do not change answers (batch size,
concurrency, timeouts, retries, resources, the OpenAI backend's own cache folder, ...): the same
greedy request to the same weights or the same API model hits the same file, whichever backend
kind serves it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from pathlib import Path
from typing import Callable, Sequence

from .base import GenerationRequest, GenerationResult

log = logging.getLogger(__name__)
# what a backend says in ``extra`` about how an answer came, stored with the answer
KEPT_EXTRA = ("empty_answer", "invalid_unicode")

# config keys of a model entry that do not change what the model answers
NON_SEMANTIC_KEYS = frozenset({
    "batch_size", "concurrency", "max_retries", "timeout_s", "backoff_s", "max_backoff_s", "cache_dir",
    "resources", "threads", "api_key_env", "device", "offline", "gsm_symbolic", "checkpoint_every",
    "deadline_s", "retry_budget_s", "cuda_graphs",
    "serve_token",   # a started server's token: new every start, a secret (its serve_identity stays)
})


def model_identity(model_name: str, model_cfg: dict) -> dict:
    """What identifies a model's answers: its name and its config entry minus :data:`NON_SEMANTIC_KEYS`."""
    cfg = dict(model_cfg or {})
    if cfg.get("served_by"):   # a server the job started: known by what it is, not by the port it got
        cfg.pop("base_url", None)
    return {"name": model_name, **{k: v for k, v in sorted(cfg.items()) if k not in NON_SEMANTIC_KEYS}}


def request_key(identity: dict, request: GenerationRequest, max_new_tokens: int) -> str:
    """SHA-256 (hex) of a request as the cache sees it; a question's later samples (``request.sample`` > 0,
    a model entry's ``decoding.samples``) each have their own (the first's is the key a request had before
    samples existed). With sampling (``decoding.temperature`` > 0) the request's key is in it too: its
    seed is drawn from the key (``earnest.backends.decoding.request_seed``), so two questions with the
    same prompt get answers of their own."""
    fields = {"model": identity, "prompt": request.prompt, "messages": request.messages,
              "stop": list(getattr(request, "stop", ()) or ()), "max_new_tokens": int(max_new_tokens)}
    if getattr(request, "sample", 0):
        fields["sample"] = int(request.sample)
    decoding = identity.get("decoding")
    if isinstance(decoding, dict) and (decoding.get("temperature") or 0) > 0:
        fields["key"] = request.key
    blob = json.dumps(fields, sort_keys=True, ensure_ascii=False, default=str)
    # surrogatepass: a lone surrogate cannot crash it; for valid text the same bytes as UTF-8
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


class CachedBackend:
    """A backend answering from ``cache_dir`` first; see the module doc.

    ``factory()`` builds the wrapped backend (called at most once, on the first miss). Counters:
    ``hits`` (answers read from disk), ``misses`` (requests sent to the backend), ``errors``
    (misses that came back as ``error:<kind>``).
    """

    def __init__(self, factory: Callable[[], object], cache_dir: str | Path, identity: dict, name: str = ""):
        self._factory = factory
        self._inner = None
        self.cache_dir = Path(cache_dir)
        self.identity = identity
        self.name = name or str(identity.get("name", "cached"))
        self.hits = 0
        self.misses = 0
        self.errors = 0
        self._lock = threading.Lock()

    def _path(self, key: str) -> Path:
        return self.cache_dir / key[:2] / f"{key}.json"

    def _read(self, key: str, request: GenerationRequest) -> GenerationResult | None:
        path = self._path(key)
        if not path.exists():
            return None
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
            r = stored["result"]
            kept = {k: r[k] for k in KEPT_EXTRA if k in r}
            return GenerationResult(key=request.key, response=r["response"], prompt_tokens=int(r["prompt_tokens"]),
                                    new_tokens=int(r["new_tokens"]), stop_reason=r["stop_reason"],
                                    seconds=float(r["seconds"]), extra={"cached": True, "cache_key": key, **kept})
        except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError, OSError):
            return None  # a torn or foreign file: ask again and overwrite it

    def _write(self, key: str, request: GenerationRequest, result: GenerationResult, max_new_tokens: int) -> None:
        path = self._path(key)
        tmp = path.with_suffix(f".tmp{os.getpid()}.{threading.get_ident()}")
        kept = {k: result.extra[k] for k in KEPT_EXTRA if k in (result.extra or {})}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps({
                "request": {"model": self.identity, "prompt": request.prompt, "messages": request.messages,
                            "stop": list(getattr(request, "stop", ()) or ()), "max_new_tokens": int(max_new_tokens)},
                "result": {"response": result.response, "prompt_tokens": int(result.prompt_tokens),
                           "new_tokens": int(result.new_tokens), "stop_reason": result.stop_reason,
                           "seconds": float(result.seconds), **kept}}, default=str), encoding="utf-8")
            os.replace(tmp, path)  # atomic: a reader never sees half a file
        except (OSError, ValueError) as exc:   # e.g. a full disk: the answer stands, it is only not cached
            log.warning("%s: could not store the answer (%s)", path, exc)
            try:
                tmp.unlink()
            except OSError:
                pass

    def generate(self, requests: Sequence[GenerationRequest], max_new_tokens: int,
                 on_result=None) -> list[GenerationResult]:
        """Answer every request in order: cached ones from disk, the rest from the wrapped backend."""
        out: list[GenerationResult | None] = [None] * len(requests)
        keys = [request_key(self.identity, r, max_new_tokens) for r in requests]
        todo: list[int] = []
        for i, (req, key) in enumerate(zip(requests, keys)):
            hit = self._read(key, req)
            if hit is None:
                todo.append(i)
                continue
            self.hits += 1
            out[i] = hit
            if on_result is not None:
                on_result(hit)
        if todo:
            if self._inner is None:
                self._inner = self._factory()
            self.misses += len(todo)
            results = self._inner.generate([requests[i] for i in todo], int(max_new_tokens))
            for i, res in zip(todo, results):
                res.key = requests[i].key
                if str(res.stop_reason).startswith("error:"):
                    self.errors += 1
                else:
                    self._write(keys[i], requests[i], res, max_new_tokens)
                out[i] = res
                if on_result is not None:
                    on_result(res)
        return out  # type: ignore[return-value]

    def close(self) -> None:
        if self._inner is not None:
            self._inner.close()
            self._inner = None


def cached_backend(model_name: str, model_cfg: dict, cache_dir: str | Path) -> CachedBackend:
    """:class:`CachedBackend` over ``load_backend(model_name, model_cfg)`` (built on the first miss)."""
    from . import load_backend

    return CachedBackend(lambda: load_backend(model_name, model_cfg), cache_dir, model_identity(model_name, model_cfg),
                         name=model_name)
