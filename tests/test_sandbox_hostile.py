"""Hostile code against the sandbox, as whoever runs the tests (tests/hostile_checks.py; the
same checks run as ``nobody`` from tests/test_sandbox_unprivileged.py)."""

from __future__ import annotations

import pytest

from hostile_checks import CHECKS


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "corpus" else n
                                  for n in sorted(CHECKS)])
def test_hostile(name):
    CHECKS[name]()


def test_reference_mode_reads_returned_subclasses_through_the_base_type():
    # a snippet cannot define a class in reference mode (no __build_class__), but the encoder
    # must not trust an int or float instance's own methods in any mode
    from earnest.sandbox.worker import _encode_value

    class W(float):
        def __repr__(self):
            return "eighteen"

    class B(int):
        def __repr__(self):
            return "x"

    assert _encode_value(W(18), "reference") == {"error": "", "value": "18.0"}
    assert _encode_value(B(7), "reference")["exact"] == "7"
    assert _encode_value(True, "reference")["value"] == "1.0"
    assert _encode_value(True, "earnest")["error"] == "not_a_number"
