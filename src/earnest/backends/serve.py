"""An inference server started by the generation job itself: vLLM, SGLang, llama.cpp's server, ``transformers serve``.

A model entry with ``backend: openai`` and a ``serve`` block::

    serve:
      command: [vllm, serve, /models/llama-3-8b, --port, "{port}", --served-model-name, "{token}"]
      identity: model         # how the server proves it is the job's: model | api_key | process
      port: auto              # a free port of this node, or a number
      ready_timeout_s: 900    # how long loading the weights may take
      health_path: /health    # answers 200 once the server takes requests
      stop_timeout_s: 30      # SIGTERM, then SIGKILL of the server's process group and descendants

makes the job (:func:`serving`) start the command on the node it got (``{port}``, ``{host}`` and
``{token}`` in its arguments and in ``env``'s values are filled in), wait until the server answers
and has proved it is the one the job started, point the backend at ``http://{host}:{port}/v1`` and
stop the server, and everything it started, whatever happens.

**The server proves it is the job's.** Each start draws a fresh random token (``{token}``), which
only the job and the server it started know:

* ``identity: model``: the token is the served model name (vLLM/SGLang ``--served-model-name``,
  llama.cpp ``--alias``). The job waits until ``GET /v1/models`` lists it, sends it as every
  request's ``model`` and takes an answer only when its ``model`` field is the token;
* ``identity: api_key``: the token is the server's API key (vLLM ``--api-key`` or ``VLLM_API_KEY``
  in ``env``, llama.cpp ``--api-key``). The job waits until ``GET /v1/models`` answers 200 with the
  key and 401/403 without it, and sends it with every request;
* ``identity: process`` (no token; for servers that take neither, e.g. ``transformers serve``): the
  listening socket of the port must belong to a process the job started (read from ``/proc``).

In every mode a listening socket of the port held by a process the job did not start ends the wait
at once with an error naming the port and that process (pid, user, command; "a process this job
cannot see" where /proc hides it). A fixed ``port`` already bound before the start is the same error
before anything starts; the server's own exit (a bind failure included), or "address already in use"
in its log while the port is not yet its own (a server that stays up after failing to bind), ends
the wait at once with its log's last lines. A health answer from anyone else is never taken.

**Servers die with the job.** The server is started by a small supervisor
(:mod:`earnest.backends.supervisor`), in a session of its own, which is the kernel's child subreaper
(every process the server starts, a ``setsid()`` daemon included, stays below it) and watches the job
(a pipe only the job holds, and a pidfd): when the job ends, by success, an error, Ctrl-C, a
scheduler's SIGTERM or a SIGKILL, the supervisor sends SIGTERM to the server's process group, SIGKILL
after ``stop_timeout_s``, then SIGKILL to every descendant left, until none is.

**Secrets.** The token and the API key of ``api_key_env`` are replaced by ``[hidden]`` in the
server's log (``<the job's log>.server.log``, written by the supervisor), which starts with the
command as configured (``{token}`` unfilled). A key written in ``command``, ``env`` or ``base_url``
is refused by the config check: the server inherits the job's environment, so a key it needs (say
``HF_TOKEN``) is exported there, and the key the job sends is named by ``api_key_env``.

**The cache.** Answers are cached and described by what the server is, not by the port it got or
the token it drew: the command and ``env`` as configured, the identity mode, the entry's ``revision``,
the files and directories the command names (path, size, modification time of each file, the
executable's included: a new image, engine or model files make new keys) and the engine's
``/version`` answer where it has one.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from earnest.schema import schema_default

#: the keys of a serve block and their defaults, read from config/schema.yaml (models.*.serve)
DEFAULTS = {k: schema_default(f"models.*.serve.{k}")
            for k in ("port", "host", "ready_timeout_s", "health_path", "stop_timeout_s", "identity")}
IDENTITIES = ("model", "api_key", "process")
SUPERVISOR = str(Path(__file__).with_name("supervisor.py"))
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# arguments and variables whose value is a secret, and values that look like one
_SECRET_FLAG = re.compile(r"--?(api[-_]?key|token|hf[-_]token|auth[-_]?token|password|secret|access[-_]key)\Z", re.I)
_SECRET_NAME = re.compile(r"(^|_)(API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)($|_)", re.I)
_SECRET_VALUE = re.compile(r"(\bsk-[A-Za-z0-9_-]{16,}|\bhf_[A-Za-z0-9]{20,}|\bBearer\s+\S{8,}|"
                           r"\bgh[pousr]_[A-Za-z0-9]{20,}|\bxox[abp]-[A-Za-z0-9-]{10,}|\bAKIA[0-9A-Z]{16}\b)")


class ServerError(RuntimeError):
    """The server did not start, or stopped answering; the message names the entry and its log."""


def secret_problem(where: str, value: str, named: str = "") -> str | None:
    """Why ``value`` (at ``where``; ``named``: its variable or flag name) looks like a key written in
    the config, or None. ``{token}`` (the job's own) and ``${VAR}``-free placeholders are not."""
    if "\0" in value:
        return None   # refused elsewhere
    literal = value.replace("{token}", "").replace("{port}", "").replace("{host}", "")
    if named and literal.strip() and value.strip() != "{token}":
        return (f"{where}: {named} holds a secret written in the config (it would be written to the server's "
                "command line, logs and results); leave it out: the server inherits the job's environment, so "
                f"export it there (e.g. export {_env_hint(named)}=...) or, for the server's own API key, use "
                "'{token}' with identity: api_key; the key the job sends is named by api_key_env")
    if _SECRET_VALUE.search(value):
        return (f"{where}: holds what looks like an API key or token (it would be written to logs and results); "
                "put it in an environment variable of the job (the server inherits it) and name the variable "
                "in api_key_env for the key the job sends; the server's own key: '{token}' with identity: api_key")
    return None


def _env_hint(named: str) -> str:
    name = re.sub(r"[^A-Za-z0-9]+", "_", named.lstrip("-")).strip("_").upper()
    return name if _ENV_NAME.match(name or "") else "API_KEY"


def check_serve(where: str, block) -> dict:
    """The serve block ``where.serve`` with its defaults, or ValueError naming the field and the fix."""
    from earnest.backends.openai_http import is_loopback

    if not isinstance(block, dict):
        raise ValueError(f"{where}.serve: a mapping is required, got {block!r}")
    unknown = sorted(set(block) - set(DEFAULTS) - {"command", "env"})
    if unknown:
        raise ValueError(f"{where}.serve.{unknown[0]}: unknown key (known: command, env, {', '.join(DEFAULTS)})")
    cfg = {**DEFAULTS, **block}
    command = cfg.get("command")
    if not isinstance(command, list) or not command or \
            not all(isinstance(a, (str, int, float)) and not isinstance(a, bool) for a in command):
        raise ValueError(f"{where}.serve.command: a non-empty list of arguments is required "
                         f"(e.g. [vllm, serve, MODEL, --port, '{{port}}']), got {command!r}")
    cfg["command"] = [str(a) for a in command]
    for i, arg in enumerate(cfg["command"]):
        if "\0" in arg:
            raise ValueError(f"{where}.serve.command[{i}]: holds a NUL character, which no command line can "
                             "carry (the server would get the argument cut short); remove it")
    if not cfg["command"][0].strip():
        raise ValueError(f"{where}.serve.command[0]: the program to run is empty")
    for i, arg in enumerate(cfg["command"]):
        flag, eq, value = arg.partition("=")
        named = flag if eq and _SECRET_FLAG.match(flag) else ""
        if not named and i > 0 and _SECRET_FLAG.match(cfg["command"][i - 1]):
            named, value = cfg["command"][i - 1], arg
        problem = secret_problem(f"{where}.serve.command[{i}]", value if named else arg, named)
        if problem:
            raise ValueError(problem)
    port = cfg["port"]
    if port != "auto" and (not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535):
        raise ValueError(f"{where}.serve.port: 'auto' or a port number from 1 to 65535 is required, got {port!r}")
    for key in ("ready_timeout_s", "stop_timeout_s"):
        value = cfg[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 86400:
            raise ValueError(f"{where}.serve.{key}: seconds above 0 (at most a day) are required, got {value!r}")
    path = cfg["health_path"]
    if not isinstance(path, str) or not path.startswith("/") or re.search(r"[\x00-\x20\x7f-\x9f#]", path):
        raise ValueError(f"{where}.serve.health_path: a URL path starting with '/' without spaces, '#' or control "
                         f"characters (CR, LF, tab) is required (e.g. /health), got {path!r}")
    host = cfg["host"]
    if not isinstance(host, str) or not host:
        raise ValueError(f"{where}.serve.host: a host name or address is required, got {host!r}")
    if not is_loopback(host) or host.strip(".").lower() in ("0.0.0.0", "::", "0") or _unspecified(host):
        raise ValueError(f"{where}.serve.host: {host!r} is not this machine's loopback: the job starts the server "
                         "on its own node and talks to it there, and a server listening on a network address "
                         "takes requests from anyone on the network; use 127.0.0.1 (the default) or ::1")
    env = cfg.get("env") or {}
    if not isinstance(env, dict):
        raise ValueError(f"{where}.serve.env: a mapping of variable names to values is required, got {env!r}")
    for name, value in env.items():
        if not isinstance(name, str) or not _ENV_NAME.match(name):
            raise ValueError(f"{where}.serve.env: {name!r} is not an environment variable name (letters, digits "
                             "and '_', not starting with a digit; no '=')")
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ValueError(f"{where}.serve.env.{name}: a text or number value is required, got {value!r}")
        if "\0" in str(value):
            raise ValueError(f"{where}.serve.env.{name}: holds a NUL character, which no environment can carry; "
                             "remove it")
        problem = secret_problem(f"{where}.serve.env.{name}", str(value),
                                 name if _SECRET_NAME.search(name) else "")
        if problem:
            raise ValueError(problem)
    cfg["env"] = {k: str(v) for k, v in env.items()}
    if "{port}" not in " ".join(cfg["command"]) and port == "auto":
        raise ValueError(f"{where}.serve.command: with port: auto the command must take the port as '{{port}}' "
                         "(e.g. --port '{port}')")
    if cfg["identity"] not in IDENTITIES:
        raise ValueError(f"{where}.serve.identity: one of {', '.join(IDENTITIES)} is required, got "
                         f"{cfg['identity']!r}")
    takes_token = any("{token}" in a for a in cfg["command"]) or any("{token}" in v for v in cfg["env"].values())
    if cfg["identity"] in ("model", "api_key") and not takes_token:
        example = ("--served-model-name '{token}' (vLLM, SGLang) or --alias '{token}' (llama.cpp)"
                   if cfg["identity"] == "model" else "--api-key '{token}' (vLLM, llama.cpp) or env: "
                   "{VLLM_API_KEY: '{token}'}")
        raise ValueError(f"{where}.serve.command: identity: {cfg['identity']} needs the job's token as "
                         f"'{{token}}' in the command or env (e.g. {example}); or identity: process for a server "
                         "that takes neither")
    return cfg


def _unspecified(host: str) -> bool:
    import ipaddress

    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0]).is_unspecified
    except ValueError:
        return False


def free_port(host: str) -> int:
    """A port of ``host`` no one listens on now (the kernel's choice)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


# ---------------------------------------------------------------- who holds a port (Linux /proc)


def listening_inodes(port: int) -> set[int] | None:
    """The socket inodes listening on TCP ``port`` (any address, IPv4 and IPv6) in this network
    namespace, or None where /proc/net/tcp cannot be read (not Linux)."""
    found, readable = set(), False
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as fh:
                lines = fh.read().splitlines()[1:]
        except OSError:
            continue
        readable = True
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                found.add(int(fields[9]))
    return found if readable else None


def socket_holders(inodes: set[int]) -> dict[int, int]:
    """{inode: pid} for the sockets in ``inodes`` whose holder this process can see."""
    out: dict[int, int] = {}
    if not inodes:
        return out
    wanted = {f"socket:[{i}]": i for i in inodes}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{entry}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{entry}/fd/{fd}")
            except OSError:
                continue
            if target in wanted:
                out.setdefault(wanted[target], int(entry))
    return out


def describe_process(pid: int) -> str:
    """``pid N (user U): command`` as far as /proc shows it."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        cmd = "?"
    try:
        uid = os.stat(f"/proc/{pid}").st_uid
        import pwd

        try:
            user = pwd.getpwuid(uid).pw_name
        except KeyError:
            user = str(uid)
    except OSError:
        user = "?"
    from earnest.text import printable

    return f"pid {pid} (user {user}): {printable(cmd[:200])}"


def port_holder(port: int) -> str | None:
    """Who listens on TCP ``port`` now: a description, "a process this job cannot see (...)", or None."""
    inodes = listening_inodes(port)
    if not inodes:
        return None
    holders = socket_holders(inodes)
    if holders:
        return "; ".join(describe_process(pid) for pid in sorted(set(holders.values())))
    return "a process this job cannot see (another user's, or in another container)"


def _ancestors(pid: int) -> list[int]:
    out = []
    for _ in range(4096):
        try:
            stat = Path(f"/proc/{pid}/stat").read_bytes()
        except OSError:
            break
        pid = int(stat[stat.rindex(b")") + 2:].split()[1])
        if pid <= 0:
            break
        out.append(pid)
    return out


# ---------------------------------------------------------------- the server


class ManagedServer:
    """One server (its supervisor, process group and descendants) of a ``serve`` block;
    :func:`serving` is the way to use it."""

    def __init__(self, where: str, block: dict, log_path: str | Path, *, revision=None, hide: tuple = ()):
        self.where = where
        self.cfg = check_serve(where, block)
        self.log_path = Path(log_path)
        self.revision = revision
        self.hide = tuple(h for h in hide if h)
        self.proc: subprocess.Popen | None = None   # the supervisor
        self.server_pid: int | None = None
        self.port = self.cfg["port"] if self.cfg["port"] != "auto" else None
        self.token = ""
        self.engine_version = None
        self._control = -1
        self._status = -1
        self._status_buf = b""
        self.exit_code: int | None = None

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

        return printable(text.strip(), keep="\n\t") or "(empty log)"

    def _fill(self, text: str) -> str:
        return text.replace("{port}", str(self.port)).replace("{host}", self.cfg["host"]).replace("{token}", self.token)

    def identity(self) -> dict:
        """What the answers of this server depend on (the cache key and the generations table's
        ``decoding``): the command and env as configured, the identity mode, the entry's revision, the
        files the command names and the engine's /version answer; never the port or the token."""
        return {"command": self.cfg["command"], "env": self.cfg["env"], "identity": self.cfg["identity"],
                "revision": self.revision, "files": fingerprint(self.cfg["command"], self.cfg["env"]),
                "engine_version": self.engine_version}

    # -- starting

    def _check_port_free(self) -> None:
        holder = port_holder(self.port)
        if holder is None:
            family = socket.AF_INET6 if ":" in self.cfg["host"] else socket.AF_INET
            with socket.socket(family, socket.SOCK_STREAM) as s:
                try:
                    s.bind((self.cfg["host"], self.port))
                except OSError as exc:
                    if exc.errno != errno.EADDRINUSE:
                        raise ServerError(f"{self.where}.serve.port: port {self.port} of {self.cfg['host']} cannot be "
                                          f"bound: {exc}") from None
                    holder = "a socket bound but not listening (holder unknown)"
        if holder is not None:
            raise ServerError(f"{self.where}.serve.port: port {self.port} of this node is already in use, before the "
                              f"server was started, by {holder}; the job will not send requests to a server it did "
                              "not start: use port: auto, or another port, or end that process")

    def start(self) -> str:
        """Start the command through the supervisor and wait until it answers and proves it is the
        job's; returns the base URL."""
        if self.port is None:
            self.port = free_port(self.cfg["host"])
        else:
            self._check_port_free()
        self.token = "earnest-" + secrets.token_hex(16)
        args = [self._fill(a) for a in self.cfg["command"]]
        env = {**os.environ, **{k: self._fill(v) for k, v in self.cfg["env"].items()}}
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:   # the command as configured: no token, no key
            shown = " ".join(a.replace("{port}", str(self.port)).replace("{host}", self.cfg["host"])
                             for a in self.cfg["command"])
            log.write(f"# earnest: {shown}\n".encode("utf-8", "replace"))
        control_r, control_w = os.pipe()
        status_r, status_w = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", SUPERVISOR, str(os.getpid()), str(control_r), str(status_w)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                pass_fds=(control_r, status_w), start_new_session=True, cwd=os.getcwd())
        except OSError as exc:
            for fd in (control_r, control_w, status_r, status_w):
                os.close(fd)
            raise ServerError(f"{self.where}.serve: cannot start the server's supervisor ({sys.executable}): "
                              f"{exc}") from None
        os.close(control_r)
        os.close(status_w)
        self._control, self._status = control_w, status_r
        spec = {"args": args, "log": str(self.log_path), "stop_timeout_s": float(self.cfg["stop_timeout_s"]),
                "hide": [self.token, *self.hide]}
        os.write(self._control, (json.dumps(spec) + "\n").encode())
        try:
            return self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _read_status(self, wait: float = 0.0) -> None:
        if self._status < 0:
            return
        if select.select([self._status], [], [], wait)[0]:
            data = os.read(self._status, 4096)
            if not data:
                os.close(self._status)
                self._status = -1
                if self.exit_code is None:
                    self.exit_code = -1
            self._status_buf += data
        while b"\n" in self._status_buf:
            line, self._status_buf = self._status_buf.split(b"\n", 1)
            word, _, value = line.decode().partition(" ")
            if word == "pid":
                self.server_pid = int(value)
            elif word == "exit":
                self.exit_code = int(value)

    def _ours(self) -> set[int]:
        """The supervisor and every process below it (the subreaper keeps daemons there)."""
        from earnest.backends.supervisor import descendants

        if self.proc is None:
            return set()
        return {self.proc.pid, *descendants(self.proc.pid)}

    def _port_state(self) -> str:
        """"ours" (a listener held by the server), "foreign:<who>", "hidden" (a listener this job
        cannot see), "none" (nobody listens yet) or "unknown" (no /proc)."""
        inodes = listening_inodes(self.port)
        if inodes is None:
            return "unknown"
        if not inodes:
            return "none"
        holders = socket_holders(inodes)
        ours = self._ours()
        foreign = sorted({pid for pid in holders.values() if pid not in ours})
        if foreign:
            return "foreign:" + "; ".join(describe_process(pid) for pid in foreign)
        if len(holders) < len(inodes):
            return "hidden"
        return "ours"

    def _open(self, url: str, headers: dict | None = None):
        request = urllib.request.Request(url, headers=headers or {})
        return urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=5)

    def _get(self, url: str, headers: dict | None = None) -> tuple[int, bytes]:
        try:
            with self._open(url, headers) as r:
                return r.status, r.read(1 << 20)
        except urllib.error.HTTPError as exc:
            return exc.code, b""

    def _proved(self) -> bool:
        """Whether the server on the port answers as the one the job started (identity mode)."""
        models = f"{self.base_url}/models"
        mode = self.cfg["identity"]
        try:
            if mode == "model":
                status, body = self._get(models)
                if status != 200:
                    return False
                data = json.loads(body).get("data")
                return isinstance(data, list) and any(isinstance(m, dict) and m.get("id") == self.token for m in data)
            if mode == "api_key":
                status, _ = self._get(models, {"Authorization": f"Bearer {self.token}"})
                if status != 200:
                    return False
                status, _ = self._get(models, {"Authorization": f"Bearer wrong-{secrets.token_hex(8)}"})
                return status in (401, 403)
            return True   # process: proved by the socket's holder (_port_state)
        except (urllib.error.URLError, OSError, ValueError, AttributeError):
            return False

    def _wait_ready(self) -> str:
        url = f"{self.base_url[:-len('/v1')]}{self.cfg['health_path']}"
        deadline = time.monotonic() + float(self.cfg["ready_timeout_s"])
        while True:
            self._read_status()
            if self.exit_code is not None:
                code = self.exit_code
                self.stop()
                holder = port_holder(self.port)   # a bind failure: who has the port
                held = f" (port {self.port} is held by {holder}: its answers are not taken)" if holder else ""
                raise ServerError(f"{self.where}.serve: the server exited with status {code} before it answered "
                                  f"{url}{held}; its log ({self.log_path}) ends:\n{self._tail()}")
            state = self._port_state()
            if state.startswith("foreign:"):
                raise ServerError(f"{self.where}.serve: port {self.port} is held by a process the job did not start "
                                  f"({state[len('foreign:'):]}): its answers are not taken (the job's own server could "
                                  f"not bind it?); use another port or end that process; the server's log "
                                  f"({self.log_path}) ends:\n{self._tail()}")
            if state != "ours" and re.search(r"address already in use|EADDRINUSE|errno 98\b", self._tail(4000), re.I):
                # a server that could not bind and did not exit (some keep running): its log says so
                holder = port_holder(self.port)
                raise ServerError(f"{self.where}.serve: the server could not bind port {self.port} (\"address already "
                                  f"in use\" in its log){f', held by {holder}' if holder else ''}: its answers are not "
                                  f"taken; use another port or end that process; its log ({self.log_path}) ends:\n"
                                  f"{self._tail()}")
            if state == "hidden" and self.cfg["identity"] == "process":
                raise ServerError(f"{self.where}.serve: port {self.port} is held by a process this job cannot see "
                                  "(another user's, or in a container), so identity: process cannot prove the "
                                  "server is the job's: end that process, use another port, or identity: model / "
                                  f"api_key with '{{token}}'; the server's log ({self.log_path}) ends:\n{self._tail()}")
            if state == "unknown" and self.cfg["identity"] == "process":
                raise ServerError(f"{self.where}.serve.identity: process needs /proc (Linux) to see who holds the "
                                  "port; use identity: model or api_key with '{token}' in the command")
            if state in ("ours", "hidden", "unknown"):
                try:
                    with self._open(url) as r:
                        healthy = r.status == 200
                except (urllib.error.URLError, OSError, ValueError):
                    healthy = False
                if healthy and self._proved():
                    self._read_status()
                    if self.exit_code is None:
                        self.engine_version = self._version()
                        return self.base_url
            if time.monotonic() > deadline:
                raise ServerError(f"{self.where}.serve: no answer from {url} (from the server the job started: "
                                  f"identity: {self.cfg['identity']}) within ready_timeout_s = "
                                  f"{self.cfg['ready_timeout_s']:g} s (loading the weights takes longer? raise it); "
                                  f"its log ({self.log_path}) ends:\n{self._tail()}")
            self._read_status(0.5)

    def _version(self):
        """The engine's /version answer (vLLM, SGLang), or None."""
        try:
            status, body = self._get(f"{self.base_url[:-len('/v1')]}/version")
            value = json.loads(body) if status == 200 else None
        except (urllib.error.URLError, OSError, ValueError):
            return None
        return value if isinstance(value, (dict, str)) and len(json.dumps(value)) < 2000 else None

    def alive(self) -> bool:
        """Whether the server the job started still runs."""
        self._read_status()
        return self.proc is not None and self.exit_code is None

    def stop(self) -> None:
        """Ask the supervisor to end the server (SIGTERM, SIGKILL after stop_timeout_s, then every
        descendant) and wait for it; idempotent."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if self._control >= 0:
            try:
                os.write(self._control, b"stop\n")
            except OSError:
                pass
        end = time.monotonic() + float(self.cfg["stop_timeout_s"]) + 60
        while self._status >= 0 and time.monotonic() < end:
            if b"done" in self._status_buf:
                break
            self._read_status(0.5)
        for fd in (self._control, self._status):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._control = self._status = -1
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:   # a supervisor that hangs: the server's death signal follows it
            proc.kill()
            proc.wait()


def fingerprint(command: list[str], env: dict) -> list:
    """(path, size, mtime_ns) of the executable and of every existing file the command or env names
    (a directory: each file below it, three levels deep, at most 2,000): a new image, engine or
    weights change it."""
    paths = []
    exe = shutil.which(command[0])
    if exe:
        paths.append(exe)
    for value in [*command[1:], *env.values()]:
        for part in (value, value.partition("=")[2]):
            if part and ("/" in part or os.sep in part) and "{" not in part and os.path.exists(part):
                paths.append(part)
    out = []
    for path in dict.fromkeys(paths):
        p = Path(path)
        try:
            if p.is_dir():
                entries = []
                base_depth = len(p.parts)
                for root, dirs, files in os.walk(p):
                    dirs.sort()
                    if len(Path(root).parts) - base_depth >= 3:
                        dirs[:] = []
                    for name in sorted(files):
                        f = Path(root, name)
                        with contextlib.suppress(OSError):
                            st = f.stat()
                            entries.append([str(f.relative_to(p)), st.st_size, st.st_mtime_ns])
                        if len(entries) >= 2000:
                            break
                    if len(entries) >= 2000:
                        break
                out.append([str(p), entries])
            else:
                st = p.stat()
                out.append([str(p), st.st_size, st.st_mtime_ns])
        except OSError:
            continue
    return out


@contextlib.contextmanager
def serving(model_name: str, model_cfg: dict, log_path: str | Path):
    """The model entry to build the backend from: unchanged without a ``serve`` block; else with the
    started server's ``base_url``, ``served_by`` (the command as configured: what the generations
    table shows), ``serve_identity`` (what the cache keys hold instead of the port and the token) and
    ``serve_token`` (how requests prove they go to it: ``{"as": "model" | "api_key", "value": ...}``),
    the server stopped on leaving, however the block is left."""
    block = model_cfg.get("serve")
    if not block:
        yield model_cfg
        return
    where = f"models.{model_name}"
    hide = []
    if model_cfg.get("api_key_env"):
        hide.append(os.environ.get(str(model_cfg["api_key_env"]), ""))
    server = ManagedServer(where, block, Path(str(log_path)).with_suffix(".server.log"),
                           revision=model_cfg.get("revision"), hide=tuple(hide))
    previous = signal.getsignal(signal.SIGTERM)

    def terminated(signum, frame):   # a scheduler's SIGTERM: leave through the finally below
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, terminated)
    try:
        base_url = server.start()
        mode = server.cfg["identity"]
        yield {**model_cfg, "base_url": base_url, "served_by": " ".join(server.cfg["command"]),
               "serve_identity": server.identity(),
               "serve_token": {"as": mode, "value": server.token} if mode in ("model", "api_key") else None}
        if not server.alive():
            raise ServerError(f"{where}.serve: the server exited (status {server.exit_code}) while the job used it; "
                              f"its log ({server.log_path}) ends:\n{server._tail()}")
    finally:
        server.stop()
        signal.signal(signal.SIGTERM, previous)
