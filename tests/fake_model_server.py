"""A real OpenAI-compatible HTTP server, as a program a ``serve:`` block starts (standard library only).

    python fake_model_server.py --port N [--host H] [--served-model-name NAME] [--api-key KEY]
        [--ignore-term] [--group-worker] [--daemon] [--pids FILE] [--say TEXT] [--answer-model NAME]
        [--nan] [--choices K] [--slow-start S] [--wait-file F]

It answers ``GET /health`` (200), ``GET /v1/models`` (the served name; 401 without the key when one is
set), ``GET /version`` and ``POST /v1/chat/completions`` / ``/v1/completions`` with "echo:<last
message>". Misbehaviour on demand: ``--ignore-term`` ignores SIGTERM; ``--group-worker`` forks a worker
in its process group (as an engine's workers are) that ignores SIGTERM too; ``--daemon`` forks a
``setsid()`` daemon (double fork) that ignores SIGTERM; ``--pids`` appends every pid it starts to a
file (one a line). ``--say`` prints a line at start (to put a secret in the log); ``--answer-model``
answers with another model name; ``--nan`` puts NaN in ``usage`` (``--bad-number`` any other text);
``--choices`` answers K choices; ``--wait-file`` binds its port only once that file exists; ``--stay``: a bind failure is logged and the
process stays.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def note_pid(path: str | None) -> None:
    if path:
        with open(path, "a") as fh:
            fh.write(f"{os.getpid()}\n")


def sleeper(ignore_term: bool, pids: str | None) -> None:
    if ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    note_pid(pids)
    while True:
        time.sleep(60)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--served-model-name", default="fake")
    p.add_argument("--api-key", default="")
    p.add_argument("--ignore-term", action="store_true")
    p.add_argument("--group-worker", action="store_true")
    p.add_argument("--daemon", action="store_true")
    p.add_argument("--pids")
    p.add_argument("--say", default="")
    p.add_argument("--answer-model", default="")
    p.add_argument("--nan", action="store_true")
    p.add_argument("--bad-number", default="", help="written as prompt_tokens as it is (Infinity, 1e999)")
    p.add_argument("--choices", type=int, default=1)
    p.add_argument("--slow-start", type=float, default=0.0)
    p.add_argument("--wait-file", default="")
    p.add_argument("--stay", action="store_true")
    a = p.parse_args()
    if a.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    note_pid(a.pids)
    if a.say:
        print(a.say, flush=True)
    print(f"env key: {os.environ.get('FAKE_KEY', '')}", flush=True)
    if a.group_worker and os.fork() == 0:
        sleeper(True, a.pids)
    if a.daemon and os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            sleeper(True, a.pids)
        os._exit(0)
    time.sleep(a.slow_start)
    while a.wait_file and not os.path.exists(a.wait_file):
        time.sleep(0.05)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def send(self, status: int, payload) -> None:
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def authorised(self) -> bool:
            return not a.api_key or self.headers.get("Authorization") == f"Bearer {a.api_key}"

        def do_GET(self):
            if self.path == "/health":
                return self.send(200, {})
            if self.path == "/version":
                # the engine's version as the job's environment has it (a new engine under the same command)
                return self.send(200, {"version": os.environ.get("FAKE_ENGINE_VERSION", "fake-1.0")})
            if self.path == "/v1/models":
                if not self.authorised():
                    return self.send(401, {"error": "no key"})
                return self.send(200, {"object": "list", "data": [{"id": a.served_model_name, "object": "model"}]})
            self.send(404, {})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if not self.authorised():
                return self.send(401, {"error": "no key"})
            if "messages" in body:
                text = "echo:" + str(body["messages"][-1]["content"])
                choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            else:
                text = "echo:" + str(body["prompt"])[-20:]
                choice = {"index": 0, "text": text, "finish_reason": "stop"}
            bad = "NaN" if a.nan else a.bad_number
            usage = f'{{"prompt_tokens": {bad or 5}, "completion_tokens": 3}}'
            model = a.answer_model or body.get("model")
            raw = (f'{{"id": "x", "object": "chat.completion", "model": {json.dumps(model)}, '
                   f'"choices": {json.dumps([choice] * a.choices)}, "usage": {usage}}}')
            self.send(200, raw.encode())

    try:
        server = ThreadingHTTPServer((a.host, a.port), Handler)
    except OSError as exc:
        print(f"cannot bind: {exc}", flush=True)
        if not a.stay:
            raise
        while True:   # as some servers do: the error logged, the process left running
            time.sleep(60)
    print(f"listening on {a.host}:{a.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
    sys.exit(0)
