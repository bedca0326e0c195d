"""The log of one workflow job: logging records and stderr go to the rule's log file.

Workflow scripts start with ``log = job_logger(snakemake.log[0], "score")``; the library itself
never configures logging.
"""

from __future__ import annotations

import logging
import sys


def job_logger(log_file: str | None, name: str) -> logging.Logger:
    """Send logging (level INFO) and stderr to ``log_file`` (appending), or to stderr when it is
    None or empty; return the logger ``earnest.<name>``."""
    handlers = [logging.FileHandler(log_file, mode="a")] if log_file else [logging.StreamHandler()]
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if log_file:
        sys.stderr = open(log_file, "a", buffering=1)
    return logging.getLogger(f"earnest.{name}")
