"""The wire protocol between the calling process and its workers, and what the caller makes of a
reply.

Requests go to a worker as a pair (a small JSON control object, then the request's JSON payload);
the worker answers each with a pair (its status of the answer's process, then the raw bytes the
answer's process reported, after ``_READY``). Every length is checked before anything is read, and
a reply is validated field by field (``validate_reply``). Standard library only: the worker
(``earnest.sandbox.worker``) uses it too.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import select
import signal
import struct
import time
from fractions import Fraction

from earnest.sandbox.policy import (_EARNEST, _KNOWN_CLASSES, _REFERENCE, CRASHES_REFERENCE, MAX_SOURCE_CHARS, RESOURCE_LIMIT, TIMEOUT,
                                    UNCLASSIFIED, RunResult, _short)


_HEADER = struct.Struct(">I")
_PAIR = struct.Struct(">II")  # a control object's length, then a payload's
# a request: up to MAX_SOURCE_CHARS characters, JSON-escaped (at most 12 bytes each: a character
# outside the BMP is two \uXXXX escapes), and its limits
_MAX_MESSAGE = 12 * MAX_SOURCE_CHARS + 4096
_MAX_RESULT = 64 * 1024  # a child's report: a class, a number and a short detail
#: The child's first byte on its result pipe once its set-up is done, just before model code runs:
#: a report without it is the set-up's own failure (an error of the machine, not a class of the
#: answer), and no model code can forge one, since the byte is already on the pipe when it runs.
_READY = b"R"
_FLOAT_TEXT = re.compile(r"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|inf|nan)")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_EXACT_TEXT = re.compile(r"-?\d{1,1000}(?:/[1-9]\d{0,999})?")

#: The start of a sandbox's token (on every worker's command line) and of its workers' temporary
#: directories, by which the caller and the worker know them.
_TEMP_PREFIX = "earnest-sandbox-"


def _temp_prefix() -> str:
    """``earnest-sandbox-HOST-``: a TMPDIR shared between nodes holds workers of several hosts,
    and a process id means something only on its own host."""
    import socket

    host = re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname())[:64] or "host"
    return f"{_TEMP_PREFIX}{host}-"


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes | None:
    """n bytes from fd, or None on EOF or when the deadline passes."""
    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
        chunk = os.read(fd, n - got)
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _send(fd: int, obj: dict) -> None:
    data = json.dumps(obj).encode()
    _write_all(fd, _HEADER.pack(len(data)) + data)


def _send_pair(fd: int, control: dict, payload) -> None:
    """A small control object and a payload (bytes or a view), framed together."""
    head = json.dumps(control).encode()
    _write_all(fd, _PAIR.pack(len(head), len(payload)) + head)
    _write_all(fd, payload)


def _send_to_worker(fd: int, control: dict, payload) -> None:
    """``_send_pair`` to a worker that may have died: SIGPIPE blocked in this thread while writing,
    and the one a write to a dead worker raises taken off, so that a caller whose SIGPIPE is at its
    default (a command-line tool made for ``| head``, a host program) gets BrokenPipeError, not death."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGPIPE})
    try:
        _send_pair(fd, control, payload)
    except BrokenPipeError:
        if signal.SIGPIPE not in old:
            signal.sigtimedwait([signal.SIGPIPE], 0)
        raise
    finally:
        if signal.SIGPIPE not in old:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _parse_object(body: bytes) -> dict | None:
    try:
        obj = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def _receive(fd: int, deadline: float | None) -> dict | None:
    """One framed JSON object, or None (EOF, deadline, oversized or malformed: checked before
    and after parsing)."""
    head = _read_exact(fd, _HEADER.size, deadline)
    if head is None:
        return None
    (size,) = _HEADER.unpack(head)
    if size > _MAX_MESSAGE:
        return None
    body = _read_exact(fd, size, deadline)
    return None if body is None else _parse_object(body)


def _receive_pair_head(fd: int, deadline: float | None = None) -> tuple[dict, int] | None:
    """The control object of a pair and the payload's length (the payload is left to read)."""
    head = _read_exact(fd, _PAIR.size, deadline)
    if head is None:
        return None
    size, payload = _PAIR.unpack(head)
    if size > 4096 or payload > _MAX_MESSAGE:
        return None
    body = _read_exact(fd, size, deadline)
    control = None if body is None else _parse_object(body)
    return None if control is None else (control, payload)


def _interpret(status: dict, body: bytes, wall: float, fidelity: str = _EARNEST) -> dict:
    """The worker's account of one child (its status and the raw bytes it reported) as a reply
    object; ``validate_reply`` then checks every field of it."""
    if status.get("timed_out"):
        return {"error": "timeout", "detail": f"wall-clock limit of {wall:g} s"}
    if status.get("oversized"):
        return {"error": "unclassified", "detail": "malformed result from the sandbox (oversized)"}
    if body:
        reply = _parse_object(body)
        if reply is not None:
            return reply
        return {"error": "unclassified", "detail": "malformed result from the sandbox (not a JSON object)"}
    sig = status.get("signal")
    if isinstance(sig, int) and 0 < sig < 65:
        if sig in (signal.SIGXCPU, signal.SIGKILL):
            return {"error": "timeout", "detail": f"CPU time limit (signal {signal.Signals(sig).name})"}
        if sig == signal.SIGALRM:
            return {"error": "timeout", "detail": "wall-clock limit (SIGALRM)"}
        if sig in (signal.SIGSEGV, signal.SIGBUS, signal.SIGXFSZ, signal.SIGABRT, signal.SIGSYS):
            return {"error": "resource_limit", "detail": f"killed by {signal.Signals(sig).name}"}
        return {"error": "unclassified", "detail": f"killed by signal {sig}"}
    if fidelity == _REFERENCE and not status.get("setup_failed"):
        # model code ended the process (os._exit): the authors' run ends with it (FIDELITY.md section 16)
        return {"error": CRASHES_REFERENCE, "detail": "the process ended without a result (os._exit): "
                "the authors' run ends here"}
    return {"error": "unclassified", "detail": "ended without a result"}


def validate_reply(reply: object, fidelity: str = _EARNEST) -> RunResult:
    """Turn a worker's reply into a RunResult, trusting nothing in it: anything malformed (wrong
    types, an unknown class, a value that is not a number's text) is ``unclassified``."""
    def malformed(why: str) -> RunResult:
        return RunResult(UNCLASSIFIED, detail=f"malformed result from the sandbox ({why})")

    if not isinstance(reply, dict):
        return malformed("not an object")
    if "error" not in reply:  # every report of the child's names its class ("" for a value)
        return malformed("no error class: not a report of the sandbox's")
    error = reply.get("error", UNCLASSIFIED)
    detail = reply.get("detail", "")
    # printable text only: a lone surrogate (no UTF-8 encoding: a log or a file written with it
    # fails), NUL and terminal control sequences become escapes
    detail = _CONTROL.sub(lambda m: ascii(m.group())[1:-1], _short(detail)) if isinstance(detail, str) else ""
    if not isinstance(error, str) or (error and error not in _KNOWN_CLASSES):
        return malformed("unknown class")
    result = _validated(reply, error, detail, fidelity)
    channels = reply.get("channels")
    if isinstance(channels, list):
        names = tuple(_CONTROL.sub(lambda m: ascii(m.group())[1:-1], _short(c, 120))
                      for c in channels[:80] if isinstance(c, str))
        result = dataclasses.replace(result, channels=names)
    return result


def _validated(reply: dict, error: str, detail: str, fidelity: str) -> RunResult:
    def malformed(why: str) -> RunResult:
        return RunResult(UNCLASSIFIED, detail=f"malformed result from the sandbox ({why})")

    if fidelity == _REFERENCE and error in (TIMEOUT, RESOURCE_LIMIT):
        # the reference has no limits (it would hang or die): its catch-all class
        return RunResult(UNCLASSIFIED, detail=f"{error.replace('_', ' ')}: {detail}")
    if error:
        return RunResult(error, detail=detail)
    text = reply.get("value")
    if not isinstance(text, str) or len(text) > 40 or not _FLOAT_TEXT.fullmatch(text):
        return malformed("value is not a number")
    value = float(text)
    exact = None
    exact_text = reply.get("exact")
    if exact_text is not None:
        if not isinstance(exact_text, str) or not _EXACT_TEXT.fullmatch(exact_text):
            return malformed("exact value is not a fraction")
        exact = Fraction(exact_text)
        if value == value and abs(value) != float("inf"):
            try:
                agree = abs(float(exact) - value) <= 1e-9 * max(1.0, abs(value))
            except OverflowError:
                agree = False
            if not agree:
                return malformed("exact and float values disagree")
    elif value == value and value not in (float("inf"), float("-inf")):
        exact = Fraction(value)
    return RunResult("", value=value, exact=exact, detail=detail)


def _read_into(fd: int, buf, deadline: float | None) -> tuple[int, bool]:
    """Read from fd into buf (a bytearray or a view of one) until EOF, a full buf or the deadline,
    with no intermediate objects: nothing of one answer stays behind in the worker's heap once buf
    is wiped. Returns (bytes read, whether EOF was reached)."""
    view = memoryview(buf)
    got = 0
    while got < len(view):
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return got, False
        k = os.readv(fd, [view[got:]])
        if k == 0:
            return got, True
        got += k
    return got, False
