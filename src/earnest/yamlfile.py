"""The one strict YAML reader (config files, formats.yaml): UTF-8 checked with the line and column
of a bad byte, a key given twice in one mapping refused (plain YAML keeps the last), each problem
naming ``path:line``. A leaf module (PyYAML and :mod:`earnest.jsonl`), so any reader can use it."""

from __future__ import annotations

from pathlib import Path

import yaml

from earnest.jsonl import read_utf8


class StrictLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (plain YAML keeps the last);
    ``error`` is the exception it raises (set by :func:`load_yaml_strict`)."""

    error: type[Exception] = ValueError


def _unique_mapping(loader: StrictLoader, node, deep=False):
    seen: dict = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            if key not in seen:
                seen[key] = key_node.start_mark.line + 1
                continue
        except TypeError:   # an unhashable key: the base constructor reports it
            continue
        raise loader.error(f"{loader.name}:{key_node.start_mark.line + 1}: key {key!r} is given twice "
                           f"in the same mapping (first on line {seen[key]}); YAML would silently keep the last")
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


def _bounded_int(loader: StrictLoader, node):
    """YAML's integer, or ``loader.error`` naming the line where it has more digits than Python
    converts (``sys.get_int_max_str_digits()``, 4300): PyYAML's ValueError was a traceback."""
    try:
        return yaml.SafeLoader.construct_yaml_int(loader, node)
    except ValueError as exc:
        if "digits" not in str(exc):
            raise
        raise loader.error(f"{loader.name}:{node.start_mark.line + 1}: an integer of {len(node.value):,} characters, "
                           "longer than any setting takes") from None


StrictLoader.add_constructor("tag:yaml.org,2002:int", _bounded_int)


def _yaml_fix(exc: yaml.MarkedYAMLError, mark) -> str:
    """What to do about a YAML syntax error: the usual causes, the tab first (YAML indents with
    spaces only)."""
    line = mark.buffer.split("\n")[mark.line] if mark is not None and mark.buffer else ""
    if "\t" in str(exc.problem) or line[:len(line) - len(line.lstrip())].count("\t"):
        return "indent with spaces: YAML does not allow tabs in indentation"
    return ("check that line and the one before: each nested key indented by the same spaces as its "
            "siblings, a space after every ':', quotes closed")


def load_yaml_strict(path: str | Path, *, error: type[Exception] = ValueError):
    """A YAML file's content; ``error`` naming ``path:line`` for text that is not UTF-8, invalid
    YAML or a duplicate key."""
    path = Path(path)
    loader = StrictLoader(read_utf8(path, error=error))
    loader.name = str(path)
    loader.error = error
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise error(f"{path}:{mark.line + 1 if mark else '?'}: invalid YAML ({exc.problem}); "
                    f"{_yaml_fix(exc, mark)}") from None
    finally:
        loader.dispose()
