"""The two-level statistical problem taxonomy: coarse (L1) categories, each with fine (L2) ones.

Files are YAML or JSON of the form::

    categories:
      - name: Data Preprocessing
        definition: one line
        children:
          - {name: Missing Value Handling, definition: one line}

or the short form ``{L1: [L2, ...]}`` / ``{L1: {L2: definition}}``. The taxonomy we ship
(``resources/statform/taxonomy.yaml``) holds only what the paper prints; a fuller file can be
given instead, and :func:`derive_taxonomy` builds the label set from a dataset.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence


class TaxonomyError(ValueError):
    """A taxonomy file that cannot be read; the message names the file and entry."""


@dataclass
class Category:
    name: str
    definition: str = ""
    children: list["Category"] = field(default_factory=list)


@dataclass
class Taxonomy:
    """Ordered L1 categories with their L2 children and optional one-line definitions."""

    categories: list[Category] = field(default_factory=list)
    origin: str = ""

    def coarse(self) -> list[str]:
        return [c.name for c in self.categories]

    def pairs(self) -> list[tuple[str, str]]:
        """Every (L1, L2) pair in order."""
        return [(c.name, f.name) for c in self.categories for f in c.children]

    def fine_labels(self) -> list[str]:
        """Every fine category written ``L1\\\\L2``."""
        return [f"{a}\\{b}" for a, b in self.pairs()]

    def get(self, l1: str) -> Category | None:
        for c in self.categories:
            if c.name == l1:
                return c
        return None

    def coarse_of(self, l2: str) -> list[str]:
        """The L1 categories that contain a fine category named ``l2``."""
        return [a for a, b in self.pairs() if b == l2]

    def merged(self, other: "Taxonomy") -> "Taxonomy":
        """This taxonomy plus the categories of ``other`` it lacks (definitions kept from self)."""
        out = Taxonomy([Category(c.name, c.definition, [Category(f.name, f.definition) for f in c.children])
                        for c in self.categories], origin=self.origin)
        for oc in other.categories:
            mine = out.get(oc.name)
            if mine is None:
                out.categories.append(Category(oc.name, oc.definition,
                                               [Category(f.name, f.definition) for f in oc.children]))
                continue
            if not mine.definition:
                mine.definition = oc.definition
            names = {f.name: f for f in mine.children}
            for f in oc.children:
                if f.name not in names:
                    mine.children.append(Category(f.name, f.definition))
                elif not names[f.name].definition:
                    names[f.name].definition = f.definition
        if other.origin:
            out.origin = f"{self.origin} + {other.origin}" if self.origin else other.origin
        return out

    def render(self, definitions: bool = False) -> str:
        """The taxonomy as prompt text: one line per L1 listing its L2s, or with definitions one line per L2."""
        lines = []
        for c in self.categories:
            if not definitions:
                lines.append(f"- {c.name}: [{', '.join(f.name for f in c.children)}]")
                continue
            head = f"- {c.name}" + (f": {c.definition}" if c.definition else "")
            lines.append(head)
            for f in c.children:
                lines.append(f"  - {f.name}" + (f": {f.definition}" if f.definition else ""))
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"categories": [{"name": c.name, "definition": c.definition,
                                "children": [{"name": f.name, "definition": f.definition} for f in c.children]}
                               for c in self.categories]}


def _name(value, where: str) -> str:
    """A category's name: a non-empty string (a YAML key may be read as a number: its text)."""
    if isinstance(value, bool) or value is None or isinstance(value, (list, dict)):
        raise TaxonomyError(f"{where}: a category name must be text, found {value!r}")
    name = str(value).strip()
    if not name:
        raise TaxonomyError(f"{where}: a category name must not be empty")
    return name


def _definition(value, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TaxonomyError(f"{where}: a definition must be text, found {value!r}")
    return value.strip()


def _parse(obj, where: str) -> Taxonomy:
    cats: list[Category] = []
    if isinstance(obj, dict) and "categories" in obj:
        entries = obj["categories"]
        if not isinstance(entries, list):
            raise TaxonomyError(f"{where}: 'categories' must be a list")
        for i, e in enumerate(entries):
            ew = f"{where}: categories[{i}]"
            if not isinstance(e, dict) or "name" not in e:
                raise TaxonomyError(f"{ew}: needs a non-empty 'name'")
            children = e.get("children")
            if children is not None and not isinstance(children, list):
                raise TaxonomyError(f"{ew}: 'children' must be a list of names or of {{name, definition}}, "
                                    f"found {children!r}")
            kids = []
            for j, k in enumerate(children or []):
                kw = f"{ew}.children[{j}]"
                if isinstance(k, dict):
                    if "name" not in k:
                        raise TaxonomyError(f"{kw}: needs a non-empty 'name'")
                    kids.append(Category(_name(k["name"], kw), _definition(k.get("definition"), kw)))
                else:
                    kids.append(Category(_name(k, kw)))
            cats.append(Category(_name(e["name"], ew), _definition(e.get("definition"), ew), kids))
    elif isinstance(obj, dict):
        for l1, kids in obj.items():
            ew = f"{where}: {l1!r}"
            if isinstance(kids, list):
                children = [Category(_name(k, f"{ew}[{j}]")) for j, k in enumerate(kids)]
            elif isinstance(kids, dict):
                children = [Category(_name(k, ew), _definition(v, f"{ew}: {k!r}")) for k, v in kids.items()]
            else:
                raise TaxonomyError(f"{ew}: children must be a list of names or a name->definition map")
            cats.append(Category(_name(l1, where), "", children))
    else:
        raise TaxonomyError(f"{where}: expected a mapping with 'categories' or L1 -> L2 list")
    if not cats:
        raise TaxonomyError(f"{where}: no categories: a taxonomy needs at least one coarse category")
    seen = set()
    for c in cats:
        if c.name in seen:
            raise TaxonomyError(f"{where}: coarse category {c.name!r} appears twice")
        seen.add(c.name)
        kid_names = [k.name for k in c.children]
        dup = {n for n in kid_names if kid_names.count(n) > 1}
        if dup:
            raise TaxonomyError(f"{where}: {c.name!r} lists fine categories twice: {sorted(dup)}")
        if "\\" in c.name or any("\\" in k for k in kid_names):
            raise TaxonomyError(f"{where}: {c.name!r}: names must not contain a backslash (the L1\\L2 separator)")
    return Taxonomy(cats, origin=where)


def load_taxonomy(path: str | Path) -> Taxonomy:
    """Read a taxonomy file (YAML or JSON, see module doc)."""
    path = Path(path)
    if not path.exists():
        raise TaxonomyError(f"{path}: no such file")
    # a key given twice (JSON and YAML keep the last without a word) is refused, by line
    if path.suffix == ".json":
        from earnest.jsonl import parse_json, read_utf8

        obj = parse_json(read_utf8(path, error=TaxonomyError), str(path), TaxonomyError, multiline=True)
    else:
        from earnest.yamlfile import load_yaml_strict

        obj = load_yaml_strict(path, error=TaxonomyError)
    return _parse(obj, str(path))


def derive_taxonomy(samples: Iterable, origin: str = "derived from data") -> Taxonomy:
    """The L1 -> L2 labels that occur in ``samples`` (no definitions), in first-seen order."""
    cats: dict[str, list[str]] = {}
    for s in samples:
        kids = cats.setdefault(s.category_cg, [])
        if s.category_fg not in kids:
            kids.append(s.category_fg)
    return Taxonomy([Category(a, "", [Category(b) for b in kids]) for a, kids in cats.items()], origin=origin)


def taxonomy_for(samples: Sequence, path: str | Path | None = None) -> Taxonomy:
    """The taxonomy a run uses: the file at ``path`` (if any) completed by the labels in ``samples``.

    Labels the data use but the file lacks are appended (without definitions) so every reference
    label can be predicted.
    """
    derived = derive_taxonomy(samples)
    if path is None:
        return derived
    return load_taxonomy(path).merged(derived)


def default_taxonomy_path() -> Path:
    """``resources/statform/taxonomy.yaml`` of the repository this package sits in."""
    return Path(__file__).resolve().parents[3] / "resources" / "statform" / "taxonomy.yaml"
