"""Which earnest a workflow and its jobs import: the library beside the Snakefile.

The Snakefile puts its own ``src/`` first on ``sys.path`` (before importing earnest) and calls
:func:`use_library`, so that every job it starts (Snakemake runs each ``script:`` in a new Python
process that inherits the environment) imports the same library, whichever earnest is installed.
"""

from __future__ import annotations

import os


def use_library(src: str) -> None:
    """Put ``src`` first on the ``PYTHONPATH`` the workflow's jobs inherit (once, keeping the rest)."""
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != src]
    os.environ["PYTHONPATH"] = os.pathsep.join([src, *rest])
