"""Shared start-up of the thin workflow scripts: send logging and stderr to the rule's log."""

import logging
import sys
from pathlib import Path


def setup(snakemake) -> logging.Logger:
    log_file = snakemake.log[0] if len(snakemake.log) else None
    handlers = [logging.FileHandler(log_file, mode="a")] if log_file else [logging.StreamHandler()]
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if log_file:
        sys.stderr = open(log_file, "a", buffering=1)
    return logging.getLogger(f"earnest.{Path(sys.argv[0]).stem}")
