"""Final samples in the released StatFormBench format, and the statistics of a build.

:func:`finalize` applies the reviewers' decisions: a sample is in the benchmark when it reached
the end of the pipeline and either a reviewer accepted it or (unless review is required) it has
no flag and a taxonomy category. Its text is the rewrite (B, Q) or the reviewer's edit; its data
is D, its category c and variables V the labels or the reviewer's replacements. The file is the
flat layout :func:`earnest.statform.data.load_samples` reads (and is read back with it before
being kept), so the built benchmark runs through the evaluation unchanged.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd
import yaml

from ..data import load_samples, parse_record
from ..taxonomy import Taxonomy, derive_taxonomy

STAGE_ORDER = ("split", "induce", "filter", "label", "variables", "rewrite", "review")


def outcome_of(r: dict, decision: dict | None, require_review: bool) -> str:
    """final | discarded | failed | rejected | pending_review | no_category."""
    if r["status"] != "active":
        return r["status"]
    d = (decision or {}).get("decision", "")
    if d == "reject":
        return "rejected"
    category = (decision or {}).get("category_final") or (r.get("label") or {}).get("category")
    if d == "accept":
        return "final" if category else "no_category"
    if require_review or r["flags"] or not category:
        return "pending_review"
    return "final"


def final_record(r: dict, decision: dict | None) -> dict:
    d = decision or {}
    rw = r.get("rewrite") or {}
    return {"sample_id": r["sample_id"], "source": r["source"],
            "category": d.get("category_final") or r["label"]["category"],
            "background": d.get("background_final") or rw.get("background", r["background"]),
            "question": d.get("question_final") or rw.get("question", r["question"]),
            "data": r["data"], "variables": d.get("variables_final") or r.get("variables") or {}}


def finalize(samples: list[dict], decisions: dict[str, dict], taxonomy: Taxonomy, require_review: bool,
             out_samples: str | Path, out_status: str | Path, out_taxonomy: str | Path) -> dict:
    """Write the benchmark (JSONL, released flat layout), every sample's outcome (Parquet) and the
    taxonomy completed by categories reviewers adopted. Returns counts by outcome."""
    unknown = set(decisions) - {r["sample_id"] for r in samples}
    if unknown:
        first = decisions[sorted(unknown)[0]]["where"]
        raise ValueError(f"{first}: review decisions name samples not in this build: {sorted(unknown)[:5]}")
    rows, final = [], []
    for r in samples:
        d = decisions.get(r["sample_id"])
        outcome = outcome_of(r, d, require_review)
        rec = final_record(r, d) if outcome == "final" else None
        if rec is not None:
            parse_record(rec, f"built sample {r['sample_id']}")  # the evaluation's own reader must accept it
            final.append(rec)
        rows.append({"sample_id": r["sample_id"], "unit": r["unit"], "entry_id": r["entry_id"], "source": r["source"],
                     "status": r["status"], "stage": r["stage"], "reason": r["reason"], "flags": " ".join(r["flags"]),
                     "category": (rec or {}).get("category") or (r.get("label") or {}).get("category")
                     or (r.get("label") or {}).get("proposed_new_category") or "",
                     "decision": (d or {}).get("decision", ""), "note": (d or {}).get("note", ""), "outcome": outcome})
    for path in (out_samples, out_status, out_taxonomy):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows, columns=["sample_id", "unit", "entry_id", "source", "status", "stage", "reason", "flags",
                                "category", "decision", "note", "outcome"]).to_parquet(out_status, index=False)
    adopted = [parse_record(rec, "final") for rec in final]
    tax = taxonomy.merged(derive_taxonomy(adopted, origin="categories adopted in review")) if adopted else taxonomy
    Path(out_taxonomy).write_text(yaml.safe_dump(tax.to_dict(), sort_keys=False, allow_unicode=True), encoding="utf-8")
    if not final:  # the outcome table is written; the benchmark is not
        # an empty benchmark is no result: say why each sample stayed out instead of writing one
        outcomes = dict(Counter(row["outcome"] for row in rows))
        reasons = Counter(f"{row['stage']}: {row['reason']}" if row["reason"] else row["outcome"] for row in rows
                          if row["outcome"] != "final")
        hint = (" Samples wait for review (statform_build.review.require is true): fill the sheets under "
                "results/statform_build/review/ and list them in statform_build.review.decisions."
                if outcomes.get("pending_review") else "")
        raise ValueError(f"the build holds no sample for the benchmark ({len(rows)} created; outcomes {outcomes}; "
                         f"most common reasons {reasons.most_common(3)}).{hint}")
    tmp = Path(out_samples).with_name(f".{Path(out_samples).stem}.tmp.jsonl")
    with open(tmp, "w", encoding="utf-8") as fh:
        for rec in final:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    load_samples(tmp)
    tmp.replace(out_samples)
    return dict(Counter(row["outcome"] for row in rows))


def build_statistics(samples: list[dict], status: pd.DataFrame, units: dict[str, str],
                     excluded_projects: list[dict]) -> dict[str, pd.DataFrame]:
    """Tables of a build: ``stages`` (per stage: entered, passed, discarded, failed, pending review,
    lost, loss %),
    ``categories`` (per category: labelled, final), ``failures`` (every failed or discarded sample
    with its stage, reason and number of model answers), ``sources`` (per source and outcome).

    ``units`` maps every unit (entry or project) to its source; ``excluded_projects`` are the
    case-library folders left out before the pipeline (counted as lost at ``selection``).
    """
    outcome = dict(zip(status["sample_id"], status["outcome"]))
    rows = []
    n_cases = sum(1 for s in units.values() if s == "case")
    rows.append({"stage": "selection (case projects)", "unit": "project", "entered": n_cases + len(excluded_projects),
                 "passed": n_cases, "discarded": len(excluded_projects), "failed": 0})
    for stage, unit_source in (("split", "textbook"), ("induce", "case")):
        us = [u for u, s in units.items() if s == unit_source]
        failed_units = {r["unit"] for r in samples if r["stage"] == stage and r["status"] == "failed"}
        rows.append({"stage": stage, "unit": "entry" if stage == "split" else "project", "entered": len(us),
                     "passed": len([u for u in us if u not in failed_units]), "discarded": 0,
                     "failed": len([u for u in us if u in failed_units])})
    created = [r for r in samples if not (r["status"] == "failed" and r["stage"] in ("split", "induce"))]
    rows.append({"stage": "samples created", "unit": "sample", "entered": len(created), "passed": len(created),
                 "discarded": 0, "failed": 0})

    def lost_at(r, stages_):
        return r["status"] != "active" and r["stage"] in stages_

    # labelling and extraction run side by side on the filter's output; rewriting takes what both passed
    before = {"filter": (), "label": ("filter",), "variables": ("filter",), "rewrite": ("filter", "label", "variables")}
    for stage, earlier in before.items():
        alive_in = [r for r in created if not lost_at(r, earlier)]
        lost_here = [r for r in alive_in if lost_at(r, (stage,))]
        rows.append({"stage": stage, "unit": "sample", "entered": len(alive_in),
                     "passed": len(alive_in) - len(lost_here),
                     "discarded": sum(1 for r in lost_here if r["status"] == "discarded"),
                     "failed": sum(1 for r in lost_here if r["status"] == "failed")})
    alive = [r for r in created if r["status"] == "active"]
    rev = Counter(outcome[r["sample_id"]] for r in alive)
    rows.append({"stage": "review", "unit": "sample", "entered": len(alive), "passed": rev.get("final", 0),
                 "discarded": rev.get("rejected", 0), "failed": 0,
                 "pending": rev.get("pending_review", 0) + rev.get("no_category", 0)})
    stages = pd.DataFrame(rows)
    stages["pending"] = stages["pending"].fillna(0).astype(int) if "pending" in stages else 0
    stages["lost"] = stages["entered"] - stages["passed"]
    stages["loss_pct"] = (100.0 * stages["lost"] / stages["entered"].where(stages["entered"] > 0)).round(1)
    stages = stages[["stage", "unit", "entered", "passed", "discarded", "failed", "pending", "lost", "loss_pct"]]

    cat_rows: dict[str, dict] = {}
    for _, row in status.iterrows():
        if not row["category"]:
            continue
        c = cat_rows.setdefault(row["category"], {"category": row["category"], "labelled": 0, "final": 0})
        c["labelled"] += 1
        c["final"] += int(row["outcome"] == "final")
    categories = pd.DataFrame(sorted(cat_rows.values(), key=lambda c: (-c["final"], -c["labelled"], c["category"])),
                              columns=["category", "labelled", "final"])
    if not categories.empty:
        parts = categories["category"].str.split("\\", n=1, expand=True, regex=False)
        categories.insert(0, "coarse", parts[0])

    fails = []
    for r in samples:
        if r["status"] == "active":
            continue
        log = (r.get("log") or {}).get(r["stage"]) or {}
        attempts = log.get("attempts") or []
        last = attempts[-1]["response"] if attempts else ""
        fails.append({"sample_id": r["sample_id"], "status": r["status"], "stage": r["stage"], "reason": r["reason"],
                      "answers": len(attempts), "last_answer": (last or "")[:300]})
    failures = pd.DataFrame(fails, columns=["sample_id", "status", "stage", "reason", "answers", "last_answer"])
    sources = (status.groupby(["source", "outcome"]).size().rename("samples").reset_index()
               if not status.empty else pd.DataFrame(columns=["source", "outcome", "samples"]))
    return {"stages": stages, "categories": categories, "failures": failures, "sources": sources}


def write_statistics(tables: dict[str, pd.DataFrame], out_dir: str | Path, excluded_projects: list[dict]) -> list[Path]:
    """Each table as CSV, Markdown and an HTML page for the report (:func:`earnest.tables.to_html`), plus
    ``summary.md`` (all tables on one page)."""
    from earnest.tables import display_frame, to_html

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written, parts = [], ["# StatFormBench build statistics\n"]
    for name, df in tables.items():
        df.to_csv(out / f"{name}.csv", index=False)
        md = df.to_markdown(index=False) if not df.empty else "(none)"
        (out / f"{name}.md").write_text(md + "\n", encoding="utf-8")
        (out / f"{name}.html").write_text(to_html(display_frame(df), f"StatFormBench build statistics: {name} "
                                                  f"({len(df)} rows).", title=name), encoding="utf-8")
        written += [out / f"{name}.csv", out / f"{name}.md", out / f"{name}.html"]
        parts += [f"## {name}\n", md, ""]
    if excluded_projects:
        parts += ["## case projects excluded before the pipeline\n",
                  pd.DataFrame(excluded_projects).to_markdown(index=False), ""]
    (out / "summary.md").write_text("\n".join(parts) + "\n", encoding="utf-8")
    written.append(out / "summary.md")
    return written
