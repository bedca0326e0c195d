"""config/schema.yaml, the one home of every default: the workflow validates its config against it
(:func:`earnest.config.validate_schema` writes the defaults in), and the command line takes the
``default=`` of each option that is also a config key from it (:func:`schema_default`) and checks
the option's value against that key's type and range (:func:`check_option`).

A leaf module (PyYAML; jsonschema when an option is checked), so that any command-line module can use it.
:func:`validator_class` is the one jsonschema validator of the schema (``integer`` means an integer).
"""

from __future__ import annotations

import copy
import functools
import math
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
    """The schema of a dotted config key (``"stats.engine"``; ``*`` for any entry of a mapping:
    ``"models.*.batch_size"``); KeyError naming the key if there is none."""
    node = load_schema(path)
    for part in key.split("."):
        if part == "*":                   # any entry of a mapping (models.*.batch_size)
            node = node.get("additionalProperties")
            if not isinstance(node, dict):
                raise KeyError(f"{path}: no config key {key!r}")
            continue
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


def _is_integer(checker, instance) -> bool:
    return isinstance(instance, int) and not isinstance(instance, bool)


def validator_class(schema: dict):
    """jsonschema's validator class for ``schema`` (the draft its ``$schema`` names), with type
    ``integer`` meaning an integer: from draft 6 on JSON Schema counts a number with a zero fraction
    (``12.0``, YAML's ``1.0e+12``) as an integer, so ``variants: 12.0`` passed the config's checks
    and reached ``range()``. Every check of a config or an option against the schema uses this class
    (:func:`check_option`, :func:`earnest.config.validate_schema`)."""
    import jsonschema

    base = jsonschema.validators.validator_for(schema)
    return jsonschema.validators.extend(base, type_checker=base.TYPE_CHECKER.redefine("integer", _is_integer))


def check_option(value, key: str, option: str, path: str | Path = SCHEMA_PATH):
    """``value`` of the command-line option ``option``, which stands for the config key ``key``,
    checked against that key's schema (type, range, list items), as the workflow checks the key:
    returns ``value``, or raises ValueError naming the option (``--seed: -1 is less than the minimum
    of 0``). A NaN or infinite number is refused, as :func:`earnest.config.validate_schema` does."""
    for v in value if isinstance(value, (list, tuple)) else [value]:
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"{option}: {v} is not a value it can take (NaN and infinity are refused)")
    node = schema_node(key, path)
    errors = sorted(validator_class(node)(node).iter_errors(value), key=lambda e: list(e.path))
    if errors:
        raise ValueError(f"{option}: {errors[0].message} (as config key {key})")
    return value
