"""The one JSON-lines reader (every record with the ``path:line`` it came from), and the one reader
of a whole text file that names the line and column of a byte that is not UTF-8."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterator


class JSONLError(ValueError):
    """A line is not a JSON object; the message starts with ``path:line``."""


class DuplicateKey(ValueError):
    """Raised by :func:`unique_keys` for a key given twice in one JSON object (``key``: that key)."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def unique_keys(pairs):
    """json's object_pairs_hook: a dict, or DuplicateKey for a key given twice (json keeps the last)."""
    out = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key)
        out[key] = value
    return out


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def lone_surrogate(value, field: str = ""):
    """(field, character index, code point) of the first lone UTF-16 surrogate in a decoded JSON
    value, or None. JSON's escape ``\\ud800`` alone decodes to one: no UTF-8 file can hold it."""
    if isinstance(value, str):
        for i, ch in enumerate(value):
            if "\ud800" <= ch <= "\udfff":
                return field or "(the value)", i, ord(ch)
        return None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        name = f"{field}[{key}]" if isinstance(key, int) else (f"{field}.{key}" if field else str(key))
        found = (lone_surrogate(key, f"{name} (its name)") if isinstance(key, str) else None) \
            or lone_surrogate(item, name)
        if found:
            return found
    return None


class NonFinite(ValueError):
    """``NaN``, ``Infinity`` or ``-Infinity`` in JSON that must hold numbers only (``word``: which)."""

    def __init__(self, word: str):
        super().__init__(word)
        self.word = word


def _no_constant(word: str):
    raise NonFinite(word)


def _finite_float(digits: str) -> float:
    value = float(digits)
    if value in (float("inf"), float("-inf")):
        raise NonFinite(f"{digits[:20]}{'...' if len(digits) > 20 else ''} (beyond the float range)")
    return value


def parse_json(text: str, where: str, error: type[Exception] = JSONLError, *, multiline: bool = False,
               finite: bool = False):
    """The JSON value of ``text``; ``error`` naming ``where`` for invalid JSON (at the column, and with
    ``multiline`` the line, of ``text``), a key given twice in one object (JSON readers differ on which
    one counts), JSON nested too deep to read, or an integer too long to read (Python's limit). With
    ``finite``, Python's extensions ``NaN`` and ``Infinity`` (no JSON standard has them) are errors too."""
    try:
        if finite:
            return json.loads(text, object_pairs_hook=unique_keys, parse_constant=_no_constant,
                              parse_float=_finite_float)
        return json.loads(text, object_pairs_hook=unique_keys)
    except NonFinite as exc:
        raise error(f"{where}: {exc.word} is not a JSON number (write the value, or null)") from None
    except json.JSONDecodeError as exc:
        at = f"line {exc.lineno}, column {exc.colno}" if multiline else f"column {exc.colno}"
        raise error(f"{where}: not valid JSON ({exc.msg} at {at})") from None
    except DuplicateKey as exc:
        raise error(f"{where}: key {exc.key!r} appears twice in one object; keep the one that is meant") from None
    except RecursionError:   # json recurses once per nesting level
        raise error(f"{where}: not readable JSON (arrays or objects nested thousands deep)") from None
    except ValueError as exc:   # e.g. an integer of more than 4300 digits (Python's int limit)
        raise error(f"{where}: not readable JSON ({exc})") from None


def iter_jsonl(path: str | Path, *, objects_only: bool = True, error: type[Exception] = JSONLError,
               surrogates: bool = False) -> Iterator[tuple[str, int, object]]:
    """Yield (``"path:line"``, line number, record) for every non-blank line of ``path``.

    Raises ``error`` (the caller's own error type; :class:`JSONLError` by default) naming
    ``path:line`` for what :func:`parse_json` refuses (invalid JSON, a key given twice in one object,
    JSON nested too deep or an integer too long to read), a byte that is not UTF-8 (with its column),
    a lone UTF-16 surrogate in a string (not text; naming the field; with ``surrogates`` the record is
    yielded as it is and the caller decides, e.g. that one row's error), and (with ``objects_only``)
    for a record that is not a JSON object.
    """
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            where = f"{path}:{lineno}"
            line = decode_utf8(raw, str(path), error=error, first_line=lineno)
            if not line.strip():
                continue
            rec = parse_json(line, where, error)
            if not surrogates and _SURROGATE_ESCAPE.search(line):
                found = lone_surrogate(rec)
                if found:
                    field, index, code = found
                    raise error(f"{where}: field {field!r} holds a lone UTF-16 surrogate (\\u{code:04x} at "
                                f"character {index + 1}), which is not text and cannot be written as UTF-8; "
                                "replace it (e.g. by \\ufffd, the replacement character)")
            if objects_only and not isinstance(rec, dict):
                raise error(f"{where}: expected a JSON object, got {type(rec).__name__}")
            yield where, lineno, rec


def read_utf8(path: str | Path, *, error: type[Exception] = JSONLError) -> str:
    """The text of ``path``; ``error`` naming ``path:line`` and the column of the first byte that is
    not UTF-8 (instead of Python's byte offset). A leading byte order mark is dropped."""
    return decode_utf8(Path(path).read_bytes(), str(path), error=error)


def decode_utf8(raw: bytes, name: str, *, error: type[Exception] = JSONLError, first_line: int = 1) -> str:
    """``raw`` as text, as :func:`read_utf8` reads a file; ``name`` (a path, ``<stdin>``) in the error.
    ``raw`` starts at line ``first_line`` of ``name``; a byte order mark is dropped only from line 1."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = raw.rfind(b"\n", 0, exc.start) + 1
        lineno = raw.count(b"\n", 0, exc.start) + first_line
        raise error(f"{name}:{lineno}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at column "
                    f"{exc.start - line_start + 1}); save the file as UTF-8") from None
    return text.removeprefix("\ufeff") if first_line == 1 else text
