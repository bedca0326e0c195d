"""The one JSON-lines reader (every record with the ``path:line`` it came from), and the one reader
of a whole text file that names the line and column of a byte that is not UTF-8."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator


class JSONLError(ValueError):
    """A line is not a JSON object; the message starts with ``path:line``."""


def iter_jsonl(path: str | Path, *, objects_only: bool = True,
               error: type[Exception] = JSONLError) -> Iterator[tuple[str, int, object]]:
    """Yield (``"path:line"``, line number, record) for every non-blank line of ``path``.

    Raises ``error`` (the caller's own error type; :class:`JSONLError` by default) naming
    ``path:line`` for invalid JSON, and (with ``objects_only``) for a record that is not a JSON
    object.
    """
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            where = f"{path}:{lineno}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise error(f"{where}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); "
                            "save the file as UTF-8") from None
            if lineno == 1:
                line = line.removeprefix("\ufeff")   # a UTF-8 byte order mark
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise error(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
            if objects_only and not isinstance(rec, dict):
                raise error(f"{where}: expected a JSON object, got {type(rec).__name__}")
            yield where, lineno, rec


def read_utf8(path: str | Path, *, error: type[Exception] = JSONLError) -> str:
    """The text of ``path``; ``error`` naming ``path:line`` and the column of the first byte that is
    not UTF-8 (instead of Python's byte offset). A leading byte order mark is dropped."""
    raw = Path(path).read_bytes()
    try:
        return raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line_start = raw.rfind(b"\n", 0, exc.start) + 1
        lineno = raw.count(b"\n", 0, exc.start) + 1
        raise error(f"{path}:{lineno}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at column "
                    f"{exc.start - line_start + 1}); save the file as UTF-8") from None
