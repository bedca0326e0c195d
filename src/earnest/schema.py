"""config/schema.yaml, the one home of every default: the workflow validates its config against it
(:func:`earnest.config.validate_schema` writes the defaults in), and the command line takes the
``default=`` of each option that is also a config key from it (:func:`schema_default`).

A leaf module (PyYAML only), so that any command-line module can use it.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path

import yaml

#: config/schema.yaml of this checkout (valid when the package is used from src/, as the workflow does)
SCHEMA_PATH = Path(__file__).resolve().parents[2] / "config" / "schema.yaml"


@functools.lru_cache(maxsize=None)
def load_schema(path: str | Path = SCHEMA_PATH) -> dict:
    """The schema as a mapping (read once per path)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: earnest takes its defaults from the workflow's config/schema.yaml and "
                                "did not find it; use the package from its checkout (pip install -e .)")
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def schema_node(key: str, path: str | Path = SCHEMA_PATH) -> dict:
    """The schema of a dotted config key (``"stats.engine"``); KeyError naming the key if there is none."""
    node = load_schema(path)
    for part in key.split("."):
        props = node.get("properties") or {}
        if part not in props:
            raise KeyError(f"{path}: no config key {key!r}")
        node = props[part]
    return node


def schema_default(key: str, path: str | Path = SCHEMA_PATH):
    """The default the schema declares for a dotted config key, a fresh copy; KeyError naming the key
    if the schema declares none (e.g. ``schema_default("power.engine")`` gives the engine the power study defaults to)."""
    node = schema_node(key, path)
    if "default" not in node:
        raise KeyError(f"{path}: {key} has no default")
    return copy.deepcopy(node["default"])
