"""Text from outside (a server's answer, a sandboxed program's report) made safe to print and log.

Generic: imports nothing of earnest. :mod:`earnest.sandbox` keeps its own pattern (its worker's
modules may import only the standard library: the worker program runs model code).
"""

from __future__ import annotations

import re

# C0 controls (ESC starts a terminal's escape sequences: clear the screen, retitle the window,
# rewrite the line), DEL, C1 controls (U+009B is a one-character CSI), lone UTF-16 surrogates (no
# UTF-8 encoding: a log or a table written with one fails), the line and paragraph separators and
# the bidirectional overrides and isolates (they reorder what a terminal or an editor shows)
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(text: str, keep: str = "") -> str:
    """``text`` with every character of the kinds above written as its Python escape (``\\x1b``,
    ``\\ud800``, ``\\u202e``, as ``ascii()`` writes it); the characters in ``keep`` (e.g. ``"\\t\\n"``
    for a multi-line report) stay as they are. Everything else, other scripts included, is kept."""
    return _UNPRINTABLE.sub(lambda m: m.group() if m.group() in keep else ascii(m.group())[1:-1], text)
