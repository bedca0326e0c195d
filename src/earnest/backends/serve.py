"""An inference server started by the generation job itself: vLLM, SGLang, llama.cpp's server, ``transformers serve``.

A model entry with ``backend: openai`` and a ``serve`` block::

    serve:
      command: [vllm, serve, /models/llama-3-8b, --port, "{port}", --dtype, bfloat16]
      port: auto              # a free port of this node, or a number
      ready_timeout_s: 900    # how long loading the weights may take
      health_path: /health    # answers 200 once the server takes requests
      stop_timeout_s: 30      # SIGTERM, then SIGKILL of the server's process group

makes the job (:func:`serving`) start the command on the node it got (``{port}`` and ``{host}`` in
its arguments are filled in), wait until ``health_path`` answers 200 (or fail with the server's log
when it exits first or the time runs out), point the backend at ``http://{host}:{port}/v1`` and send
the requests at the entry's ``concurrency``, and stop the server whatever happens: on success, on an
error, on Ctrl-C and on the SIGTERM a scheduler sends (a time limit, ``scancel``), the server's whole
process group (an engine's worker processes included) gets SIGTERM and, after ``stop_timeout_s``,
SIGKILL; if the job itself is killed outright, the kernel sends the server SIGTERM (parent-death
signal). The server's output goes to ``<the job's log>.server.log``. Answers are cached and described
by the command, not by the port it happened to get, so a resumed job reuses what it asked before.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from earnest.schema import schema_default

#: the keys of a serve block and their defaults, read from config/schema.yaml (models.*.serve)
DEFAULTS = {k: schema_default(f"models.*.serve.{k}")
            for k in ("port", "host", "ready_timeout_s", "health_path", "stop_timeout_s")}
_PR_SET_PDEATHSIG = 1


class ServerError(RuntimeError):
    """The server did not start, or stopped answering; the message names the entry and its log."""


def check_serve(where: str, block) -> dict:
    """The serve block ``where.serve`` with its defaults, or ValueError naming the field."""
    if not isinstance(block, dict):
        raise ValueError(f"{where}.serve: a mapping is required, got {block!r}")
    unknown = sorted(set(block) - set(DEFAULTS) - {"command", "env"})
    if unknown:
        raise ValueError(f"{where}.serve.{unknown[0]}: unknown key (known: command, env, {', '.join(DEFAULTS)})")
    cfg = {**DEFAULTS, **block}
    command = cfg.get("command")
    if not isinstance(command, list) or not command or not all(isinstance(a, (str, int, float)) for a in command):
        raise ValueError(f"{where}.serve.command: a non-empty list of arguments is required "
                         f"(e.g. [vllm, serve, MODEL, --port, '{{port}}']), got {command!r}")
    cfg["command"] = [str(a) for a in command]
    port = cfg["port"]
    if port != "auto" and (not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535):
        raise ValueError(f"{where}.serve.port: 'auto' or a port number from 1 to 65535 is required, got {port!r}")
    for key in ("ready_timeout_s", "stop_timeout_s"):
        value = cfg[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 86400:
            raise ValueError(f"{where}.serve.{key}: seconds above 0 (at most a day) are required, got {value!r}")
    if not isinstance(cfg["health_path"], str) or not cfg["health_path"].startswith("/"):
        raise ValueError(f"{where}.serve.health_path: a path starting with '/' is required, got {cfg['health_path']!r}")
    if not isinstance(cfg["host"], str) or not cfg["host"]:
        raise ValueError(f"{where}.serve.host: a host name or address is required, got {cfg['host']!r}")
    env = cfg.get("env") or {}
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, (str, int, float)) for k, v in env.items()):
        raise ValueError(f"{where}.serve.env: a mapping of variable names to values is required, got {env!r}")
    cfg["env"] = {k: str(v) for k, v in env.items()}
    if "{port}" not in " ".join(cfg["command"]) and port == "auto":
        raise ValueError(f"{where}.serve.command: with port: auto the command must take the port as '{{port}}' "
                         "(e.g. --port '{port}')")
    return cfg


def free_port(host: str) -> int:
    """A port of ``host`` no one listens on now (the kernel's choice)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _death_signal() -> None:   # in the server's process, before exec: SIGTERM when the job dies
    try:
        import ctypes

        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except Exception:  # noqa: BLE001 - no prctl (not Linux): stop() and the handlers still stop it
        pass


class ManagedServer:
    """One server process (group) of a ``serve`` block; :func:`serving` is the way to use it."""

    def __init__(self, where: str, block: dict, log_path: str | Path):
        self.where = where
        self.cfg = check_serve(where, block)
        self.log_path = Path(log_path)
        self.proc: subprocess.Popen | None = None
        self.port = self.cfg["port"] if self.cfg["port"] != "auto" else None

    @property
    def base_url(self) -> str:
        host = self.cfg["host"]
        return f"http://{'[' + host + ']' if ':' in host else host}:{self.port}/v1"

    def _tail(self, n: int = 2000) -> str:
        try:
            text = self.log_path.read_bytes()[-n:].decode("utf-8", "replace")
        except OSError:
            return "(no log)"
        from earnest.text import printable

        return printable(text.strip()) or "(empty log)"

    def start(self) -> str:
        """Start the command and wait until it answers; returns the base URL."""
        if self.port is None:
            self.port = free_port(self.cfg["host"])
        args = [a.replace("{port}", str(self.port)).replace("{host}", self.cfg["host"]) for a in self.cfg["command"]]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        try:
            log.write(f"# earnest: {' '.join(args)}\n".encode())
            log.flush()
            try:
                self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                             env={**os.environ, **self.cfg["env"]}, start_new_session=True,
                                             preexec_fn=_death_signal)
            except OSError as exc:
                raise ServerError(f"{self.where}.serve.command: cannot start {args[0]!r}: {exc}") from None
        finally:
            log.close()
        url = f"{self.base_url[:-len('/v1')]}{self.cfg['health_path']}"
        deadline = time.monotonic() + float(self.cfg["ready_timeout_s"])
        while True:
            code = self.proc.poll()
            if code is not None:
                raise ServerError(f"{self.where}.serve: the server exited with status {code} before it answered "
                                  f"{url}; its log ({self.log_path}) ends:\n{self._tail()}")
            try:
                with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(url, timeout=5) as r:
                    if r.status == 200:
                        return self.base_url
            except (urllib.error.URLError, OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise ServerError(f"{self.where}.serve: no answer from {url} within ready_timeout_s = "
                                  f"{self.cfg['ready_timeout_s']:g} s (loading the weights takes longer? raise it); "
                                  f"its log ({self.log_path}) ends:\n{self._tail()}")
            time.sleep(0.5)

    def stop(self) -> None:
        """SIGTERM to the server's process group, SIGKILL after stop_timeout_s; idempotent."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        for sig, wait in ((signal.SIGTERM, float(self.cfg["stop_timeout_s"])), (signal.SIGKILL, 30.0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                continue
            # the leader is gone: its group's other processes (an engine's workers) go too
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            break
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)


@contextlib.contextmanager
def serving(model_name: str, model_cfg: dict, log_path: str | Path):
    """The model entry to build the backend from: unchanged without a ``serve`` block; else with
    the started server's ``base_url`` (and ``served_by``: what the cache and the generations table
    name instead of the port), the server stopped on leaving, however the block is left."""
    block = model_cfg.get("serve")
    if not block:
        yield model_cfg
        return
    where = f"models.{model_name}"
    server = ManagedServer(where, block, Path(str(log_path)).with_suffix(".server.log"))
    previous = signal.getsignal(signal.SIGTERM)

    def terminated(signum, frame):   # a scheduler's SIGTERM: leave through the finally below
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, terminated)
    try:
        base_url = server.start()
        yield {**model_cfg, "base_url": base_url, "served_by": " ".join(server.cfg["command"])}
    finally:
        server.stop()
        signal.signal(signal.SIGTERM, previous)
