"""StatFormBench samples: reading, validating and tabulating them.

A sample is the evaluation input (background B, question Q, data D), its data source, its
problem category c = (c_CG, c_FG) and its reference variable set V (paper, sections 3-4).

Accepted record layouts (one record per JSONL line, or a JSON list / ``{key: record}`` object,
or one Parquet row):

* **flat** (what we ship and what :func:`samples_to_frame` writes)::

    {"sample_id": "sf-001", "source": "textbook", "background": "...", "question": "...",
     "data": "... or null", "category": "L1\\\\L2",
     "variables": {"n": {"id": "n", "value": 14, "class": "numerical", "role": "N/A",
                         "description": "..."}}}

  ``category`` may be replaced by ``category_cg`` + ``category_fg``; ``variables`` may be a list
  of variable objects or (in Parquet) a JSON string of either form.
* **nested** (the layout of the authors' GitHub release): ``input`` holds background, question and
  data; ``output`` holds ``category`` and ``variable``/``variables``; ``sample_key``/``case_id``
  give the id. There the category is the fine-grained name only, so a taxonomy is needed to find
  its coarse category.

Source names ``book``/``textbook`` become ``textbook`` and ``case``/``case_library`` become
``case``. Role codes of the release (``X``, ``Y``, ``XY``, ``NR``) become the paper's role names
(``predictor``, ``response``, ``both``, ``N/A``). Any other problem raises :class:`DataError` naming
the file, the line (JSONL) or record, and the field.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import pandas as pd

from earnest.jsonl import iter_jsonl, parse_json, read_utf8

SOURCES = ("textbook", "case")
_SOURCE_ALIASES = {"textbook": "textbook", "book": "textbook", "case": "case",
                   "case_library": "case", "case-library": "case", "caselibrary": "case"}
ROLES = ("predictor", "response", "both", "N/A")
_ROLE_ALIASES = {"predictor": "predictor", "x": "predictor", "independent": "predictor",
                 "response": "response", "y": "response", "dependent": "response",
                 "both": "both", "xy": "both",
                 "n/a": "N/A", "na": "N/A", "nr": "N/A", "none": "N/A"}
CLASSES = ("numerical", "categorical", "others")
CATEGORY_SEP = "\\"


class DataError(ValueError):
    """A sample record that cannot be read; the message names file, line/record and field."""


def normalize_role(role: Any) -> str | None:
    """The paper's name for a role string (``X`` -> ``predictor``, ``NR`` -> ``N/A``, case ignored).

    Returns None when ``role`` is not a string or names no known role; comparison of roles in
    the metrics uses these normalized names.
    """
    if not isinstance(role, str):
        return None
    return _ROLE_ALIASES.get(role.strip().lower())


def split_category(label: str) -> tuple[str | None, str]:
    """``"L1\\\\L2"`` -> ``("L1", "L2")``; a label without the separator -> ``(None, label)``."""
    label = label.strip()
    if CATEGORY_SEP in label:
        l1, l2 = label.split(CATEGORY_SEP, 1)
        return l1.strip(), l2.strip()
    return None, label


@dataclass
class Variable:
    """One reference variable v = (id, desc, value, role) plus its class (paper eq. 2)."""

    id: str
    value: Any
    var_class: str
    role: str
    description: str = ""

    def to_dict(self) -> dict:
        return {"id": self.id, "value": self.value, "class": self.var_class, "role": self.role,
                "description": self.description}


@dataclass
class Sample:
    """One StatFormBench sample (B, Q, D, c, V)."""

    sample_id: str
    source: str
    background: str
    question: str
    data: str | None
    category_cg: str
    category_fg: str
    variables: list[Variable] = field(default_factory=list)
    #: the record as the authors released it (key, source, input, output), for release samples
    #: (:mod:`earnest.statform.release`); None for samples in earnest's own layouts
    release: dict | None = None

    @property
    def category(self) -> str:
        return f"{self.category_cg}{CATEGORY_SEP}{self.category_fg}"

    def input_dict(self) -> dict:
        """The model's input in the prompt's input format: background, data, question."""
        return {"background": self.background, "data": self.data, "question": self.question}

    def reference_output(self) -> dict:
        """The gold answer in the prompt's output format (used for few-shot examples)."""
        return {"category": self.category_fg,
                "variables": {v.id: v.to_dict() for v in self.variables}}


# ---------------------------------------------------------------- record parsing


def _where(path: str, pos: str) -> str:
    return f"{path}:{pos}"


def _text(rec: dict, key: str, where: str, *, required: bool = True, allow_none: bool = False) -> str | None:
    if key not in rec:
        if required:
            raise DataError(f"{where}: field '{key}' is missing")
        return None
    val = rec[key]
    if val is None and allow_none:
        return None
    if not isinstance(val, str):
        raise DataError(f"{where}: field '{key}' must be a string, got {type(val).__name__}")
    return val


def _parse_variables(raw: Any, where: str) -> list[Variable]:
    if isinstance(raw, str):
        raw = parse_json(raw, f"{where}: field 'variables' is a string, and it is", DataError)
    if raw is None:
        raw = {}
    if isinstance(raw, dict):
        items = list(raw.items())
    elif isinstance(raw, (list, tuple)):
        items = [(None, v) for v in raw]
    else:
        raise DataError(f"{where}: field 'variables' must be an object or a list, got {type(raw).__name__}")
    out: list[Variable] = []
    seen: set[str] = set()
    for i, (key, var) in enumerate(items):
        vw = f"{where}: variables[{key!r}]" if key is not None else f"{where}: variables[{i}]"
        if isinstance(var, list) and all(isinstance(x, str) for x in var):
            raise DataError(f"{vw}: a list of column names (the case-library column layout) has no "
                            "'value' field; exact-value matching needs variable objects")
        if not isinstance(var, dict):
            raise DataError(f"{vw}: must be an object with id, value, class, role, description")
        for req in ("value", "role"):
            if req not in var:
                raise DataError(f"{vw}: field '{req}' is missing")
        vid = var.get("id", key)
        if not isinstance(vid, str) or not vid:
            raise DataError(f"{vw}.id: must be a non-empty string")
        if key is not None and vid != key:
            raise DataError(f"{vw}.id: {vid!r} differs from its key {key!r}")
        if vid in seen:
            raise DataError(f"{vw}.id: duplicate variable id {vid!r}")
        seen.add(vid)
        role = normalize_role(var["role"])
        if role is None:
            raise DataError(f"{vw}.role: {var['role']!r} is not one of {', '.join(ROLES)}")
        vclass = var.get("class", "others")
        if vclass not in CLASSES:
            raise DataError(f"{vw}.class: {vclass!r} is not one of {', '.join(CLASSES)}")
        desc = var.get("description", "")
        if desc is None:
            desc = ""
        if not isinstance(desc, str):
            raise DataError(f"{vw}.description: must be a string")
        bad = _non_finite(var["value"])
        if bad is not None:
            raise DataError(f"{vw}.value{bad[0]}: {bad[1]} is no value an answer can match (JSON has no NaN "
                            "or Infinity; write the number, or leave the variable out)")
        out.append(Variable(id=vid, value=var["value"], var_class=vclass, role=role, description=desc))
    return out


def _non_finite(value: Any) -> tuple[str, str] | None:
    """(where inside ``value``, its spelling) of the first NaN or infinity in a variable's value, or
    None (walked without recursion: a value may be nested as deep as JSON allows)."""
    stack = [("", value)]
    while stack:
        at, v = stack.pop()
        if isinstance(v, float) and not math.isfinite(v):
            return at, {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}[repr(v)]
        items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
        stack.extend(reversed([(f"{at}[{k!r}]", item) for k, item in items]))
    return None


def _fine_to_coarse_lookup(taxonomy) -> dict[str, list[str]]:
    lookup: dict[str, list[str]] = {}
    if taxonomy is None:
        return lookup
    for l1, l2 in taxonomy.pairs():
        lookup.setdefault(l2, []).append(l1)
    return lookup


def parse_record(rec: Any, where: str, taxonomy=None) -> Sample:
    """Turn one raw record (flat or nested layout, see module doc) into a :class:`Sample`.

    ``where`` prefixes every error message (e.g. ``"data.jsonl:12"``). ``taxonomy`` (a
    :class:`~earnest.statform.taxonomy.Taxonomy`) resolves a category given by its fine name only.
    """
    if not isinstance(rec, dict):
        raise DataError(f"{where}: a record must be a JSON object, got {type(rec).__name__}")
    if "input" in rec or "output" in rec:  # nested release layout
        inp, outp = rec.get("input"), rec.get("output")
        if not isinstance(inp, dict):
            raise DataError(f"{where}: field 'input' must be an object")
        if not isinstance(outp, dict):
            raise DataError(f"{where}: field 'output' must be an object")
        sid = rec.get("sample_id", rec.get("sample_key", rec.get("case_id")))
        data = inp.get("data")
        if data is None and ("data_description_1" in inp or "data_description_2" in inp):
            data = {k: inp[k] for k in ("data_description_1", "data_description_2") if k in inp}
        flat = {"sample_id": sid, "source": rec.get("source"), "background": inp.get("background"),
                "question": inp.get("question"), "data": data, "category": outp.get("category")}
        if "variables" in outp or "variable" in outp:
            flat["variables"] = outp.get("variables", outp.get("variable"))
        return parse_record(flat, where, taxonomy)

    sid = rec.get("sample_id", rec.get("id"))
    if sid is None:
        raise DataError(f"{where}: field 'sample_id' is missing")
    if isinstance(sid, (int,)) and not isinstance(sid, bool):
        sid = str(sid)
    if not isinstance(sid, str) or not sid:
        raise DataError(f"{where}: field 'sample_id' must be a non-empty string")
    where = f"{where} (sample {sid})"
    src_raw = _text(rec, "source", where)
    source = _SOURCE_ALIASES.get(src_raw.strip().lower())
    if source is None:
        raise DataError(f"{where}: field 'source': {src_raw!r} is not one of textbook/book, case/case_library")
    background = _text(rec, "background", where, allow_none=True) or ""
    question = _text(rec, "question", where)
    if not question.strip():
        raise DataError(f"{where}: field 'question' is empty")
    data = rec.get("data")
    if data is not None and not isinstance(data, str):
        if isinstance(data, (dict, list)):
            # structured data descriptions are shown to the model as JSON text
            data = json.dumps(data, ensure_ascii=False, indent=1)
        else:
            raise DataError(f"{where}: field 'data' must be text, a JSON object/list or null")

    if "category_cg" in rec or "category_fg" in rec:
        cg = _text(rec, "category_cg", where)
        fg = _text(rec, "category_fg", where)
    else:
        cat = _text(rec, "category", where)
        cg, fg = split_category(cat)
        if cg is None:
            owners = _fine_to_coarse_lookup(taxonomy).get(fg, [])
            if len(owners) != 1:
                why = ("no taxonomy was given" if taxonomy is None else
                       "the taxonomy has no such fine category" if not owners else
                       f"it belongs to several coarse categories {owners}")
                raise DataError(f"{where}: field 'category' {cat!r} names no coarse category "
                                f"(write 'L1{CATEGORY_SEP}L2'); it cannot be resolved: {why}")
            cg = owners[0]
    if not cg or not fg:
        raise DataError(f"{where}: field 'category': both coarse and fine parts must be non-empty")
    if "variables" not in rec and "variable" not in rec:
        raise DataError(f"{where}: field 'variables' is missing (write [] or {{}} for a sample with no variables)")
    variables = _parse_variables(rec.get("variables", rec.get("variable")), where)
    release = rec.get("release")
    if isinstance(release, str):
        release = parse_json(release, f"{where}: field 'release' is a string, and it is", DataError)
    if release is not None and not isinstance(release, dict):
        raise DataError(f"{where}: field 'release' must be the released record (an object)")
    return Sample(sample_id=sid, source=source, background=background, question=question, data=data,
                  category_cg=cg, category_fg=fg, variables=variables, release=release)


# ---------------------------------------------------------------- files


def _iter_json_records(path: Path) -> Iterable[tuple[str, Any]]:
    if path.suffix == ".jsonl":
        for where, _, rec in iter_jsonl(path, objects_only=False, error=DataError):
            yield where, rec
        return
    # as the JSONL lines: invalid JSON, a key given twice (json keeps the last), too deep to read
    obj = parse_json(read_utf8(path, error=DataError), str(path), DataError, multiline=True)
    if isinstance(obj, list):
        for i, rec in enumerate(obj):
            yield f"{path}:record {i}", rec
    elif isinstance(obj, dict):
        for key, rec in obj.items():
            if isinstance(rec, dict) and "sample_id" not in rec and "sample_key" not in rec and "case_id" not in rec:
                rec = {**rec, "sample_id": str(key)}
            yield f"{path}:record {key!r}", rec
    else:
        raise DataError(f"{path}: top level must be a list of records or an object of records")


def _iter_parquet_records(path: Path) -> Iterable[tuple[str, Any]]:
    df = pd.read_parquet(path)
    for i, row in enumerate(df.to_dict(orient="records")):
        rec = {k: (None if _is_missing(v) else v) for k, v in row.items()}
        yield f"{path}:row {i}", rec


def _is_missing(v: Any) -> bool:
    try:
        return v is None or (isinstance(v, float) and v != v)
    except Exception:  # noqa: BLE001 - arrays etc. are not missing
        return False


def load_samples(path: str | Path, taxonomy=None) -> list[Sample]:
    """Read every sample of a local ``.jsonl``, ``.json`` or ``.parquet`` file.

    Raises :class:`DataError` (naming file, line/record and field) on the first bad record,
    and on duplicate sample ids.
    """
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file")
    if path.suffix in (".jsonl", ".json"):
        records = _iter_json_records(path)
    elif path.suffix == ".parquet":
        records = _iter_parquet_records(path)
    else:
        raise DataError(f"{path}: unknown format (use .jsonl, .json or .parquet)")
    samples, seen = [], {}
    for where, rec in records:
        s = parse_record(rec, where, taxonomy)
        if s.sample_id in seen:
            raise DataError(f"{where}: duplicate sample_id {s.sample_id!r} (first at {seen[s.sample_id]})")
        seen[s.sample_id] = where
        samples.append(s)
    if not samples:
        raise DataError(f"{path}: holds no samples")
    return samples


def load_hub(repo_id: str = "THU-CongLab/StatFormBench", split: str = "test", taxonomy=None,
             **kwargs) -> list[Sample]:
    """Load a split from the Hugging Face hub through ``datasets`` (needs network; optional).

    Nothing else in the project needs this; local files through :func:`load_samples` are the norm.
    """
    try:
        import datasets  # noqa: PLC0415 - optional dependency
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError("loading from the hub needs the 'datasets' package") from exc
    ds = datasets.load_dataset(repo_id, split=split, **kwargs)
    return [parse_record(dict(rec), f"hub:{repo_id}/{split}:row {i}", taxonomy) for i, rec in enumerate(ds)]


def check_disjoint(eval_samples: Sequence[Sample], pool: Sequence[Sample], eval_file=None, pool_file=None) -> None:
    """Raise :class:`DataError` if the few-shot pool shares a sample id or a question with the evaluation
    set, naming both files (``eval_file``, ``pool_file``; statform.dataset / statform.fewshot_pool)."""
    names = (f"the few-shot pool ({pool_file or 'statform.fewshot_pool'}) and the evaluation set "
             f"({eval_file or 'statform.dataset'})")
    ids = {s.sample_id for s in eval_samples} & {s.sample_id for s in pool}
    if ids:
        raise DataError(f"{names} share sample ids: {sorted(ids)[:5]}")
    pool_q = {s.question.strip(): s.sample_id for s in pool}
    both = [(s.sample_id, pool_q[s.question.strip()], s.question.strip()) for s in eval_samples
            if s.question.strip() in pool_q]
    if both:
        e, p, q = both[0]
        raise DataError(f"{names} share {len(both)} question text(s), e.g. sample {e} of the evaluation set and "
                        f"sample {p} of the pool: {q[:60]!r}")


# ---------------------------------------------------------------- tables

SAMPLE_COLUMNS = ["sample_id", "source", "background", "question", "data", "category_cg",
                  "category_fg", "category", "variables", "n_variables", "release"]


def samples_to_frame(samples: Sequence[Sample]) -> pd.DataFrame:
    """The samples as a table (``variables`` as a JSON string of the variable objects)."""
    rows = []
    for s in samples:
        rows.append({"sample_id": s.sample_id, "source": s.source, "background": s.background,
                     "question": s.question, "data": s.data, "category_cg": s.category_cg,
                     "category_fg": s.category_fg, "category": s.category,
                     "variables": json.dumps([v.to_dict() for v in s.variables], ensure_ascii=False),
                     "n_variables": len(s.variables),
                     "release": None if s.release is None else json.dumps(s.release, ensure_ascii=False)})
    return pd.DataFrame(rows, columns=SAMPLE_COLUMNS)


def samples_from_frame(df: pd.DataFrame, where: str = "<frame>") -> list[Sample]:
    """Inverse of :func:`samples_to_frame`."""
    out = []
    for i, row in enumerate(df.to_dict(orient="records")):
        rec = {k: (None if _is_missing(v) else v) for k, v in row.items() if k in
               ("sample_id", "source", "background", "question", "data", "category_cg", "category_fg", "variables",
                "release")}
        out.append(parse_record(rec, f"{where}:row {i}"))
    return out


# ---------------------------------------------------------------- a smaller run


def _largest_remainder(sizes: dict, n: int, rng) -> dict:
    """``n`` split over the groups in proportion to ``sizes`` (Hamilton's rule; ties in the
    remainders broken by ``rng``), never more than a group holds."""
    total = sum(sizes.values())
    quota = {k: n * v / total for k, v in sizes.items()}
    out = {k: int(q) for k, q in quota.items()}
    keys = list(sizes)
    rng.shuffle(keys)
    keys.sort(key=lambda k: -(quota[k] - out[k]))
    for k in keys[: n - sum(out.values())]:
        out[k] += 1
    return out


def stratified_limit(samples: Sequence[Sample], n: int | None, seed: int = 0) -> list[Sample]:
    """A seeded sample of ``n`` samples stratified by source, then by category within each source
    (each in proportion to its size, largest remainders; every source gets one when ``n`` allows),
    in the samples' own order. ``n`` 0 or None: all of them. The one place ``statform.limit`` is
    decided."""
    import random

    if n is None or n == 0:
        return list(samples)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise DataError(f"statform.limit: {n!r} must be a whole number >= 0 (0 or null = every sample)")
    if n >= len(samples):
        return list(samples)
    rng = random.Random(seed)
    by_source: dict[str, list[int]] = {}
    for i, s in enumerate(samples):
        by_source.setdefault(s.source, []).append(i)
    sources = {k: len(v) for k, v in by_source.items()}
    if n >= len(sources):
        # one per source first, the rest in proportion
        share = _largest_remainder({k: v - 1 for k, v in sources.items() if v > 1} or sources, n - len(sources), rng)
        share = {k: share.get(k, 0) + 1 for k in sources}
    else:
        share = _largest_remainder(sources, n, rng)
    keep: list[int] = []
    for src, idx in by_source.items():
        cats: dict[str, list[int]] = {}
        for i in idx:
            cats.setdefault(samples[i].category, []).append(i)
        alloc = _largest_remainder({c: len(v) for c, v in cats.items()}, share[src], rng)
        for c, members in cats.items():
            keep += rng.sample(members, alloc[c])
    return [samples[i] for i in sorted(keep)]


def check_known_categories(samples: Sequence[Sample], taxonomy, where: str) -> None:
    """Raise :class:`DataError` for a sample whose category the taxonomy file does not list (it would
    otherwise enter the prompt's category list unseen)."""
    pairs = set(taxonomy.pairs())
    for s in samples:
        if (s.category_cg, s.category_fg) not in pairs:
            raise DataError(f"{where}: sample {s.sample_id}: category {s.category!r} is not in the taxonomy "
                            f"{taxonomy.origin or '(statform.taxonomy)'}; add it there or correct the sample")
