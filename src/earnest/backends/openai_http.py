"""A backend for any OpenAI-compatible HTTP server (``/chat/completions``, ``/completions``).

Standard library only (``urllib``). Config keys of a model entry (``models.<name>``)::

    backend: openai
    base_url: http://127.0.0.1:8000/v1     # required; the server's API root
    model: gpt-4o-mini                     # model id sent to the server (default: the entry's name)
    api_key_env: OPENAI_API_KEY            # env variable holding the key; omit for keyless servers
    concurrency: 4                         # requests in flight at once (thread pool)
    max_retries: 5                         # further attempts after a failed one (see below)
    timeout_s: 120                         # deadline of one attempt: connect, send, whole answer read
    backoff_s: 1.0                         # first wait; doubles each retry (capped by max_backoff_s)
    max_backoff_s: 60
    cache_dir: results/cache/openai        # on-disk response cache; omit to disable
    temperature: 0                         # greedy unless set
    request_params: {}                     # extra body fields (e.g. seed, top_p), part of the cache key

Chat requests (``GenerationRequest.messages``) go to ``/chat/completions``; raw-text requests
(``prompt``) to ``/completions``. A request's stop strings are sent as ``stop``, and the answer is
also cut at the first of them here (servers differ in how many they accept); the stop reason is
then ``stop_string``. The API's ``finish_reason`` maps to earnest's names: ``stop`` -> ``eos``,
``length`` -> ``max_new_tokens``, ``content_filter`` -> ``content_filter``.

An attempt fails, and is retried after a backoff, on a 408/409/425/429 or 5xx status, a refused
or dropped connection, a body cut short, an attempt that runs past ``timeout_s`` (a server that
sends one byte at a time does not extend it), a body larger than :data:`MAX_ANSWER_BYTES` (not read
further), or an answer that is not a valid completion (not JSON, JSON nested too deep to read, a key
given twice in one object, no ``choices`` list, a choice without text, a non-numeric ``usage``, an
unknown ``finish_reason``). Other 4xx statuses are not retried. A request still failing after the last
retry becomes a result with ``stop_reason`` ``error:<kind>`` and an empty response: a transport
error, not a model answer (callers do not keep it; see :mod:`earnest.generation`).

Redirects are never followed: a 3xx answer is the result ``error:redirect``, not retried or cached,
whose message names the ``Location`` (put the final address in ``base_url``). Following one would
send the ``Authorization`` header, the API key, to whatever server the answer names, and take that
server's answer for the model's.

An empty answer that is likely transient (chat ``content: null``, e.g. a refusal or a tool call, or
text ``""`` with ``finish_reason`` ``length``) is retried like a failed attempt; if every attempt
gives one it is kept as the answer (``""``). The result's ``extra["empty_answer"]`` (and the stored
file's ``empty_answer``) says which: ``"transient"`` (an empty answer came first, a retry gave
text), ``"persistent"`` (every attempt was empty) or None. An empty text with ``finish_reason``
``stop`` is a model that ended at once: an answer, not retried. A lone UTF-16 surrogate in the text
(the JSON escape ``\\ud800`` alone, which no UTF-8 file can hold) becomes U+FFFD, and
``extra["invalid_unicode"]`` counts them (0 normally); the stored file keeps the answer as sent.

Only answers that passed validation are stored in ``cache_dir``, under the SHA-256 of (base_url,
model, endpoint, messages or prompt, stop strings, body parameters); a rerun reads them from there
and sends nothing. A stored file that is unreadable or fails validation is ignored and replaced.
The API key is never part of the key or of the stored file.
"""

from __future__ import annotations

import email.utils
import hashlib
import http.client
import json
import logging
import math
import os
import random
import socket
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Sequence

from earnest.jsonl import DuplicateKey, unique_keys

from .base import (CONTENT_FILTER, EOS, MAX_NEW_TOKENS, STOP_STRING, Backend, GenerationRequest, GenerationResult,
                   OnResult, cut_at_stop, valid_text)

#: requests in flight at once, at most (one thread each; tens of thousands would not start)
MAX_CONCURRENCY = 1024
log = logging.getLogger(__name__)

_RETRY_STATUS = {408, 409, 425, 429}  # plus every 5xx
#: the largest answer body read (bytes): a completion of thousands of tokens is kilobytes; a server
#: sending more is not answering (it would fill the memory of every worker at once)
MAX_ANSWER_BYTES = 64 * 2**20
# the API's finish_reason -> earnest's stop reason ("stop" is EOS unless a stop string was met)
_FINISH = {"stop": EOS, "eos": EOS, "length": MAX_NEW_TOKENS, "content_filter": CONTENT_FILTER}


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


# ---------------------------------------------------------------- a deadline per attempt
#
# A socket timeout bounds each read, so a server sending one byte at a time could hold an attempt
# for ever. Every connection opened during an attempt registers its socket with the attempt's
# watchdog (a thread-local); when the deadline passes the watchdog shuts the sockets down, which
# wakes the blocked read, and the attempt fails as a timeout.

_attempt = threading.local()


class _Watchdog:
    def __init__(self, seconds: float):
        self.fired = False
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            socks = list(self._socks)
        for sock in socks:
            _shutdown(sock)

    def register(self, sock) -> None:
        with self._lock:
            self._socks.append(sock)
            fired = self.fired
        if fired:
            _shutdown(sock)

    def __enter__(self):
        _attempt.watchdog = self
        self._timer.start()
        return self

    def __exit__(self, *exc):
        self._timer.cancel()
        _attempt.watchdog = None


def _shutdown(sock) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _register(sock) -> None:
    watchdog = getattr(_attempt, "watchdog", None)
    if watchdog is not None and sock is not None:
        watchdog.register(sock)


class _HTTPConnection(http.client.HTTPConnection):
    def connect(self):
        super().connect()
        _register(self.sock)


class _HTTPSConnection(http.client.HTTPSConnection):
    def connect(self):
        super().connect()
        _register(self.sock)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Follows no redirect: urllib then raises the 3xx as an HTTPError (see :meth:`OpenAIBackend._post`)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req):
        return self.do_open(_HTTPConnection, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req):
        kwargs = {"context": self._context}
        if getattr(self, "_check_hostname", None) is not None:  # Python < 3.12
            kwargs["check_hostname"] = self._check_hostname
        return self.do_open(_HTTPSConnection, req, **kwargs)


# ---------------------------------------------------------------- answer validation


def _token_count(usage: dict, name: str) -> int:
    value = usage.get(name)
    if value is None:
        return -1
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value < 0 or value != int(value):
        raise _Retryable("bad_response", f"usage.{name} is not a token count: {value!r}")
    return int(value)


def parse_completion(payload, endpoint: str, stop: Sequence[str] = ()) -> dict:
    """The fields of a completion answer, checked: text, stop_reason, finish_reason, token counts.

    Anything that is not a valid completion raises ``_Retryable("bad_response", ...)``. ``empty``
    says why an answer is a likely transient empty one (None otherwise); ``invalid_unicode`` counts
    the lone surrogates replaced by U+FFFD in ``text``.
    """
    if not isinstance(payload, dict):
        raise _Retryable("bad_response", f"answer is not a JSON object: {str(payload)[:200]}")
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise _Retryable("bad_response", f"answer has no list of choices: {str(payload)[:200]}")
    choice = choices[0]
    if endpoint == "/chat/completions":
        message = choice.get("message")
        if not isinstance(message, dict):
            raise _Retryable("bad_response", f"choice has no message: {str(choice)[:200]}")
        text = message.get("content")
        empty = "content null" if text is None else None   # e.g. a refusal or a tool call: no text
        text = "" if text is None else text
    else:
        text = choice.get("text")
        empty = None
    if not isinstance(text, str):
        raise _Retryable("bad_response", f"choice text is not a string: {str(choice)[:200]}")
    finish = choice.get("finish_reason")
    if finish is not None and finish not in _FINISH:
        raise _Retryable("bad_response", f"unknown finish_reason {finish!r}")
    if text == "" and finish == "length":
        empty = empty or 'text "" at finish_reason "length"'
    if finish == "content_filter":
        empty = None   # withheld by the API, not a hiccup
    text, invalid = valid_text(text)
    usage = payload.get("usage")
    if usage is None:
        usage = {}
    if not isinstance(usage, dict):
        raise _Retryable("bad_response", f"usage is not an object: {str(usage)[:200]}")
    prompt_tokens = _token_count(usage, "prompt_tokens")
    new_tokens = _token_count(usage, "completion_tokens")
    text, cut = cut_at_stop(text, stop)
    matched = choice.get("stop_reason")  # vLLM names the stop string it met
    if cut or (finish == "stop" and isinstance(matched, str) and matched in stop):
        reason = STOP_STRING
    else:
        reason = _FINISH.get(finish, EOS)
    return {"text": text, "stop_reason": reason, "finish_reason": finish, "prompt_tokens": prompt_tokens,
            "new_tokens": new_tokens, "empty": empty, "invalid_unicode": invalid}


class OpenAIBackend(Backend):
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
        self.concurrency = self._int(cfg, "concurrency", 4, where, minimum=1, maximum=MAX_CONCURRENCY)
        self.max_retries = self._int(cfg, "max_retries", 5, where, minimum=0)
        self.timeout_s = self._number(cfg, "timeout_s", 120.0, where, positive=True)
        self.backoff_s = self._number(cfg, "backoff_s", 1.0, where)
        self.max_backoff_s = self._number(cfg, "max_backoff_s", 60.0, where)
        self.temperature = self._number(cfg, "temperature", 0.0, where)
        request_params = cfg.get("request_params") or {}
        if not isinstance(request_params, dict):
            raise ValueError(f"{where}.request_params: a mapping is required, got {request_params!r}")
        self.request_params = dict(request_params)
        cache_dir = cfg.get("cache_dir")
        self.cache_dir = Path(cache_dir) if cache_dir else None
        if self.cache_dir is not None:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._opener = urllib.request.build_opener(_HTTPHandler, _HTTPSHandler, _NoRedirect)
        # counters for reports and tests: answers served from the cache / sent over HTTP
        self.cache_hits = 0
        self.http_attempts = 0
        self.max_answer_bytes = MAX_ANSWER_BYTES

    @staticmethod
    def _int(cfg: dict, key: str, default: int, where: str, minimum: int, maximum: int | None = None) -> int:
        value = cfg.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum \
                or (maximum is not None and value > maximum):
            bounds = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
            raise ValueError(f"{where}.{key}: an integer {bounds} is required, got {value!r}")
        return value

    @staticmethod
    def _number(cfg: dict, key: str, default: float, where: str, positive: bool = False) -> float:
        value = cfg.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or value < 0 or (positive and value == 0):
            raise ValueError(f"{where}.{key}: a {'positive' if positive else 'non-negative'} number is required, "
                             f"got {value!r}")
        return float(value)

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
        """SHA-256 of base URL, endpoint and the request body (model, messages or prompt, stop, params)."""
        blob = json.dumps({"base_url": self.base_url, "endpoint": endpoint, "body": body},
                          sort_keys=True, ensure_ascii=False)
        # surrogatepass: a lone surrogate cannot crash it; for valid text the same bytes as UTF-8
        return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()

    def _cache_path(self, key: str) -> Path | None:
        return None if self.cache_dir is None else self.cache_dir / key[:2] / f"{key}.json"

    # ------------------------------------------------------------------ HTTP

    def _post(self, endpoint: str, body: dict) -> bytes:
        """One attempt: the raw answer body, or _Retryable/_Fatal. Ends by ``timeout_s`` at the latest."""
        data = json.dumps(body).encode("ascii")   # ASCII JSON: any text, even a lone surrogate, goes as sent
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.base_url + endpoint, data=data, headers=headers, method="POST")
        with self._lock:
            self.http_attempts += 1
        watchdog = _Watchdog(self.timeout_s)
        try:
            with watchdog:
                with self._opener.open(request, timeout=self.timeout_s) as resp:
                    # read(n) returns a body cut short without a word: read() whole when the length is
                    # known (IncompleteRead), read(n) only for chunked bodies (whose reader raises it)
                    length = resp.length
                    raw = resp.read() if length is not None and length <= self.max_answer_bytes \
                        else b"" if length is not None else resp.read(self.max_answer_bytes + 1)
                    if length is not None and length > self.max_answer_bytes or len(raw) > self.max_answer_bytes:
                        raise _Retryable("too_large", f"answer larger than {self.max_answer_bytes:,} bytes "
                                                      f"(Content-Length {resp.headers.get('Content-Length') or 'not given'}); "
                                                      "not read further")
                    return raw
        except urllib.error.HTTPError as exc:
            if 300 <= exc.code < 400:
                where = exc.headers.get("Location") if exc.headers is not None else None
                raise _Fatal("redirect", f"HTTP {exc.code} redirect to {where or '(no Location)'} from "
                                         f"{self.base_url + endpoint}: not followed (it would send the API key "
                                         f"and take the answer of the server it names); if that address is "
                                         f"right, make it the base_url") from None
            try:
                detail = exc.read()[:300].decode("utf-8", "replace")
            except Exception:  # the error body itself may be cut short
                detail = ""
            if exc.code in _RETRY_STATUS or exc.code >= 500:
                raise _Retryable(f"http_{exc.code}", f"HTTP {exc.code}: {detail}", _retry_after(exc.headers)) from None
            raise _Fatal(f"http_{exc.code}", f"HTTP {exc.code}: {detail}") from None
        except _Retryable:
            raise
        except Exception as exc:
            if watchdog.fired or isinstance(exc, (socket.timeout, TimeoutError)) or \
                    isinstance(getattr(exc, "reason", None), (socket.timeout, TimeoutError)):
                raise _Retryable("timeout", f"no complete answer within {self.timeout_s} s") from None
            if isinstance(exc, http.client.IncompleteRead):
                raise _Retryable("truncated", f"answer cut short: {len(exc.partial)} bytes read, "
                                              f"{exc.expected} more expected") from None
            if isinstance(exc, urllib.error.URLError):
                raise _Retryable("connection", f"connection failed: {exc.reason}") from None
            if isinstance(exc, (http.client.HTTPException, OSError)):
                raise _Retryable("connection", f"connection failed: {type(exc).__name__}: {exc}") from None
            raise

    def _wait(self, attempt: int, hint: float | None) -> None:
        delay = min(self.max_backoff_s, self.backoff_s * (2 ** attempt))
        delay *= 1.0 + 0.25 * random.random()  # jitter so parallel retries do not arrive together
        if hint is not None:
            delay = max(delay, min(hint, self.max_backoff_s))
        time.sleep(delay)

    def _read_cache(self, path: Path | None, endpoint: str, stop: Sequence[str]):
        """(payload, parsed, seconds) from a stored answer, or None when absent or not valid."""
        if path is None or not path.is_file():
            return None
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
            seconds = stored["seconds"]
            if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
                raise ValueError("seconds")
            parsed = parse_completion(stored["payload"], endpoint, stop)
            marked = stored.get("empty_answer")
            if marked not in (None, "transient", "persistent"):
                raise ValueError(f"empty_answer {marked!r}")
            if parsed["empty"] and marked != "persistent":   # stored before empty answers were retried
                raise ValueError(f"an empty answer ({parsed['empty']}) not marked as persistent")
            parsed["empty_answer"] = marked
            return stored["payload"], parsed, float(seconds)
        except (ValueError, KeyError, TypeError, AttributeError, OSError, _Retryable) as exc:
            log.warning("%s: ignoring a stored answer that is not valid (%s); asking again", path, exc)
            return None

    def _write_cache(self, path: Path, endpoint: str, body: dict, payload: dict, seconds: float,
                     empty_answer: str | None) -> None:
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # ASCII JSON: the payload as sent, a lone surrogate kept as its escape, valid UTF-8 on disk
            tmp.write_text(json.dumps({"request": {"base_url": self.base_url, "endpoint": endpoint, "body": body},
                                       "payload": payload, "seconds": seconds, "empty_answer": empty_answer}),
                           encoding="utf-8")
            os.replace(tmp, path)  # atomic: a reader never sees half a file
        except (OSError, ValueError) as exc:  # e.g. a full disk: the answer is still good, it is only not cached
            log.warning("%s: could not store the answer (%s)", path, exc)
            try:
                tmp.unlink()
            except OSError:
                pass

    def _one(self, req: GenerationRequest, max_new_tokens: int) -> GenerationResult:
        endpoint, body = self._body(req, max_new_tokens)
        if req.stop:
            body["stop"] = list(req.stop)
        key = self.cache_key(endpoint, body)
        path = self._cache_path(key)
        cached = self._read_cache(path, endpoint, req.stop)
        if cached is not None:
            with self._lock:
                self.cache_hits += 1
            payload, parsed, seconds = cached
            return self._result(req.key, parsed, seconds, attempts=0, cached=True, cache_key=key)
        start = time.perf_counter()
        attempt = 0
        empty_seen = None   # the last empty answer received: (payload, parsed)
        while True:
            try:
                raw = self._post(endpoint, body)
                try:   # a key given twice (which "content" is the answer?) is not a valid answer either
                    payload = json.loads(raw, object_pairs_hook=unique_keys)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    raise _Retryable("bad_response", f"answer is not JSON: {raw[:200]!r}") from None
                except RecursionError:   # arrays nested thousands deep: json's recursion, not a completion
                    raise _Retryable("bad_response", f"answer nests deeper than JSON can be read: {raw[:80]!r}") from None
                except DuplicateKey as exc:
                    raise _Retryable("bad_response", f"answer gives the key {exc.key!r} twice in one object: "
                                                     f"{raw[:200]!r}") from None
                parsed = parse_completion(payload, endpoint, req.stop)
                if parsed["empty"] is None:
                    parsed["empty_answer"] = "transient" if empty_seen is not None else None
                    break
                empty_seen = (payload, parsed)
                raise _Retryable("empty", f"empty answer ({parsed['empty']})")
            except _Retryable as exc:
                if attempt >= self.max_retries and empty_seen is not None:   # the empty answer is the answer
                    payload, parsed = empty_seen
                    log.warning("%s: empty answer (%s), no text in %d attempt(s); kept as the answer", req.key,
                                parsed["empty"], attempt + 1)
                    parsed["empty_answer"] = "persistent"
                    break
                if attempt >= self.max_retries:
                    return self._error(req.key, exc.kind, str(exc), attempt + 1, time.perf_counter() - start)
                log.info("%s: attempt %d failed (%s); retrying", req.key, attempt + 1, exc)
                self._wait(attempt, exc.retry_after)
                attempt += 1
            except _Fatal as exc:
                return self._error(req.key, exc.kind, str(exc), attempt + 1, time.perf_counter() - start)
        seconds = time.perf_counter() - start
        if path is not None:
            self._write_cache(path, endpoint, body, payload, seconds, parsed["empty_answer"])
        return self._result(req.key, parsed, seconds, attempts=attempt + 1, cached=False, cache_key=key)

    @staticmethod
    def _result(key: str, parsed: dict, seconds: float, attempts: int, cached: bool,
                cache_key: str) -> GenerationResult:
        return GenerationResult(
            key=key, response=parsed["text"], prompt_tokens=parsed["prompt_tokens"],
            new_tokens=parsed["new_tokens"], stop_reason=parsed["stop_reason"], seconds=float(seconds),
            extra={"cached": cached, "attempts": attempts, "finish_reason": parsed["finish_reason"],
                   "cache_key": cache_key, "empty_answer": parsed["empty_answer"],
                   "invalid_unicode": parsed["invalid_unicode"]})

    @staticmethod
    def _error(key: str, kind: str, message: str, attempts: int, seconds: float) -> GenerationResult:
        log.warning("%s: no answer after %d attempt(s): %s", key, attempts, message)
        return GenerationResult(key=key, response="", prompt_tokens=-1, new_tokens=-1,
                                stop_reason=f"error:{kind}", seconds=seconds,
                                extra={"cached": False, "attempts": attempts, "error": message})

    # ------------------------------------------------------------------ Backend interface

    def describe(self) -> dict:
        """How this backend answers (the generations table's ``decoding`` column); no key or secret."""
        return {"backend": "openai", "base_url": self.base_url, "model": self.model, "temperature": self.temperature,
                "request_params": self.request_params}

    def generate(self, requests: Sequence[GenerationRequest], max_new_tokens: int,
                 on_result: OnResult | None = None) -> list[GenerationResult]:
        """Answer every request, ``concurrency`` at a time; results in the requests' order.

        ``on_result`` runs in the calling thread as each answer arrives; if it raises, requests not
        yet sent are cancelled and the exception propagates.
        """
        if not requests:
            return []
        results: list[GenerationResult | None] = [None] * len(requests)
        pool = ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests)))
        try:
            futures = {pool.submit(self._one, r, max_new_tokens): i for i, r in enumerate(requests)}
            for fut in as_completed(futures):
                res = fut.result()
                results[futures[fut]] = res
                if on_result is not None:
                    on_result(res)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return results  # type: ignore[return-value]

    def close(self) -> None:
        """Nothing is held between calls (each request opens its own connection)."""
