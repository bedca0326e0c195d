"""StatFormBench as its authors released it (github THU-CongLab/StatFormBench, MIT licence).

The release's ``data/statformbench.json`` is one JSON object ``{key: record}`` of 1,013 samples in
two schemas, told apart by ``source``:

* **case** (case library)::

    {"case_id": "1", "source": "case", "sample_key": 1,
     "input": {"background": ..., "data_description_1": ..., "data_description_2": {file: {...}},
               "question": ...},
     "output": {"variable": {file: [column, ...]}, "role": {file: [X|Y|XY|NR, ...]},
                "category": fine name}}

* **book** (textbook)::

    {"case_id": "book5_r1\\\\032.json", "source": "book", "sample_key": 1008,
     "input": {"background": ..., "question": ..., "data": LaTeX table or null},
     "output": {"variable": {id: {"id", "value", "class", "role", "description"}},
                "category": fine name}}

:func:`read_release` turns every record into an earnest :class:`~earnest.statform.data.Sample`
without loss: the record itself travels with the sample (``Sample.release``: its key, ``input``
and ``output`` as released, what the reference prompts and the reference scoring read), and the
converted fields are what earnest's own prompts and scoring read. A case column becomes a variable
whose ``value`` is ``{"column": c, "file": f}`` (so a match needs file and column, as the authors'
evaluator does) and whose role is the column's role; a textbook variable keeps its value and role.

The category is the fine name only; its coarse category comes from the release's taxonomy
(``resources/statform/taxonomy_release.yaml``, the framework of their prompt) through
:func:`coarse_map`, the one place that decides it (the authors' ``method_hierarchy.csv`` is not in
the release). Every problem raises :class:`~earnest.statform.data.DataError` naming the file, the
record's key and the field.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import urllib.request
from pathlib import Path
from typing import Any

from .data import CLASSES, DataError, Sample, Variable, _iter_json_records, load_samples, normalize_role
from .taxonomy import Taxonomy, load_taxonomy

#: release role codes and earnest's role names, both ways
ROLE_CODES = {"predictor": "X", "response": "Y", "both": "XY", "N/A": "NR"}
RELEASE_SOURCES = {"case": "case", "book": "textbook"}


def release_taxonomy_path() -> Path:
    """``resources/statform/taxonomy_release.yaml``: the category framework of the authors' prompt."""
    return Path(__file__).resolve().parents[3] / "resources" / "statform" / "taxonomy_release.yaml"


def coarse_map(taxonomy: Taxonomy) -> dict[str, str]:
    """Fine name -> coarse name, as the authors' coarse rule reads its hierarchy file: one row per
    (coarse, fine) pair in order, a fine name listed twice keeping its last coarse category
    ("Likelihood Ratio Test" -> "Model Comparison (Variable Selection)" with the released
    taxonomy). The one place a fine name's coarse category is decided for release samples and for
    the reference ACC_CG."""
    out: dict[str, str] = {}
    for l1, l2 in taxonomy.pairs():
        out[l2] = l1
    return out


def sha256_of(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def release_url(repo: str, revision: str, file: str) -> str:
    """The raw file of ``repo`` at ``revision`` on GitHub."""
    if not revision:
        raise DataError("statform.release.revision: give the commit id of the release to fetch")
    return f"https://raw.githubusercontent.com/{repo}/{revision}/{file}"


def install_release(dest: str | Path, *, local: str | Path | None = None, repo: str = "", revision: str = "",
                    file: str = "", sha256: str | None = None, timeout: float = 120.0) -> dict:
    """Put the release file at ``dest``: copied from ``local`` (offline), else downloaded from GitHub
    at ``revision``. The copy is checked against ``sha256`` (when given) and read as a release before
    it replaces ``dest``, so a truncated or wrong file never looks finished. Returns
    ``{"sha256", "samples", "origin"}``."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".{dest.name}.tmp"
    if local:
        origin = str(local)
        if not Path(local).is_file():
            raise DataError(f"statform.release.path: {local}: no such file")
        shutil.copyfile(local, tmp)
    else:
        origin = release_url(repo, revision, file)
        try:
            with urllib.request.urlopen(origin, timeout=timeout) as resp, open(tmp, "wb") as out:  # noqa: S310
                shutil.copyfileobj(resp, out)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise DataError(f"statform.release: could not fetch {origin}: {type(exc).__name__}: {exc} "
                            "(offline: give the file with statform.release.path)") from exc
    got = sha256_of(tmp)
    if sha256 and got != sha256.lower():
        tmp.unlink(missing_ok=True)
        raise DataError(f"statform.release.sha256: {origin} has sha256 {got}, the config pins {sha256}")
    try:
        n = len(read_release(tmp))
    except DataError as exc:
        tmp.unlink(missing_ok=True)
        raise DataError(f"{origin} is not a StatFormBench release file: {exc}") from None
    os.replace(tmp, dest)
    return {"sha256": got, "samples": n, "origin": origin}


# ---------------------------------------------------------------- records


def is_release_record(rec: Any) -> bool:
    """A record in the release's schema (``input``/``output`` objects and ``source`` case|book)."""
    return (isinstance(rec, dict) and isinstance(rec.get("input"), dict) and isinstance(rec.get("output"), dict)
            and rec.get("source") in RELEASE_SOURCES)


def _str_list(v: Any, where: str) -> list[str]:
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise DataError(f"{where}: must be a list of strings, got {json.dumps(v, ensure_ascii=False)[:80]}")
    return v


def _case_variables(out: dict, where: str) -> list[Variable]:
    var, role = out.get("variable"), out.get("role")
    if not isinstance(var, dict):
        raise DataError(f"{where}: field 'output.variable' must be an object {{file: [columns]}}")
    if not isinstance(role, dict):
        raise DataError(f"{where}: field 'output.role' must be an object {{file: [roles]}}")
    if set(var) != set(role):
        raise DataError(f"{where}: 'output.variable' and 'output.role' name different files: "
                        f"{sorted(var)} vs {sorted(role)}")
    out_vars: list[Variable] = []
    seen = set()
    for file, cols in var.items():
        cols = _str_list(cols, f"{where}: output.variable[{file!r}]")
        roles = _str_list(role[file], f"{where}: output.role[{file!r}]")
        if len(cols) != len(roles):
            raise DataError(f"{where}: output.variable[{file!r}] has {len(cols)} columns but output.role[{file!r}] "
                            f"{len(roles)} roles")
        for col, r in zip(cols, roles):
            name = normalize_role(r)
            if name is None:
                raise DataError(f"{where}: output.role[{file!r}]: {r!r} is not one of X, Y, XY, NR")
            vid = f"{file}:{col}"
            if vid in seen:
                raise DataError(f"{where}: output.variable[{file!r}] lists column {col!r} twice")
            seen.add(vid)
            out_vars.append(Variable(id=vid, value={"file": file, "column": col}, var_class="others", role=name,
                                     description=f"column {col!r} of {file}"))
    return out_vars


def parse_release_record(rec: Any, where: str, fine_to_coarse: dict[str, str]) -> Sample:
    """One release record (either schema) as a :class:`Sample` carrying the record itself."""
    from .data import _parse_variables  # noqa: PLC0415 - the book schema is the flat variable layout

    if not isinstance(rec, dict):
        raise DataError(f"{where}: a record must be a JSON object, got {type(rec).__name__}")
    for key in ("input", "output", "source"):
        if key not in rec:
            raise DataError(f"{where}: field '{key}' is missing")
    src = rec["source"]
    if src not in RELEASE_SOURCES:
        raise DataError(f"{where}: field 'source': {src!r} is not 'case' or 'book'")
    inp, out = rec["input"], rec["output"]
    if not isinstance(inp, dict):
        raise DataError(f"{where}: field 'input' must be an object")
    if not isinstance(out, dict):
        raise DataError(f"{where}: field 'output' must be an object")
    key = rec.get("sample_key")
    if isinstance(key, bool) or not isinstance(key, (int, str)) or str(key) == "":
        raise DataError(f"{where}: field 'sample_key' must be an integer or a non-empty string")
    sid = str(key)
    where = f"{where} (sample_key {sid})"
    question = inp.get("question")
    if not isinstance(question, str) or not question.strip():
        raise DataError(f"{where}: field 'input.question' must be non-empty text")
    background = inp.get("background") or ""
    if not isinstance(background, str):
        raise DataError(f"{where}: field 'input.background' must be text")
    cat = out.get("category")
    if not isinstance(cat, str) or not cat:
        raise DataError(f"{where}: field 'output.category' must be a non-empty string")
    if cat not in fine_to_coarse:
        raise DataError(f"{where}: field 'output.category': {cat!r} is no fine category of the taxonomy "
                        "(statform.taxonomy; the release's is resources/statform/taxonomy_release.yaml)")
    if "variable" not in out:
        raise DataError(f"{where}: field 'output.variable' is missing")
    if src == "case":
        variables = _case_variables(out, where)
        data_parts = {k: inp[k] for k in inp if k not in ("background", "question")}
        data = json.dumps(data_parts, ensure_ascii=False, indent=1) if data_parts else None
    else:
        # a variable's class is read by neither scoring: one the flat layout does not know is kept in the
        # released record and shown as "others" (the authors' file is not refused for it)
        raw_vars = out["variable"]
        if isinstance(raw_vars, dict):
            raw_vars = {k: ({**v, "class": v["class"] if v.get("class") in CLASSES else "others"}
                            if isinstance(v, dict) else v) for k, v in raw_vars.items()}
        variables = _parse_variables(raw_vars, f"{where}: output")
        data = inp.get("data")
        if data is not None and not isinstance(data, str):
            data = json.dumps(data, ensure_ascii=False, indent=1)
    return Sample(sample_id=sid, source=RELEASE_SOURCES[src], background=background, question=question,
                  data=data, category_cg=fine_to_coarse[cat], category_fg=cat, variables=variables,
                  release={"key": sid, "source": src, "input": inp, "output": out,
                           **({"case_id": rec["case_id"]} if "case_id" in rec else {})})


def read_release(path: str | Path, taxonomy: Taxonomy | str | Path | None = None) -> list[Sample]:
    """Every sample of a release file (the JSON object ``{key: record}``), in the file's order."""
    from earnest.jsonl import parse_json, read_utf8  # noqa: PLC0415

    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    if not isinstance(taxonomy, Taxonomy):
        taxonomy = load_taxonomy(taxonomy or release_taxonomy_path())
    lookup = coarse_map(taxonomy)
    obj = parse_json(read_utf8(path, error=DataError), str(path), DataError, multiline=True)
    if isinstance(obj, dict):
        items = list(obj.items())
    elif isinstance(obj, list):
        items = [(str(i), r) for i, r in enumerate(obj)]
    else:
        raise DataError(f"{path}: top level must be an object {{key: record}} (the release's layout)")
    samples, seen = [], {}
    for k, rec in items:
        where = f"{path}: record {k!r}"
        s = parse_release_record(rec, where, lookup)
        if s.sample_id in seen:
            raise DataError(f"{where}: duplicate sample_key {s.sample_id!r} (first at record {seen[s.sample_id]!r})")
        seen[s.sample_id] = k
        samples.append(s)
    if not samples:
        raise DataError(f"{path}: holds no samples: a benchmark needs at least one")
    return samples


def is_release_file(path: str | Path) -> bool:
    """Whether a ``.json`` file holds records in the authors' release schema (its first record decides)."""
    path = Path(path)
    if path.suffix != ".json" or not path.is_file():
        return False
    for _, rec in _iter_json_records(path):
        return is_release_record(rec)
    return False


def load_any(path: str | Path, taxonomy=None) -> list[Sample]:
    """The samples of a file in the release's schema (:func:`read_release`) or in one of earnest's
    layouts (:func:`earnest.statform.data.load_samples`): the one reader of sample files."""
    if is_release_file(path):
        return read_release(path, taxonomy)
    return load_samples(path, taxonomy=taxonomy)


def release_input(sample: Sample) -> dict:
    """The sample's input as the release gives it (key order kept): the released record's ``input``,
    else the book layout built from the sample (background, question, data)."""
    if sample.release is not None:
        return sample.release["input"]
    return {"background": sample.background, "question": sample.question, "data": sample.data}


def release_output(sample: Sample) -> dict:
    """The sample's reference answer in the release's ``output`` layout (what the authors' evaluator
    reads): the released record's, else built from the sample (book layout, role codes X/Y/XY/NR)."""
    if sample.release is not None:
        return sample.release["output"]
    return {"variable": {v.id: {"id": v.id, "value": v.value, "class": v.var_class,
                                "role": ROLE_CODES.get(v.role, v.role), "description": v.description}
                         for v in sample.variables},
            "category": sample.category_fg}


def release_source(sample: Sample) -> str:
    """``case`` or ``book``: which of the authors' prompts and evaluators a sample takes."""
    return "case" if sample.source == "case" else "book"
