"""Reading a model's formulation (category + variables) out of its free text.

The answer should be one JSON object ``{"category": ..., "variables": {...}}``. Models wrap it in
code fences, surround it with prose, or write several objects; we take, in order of preference,
the last JSON object that has a ``category`` or ``variables`` key, from inside code fences first,
then from anywhere in the text. Nothing is repaired: text that holds no decodable JSON object is
``no_json``.

``parse_status`` values:

* ``ok``: category (a string) and variables (an object or list) were read;
* ``empty``: the response is blank;
* ``no_json``: no JSON object in the response;
* ``no_category``: a JSON object without a usable ``category`` string (variables still scored);
* ``no_variables``: no ``variables`` key and no top-level variable objects (category still scored);
* ``bad_variables``: ``variables`` is neither an object nor a list (category still scored);
* ``too_long``: the response is longer than :data:`MAX_ANSWER_CHARS` characters (not read).

``empty``, ``no_json`` and ``too_long`` are the unparseable answers (:data:`UNPARSEABLE`): both
subtasks count as wrong.

A response is model output, so nothing in it may stop the scoring or make it slow: an answer
longer than :data:`MAX_ANSWER_CHARS` is not read at all (``too_long``, unparseable, with a note);
every step below is linear in the answer's length (a failed decode does not count lines from the
text's start again, and when failed decodes have re-read the text :data:`RESCAN_FACTOR` times the
scan ends, the objects found before still counting, with a note); JSON nested deeper than the
decoder's recursion limit ends the scan (the objects before it still count, and a note says so);
an integer longer than Python's digit limit is read as a float (infinite when beyond float range:
it matches no reference value); a key written twice keeps the last value, as ``json.loads`` does,
with a note; a lone surrogate escape (``"\\ud800"``) becomes U+FFFD in the category, ids and roles,
so the scored table can be written as UTF-8.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..backends.base import valid_text
from ..schema import schema_default
from .data import normalize_role

UNPARSEABLE = ("empty", "no_json", "too_long", "not_text")
#: the longest answer read by default, in characters (config/schema.yaml statform.max_answer_chars,
#: 1,000,000: a 512-token answer is ~2,000): longer ones are ``too_long``; a run sets its own
#: limit through that key, passed to :func:`parse_response` as ``max_chars``
MAX_ANSWER_CHARS = schema_default("statform.max_answer_chars")
#: failed decodes may re-read the text this many times over (a failed object nested in a failed
#: object is read again from each level); past that the scan ends with a note
RESCAN_FACTOR = 16
# a code fence's opening after its ``` (language tag, spaces, newline); its content runs to the next ```
_FENCE_HEAD = re.compile(r"[A-Za-z0-9_-]*[ \t]*\n?")
# where a JSON object can start: '{', JSON's whitespace, then a key's quote or the closing '}' (a
# '{' followed by anything else is not tried: 1 MB of '{' costs a regex scan, not 10^6 failed decodes)
_OBJECT_START = re.compile(r'\{[ \t\n\r]*["}]')
_MAX_INT_DIGITS = 4000  # below sys.get_int_max_str_digits()'s default (4300)
# a predicted variable without a value field can match nothing
MISSING_VALUE = object()


@dataclass
class PredictedVariable:
    id: str
    value: Any
    role: str | None
    raw_role: Any = None


@dataclass
class ParsedAnswer:
    """What could be read from one response."""

    status: str
    category: str | None = None
    variables: list[PredictedVariable] | None = None
    n_malformed: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def parseable(self) -> bool:
        return self.status not in UNPARSEABLE


def fenced_blocks(text: str) -> list[str]:
    """The contents of the code fences in ``text``, in order: after each ``` and its header
    (:data:`_FENCE_HEAD`: a language tag, spaces, a newline), up to the next ```. One pass with
    ``str.find`` (a single regular expression with a lazy body backtracked over the tag: quadratic on
    ``` and a long tag with no closing fence)."""
    out, i = [], 0
    while True:
        start = text.find("```", i)
        if start < 0:
            return out
        head = _FENCE_HEAD.match(text, start + 3).end()
        end = text.find("```", head)
        if end < 0:   # no closing fence after this one: none after a later opening either
            return out
        out.append(text[head:end])
        i = end + 3


class _Doc(str):
    """The text handed to the JSON decoder. ``json.JSONDecodeError`` counts the lines and finds the
    column of the failure from the text's start (``doc.count("\\n", 0, pos)``, ``doc.rfind``)
    every time a decode fails: at each of n ``{`` that is O(n), O(n^2) in all (200,000 ``{`` took
    72 s). Nothing here reads a line or column, so this text answers those two calls at once."""

    __slots__ = ()

    def count(self, *args) -> int:  # noqa: D102 (json.decoder's line count)
        return 0

    def rfind(self, *args) -> int:  # noqa: D102 (json.decoder's column)
        return -1


def json_objects_in(text: str, notes: list[str] | None = None) -> list[dict]:
    """Every top-level JSON object decodable in ``text``, left to right (also used by
    :mod:`earnest.statform.build.llm`); what was odd on the way (a key twice, nesting too deep, an
    integer too long) is appended to ``notes``."""
    found: list[str] = [] if notes is None else notes
    said = set(found)   # each note once, looked up in constant time (an answer may repeat many keys)

    def note(msg: str) -> None:
        if msg not in said:
            said.add(msg)
            found.append(msg)

    def pairs(items: list[tuple[str, Any]]) -> dict:
        obj: dict = {}
        for k, v in items:
            if k in obj:
                note(f"key {_clean(k)!r} given twice: the last value is read")
            obj[k] = v
        return obj

    def big_int(digits: str) -> int | float:
        if len(digits) <= _MAX_INT_DIGITS:
            return int(digits)
        note(f"an integer of {len(digits)} digits read as a float")
        return float(digits)

    decoder = json.JSONDecoder(object_pairs_hook=pairs, parse_int=big_int)
    doc = _Doc(text)
    # a decode that succeeds is skipped past, so successes read the text once; a failed one from
    # each '{' would re-read what follows it (a failing object nested in a failing object is read
    # from each level again): those re-reads are counted and capped
    budget = RESCAN_FACTOR * len(text) + 4096
    out, i = [], 0
    while True:
        m = _OBJECT_START.search(text, i)
        if m is None:
            return out
        j = m.start()
        try:
            obj, end = decoder.raw_decode(doc, j)
        except json.JSONDecodeError as exc:
            # an unterminated string is reported at its start, but was read to the text's end
            budget -= (len(text) if exc.msg.startswith("Unterminated string") else exc.pos) - j + 1
            if budget < 0:
                found.append(f"failed JSON decodes read the text {RESCAN_FACTOR} times over by character {j}: "
                             "the rest of the text is not read")
                return out
            i = j + 1
            continue
        except RecursionError:
            found.append(f"JSON nested too deep at character {j}: the rest of the text is not read")
            return out
        if isinstance(obj, dict):
            out.append(obj)
        i = end


def _clean(s: str) -> str:
    """``s`` with each lone surrogate (from a ``\\udXXX`` escape) replaced by U+FFFD."""
    return valid_text(s)[0]


def extract_json_object(text: str, notes: list[str] | None = None) -> dict | None:
    """The formulation object in ``text`` (see module doc), or None."""
    for pool in (fenced_blocks(text), [text]):
        objs = [o for chunk in pool for o in json_objects_in(chunk, notes)]
        if not objs:
            continue
        keyed = [o for o in objs if "category" in o or "variables" in o or "variable" in o]
        return (keyed or objs)[-1]
    return None


def _variables_from(raw: Any) -> tuple[list[PredictedVariable], int]:
    items = list(raw.items()) if isinstance(raw, dict) else [(None, v) for v in raw]
    out, malformed = [], 0
    for i, (key, v) in enumerate(items):
        if not isinstance(v, dict):
            malformed += 1
            out.append(PredictedVariable(id=_clean(str(key if key is not None else i)), value=MISSING_VALUE,
                                         role=None))
            continue
        vid = v.get("id", key if key is not None else str(i))
        if "value" not in v:
            malformed += 1
        raw_role = v.get("role")
        if isinstance(raw_role, str):
            raw_role = _clean(raw_role)
        out.append(PredictedVariable(id=_clean(str(vid)), value=v.get("value", MISSING_VALUE),
                                     role=normalize_role(raw_role), raw_role=raw_role))
    return out, malformed


def _case_layout(obj: dict) -> bool:
    """``variable`` and ``role`` objects with the same files, each a list of strings of one length."""
    var, role = obj.get("variable"), obj.get("role")
    if not isinstance(var, dict) or not isinstance(role, dict) or var.keys() != role.keys():
        return False
    return all(isinstance(var[f], list) and isinstance(role[f], list) and len(var[f]) == len(role[f])
               and all(isinstance(x, str) for x in var[f] + role[f]) for f in var)


def as_text(response: Any) -> tuple[str | None, str | None]:
    """(the response as text, why it is not text): ``bytes`` are decoded as UTF-8; bytes that are not
    UTF-8, or a value of another type, give (None, a note). The one place a response's type is decided."""
    if response is None or isinstance(response, str):
        return response, None
    if isinstance(response, (bytes, bytearray)):
        try:
            return bytes(response).decode("utf-8"), None
        except UnicodeDecodeError as exc:
            return None, f"the answer is {len(response):,} bytes that are not UTF-8 ({exc.reason} at byte {exc.start})"
    return None, f"the answer is a {type(response).__name__}, not text"


def parse_response(text: Any, max_chars: int | None = None) -> ParsedAnswer:
    """Read category and variables from a response (see module doc for the statuses). ``bytes`` are
    decoded (:func:`as_text`); anything else that is not text is ``not_text`` (unparseable), for that
    answer only. ``max_chars``: the longest answer read (default :data:`MAX_ANSWER_CHARS`)."""
    limit = MAX_ANSWER_CHARS if max_chars is None else int(max_chars)
    text, why = as_text(text)
    if why is not None:
        return ParsedAnswer(status="not_text", notes=[why])
    if text is None or not text.strip():
        return ParsedAnswer(status="empty")
    if len(text) > limit:
        return ParsedAnswer(status="too_long", notes=[f"an answer of {len(text):,} characters, longer than the "
                                                      f"{limit:,} read (statform.max_answer_chars)"])
    notes: list[str] = []
    obj = extract_json_object(text, notes)
    if obj is None:
        return ParsedAnswer(status="no_json", notes=notes)
    cat = obj.get("category")
    if isinstance(cat, dict):
        # some models answer {"category": {"coarse": ..., "fine": ...}}; join as L1\L2
        parts = [v for v in cat.values() if isinstance(v, str)]
        cat = "\\".join(parts) if parts else None
        notes.append("category given as an object")
    category = _clean(cat.strip()) if isinstance(cat, str) and cat.strip() else None

    if "variables" not in obj and _case_layout(obj):
        # the case-library layout of the authors' prompt: {file: [columns]} with {file: [roles]}
        variables = [PredictedVariable(id=_clean(f"{f}:{c}"), value={"file": f, "column": c},
                                       role=normalize_role(r), raw_role=r)
                     for f, cols in obj["variable"].items() for c, r in zip(cols, obj["role"][f])]
        status = "ok" if category else "no_category"
        return ParsedAnswer(status=status, category=category, variables=variables,
                            notes=notes + ["case layout (variable/role by file)"])
    if "variables" in obj:
        raw = obj["variables"]
        if raw is None:
            raw = {}
        if not isinstance(raw, (dict, list)):
            return ParsedAnswer(status="bad_variables" if category else "no_category", category=category,
                                notes=notes + ["variables is not an object or list"])
        variables, malformed = _variables_from(raw)
    else:
        # the prompt's rule 8 asks for variable ids as top-level keys; accept that layout
        top = {k: v for k, v in obj.items() if k != "category" and isinstance(v, dict) and "value" in v}
        if not top:
            return ParsedAnswer(status="no_variables" if category else "no_category", category=category, notes=notes)
        variables, malformed = _variables_from(top)
        notes.append("variables at top level")
    status = "ok" if category else "no_category"
    return ParsedAnswer(status=status, category=category, variables=variables, n_malformed=malformed, notes=notes)
