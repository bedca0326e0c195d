"""A backend for any OpenAI-compatible HTTP server (``/chat/completions``, ``/completions``).

Standard library only (``urllib``). Config keys of a model entry (``models.<name>``)::

    backend: openai
    base_url: http://127.0.0.1:8000/v1     # required; the server's API root
    model: gpt-4o-mini                     # model id sent to the server (default: the entry's name)
    api_key_env: OPENAI_API_KEY            # env variable holding the key; omit for keyless servers
    concurrency: 4                         # requests in flight at once (thread pool)
    max_retries: 5                         # further attempts after a 429, 5xx or connection error
    timeout_s: 120                         # per attempt
    backoff_s: 1.0                         # first wait; doubles each retry (capped by max_backoff_s)
    max_backoff_s: 60
    cache_dir: results/cache/openai        # on-disk response cache; omit to disable
    temperature: 0                         # greedy unless set
    request_params: {}                     # extra body fields (e.g. seed, top_p), part of the cache key

Chat requests (``GenerationRequest.messages``) go to ``/chat/completions``; raw-text requests
(``prompt``) to ``/completions``. Every successful answer is stored in ``cache_dir`` under the
SHA-256 of (base_url, model, endpoint, messages or prompt, body parameters); a rerun reads it
from there and sends nothing. The API key is never part of the key or of the stored file.
Failures after the last retry become a result with ``stop_reason`` ``error:<kind>`` and an empty
response (and are not cached), so one bad request never stops the others.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import os
import random
import socket
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Sequence

from .base import GenerationRequest, GenerationResult

_RETRY_STATUS = {408, 409, 425, 429}  # plus every 5xx
_FINISH = {"stop": "eos", "length": "length", "eos": "eos"}


class _Retryable(Exception):
    def __init__(self, kind: str, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after


class _Fatal(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def _retry_after(headers) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - time.time())
        except (TypeError, ValueError):
            return None


class OpenAIBackend:
    """Sends requests to an OpenAI-compatible server; see the module doc for the config keys."""

    def __init__(self, model_name: str, model_cfg: dict):
        cfg = dict(model_cfg or {})
        where = f"models.{model_name}"
        self.name = model_name
        base_url = cfg.get("base_url")
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"{where}.base_url: an http(s) URL is required, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.model = str(cfg.get("model", model_name))
        self.api_key = None
        key_env = cfg.get("api_key_env")
        if key_env:
            self.api_key = os.environ.get(key_env)
            if not self.api_key:
                raise ValueError(f"{where}.api_key_env: environment variable {key_env!r} is not set")
        self.concurrency = self._int(cfg, "concurrency", 4, where, minimum=1)
        self.max_retries = self._int(cfg, "max_retries", 5, where, minimum=0)
        self.timeout_s = float(cfg.get("timeout_s", 120))
        self.backoff_s = float(cfg.get("backoff_s", 1.0))
        self.max_backoff_s = float(cfg.get("max_backoff_s", 60.0))
        self.temperature = float(cfg.get("temperature", 0.0))
        self.request_params = dict(cfg.get("request_params") or {})
        cache_dir = cfg.get("cache_dir")
        self.cache_dir = Path(cache_dir) if cache_dir else None
        if self.cache_dir is not None:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # counters for reports and tests: answers served from the cache / sent over HTTP
        self.cache_hits = 0
        self.http_attempts = 0

    @staticmethod
    def _int(cfg: dict, key: str, default: int, where: str, minimum: int) -> int:
        value = cfg.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise ValueError(f"{where}.{key}: an integer >= {minimum} is required, got {value!r}")
        return value

    # ------------------------------------------------------------------ request building

    def _body(self, req: GenerationRequest, max_new_tokens: int) -> tuple[str, dict]:
        body = {"model": self.model, "temperature": self.temperature, "max_tokens": int(max_new_tokens),
                **self.request_params}
        if req.messages is not None:
            body["messages"] = req.messages
            return "/chat/completions", body
        body["prompt"] = req.prompt
        return "/completions", body

    def cache_key(self, endpoint: str, body: dict) -> str:
        """SHA-256 of base URL, endpoint and the request body (which holds model, messages, params)."""
        blob = json.dumps({"base_url": self.base_url, "endpoint": endpoint, "body": body},
                          sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def _cache_path(self, key: str) -> Path | None:
        return None if self.cache_dir is None else self.cache_dir / key[:2] / f"{key}.json"

    # ------------------------------------------------------------------ HTTP

    def _post(self, endpoint: str, body: dict) -> dict:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.base_url + endpoint, data=data, headers=headers, method="POST")
        with self._lock:
            self.http_attempts += 1
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode("utf-8", "replace")
            if exc.code in _RETRY_STATUS or exc.code >= 500:
                raise _Retryable(f"http_{exc.code}", f"HTTP {exc.code}: {detail}", _retry_after(exc.headers)) from None
            raise _Fatal(f"http_{exc.code}", f"HTTP {exc.code}: {detail}") from None
        except (socket.timeout, TimeoutError) as exc:
            raise _Retryable("timeout", f"no answer within {self.timeout_s} s ({exc})") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, (socket.timeout, TimeoutError)):
                raise _Retryable("timeout", f"no answer within {self.timeout_s} s") from None
            raise _Retryable("connection", f"connection failed: {exc.reason}") from None
        except (ConnectionError, OSError) as exc:
            raise _Retryable("connection", f"connection failed: {exc}") from None
        try:
            payload = json.loads(raw)
        except json.JSONDecodeError:
            raise _Fatal("bad_response", f"answer is not JSON: {raw[:200]!r}") from None
        if not isinstance(payload, dict) or not payload.get("choices"):
            raise _Fatal("bad_response", f"answer has no choices: {str(payload)[:200]}")
        return payload

    def _wait(self, attempt: int, hint: float | None) -> None:
        delay = min(self.max_backoff_s, self.backoff_s * (2 ** attempt))
        delay *= 1.0 + 0.25 * random.random()  # jitter so parallel retries do not arrive together
        if hint is not None:
            delay = max(delay, min(hint, self.max_backoff_s))
        time.sleep(delay)

    def _one(self, req: GenerationRequest, max_new_tokens: int) -> GenerationResult:
        endpoint, body = self._body(req, max_new_tokens)
        key = self.cache_key(endpoint, body)
        path = self._cache_path(key)
        if path is not None and path.exists():
            try:
                stored = json.loads(path.read_text(encoding="utf-8"))
                with self._lock:
                    self.cache_hits += 1
                return self._result(req.key, stored["payload"], stored["seconds"], attempts=0, cached=True,
                                    endpoint=endpoint, cache_key=key)
            except (json.JSONDecodeError, KeyError, OSError):
                pass  # a torn or foreign file: ask again and overwrite it
        start = time.perf_counter()
        attempt = 0
        while True:
            try:
                payload = self._post(endpoint, body)
                break
            except _Retryable as exc:
                if attempt >= self.max_retries:
                    return self._error(req.key, exc.kind, str(exc), attempt + 1, time.perf_counter() - start)
                self._wait(attempt, exc.retry_after)
                attempt += 1
            except _Fatal as exc:
                return self._error(req.key, exc.kind, str(exc), attempt + 1, time.perf_counter() - start)
        seconds = time.perf_counter() - start
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{os.getpid()}.{threading.get_ident()}")
            tmp.write_text(json.dumps({"request": {"base_url": self.base_url, "endpoint": endpoint, "body": body},
                                       "payload": payload, "seconds": seconds}, ensure_ascii=False),
                           encoding="utf-8")
            os.replace(tmp, path)  # atomic: a reader never sees half a file
        return self._result(req.key, payload, seconds, attempts=attempt + 1, cached=False,
                            endpoint=endpoint, cache_key=key)

    @staticmethod
    def _result(key: str, payload: dict, seconds: float, attempts: int, cached: bool, endpoint: str,
                cache_key: str) -> GenerationResult:
        choice = payload["choices"][0]
        if endpoint == "/chat/completions":
            text = (choice.get("message") or {}).get("content") or ""
        else:
            text = choice.get("text") or ""
        finish = choice.get("finish_reason")
        usage = payload.get("usage") or {}
        return GenerationResult(
            key=key, response=text,
            prompt_tokens=int(usage.get("prompt_tokens", -1) if usage.get("prompt_tokens") is not None else -1),
            new_tokens=int(usage.get("completion_tokens", -1) if usage.get("completion_tokens") is not None else -1),
            stop_reason=_FINISH.get(finish, str(finish)), seconds=float(seconds),
            extra={"cached": cached, "attempts": attempts, "finish_reason": finish, "cache_key": cache_key})

    @staticmethod
    def _error(key: str, kind: str, message: str, attempts: int, seconds: float) -> GenerationResult:
        return GenerationResult(key=key, response="", prompt_tokens=-1, new_tokens=-1,
                                stop_reason=f"error:{kind}", seconds=seconds,
                                extra={"cached": False, "attempts": attempts, "error": message})

    # ------------------------------------------------------------------ Backend interface

    def generate(self, requests: Sequence[GenerationRequest], max_new_tokens: int) -> list[GenerationResult]:
        """Answer every request in order, ``concurrency`` at a time; unknown token counts are -1."""
        if not requests:
            return []
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests))) as pool:
            return list(pool.map(lambda r: self._one(r, max_new_tokens), requests))

    def close(self) -> None:
        """Nothing is held between calls (each request opens its own connection)."""
