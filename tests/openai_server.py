"""Real OpenAI-compatible HTTP servers on 127.0.0.1 for tests (``http.server``, a thread a request).

:class:`OpenAIServer` is the one implementation: it answers ``POST .../chat/completions`` and
``.../completions`` bodies, records every request (``received``: ``{"path", "body"}``; ``headers``;
``max_inflight``), fails or misbehaves on demand and answers 500 "script error" when the test's own
answering function raises. What each request gets is decided by :meth:`OpenAIServer.reply`:

* :class:`FakeOpenAI` answers "echo:<last user message>" and scripts failures per message
  (``plan``/``always``/``status_of``), honouring ``stop`` strings as OpenAI does;
* :class:`ScriptedOpenAI` answers each request with a Python function of its body (scripted
  answers, broken JSON, refusals, HTTP errors).

:class:`RecordingProxy` is an HTTP proxy that records what reaches it (headers included) and
answers in the server's place: what a test sets ``http_proxy`` to.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Ways the server misbehaves instead of answering (a reply's status may be one of these names):
MISBEHAVIOUR = {
    "truncate",      # Content-Length promises more than is sent, then the connection closes (IncompleteRead)
    "choices_abc",   # {"choices": "abc"}
    "usage_text",    # a valid choice with usage {"prompt_tokens": "seven"}
    "not_json",      # a body that is not JSON
    "no_text",       # a choice without text / message
    "drip",          # the valid answer, one byte every 0.2 s
    "redirect",      # 302 to ``redirect_to`` + the request's path (another origin, e.g. a second server)
    "redirect_301", "redirect_303", "redirect_307", "redirect_308",   # the same with that status
    "padded",        # the valid answer followed by 100,000 spaces (valid JSON, a body of ~100 kB)
    "deep",          # {"choices": [[[...]]]} nested 100,000 deep (json.loads raises RecursionError)
    "content_twice", # a chat message (or choice) giving its text twice: {"content": "a", "content": "b"}
    "surrogate",     # the valid answer with a lone UTF-16 surrogate (JSON escape \ud800) in its text
    "null_content",  # a chat answer whose message content is null
    "empty_length",  # an answer whose text is "" with finish_reason "length"
    "big_int",       # the valid answer with "created": an integer of 5,000 digits (beyond Python's 4,300)
    "huge_usage",    # usage.prompt_tokens an integer of 4,000 digits (readable, but no float holds it)
    "finish_list",   # a choice whose finish_reason is a list, [] (no dict key)
    "big",           # the valid answer whose text is 9 MiB of "a" (over the default size cap), Content-Length
    "big_unframed",  # the same without Content-Length (the body ends when the connection closes)
    "flood",         # the valid answer without Content-Length, then spaces, 64 KiB at a time, for ever
    "endless",       # the valid answer without Content-Length, then a space every 0.05 s for ever
    "escapes_json",  # a body that is a JSON string holding ESC sequences, BEL, C1 CSI and a lone surrogate
    "escapes_400",   # HTTP 400 whose body holds raw ESC sequences, a C1 CSI (UTF-8) and a BEL
    "escapes_location",  # a 302 whose Location holds an ESC sequence
    "error_flood",   # HTTP 500 without Content-Length, then 64 MiB of "x" (``hung_up`` counts a client that left)
}

#: the text of the "escapes_*" misbehaviours: a terminal's clear-screen, a title change ended by BEL,
#: a colour, the one-byte C1 CSI
ESCAPES = "\x1b[2J\x1b]0;pwned\x07\x1b[31mred\u009b0m"


class _Served:
    """A ThreadingHTTPServer on a free port of ``host``, served from a daemon thread while the
    object is used as a context manager."""

    def _serve(self, handler, host: str = "127.0.0.1") -> str:
        """Bind ``handler``; returns "http://host:port"."""
        self.server = ThreadingHTTPServer((host, 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        return f"http://{host}:{self.server.server_address[1]}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


class OpenAIServer(_Served):
    """The HTTP server. ``reply(body)`` (subclasses) returns ``(status, text, finish_reason)``:
    status 200 answers ``text``; another int fails with that HTTP status (429 with
    ``Retry-After: 0``); a :data:`MISBEHAVIOUR` name misbehaves around the valid answer.
    ``usage`` is the token usage every answer reports; ``delay_s`` delays every answer;
    ``redirect_to`` is where the "redirect" misbehaviour points (a URL prefix, e.g. another
    server's ``url``); ``host`` the address it listens on (127.0.0.1 unless a test needs another)."""

    def __init__(self, *, delay_s: float = 0.0, usage: dict | None = None, response_id: str = "x",
                 redirect_to: str = "http://127.0.0.1:9/v1", host: str = "127.0.0.1"):
        self.delay_s = delay_s
        self.redirect_to = redirect_to
        self.usage = usage or {"prompt_tokens": 7, "completion_tokens": 3}
        self.response_id = response_id
        self.received: list[dict] = []
        self.headers: list[dict] = []
        self.hung_up = 0   # answers the client stopped reading before their end (trickle, error_flood)
        self.trickled = 0  # such answers ended, either way
        self.inflight = 0
        self.max_inflight = 0
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_GET(self):
                """What a client that follows a POST's 302 sends (urllib turns it into a GET): recorded
                (body None) and answered with a valid chat completion, as a hostile origin would."""
                with outer.lock:
                    outer.received.append({"path": self.path, "body": None})
                    outer.headers.append(dict(self.headers))
                self.wfile.write(self.send_json(outer.completion({"messages": []}, "answer of another origin", "stop")))

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer.lock:
                    outer.received.append({"path": self.path, "body": body})
                    outer.headers.append(dict(self.headers))
                    outer.inflight += 1
                    outer.max_inflight = max(outer.max_inflight, outer.inflight)
                try:
                    time.sleep(outer.delay_s)
                    try:
                        status, text, finish = outer.reply(body)
                    except Exception as exc:  # a bug in the test's script: answer 500 and say why
                        self.wfile.write(self.send_json({"error": {"message": f"script error: {exc!r}"}}, 500))
                        return
                    if isinstance(status, str):
                        return self.misbehave(status, outer.completion(body, text, finish))
                    if status != 200:
                        self.wfile.write(self.send_json({"error": {"message": f"scripted {status}"}}, status))
                        return
                    self.wfile.write(self.send_json(outer.completion(body, text, finish)))
                finally:
                    with outer.lock:
                        outer.inflight -= 1

            def send_json(self, payload, status: int = 200, length=None) -> bytes:
                """Send status and headers; return the body bytes to write. ``length`` False sends no
                Content-Length (HTTP/1.0: the body ends when the connection closes)."""
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                if status == 429:
                    self.send_header("Retry-After", "0")
                self.send_header("Content-Type", "application/json")
                if length is not False:
                    self.send_header("Content-Length", str(len(data) if length is None else length))
                self.end_headers()
                return data

            def trickle(self, data: bytes, chunk: bytes, pause: float, status: int = 200, times: int = -1) -> None:
                """``data`` without Content-Length, then ``chunk`` every ``pause`` s until the client
                goes (counted in ``hung_up``), ``times`` chunks are sent, or 120 s pass."""
                try:
                    self.wfile.write(self.send_json(data, status=status, length=False))
                    self.wfile.flush()
                    deadline = time.monotonic() + 120
                    while time.monotonic() < deadline and times != 0:
                        self.wfile.write(chunk)
                        self.wfile.flush()
                        time.sleep(pause)
                        times -= 1
                except OSError:  # the client gave up
                    with outer.lock:
                        outer.hung_up += 1
                with outer.lock:
                    outer.trickled += 1
                self.close_connection = True

            def misbehave(self, mode, good):
                assert mode in MISBEHAVIOUR, mode
                if mode == "truncate":
                    data = json.dumps(good).encode()
                    self.send_json(data, length=len(data) + 50)
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                if mode == "drip":
                    data = self.send_json(good)
                    try:
                        for i in range(len(data)):
                            self.wfile.write(data[i:i + 1])
                            self.wfile.flush()
                            time.sleep(0.2)
                    except OSError:  # the client gave up (its deadline passed)
                        pass
                    return
                if mode.startswith("redirect"):
                    self.send_response(int(mode.removeprefix("redirect").removeprefix("_") or 302))
                    self.send_header("Location", outer.redirect_to + self.path.removeprefix("/v1"))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if mode == "padded":
                    self.wfile.write(self.send_json(json.dumps(good).encode() + b" " * 100_000))
                    return
                if mode == "deep":
                    self.wfile.write(self.send_json(b'{"choices": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"))
                    return
                if mode == "big_int":
                    text = json.dumps({**good, "created": 0}).replace('"created": 0', '"created": ' + "7" * 5000)
                    self.wfile.write(self.send_json(text.encode()))
                    return
                if mode == "huge_usage":
                    text = json.dumps({**good, "usage": {"prompt_tokens": 0}})
                    self.wfile.write(self.send_json(text.replace('"prompt_tokens": 0', '"prompt_tokens": '
                                                                 + "9" * 4000).encode()))
                    return
                if mode == "finish_list":
                    self.wfile.write(self.send_json({**good, "choices": [{**good["choices"][0], "finish_reason": []}]}))
                    return
                if mode in ("big", "big_unframed"):
                    choice = good["choices"][0]
                    text = "a" * (9 * 2**20)
                    choice = {**choice, "message": {"role": "assistant", "content": text}} if "message" in choice \
                        else {**choice, "text": text}
                    data = json.dumps({**good, "choices": [choice]}).encode()
                    try:
                        self.wfile.write(self.send_json(data, length=None if mode == "big" else False))
                    except OSError:  # the client stopped reading
                        pass
                    self.close_connection = True
                    return
                if mode == "flood":
                    return self.trickle(json.dumps(good).encode(), b" " * 65536, 0)
                if mode == "endless":
                    return self.trickle(json.dumps(good).encode(), b" ", 0.05)
                if mode == "error_flood":
                    return self.trickle(b"server error ", b"x" * 65536, 0, status=500, times=1024)
                if mode == "escapes_json":
                    self.wfile.write(self.send_json(json.dumps(ESCAPES + "\ud800").encode()))
                    return
                if mode == "escapes_400":
                    self.wfile.write(self.send_json(ESCAPES.encode(), status=400))
                    return
                if mode == "escapes_location":
                    self.send_response(302)
                    self.send_header("Location", "http://127.0.0.1:9/" + ESCAPES.replace("\u009b", ""))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if mode == "content_twice":
                    text = json.dumps(good)
                    for field in ('"content": ', '"text": '):
                        text = text.replace(field, f'{field}"first answer", {field}', 1)
                    self.wfile.write(self.send_json(text.encode()))
                    return
                choice = good["choices"][0]
                if mode in ("surrogate", "null_content", "empty_length"):
                    field = "message" if "message" in choice else None
                    text = {"surrogate": choice["message"]["content"] if field else choice["text"],
                            "null_content": None, "empty_length": ""}[mode]
                    if mode == "surrogate":
                        text = text[:2] + "\ud800" + text[2:]
                    if field:
                        choice = {**choice, "message": {**choice["message"], "content": text}}
                    else:
                        choice = {**choice, "text": text}
                    if mode == "empty_length":
                        choice["finish_reason"] = "length"
                    # json.dumps escapes the lone surrogate as \ud800 (valid JSON, not valid Unicode)
                    self.wfile.write(self.send_json({**good, "choices": [choice]}))
                    return
                payload = {"choices_abc": {"choices": "abc"},
                           "usage_text": {**good, "usage": {"prompt_tokens": "seven"}},
                           "not_json": b"<html>502 Bad Gateway</html>",
                           "no_text": {"choices": [{"index": 0, "finish_reason": "stop"}]}}[mode]
                self.wfile.write(self.send_json(payload))

        self.url = self._serve(Handler, host) + "/v1"

    def reply(self, body: dict) -> tuple[int | str, str, str]:
        raise NotImplementedError

    def completion(self, body: dict, text: str, finish: str) -> dict:
        """The OpenAI completion object answering ``body`` with ``text``."""
        if "messages" in body:
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
        else:
            choice = {"index": 0, "text": text, "finish_reason": finish}
        return {"id": self.response_id, "object": "chat.completion", "model": body.get("model"),
                "choices": [choice], "usage": self.usage}


class FakeOpenAI(OpenAIServer):
    """An OpenAI-style server: answers "echo:<last user message>"; ``plan`` scripts failures.

    ``plan[content]`` is a list of HTTP statuses or :data:`MISBEHAVIOUR` names to return, one per
    arriving request for that content, before answering normally (e.g. [429, 500] fails twice,
    then succeeds). The ``stop`` field is honoured as OpenAI does (the text is cut before the first
    stop string, finish_reason "stop") unless ``honour_stop`` is false. ``answer`` maps the
    request's text to the answer text (default "echo:<text>").
    """

    def __init__(self, plan=None, delay_s: float = 0.0, always=None, honour_stop: bool = True, answer=None,
                 status_of=None, redirect_to: str = "http://127.0.0.1:9/v1", host: str = "127.0.0.1"):
        super().__init__(delay_s=delay_s, redirect_to=redirect_to, host=host)
        self.plan = {k: list(v) for k, v in (plan or {}).items()}
        self.always = always or {}   # content -> status returned every time
        self.status_of = status_of   # or a function content -> status (200 = answer)
        self.honour_stop = honour_stop
        self.answer = answer or (lambda content: f"echo:{content}")

    def reply(self, body):
        content = body["messages"][-1]["content"] if "messages" in body else body["prompt"]
        with self.lock:
            queue = self.plan.get(content, [])
            status = queue.pop(0) if queue else self.always.get(content, 200)
            if self.status_of is not None and status == 200:
                status = self.status_of(content)
        if isinstance(status, int) and status != 200:
            return status, "", ""
        text = self.answer(content)
        finish = "stop" if "messages" in body else "length"
        cuts = [i for i in (text.find(s) for s in body.get("stop") or []) if i >= 0]
        if self.honour_stop and cuts:
            text, finish = text[: min(cuts)], "stop"
        return status, text, finish

    def count(self, content: str) -> int:
        return sum(1 for r in self.received if r["body"] is not None
                   and r["body"].get("messages", [{}])[-1].get("content", r["body"].get("prompt")) == content)


class ScriptedOpenAI(OpenAIServer):
    """Each request is answered by ``respond(body)``: the answer text, an HTTP status (int) to
    fail with, or ``(status, text)``; finish_reason "stop"."""

    def __init__(self, respond, usage: dict | None = None):
        super().__init__(usage=usage or {"prompt_tokens": 10, "completion_tokens": 5}, response_id="scripted")
        self.respond = respond

    def reply(self, body):
        answer = self.respond(body)
        status, text = (answer, "") if isinstance(answer, int) else (
            answer if isinstance(answer, tuple) else (200, answer))
        return status, text, "stop"


class RecordingProxy(_Served):
    """An HTTP proxy on 127.0.0.1 that records what reaches it and forwards nothing.

    ``received`` lists every request (``{"method", "target", "headers"}``; a request sent through a
    proxy names the whole URL as its target). A POST is answered with a valid chat completion whose
    text is :attr:`ANSWER`, as a proxy that read the key and answered for the server could; a
    CONNECT (a tunnel for https) is refused with 403. ``url`` is what ``http_proxy`` names.
    """

    ANSWER = "answer of the proxy"

    def __init__(self):
        self.received: list[dict] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def record(self):
                with outer.lock:
                    outer.received.append({"method": self.command, "target": self.path,
                                           "headers": dict(self.headers)})

            def do_POST(self):
                self.record()
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                # the model asked for: a proxy in the server's place answers as the model would
                data = json.dumps({"id": "proxy", "object": "chat.completion", "model": body.get("model"),
                                   "choices": [{"index": 0, "finish_reason": "stop",
                                                "message": {"role": "assistant", "content": outer.ANSWER}}],
                                   "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self.record()
                self.send_error(403)

            def do_CONNECT(self):
                self.record()
                self.send_error(403)

        self.url = self._serve(Handler)
