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
    max_response_bytes: 8388608            # the largest answer body read (8 MiB; 1 KiB to 1 GiB)
    use_proxy: false                       # true: through the environment's proxy (http_proxy ...), key included

Instead of ``temperature``, a ``decoding: {temperature, top_p, top_k, seed, samples}`` block samples as for
local models (``earnest.backends.decoding``): each request sends its own ``seed`` (a hash of the seed, the
question and the sample), ``top_p`` when below 1 and ``top_k`` when above 0 (vLLM, SGLang and llama.cpp's
server take it; OpenAI's API does not); those keys are then refused in ``request_params``.

Chat requests (``GenerationRequest.messages``) go to ``/chat/completions``; raw-text requests
(``prompt``) to ``/completions``. A request's stop strings are sent as ``stop``, and the answer is
also cut at the first of them here (servers differ in how many they accept); the stop reason is
then ``stop_string``. The API's ``finish_reason`` maps to earnest's names: ``stop`` -> ``eos``,
``length`` -> ``max_new_tokens``, ``content_filter`` -> ``content_filter``.

An attempt fails, and is retried after a backoff, on a 408/409/425/429 or 5xx status, a refused
or dropped connection, a body cut short, an attempt that runs past ``timeout_s`` (a server that
sends one byte at a time does not extend it; a body without Content-Length that the deadline cuts
off is a timeout even if what came parses), a body larger than ``max_response_bytes`` (``too_large``:
a longer Content-Length is refused unread, a body without one is read in chunks and given up at the
first byte over; memory stays bounded by concurrency x max_response_bytes), or an answer that is not a
valid completion (``bad_response``: not JSON, JSON nested too deep to read, an integer of more than
4,300 digits, a key given twice in one object, no ``choices`` list, a choice without text, a
``usage`` that is no token count, an unknown ``finish_reason``). Other 4xx statuses are not retried.
A request still failing after the last retry becomes a result with ``stop_reason`` ``error:<kind>``
and an empty response: a transport error, not a model answer (callers do not keep it; see
:mod:`earnest.generation`). Text of the server's in an error message (a body, a header) has its
control characters and lone surrogates escaped (:func:`earnest.text.printable`): an ESC sequence
from a server reaches no terminal.

Redirects are never followed: a 3xx answer is the result ``error:redirect``, not retried or cached,
whose message names the ``Location`` (put the final address in ``base_url``). Following one would
send the ``Authorization`` header, the API key, to whatever server the answer names, and take that
server's answer for the model's.

Proxies: the proxy variables of the environment (``http_proxy``, ``https_proxy``, ``no_proxy``, in
lower or upper case, as a cluster's login profile sets them) are ignored unless ``use_proxy: true``:
through a proxy, the ``Authorization`` header, the API key, goes to the proxy (in clear text for an
``http://`` base_url), and the proxy's answer would be taken, and stored, as the model's. With
``use_proxy: true`` urllib's rules apply (``no_proxy`` included), except that a loopback host
(``localhost``, 127.0.0.0/8, ``::1``) is always reached directly. Without it, a connection error or
timeout while a proxy variable is set says so and names the key.

Config checks (a ``ValueError`` naming the key, when the backend is made; ``earnest check-config``
runs the same): ``base_url`` must be an http(s) URL with a host and no ``user:password@`` (the key
belongs in ``api_key_env``: a URL is written to logs and to every generations table);
``request_params`` may not set what earnest sends itself (``model``, ``messages``, ``prompt``,
``stop``, ``max_tokens``, ``max_completion_tokens``, ``temperature``, ``stream``, ``echo``: it would
override them without a word) and must be JSON with text keys.

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
import ipaddress
import json
import logging
import math
import os
import random
import re
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Sequence

from earnest.jsonl import DuplicateKey, unique_keys
from earnest.text import printable

from .base import (CONTENT_FILTER, EOS, MAX_NEW_TOKENS, STOP_STRING, Backend, GenerationRequest, GenerationResult,
                   OnResult, cut_at_stop, valid_text)
from .decoding import Decoding, request_seed

#: requests in flight at once, at most (one thread each; tens of thousands would not start)
MAX_CONCURRENCY = 1024
log = logging.getLogger(__name__)

_RETRY_STATUS = {408, 409, 425, 429}  # plus every 5xx
#: the largest answer body read by default (bytes; ``max_response_bytes``): a completion of thousands
#: of tokens is tens of kilobytes; a server sending megabytes is not answering, and every worker holds
#: up to this much at once (concurrency x max_response_bytes)
MAX_RESPONSE_BYTES = 8 * 2**20
#: the range ``max_response_bytes`` may take (the schema's minimum and maximum)
MAX_RESPONSE_BYTES_RANGE = (1024, 2**30)
_READ_CHUNK = 64 * 1024
#: the most digits of an integer in an answer: Python's own limit of int-string conversion (its
#: ValueError escaped generate()), checked here whatever sys.set_int_max_str_digits says, since the
#: conversion's time grows with the square of the length
MAX_INT_DIGITS = 4300
#: the largest token count taken from ``usage`` (an int64 column holds it; a float is exact to here)
MAX_TOKEN_COUNT = 2**53
#: body fields earnest sends itself, refused in ``request_params`` (it would override them), and what sets them
RESERVED_PARAMS = {
    "model": "models.<name>.model", "messages": "the request's question", "prompt": "the request's question",
    "stop": "the prompt format's stop strings", "max_tokens": "generation.max_new_tokens",
    "max_completion_tokens": "generation.max_new_tokens (max_tokens)", "temperature": "models.<name>.temperature",
    "stream": "one JSON answer is read, not a stream", "echo": "the answer would start with the prompt",
    "n": "one answer per request (several choices are refused)", "best_of": "one answer per request",
}
# the API's finish_reason -> earnest's stop reason ("stop" is EOS unless a stop string was met)
_FINISH = {"stop": EOS, "eos": EOS, "length": MAX_NEW_TOKENS, "content_filter": CONTENT_FILTER}


# Both carry text of the server's (a body, a header, a status line): escaped once here, so no message
# of this backend (a result's "error", a log line) holds a control character or a lone surrogate.

class _Retryable(Exception):
    def __init__(self, kind: str, message: str, retry_after: float | None = None):
        super().__init__(printable(message))
        self.kind = kind
        self.retry_after = retry_after


class _Fatal(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(printable(message))
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


# ---------------------------------------------------------------- proxies


def is_loopback(host: str | None) -> bool:
    """Whether ``host`` (a URL's host name, without port or brackets) is this machine: ``localhost``
    (or a name under ``.localhost``, RFC 6761), 127.0.0.0/8, ``::1`` (also as ``::ffff:127.x.y.z``)
    or the unspecified address (0.0.0.0, ``::``: a connection to it reaches this machine)."""
    if not host:
        return False
    host = host.strip("[]").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])   # fe80::1%eth0: the zone is no part of it
    except ValueError:
        # the spellings the C library's inet_aton accepts (and so urllib's connection): 127.1,
        # 2130706433, 0x7f.1, 0177.0.0.1
        if not re.fullmatch(r"[0-9a-fx.]+", host):
            return False
        try:
            address = ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or address.is_unspecified or (mapped is not None and mapped.is_loopback)


class _EnvProxyHandler(urllib.request.ProxyHandler):
    """The environment's proxies by urllib's rules (``*_proxy``, ``no_proxy``), but never for a
    loopback host: a server on this machine is reached directly whatever a proxy variable says (a
    proxy would get the API key, and answer in the server's place)."""

    def proxy_open(self, req, proxy, type):
        if is_loopback(urllib.parse.urlsplit(req.full_url).hostname):
            return None   # the next handler (_HTTPHandler, _HTTPSHandler) connects directly
        return super().proxy_open(req, proxy, type)


# ---------------------------------------------------------------- config checks (the backend's and check-config's)


def check_base_url(where: str, url) -> str:
    """``url`` (``where.base_url``) without a trailing slash, or ValueError naming the field: an http(s)
    URL with a host and a numeric port if any. Credentials (``user:password@``) are refused: urllib
    sends them to no one as a login, yet the URL is written to logs and to every generations table's
    decoding column; the key belongs in the environment variable named by ``api_key_env``."""
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        url = "(credentials hidden)" if isinstance(url, str) and "@" in url else url
        raise ValueError(f"{where}.base_url: an http(s) URL is required, got {url!r}")
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError as exc:   # e.g. "http://[::1/v1": an unclosed IPv6 bracket
        raise ValueError(f"{where}.base_url: not a URL ({exc}): {url!r}") from None
    if "@" in parts.netloc:   # the secret is not repeated in the message
        raise ValueError(f"{where}.base_url: holds credentials (user:password@ before the host), which are "
                         f"refused: a URL is written to logs and results; put the key in an environment "
                         f"variable and name it in {where}.api_key_env")
    try:
        parts.port
    except ValueError:
        raise ValueError(f"{where}.base_url: the port is not a number from 0 to 65535 in {url!r}") from None
    if not parts.hostname:
        raise ValueError(f"{where}.base_url: no host in {url!r}")
    query = urllib.parse.parse_qs(parts.query, keep_blank_values=True)
    if any(re.search(r"(key|token|secret|password|auth|sig)", name, re.I) for name in query) or \
            re.search(r"(\bsk-[A-Za-z0-9_-]{16,}|\bhf_[A-Za-z0-9]{20,}|\bgh[pousr]_[A-Za-z0-9]{20,})", url):
        raise ValueError(f"{where}.base_url: holds what looks like an API key or token (in its query or path), "
                         f"which is refused: a URL is written to logs and results; put the key in an environment "
                         f"variable and name it in {where}.api_key_env (it is then sent as the Authorization header)")
    return url.rstrip("/")


def decoding_of(where: str, cfg: dict):
    """A model entry's ``decoding`` (:class:`earnest.backends.decoding.Decoding`), None without one; ValueError
    naming the field where it meets ``temperature`` or a ``request_params`` field it sets itself."""
    if cfg.get("decoding") is None:
        return None
    d = Decoding.from_cfg(where.removeprefix("models."), cfg)
    if "temperature" in cfg:
        raise ValueError(f"{where}.temperature: given twice (also {where}.decoding.temperature); keep one")
    params = cfg.get("request_params") or {}
    for key in ("seed", "top_p", "top_k"):
        if key in params:
            raise ValueError(f"{where}.request_params.{key}: set by {where}.decoding; remove it from request_params")
    return d


def check_request_params(where: str, params) -> dict:
    """``where.request_params`` (None: {}), or ValueError naming the field: a mapping with text keys,
    none of :data:`RESERVED_PARAMS` (one overrode the model, the question, the stop strings or the
    token limit without a word), sendable as JSON (a YAML date is not: the first request raised)."""
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise ValueError(f"{where}.request_params: a mapping is required, got {params!r}")
    for key in params:
        if not isinstance(key, str):
            raise ValueError(f"{where}.request_params: the key {key!r} is not text")
        if key in RESERVED_PARAMS:
            set_by = RESERVED_PARAMS[key].replace("<name>", where.rsplit(".", 1)[-1])
            raise ValueError(f"{where}.request_params.{key}: set by earnest ({set_by}); a request_params "
                             f"entry would override it, so it is refused")
    try:
        json.dumps(params, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}.request_params: not sendable as JSON ({exc})") from None
    return dict(params)


# ---------------------------------------------------------------- answer validation


def _excerpt(value, n: int = 200) -> str:
    """The start of ``str(value)`` for a message (escaped by _Retryable); a value nested nearly as
    deep as json reads (~990) cannot be shown, and its RecursionError must not escape generate()."""
    try:
        return str(value)[:n]
    except RecursionError:
        return f"(a {type(value).__name__} nested too deep to show)"


def _json_int(text: str) -> int:
    """json's parse_int: an integer of at most :data:`MAX_INT_DIGITS` digits, else bad_response."""
    digits = len(text) - text.startswith("-")
    if digits > MAX_INT_DIGITS:
        raise _Retryable("bad_response", f"answer holds an integer of {digits:,} digits (at most "
                                          f"{MAX_INT_DIGITS:,} are read): {text[:40]}...")
    return int(text)


def _json_constant(text: str):
    """json's parse_constant: NaN, Infinity and -Infinity are no JSON (Python's json takes them)."""
    raise _Retryable("bad_response", f"answer holds {text}, which is not a JSON number")


def _json_float(text: str) -> float:
    """json's parse_float: a number too large for a float (1e999) is infinity, refused as NaN is."""
    value = float(text)
    if not math.isfinite(value):
        raise _Retryable("bad_response", f"answer holds the number {text[:40]}, beyond a float's range")
    return value


def _token_count(usage: dict, name: str) -> int:
    value = usage.get(name)
    if value is None:
        return -1
    # no float() of an int: one of 400 digits is valid JSON, and math.isfinite of it raised OverflowError
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or (isinstance(value, float) and not (math.isfinite(value) and value.is_integer())) \
            or not 0 <= value <= MAX_TOKEN_COUNT:
        shown = f"an integer of {len(str(abs(value))):,} digits" if isinstance(value, int) and abs(value) > 10**40 \
            else repr(value)[:200] if isinstance(value, (str, float, int)) else _excerpt(value)
        raise _Retryable("bad_response", f"usage.{name} is not a token count: {shown}")
    return int(value)


def _model_matches(sent: str, answered: str) -> bool:
    """Whether an answer's ``model`` names the model asked for: the same name, or that name with a
    snapshot suffix of digits and dashes (OpenAI answers gpt-4o-mini with gpt-4o-mini-2024-07-18)."""
    return answered == sent or (answered.startswith(sent + "-") and re.fullmatch(r"[0-9][0-9-]*", answered[len(sent) + 1:]))


def parse_completion(payload, endpoint: str, stop: Sequence[str] = (), model: str | None = None,
                     exact_model: bool = False) -> dict:
    """The fields of a completion answer, checked: text, stop_reason, finish_reason, token counts.

    Anything that is not a valid completion raises ``_Retryable("bad_response", ...)``. ``empty``
    says why an answer is a likely transient empty one (None otherwise); ``invalid_unicode`` counts
    the lone surrogates replaced by U+FFFD in ``text``.
    """
    if not isinstance(payload, dict):
        raise _Retryable("bad_response", f"answer is not a JSON object: {_excerpt(payload)}")
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise _Retryable("bad_response", f"answer has no list of choices: {_excerpt(payload)}")
    if len(choices) > 1:
        raise _Retryable("bad_response", f"answer has {len(choices)} choices where one was asked for (which "
                                         f"is the answer?): {_excerpt(payload)}")
    if model is not None:
        answered = payload.get("model")
        if (answered is not None or exact_model) and \
                (not isinstance(answered, str) or not (answered == model if exact_model else _model_matches(model, answered))):
            shown = repr(answered)[:120] if isinstance(answered, str) or answered is None else _excerpt(answered, 120)
            raise _Retryable("bad_response", f"answer names the model {shown}, not the one asked for"
                                             f"{' (the token of the server the job started)' if exact_model else ''}: "
                                             "not this model's answer")
    choice = choices[0]
    if endpoint == "/chat/completions":
        message = choice.get("message")
        if not isinstance(message, dict):
            raise _Retryable("bad_response", f"choice has no message: {_excerpt(choice)}")
        text = message.get("content")
        empty = "content null" if text is None else None   # e.g. a refusal or a tool call: no text
        text = "" if text is None else text
    else:
        text = choice.get("text")
        empty = None
    if not isinstance(text, str):
        raise _Retryable("bad_response", f"choice text is not a string: {_excerpt(choice)}")
    finish = choice.get("finish_reason")
    if finish is not None and (not isinstance(finish, str) or finish not in _FINISH):   # [] is no dict key
        shown = repr(finish)[:200] if isinstance(finish, str) else _excerpt(finish)
        raise _Retryable("bad_response", f"unknown finish_reason {shown}")
    if text == "" and finish == "length":
        empty = empty or 'text "" at finish_reason "length"'
    if finish == "content_filter":
        empty = None   # withheld by the API, not a hiccup
    text, invalid = valid_text(text)
    usage = payload.get("usage")
    if usage is None:
        usage = {}
    if not isinstance(usage, dict):
        raise _Retryable("bad_response", f"usage is not an object: {_excerpt(usage)}")
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
        self._where = where
        self.base_url = check_base_url(where, cfg.get("base_url"))
        # a server the job started itself (earnest.backends.serve): named by its command, not by the
        # port it happened to get, in the cache keys and the generations table
        self.served_by = str(cfg["served_by"]) if cfg.get("served_by") else None
        # ... and by what it is (its command, env, files, engine version, revision), in the cache keys
        self.serve_identity = cfg.get("serve_identity") if self.served_by else None
        self.model = str(cfg.get("model", model_name))
        self.api_key = None
        key_env = cfg.get("api_key_env")
        if key_env:
            self.api_key = os.environ.get(key_env)
            if not self.api_key:
                raise ValueError(f"{where}.api_key_env: environment variable {key_env!r} is not set")
        # the started server's token: sent as the model (every answer must echo it) or as the key
        token = cfg.get("serve_token") or {}
        self._token_model = token.get("value") if token.get("as") == "model" else None
        if token.get("as") == "api_key":
            self.api_key = token.get("value")
        self.concurrency = self._int(cfg, "concurrency", 4, where, minimum=1, maximum=MAX_CONCURRENCY)
        self.max_retries = self._int(cfg, "max_retries", 5, where, minimum=0)
        self.timeout_s = self._number(cfg, "timeout_s", 120.0, where, positive=True)
        self.backoff_s = self._number(cfg, "backoff_s", 1.0, where)
        self.max_backoff_s = self._number(cfg, "max_backoff_s", 60.0, where)
        self.temperature = self._number(cfg, "temperature", 0.0, where)
        self.request_params = check_request_params(where, cfg.get("request_params"))
        self.decoding = decoding_of(where, cfg)
        if self.decoding is not None:
            self.temperature = self.decoding.temperature
        self.max_response_bytes = self._int(cfg, "max_response_bytes", MAX_RESPONSE_BYTES, where,
                                            *MAX_RESPONSE_BYTES_RANGE)
        self.use_proxy = cfg.get("use_proxy", False)
        if not isinstance(self.use_proxy, bool):
            raise ValueError(f"{where}.use_proxy: true or false is required, got {self.use_proxy!r}")
        cache_dir = cfg.get("cache_dir")
        self.cache_dir = Path(cache_dir) if cache_dir else None
        if self.cache_dir is not None:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # build_opener adds urllib's ProxyHandler, which reads the environment, unless given one:
        # ProxyHandler({}) is no proxy at all
        proxies = _EnvProxyHandler() if self.use_proxy else urllib.request.ProxyHandler({})
        self._opener = urllib.request.build_opener(proxies, _HTTPHandler, _HTTPSHandler, _NoRedirect)
        # a connection error or timeout while a proxy variable of the environment (not used) is set
        # says so: on a cluster whose nodes reach the outside only through it, the fix is one key
        url = urllib.parse.urlsplit(self.base_url)
        self._proxy_note = ""
        if not self.use_proxy and not is_loopback(url.hostname) and urllib.request.getproxies().get(url.scheme):
            self._proxy_note = (f" (the environment names a proxy for {url.scheme} ({url.scheme}_proxy), not used: "
                                f"{where}.use_proxy: true sends the requests, API key included, through it)")
        # counters for reports and tests: answers served from the cache / sent over HTTP
        self.cache_hits = 0
        self.http_attempts = 0

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
        # request_params first: earnest's own fields come after and win (none of them is allowed in
        # request_params either, see check_request_params)
        body = {**self.request_params, "model": self._token_model or self.model, "temperature": self.temperature,
                "max_tokens": int(max_new_tokens)}
        d = self.decoding
        if d is not None and d.sampling:
            body["seed"] = request_seed(d.seed, req.key, req.sample)
            if d.top_p < 1.0:
                body["top_p"] = d.top_p
            if d.top_k:
                body["top_k"] = d.top_k      # not OpenAI's own API; vLLM, SGLang and llama.cpp's server take it
        if req.messages is not None:
            body["messages"] = req.messages
            return "/chat/completions", body
        body["prompt"] = req.prompt
        return "/completions", body

    def cache_key(self, endpoint: str, body: dict) -> str:
        """SHA-256 of base URL, endpoint and the request body (model, messages or prompt, stop, params)."""
        server = {"served_by": self.served_by, "serve_identity": self.serve_identity} if self.served_by \
            else {"base_url": self.base_url}
        blob = json.dumps({**server, "endpoint": endpoint, "body": self._shown(body)},
                          sort_keys=True, ensure_ascii=False, default=str)
        # surrogatepass: a lone surrogate cannot crash it; for valid text the same bytes as UTF-8
        return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()

    def _shown(self, value):
        """``value`` (a request body or an answer) with the started server's token as the entry's
        model name: the token changes with every start and is written nowhere."""
        if self._token_model and isinstance(value, dict) and value.get("model") == self._token_model:
            return {**value, "model": self.model}
        return value

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
                try:
                    resp = self._opener.open(request, timeout=self.timeout_s)
                except urllib.error.HTTPError as exc:   # its body is read here, under the deadline too
                    raise self._status_error(exc, endpoint) from None
                with resp:
                    raw = self._read_body(resp)
                if watchdog.fired:
                    # a body without Content-Length ends when the server closes the connection, and
                    # the watchdog's shutdown of the socket reads the same (an end, no error): what
                    # came by the deadline may parse, but it is not known to be the whole answer
                    raise _Retryable("timeout", f"no complete answer within {self.timeout_s} s{self._proxy_note}")
                return raw
        except (_Retryable, _Fatal):
            raise
        except Exception as exc:
            if watchdog.fired or isinstance(exc, (socket.timeout, TimeoutError)) or \
                    isinstance(getattr(exc, "reason", None), (socket.timeout, TimeoutError)):
                raise _Retryable("timeout", f"no complete answer within {self.timeout_s} s{self._proxy_note}") from None
            if isinstance(exc, http.client.IncompleteRead):
                raise _Retryable("truncated", f"answer cut short: {len(exc.partial)} bytes read, "
                                              f"{exc.expected} more expected") from None
            if isinstance(exc, urllib.error.URLError):
                raise _Retryable("connection", f"connection failed: {exc.reason}{self._proxy_note}") from None
            if isinstance(exc, (http.client.HTTPException, OSError)):
                raise _Retryable("connection", f"connection failed: {type(exc).__name__}: {exc}"
                                               f"{self._proxy_note}") from None
            raise

    def _status_error(self, exc: urllib.error.HTTPError, endpoint: str) -> Exception:
        """The _Fatal or _Retryable of an answer with an error status (3xx included: urllib follows no
        redirect here). Its message shows the first 300 bytes of the body: only those are read (a
        body of gigabytes, or one that never ends, was read whole)."""
        if 300 <= exc.code < 400:
            where = exc.headers.get("Location") if exc.headers is not None else None
            return _Fatal("redirect", f"HTTP {exc.code} redirect to {where or '(no Location)'} from "
                                      f"{self.base_url + endpoint}: not followed (it would send the API key "
                                      f"and take the answer of the server it names); if that address is "
                                      f"right, make it the base_url")
        try:
            detail = exc.read(300).decode("utf-8", "replace")
        except Exception:  # the error body itself may be cut short
            detail = ""
        finally:
            exc.close()
        if exc.code in _RETRY_STATUS or exc.code >= 500:
            return _Retryable(f"http_{exc.code}", f"HTTP {exc.code}: {detail}", _retry_after(exc.headers))
        return _Fatal(f"http_{exc.code}", f"HTTP {exc.code}: {detail}")

    def _read_body(self, resp) -> bytes:
        """The answer body, at most ``max_response_bytes``, or _Retryable("too_large"). A longer
        Content-Length is refused unread; a body without one (chunked, or ended by the connection's
        close) is read in chunks and given up at the first byte over: memory stays bounded whatever
        the server sends."""
        cap = self.max_response_bytes

        def too_large():
            return _Retryable("too_large", f"answer larger than {cap:,} bytes (Content-Length "
                                           f"{resp.headers.get('Content-Length') or 'not given'}); not read further "
                                           f"(the limit is {self._where}.max_response_bytes)")

        length = resp.length
        if length is not None:
            if length > cap:
                raise too_large()
            # read() whole, not read(n): read(n) returns a body cut short without a word, read()
            # raises IncompleteRead
            return resp.read()
        chunks, size = [], 0
        while size <= cap:   # a chunked body's reader raises IncompleteRead if it is cut short
            chunk = resp.read(min(_READ_CHUNK, cap + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > cap:
            raise too_large()
        return b"".join(chunks)

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
            tmp.write_text(json.dumps({"request": {"base_url": self.base_url, "endpoint": endpoint,
                                                   "body": self._shown(body)},
                                       "payload": self._shown(payload), "seconds": seconds,
                                       "empty_answer": empty_answer}),
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
                    # parse_int: an integer of 5,000 digits raised ValueError out of generate()
                    payload = json.loads(raw, object_pairs_hook=unique_keys, parse_int=_json_int,
                                         parse_constant=_json_constant, parse_float=_json_float)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    raise _Retryable("bad_response", f"answer is not JSON: {raw[:200]!r}") from None
                except RecursionError:   # arrays nested thousands deep: json's recursion, not a completion
                    raise _Retryable("bad_response", f"answer nests deeper than JSON can be read: {raw[:80]!r}") from None
                except DuplicateKey as exc:
                    raise _Retryable("bad_response", f"answer gives the key {exc.key!r} twice in one object: "
                                                     f"{raw[:200]!r}") from None
                parsed = parse_completion(payload, endpoint, req.stop, model=body["model"],
                                          exact_model=self._token_model is not None)
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
        server = {"served_by": self.served_by} if self.served_by else {"base_url": self.base_url}
        own = {} if self.decoding is None else self.decoding.describe()
        return {"backend": "openai", **server, "model": self.model, "temperature": self.temperature,
                "request_params": self.request_params, **own}

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
