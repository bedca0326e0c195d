"""A deterministic OpenAI-compatible HTTP server for tests: each chat request is answered by a
Python function of the request body (scripted answers, broken JSON, refusals, HTTP errors).

``respond(body)`` returns the answer text, an HTTP status (int) to fail with, or ``(status, text)``.
Every request body is kept in ``received`` (and counted per path) so tests can check what was sent.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ScriptedOpenAI:
    def __init__(self, respond):
        self.respond = respond
        self.received: list[dict] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status == 429:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer.lock:
                    outer.received.append(body)
                try:
                    answer = outer.respond(body)
                except Exception as exc:  # a bug in the script: answer 500 and say why
                    self._send(500, {"error": {"message": f"script error: {exc!r}"}})
                    return
                status, text = (answer, "") if isinstance(answer, int) else (
                    answer if isinstance(answer, tuple) else (200, answer))
                if status != 200:
                    self._send(status, {"error": {"message": f"scripted {status}"}})
                    return
                if "messages" in body:
                    choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                else:
                    choice = {"index": 0, "text": text, "finish_reason": "stop"}
                self._send(200, {"id": "scripted", "object": "chat.completion", "model": body.get("model"),
                                 "choices": [choice], "usage": {"prompt_tokens": 10, "completion_tokens": 5}})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
