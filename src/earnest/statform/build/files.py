"""The construction stages as file-to-file functions (what the workflow scripts call).

Per unit (a textbook entry or a case-library project), one JSONL file of sample records per stage::

    entries/{unit}.json        the entry (textbook)           datadict/{unit}.json   data dictionary (case)
    split/{unit}.jsonl         split + flattened (textbook)   induce/{unit}.jsonl    induced questions (case)
    filter/{unit}.jsonl        quality filter
    label/{unit}.jsonl         category labels                variables/{unit}.jsonl variable objects
    rewrite/{unit}.jsonl       rewrite + self-evaluation + number check (merges label and variables)

then, over every unit, the review sheets, the final samples and the statistics. ``llm`` arguments
are dicts ``{model, model_cfg, cache_dir, max_new_tokens, max_retries, prompts_dir}``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Sequence

import pandas as pd

from earnest.backends.cache import cached_backend

from ..taxonomy import load_taxonomy
from . import stages
from .datadict import model_previews, project_dictionary
from .entries import report_text
from .final import build_statistics, finalize, write_statistics
from .prompts import PromptSet
from .review import export_review, read_decisions


def _write_json(obj, out) -> None:
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(f"{out}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(obj, ensure_ascii=False, indent=1), encoding="utf-8")
    tmp.replace(out)


def write_records(records: Sequence[dict], out) -> None:
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(f"{out}.tmp{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    tmp.replace(out)


def read_records(path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def stage_config(llm: dict) -> tuple[stages.StageConfig, object]:
    """The stage's config and its cached backend (close it when done)."""
    backend = cached_backend(llm["model"], dict(llm["model_cfg"]), llm["cache_dir"])
    cfg = stages.StageConfig(backend=backend, prompts=PromptSet(llm.get("prompts_dir") or None),
                             max_new_tokens=int(llm.get("max_new_tokens", 512)),
                             max_retries=int(llm.get("max_retries", 2)))
    return cfg, backend


def _with_llm(llm: dict, fn):
    cfg, backend = stage_config(llm)
    try:
        return fn(cfg), {"cache_hits": backend.hits, "requests_sent": backend.misses, "errors": backend.errors}
    finally:
        backend.close()


def write_entry(record: dict, out) -> None:
    _write_json(record, out)


def run_split(entry_json, out, llm: dict) -> dict:
    entry = json.loads(Path(entry_json).read_text(encoding="utf-8"))
    recs, calls = _with_llm(llm, lambda cfg: stages.split_entry(entry, cfg))
    write_records(recs, out)
    return {"samples": len(recs), **calls}


def run_datadict(project: str, project_dir, files: Sequence[str], seed: int, out) -> dict:
    d = project_dictionary(project, project_dir, list(files), int(seed))
    _write_json(d, out)
    return {"tables": len(d["tables"]), "skipped": len(d["skipped"])}


def run_induce(project: str, report, datadict_json, out, llm: dict, max_questions: int, max_rounds: int,
               report_chars: int) -> dict:
    dictionary = json.loads(Path(datadict_json).read_text(encoding="utf-8"))
    text = report_text(report, max_chars=int(report_chars))
    def induce(cfg):
        shown = model_previews(dictionary, cfg)   # the model writes the preview rows (the paper's way)
        sources = {t["file"]: t["preview_source"] for t in shown["tables"]}
        return stages.induce_project(project, text, shown, cfg, max_questions=int(max_questions),
                                     max_rounds=int(max_rounds),
                                     source_meta={"report": Path(report).name, "preview": sources})

    recs, calls = _with_llm(llm, induce)
    write_records(recs, out)
    return {"samples": len(recs), **calls}


def run_filter(inp, out, llm: dict) -> dict:
    recs, calls = _with_llm(llm, lambda cfg: stages.filter_samples(read_records(inp), cfg))
    write_records(recs, out)
    return calls


def run_label(inp, out, llm: dict, taxonomy) -> dict:
    tax = load_taxonomy(taxonomy)
    recs, calls = _with_llm(llm, lambda cfg: stages.label_samples(read_records(inp), cfg, tax))
    write_records(recs, out)
    return calls


def run_variables(inp, out, llm: dict) -> dict:
    recs, calls = _with_llm(llm, lambda cfg: stages.extract_variables(read_records(inp), cfg))
    write_records(recs, out)
    return calls


def run_rewrite(label_file, variables_file, out, llm: dict, taxonomy) -> dict:
    tax = load_taxonomy(taxonomy)
    merged = stages.merge_annotations(read_records(label_file), read_records(variables_file))
    recs, calls = _with_llm(llm, lambda cfg: stages.rewrite_samples(merged, cfg, tax))
    write_records(recs, out)
    return calls


def collect(files: Sequence) -> list[dict]:
    out = []
    for f in files:
        out += read_records(f)
    return out


def run_review_export(rewrite_files: Sequence, out_dir, batch_size: int) -> int:
    return len(export_review(collect(rewrite_files), out_dir, int(batch_size)))


def run_finalize(rewrite_files: Sequence, decisions: Sequence, taxonomy, require_review: bool, out_samples,
                 out_status, out_taxonomy, stats_dir, units: dict, excluded_projects: Sequence[dict]) -> dict:
    """Final samples, outcome table, completed taxonomy and the build statistics."""
    samples = collect(rewrite_files)
    known = {r["sample_id"] for r in samples}
    dec = read_decisions(decisions, known) if decisions else {}
    try:
        counts = finalize(samples, dec, load_taxonomy(taxonomy), bool(require_review), out_samples, out_status,
                          out_taxonomy)
    finally:
        # the statistics say why, also of a build that holds no sample (finalize refuses to write it empty)
        if Path(out_status).exists():
            tables = build_statistics(samples, pd.read_parquet(out_status), dict(units), list(excluded_projects))
            write_statistics(tables, stats_dir, list(excluded_projects))
    return counts


#: the per-unit stages that ask the language model, in the order they run (one workflow rule over them)
LLM_STAGES = ("split", "induce", "filter", "label", "variables", "rewrite")
#: every construction job the workflow runs, by name (rule ``sfb_stage`` for LLM_STAGES, ``sfb_<job>`` else)
JOBS = ("entry", "datadict", *LLM_STAGES, "review", "final")


def run_job(job: str, unit: str, inputs: dict, out: dict, params: dict):
    """One construction job (one of :data:`JOBS`) from the workflow's named inputs, outputs and
    params (plain dicts: the workflow's one script passes them, nothing here knows Snakemake).
    Returns what the job's log records."""
    i, p = inputs, params
    llm = dict(p["llm"]) if "llm" in p else None
    if job == "entry":
        write_entry(json.loads(p["record"]), out["out"])
        return {"wrote": str(out["out"])}
    if job == "datadict":
        return run_datadict(unit, p["project_dir"], list(i["files"]), int(p["seed"]), out["out"])
    if job == "split":
        return run_split(i["entry"], out["out"], llm)
    if job == "induce":
        return run_induce(unit, i["report"], i["datadict"], out["out"], llm, p["max_questions"], p["max_rounds"],
                          p["report_chars"])
    if job == "filter":
        return run_filter(i["samples"], out["out"], llm)
    if job == "label":
        return run_label(i["samples"], out["out"], llm, i["taxonomy"])
    if job == "variables":
        return run_variables(i["samples"], out["out"], llm)
    if job == "rewrite":
        return run_rewrite(i["label"], i["variables"], out["out"], llm, i["taxonomy"])
    if job == "review":
        return {"files": run_review_export(list(i["rewrite"]), out["out"], p["batch_size"])}
    if job == "final":
        return run_finalize(list(i["rewrite"]), list(i["decisions"]), i["taxonomy"], p["require_review"],
                            out["samples"], out["status"], out["taxonomy"], out["stats"], dict(p["units"]),
                            list(p["excluded"]))
    raise ValueError(f"unknown StatFormBench construction job {job!r}; known: {', '.join(JOBS)}")
