"""The keeper of a server the generation job started (:mod:`earnest.backends.serve`): a small process
between the job and the server that ends the server, and everything the server started, whenever
the job ends, however it ends. Standard library only; started as a file
(``python -I -S .../earnest/backends/supervisor.py JOB_PID CONTROL_FD STATUS_FD``), in a session of
its own, so that a signal to the job's process group does not reach it before it has done its work.

What it does:

* it is the kernel's *child subreaper* (``PR_SET_CHILD_SUBREAPER``): every process the server starts,
  a ``setsid()`` daemon that forks twice included, stays its descendant (an orphan is re-parented to
  it, not to the node's init), so it can find them all;
* it reads the server's spec (argv, log file, stop timeout, the strings to hide) as one JSON line on
  the control pipe, starts the server in a new session and process group (parent-death signal
  SIGKILL), and copies the server's output into the log with every string to hide (the job's token,
  the API key) replaced by ``[hidden]``;
* it tells the job on the status pipe: ``pid N`` once the server runs, ``exit CODE`` when the
  server's first process ends by itself (the job's wait ends at once), ``done`` at its own end;
* it ends the server when the job asks (``stop`` on the control pipe), when the control pipe closes
  (the job died: a SIGKILL included, nobody else holds its write end) or when the job's process
  ends (a pidfd on the job): SIGTERM to the server's process group, SIGKILL after the stop timeout,
  then SIGKILL to every descendant left (another process group, a daemon of another session), again
  until none is left; then it exits. A SIGTERM, SIGINT or SIGHUP to itself does the same.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
HIDDEN = b"[hidden]"


def _libc():
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True)
    except Exception:  # noqa: BLE001 - no prctl: the pidfd and the pipe still stop the server
        return None


def descendants(root: int) -> list[int]:
    """Every live process below ``root`` (through the parent links of /proc), deepest last."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2:].split()
        if fields[0] != b"Z":
            parent[int(entry)] = int(fields[1])
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        for pid in children.get(todo.pop(), []):
            out.append(pid)
            todo.append(pid)
    return out


class _Redactor:
    """Copies bytes to a file with each secret replaced; a secret split across two reads is caught:
    only an end of what came that could be the start of a secret waits for the next read."""

    def __init__(self, fd: int, secrets: list[bytes]):
        self.fd = fd
        self.secrets = sorted({s for s in secrets if s}, key=len, reverse=True)
        self.pending = b""

    def _write(self, data: bytes) -> None:
        while data:
            try:
                data = data[os.write(self.fd, data):]
            except OSError:   # a full disk: the server goes on, its log is cut
                return

    def _held(self, data: bytes) -> int:
        """How many bytes at the end of ``data`` could begin a secret."""
        for n in range(min(len(data), max((len(s) for s in self.secrets), default=1) - 1), 0, -1):
            if any(s.startswith(data[-n:]) for s in self.secrets):
                return n
        return 0

    def feed(self, data: bytes, final: bool = False) -> None:
        data = self.pending + data
        for secret in self.secrets:
            data = data.replace(secret, HIDDEN)
        held = 0 if final else self._held(data)
        data, self.pending = (data[:-held], data[-held:]) if held else (data, b"")
        self._write(data)


def main(job_pid: int, control: int, status: int) -> None:
    libc = _libc()
    if libc is not None:
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    stopping = []

    def on_signal(signum, frame):
        stopping.append(signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)

    def tell(line: str) -> None:
        try:
            os.write(status, (line + "\n").encode())
        except OSError:
            pass

    job_fd = -1
    try:
        job_fd = os.pidfd_open(job_pid)
    except (AttributeError, OSError):
        job_fd = -1
    if os.getppid() != job_pid:   # the job died before this process could watch it
        tell("done")
        return
    spec_line = b""
    while not spec_line.endswith(b"\n"):
        chunk = os.read(control, 65536)
        if not chunk:
            tell("done")
            return
        spec_line += chunk
    spec_line, _, rest = spec_line.partition(b"\n")
    spec = json.loads(spec_line)
    log_fd = os.open(spec["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    redactor = _Redactor(log_fd, [s.encode() for s in spec.get("hide", [])])
    out_r, out_w = os.pipe()
    pid = os.fork()
    if pid == 0:   # the server: a session and process group of its own, killed with this process
        try:
            os.setsid()
            if libc is not None:
                libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
                signal.signal(sig, signal.SIG_DFL)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.dup2(out_w, 1)
            os.dup2(out_w, 2)
            os.closerange(3, 65536)
            os.execvp(spec["args"][0], spec["args"])
        except BaseException as exc:  # noqa: BLE001
            try:
                os.write(2, f"earnest: cannot start {spec['args'][0]!r}: {exc}\n".encode())
            finally:
                os._exit(127)
    os.close(out_w)
    tell(f"pid {pid}")
    server_code = None
    stop_asked = bool(b"stop" in rest)
    control_open = True
    out_open = True

    def reap() -> None:
        nonlocal server_code
        while True:
            try:
                got, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if got == 0:
                return
            if got == pid and server_code is None:
                server_code = os.waitstatus_to_exitcode(st)

    def drain(wait: float) -> None:
        nonlocal out_open, control_open, stop_asked
        fds = [fd for fd, on in ((out_r, out_open), (control, control_open), (job_fd, job_fd >= 0)) if on]
        try:
            ready = select.select(fds, [], [], wait)[0] if fds else (time.sleep(wait) or [])
        except InterruptedError:
            ready = []
        if out_open and out_r in ready:
            data = os.read(out_r, 65536)
            if data:
                redactor.feed(data)
            else:
                out_open = False
        if control_open and control in ready:
            data = os.read(control, 4096)
            if not data or b"stop" in data:
                stop_asked = True
            if not data:
                control_open = False
        if job_fd >= 0 and job_fd in ready:
            stop_asked = True
        reap()

    while not stop_asked and not stopping and server_code is None:
        drain(0.5)
        if os.getppid() != job_pid:   # no pidfd (old kernel): the job is gone when this is re-parented
            stop_asked = True
    if server_code is not None and not stop_asked and not stopping:
        tell(f"exit {server_code}")
    # the end: SIGTERM to the server's group, SIGKILL after the stop timeout, then every descendant
    try:
        os.killpg(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
    end = time.monotonic() + float(spec.get("stop_timeout_s", 30))
    while server_code is None and time.monotonic() < end:
        drain(0.1)
    for _ in range(1000):
        left = descendants(os.getpid())
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if not left:
            break
        for other in left:
            try:
                os.kill(other, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.02)
        reap()
    reap()
    while out_open:   # what the server wrote last (no writer is left: the end of the pipe comes)
        if not select.select([out_r], [], [], 5.0)[0]:
            break
        data = os.read(out_r, 65536)
        if data:
            redactor.feed(data)
        else:
            out_open = False
    redactor.feed(b"", final=True)
    os.close(log_fd)
    tell("done")


if __name__ == "__main__" and len(sys.argv) == 4:
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
