"""The six StatFormBench metrics (paper, section 5 and Appendix E.1), per sample and averaged.

Per sample j, with reference category c, predicted category ĉ, reference variables V and
predicted variables V̂:

* ``correct_cg`` = 1[ĉ_CG = c_CG], ``correct_fg`` = 1[ĉ_FG = c_FG] (eqs. 3-4);
* M = one-to-one pairs (v̂, v) whose serialized ``value`` fields are identical (Appendix E.1);
* ``jcv`` = |M| / (|V̂| + |V| - |M|), ``pv`` = |M| / |V̂|, ``rv`` = |M| / |V|,
  ``vri`` = #{(v̂, v) in M : role(v̂) = role(v)} / |V| (eqs. 5-8).

ACC_CG, ACC_FG, JCV, PV, RV and VRI are the means of these over the N samples
(:func:`aggregate`); tables report them times 100.

Choices the paper leaves open (ours, applied to every model alike):

* **Serialization**: an object or array is written as JSON with sorted keys
  (``json.dumps(v, sort_keys=True, ensure_ascii=False)``); a string as itself; any other scalar as
  its Python ``str`` (``14`` -> ``"14"``, ``0.05`` -> ``"0.05"``, ``True`` -> ``"True"``). So
  the number 14 and the string "14" match, while 14 and 14.0 do not. This is the rule of the
  authors' released evaluator; no other normalization is applied.
* **Ties**: when several predicted and reference variables share one serialized value, |M| takes
  min(#predicted, #reference) pairs of that value, and pairs are formed so that as many as
  possible agree on role (the count VRI uses).
* **Empty sets**: a ratio whose denominator is zero scores 1 when both V̂ and V are empty
  (the model correctly says no variables are needed) and 0 otherwise; so with V empty and V̂
  non-empty JCV = PV = RV = VRI = 0, and with V̂ empty and V non-empty all four are 0.
* **Unread answers**: when the variables could not be read (``parse_status`` empty, no_json,
  too_long, no_variables, bad_variables) all four variable metrics are 0, even if V is empty; when the
  category could not be read both accuracies are 0.
* **Roles** compare after mapping aliases to the paper's names (``X`` -> predictor, ``NR`` ->
  N/A, case ignored); an unknown predicted role matches no reference role.
* **Categories** compare after trimming, collapsing whitespace and ignoring case. A predicted
  ``L1\\L2`` gives its L1 directly; a bare fine name takes its L1 from the taxonomy, and if the
  taxonomy lists that name under several L1s the coarse prediction counts as correct when the
  reference L1 is one of them. ĉ_FG is correct only when ĉ_CG is correct too, so a correct
  fine-grained prediction implies a correct coarse one (paper, section 5.1).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .data import Sample
from .parsing import MISSING_VALUE, UNPARSEABLE, ParsedAnswer, parse_response
from .taxonomy import Taxonomy

METRICS = ("ACC_CG", "ACC_FG", "JCV", "PV", "RV", "VRI")
# per-sample column behind each metric
METRIC_COLUMNS = {"ACC_CG": "correct_cg", "ACC_FG": "correct_fg", "JCV": "jcv", "PV": "pv", "RV": "rv", "VRI": "vri"}
_SEPARATORS = ("\\", "/", ">", ":", " - ")


def serialize_value(value: Any) -> str:
    """The string a variable's ``value`` is matched by (see module doc)."""
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    if isinstance(value, str):
        return value
    return str(value)


def match_counts(pred: Sequence[tuple[Any, str | None]], ref: Sequence[tuple[Any, str | None]]) -> tuple[int, int]:
    """(|M|, role-agreeing pairs) for predicted and reference (value, role) lists, one-to-one.

    Predicted values equal to ``MISSING_VALUE`` match nothing.
    """
    pv = Counter(serialize_value(v) for v, _ in pred if v is not MISSING_VALUE)
    rv = Counter(serialize_value(v) for v, _ in ref)
    matched = sum(min(n, rv[s]) for s, n in pv.items())
    pr = Counter((serialize_value(v), r) for v, r in pred if v is not MISSING_VALUE and r is not None)
    rr = Counter((serialize_value(v), r) for v, r in ref)
    roles = sum(min(n, rr[key]) for key, n in pr.items())
    return matched, roles


def _ratio(num: int, den: int, both_empty: bool) -> float:
    if den == 0:
        return 1.0 if both_empty else 0.0
    return num / den


def variable_scores(pred: Sequence[tuple[Any, str | None]] | None, ref: Sequence[tuple[Any, str | None]]) -> dict:
    """n_pred, n_ref, n_matched, n_role_correct, jcv, pv, rv, vri for one sample (``pred`` None: unread)."""
    n_ref = len(ref)
    if pred is None:
        return {"n_pred": 0, "n_ref": n_ref, "n_matched": 0, "n_role_correct": 0,
                "jcv": 0.0, "pv": 0.0, "rv": 0.0, "vri": 0.0}
    m, roles = match_counts(pred, ref)
    n_pred = len(pred)
    both_empty = n_pred == 0 and n_ref == 0
    return {"n_pred": n_pred, "n_ref": n_ref, "n_matched": m, "n_role_correct": roles,
            "jcv": _ratio(m, n_pred + n_ref - m, both_empty), "pv": _ratio(m, n_pred, both_empty),
            "rv": _ratio(m, n_ref, both_empty), "vri": _ratio(roles, n_ref, both_empty)}


def _norm(label: str) -> str:
    return " ".join(label.split()).casefold().rstrip(".")


def resolve_category(label: str | None, taxonomy: Taxonomy) -> tuple[list[str], str | None]:
    """(candidate L1 names, fine name or None) that a predicted category label stands for.

    Canonical taxonomy spellings are returned where the label matches one (up to case and spaces).
    """
    if label is None:
        return [], None
    coarse = {_norm(c): c for c in taxonomy.coarse()}
    fine: dict[str, list[tuple[str, str]]] = {}
    for a, b in taxonomy.pairs():
        fine.setdefault(_norm(b), []).append((a, b))
    text = label.strip()
    if "\\" not in text and _norm(text) in fine:
        owners = fine[_norm(text)]
        return [a for a, _ in owners], owners[0][1]
    for sep in _SEPARATORS:
        if sep in text:
            l1, l2 = (p.strip() for p in text.split(sep, 1))
            if _norm(l1) in coarse or sep == "\\":
                l1c = coarse.get(_norm(l1), l1)
                l2c = next((b for a, b in fine.get(_norm(l2), []) if a == l1c), l2) if l2 else None
                return [l1c], (l2c or None)
    if _norm(text) in coarse:
        return [coarse[_norm(text)]], None
    return [], text


def category_scores(parsed: ParsedAnswer, sample: Sample, taxonomy: Taxonomy) -> dict:
    """pred_category (raw), pred_cg, pred_fg, correct_cg, correct_fg for one sample."""
    cands, fg = resolve_category(parsed.category, taxonomy)
    ref_cg = _norm(sample.category_cg)
    correct_cg = any(_norm(c) == ref_cg for c in cands)
    correct_fg = bool(correct_cg and fg is not None and _norm(fg) == _norm(sample.category_fg))
    if correct_cg:
        pred_cg = sample.category_cg
    elif cands:
        pred_cg = "|".join(cands)
    else:
        pred_cg = ""
    return {"pred_category": parsed.category or "", "pred_cg": pred_cg, "pred_fg": fg or "",
            "correct_cg": correct_cg, "correct_fg": correct_fg}


def score_response(response: str | None, sample: Sample, taxonomy: Taxonomy, max_chars: int | None = None) -> dict:
    """Every per-sample column for one model response to ``sample`` (earnest's rules)."""
    parsed = parse_response(response, max_chars)
    out = {"parse_status": parsed.status, "n_malformed_variables": parsed.n_malformed}
    out.update(category_scores(parsed, sample, taxonomy))
    pred = None if parsed.variables is None else [(v.value, v.role) for v in parsed.variables]
    ref = [(v.value, v.role) for v in sample.variables]
    out.update(variable_scores(pred, ref))
    return out


SCORE_COLUMNS = ["source", "category_cg", "category_fg", "parse_status", "n_malformed_variables",
                 "pred_category", "pred_cg", "pred_fg", "correct_cg", "correct_fg",
                 "n_pred", "n_ref", "n_matched", "n_role_correct", "jcv", "pv", "rv", "vri"]


#: the per-sample metric columns scored in each fidelity mode, prefixed by the mode's name
MODE_COLUMNS = {mode: [f"{mode}_{METRIC_COLUMNS[m]}" for m in METRICS] for mode in ("reference", "earnest")}
#: the columns a scored table adds: earnest's (above), the run's mode, both modes' metrics, the
#: reference evaluator's error type, and whether the answer hit max_new_tokens
SCORED_COLUMNS = SCORE_COLUMNS + ["scoring_fidelity", "reference_error_type", "hit_max_tokens"] + \
    MODE_COLUMNS["reference"] + MODE_COLUMNS["earnest"]


def score_generations(generations: pd.DataFrame, samples: Sequence[Sample], taxonomy: Taxonomy,
                      fidelity: str = "earnest", max_chars: int | None = None) -> pd.DataFrame:
    """The generations table with the per-sample score columns added (one row per generation).

    Every answer is scored by both rule sets: earnest's (this module, its leniencies labelled in the
    module doc) and the authors' evaluator's (:mod:`earnest.statform.reference`), each into its
    ``<mode>_*`` columns; the metric columns the analyses read (``correct_cg`` ... ``vri``) are
    those of ``fidelity``. An answer that is not text (``bytes`` that are not UTF-8, a number) is
    that answer's ``not_text``, never the batch's failure. ``generations`` needs ``item_id`` (the
    sample id) and ``response``; an item id that is not a known sample raises ``KeyError`` naming it.
    """
    from earnest import fidelity as F

    from .parsing import as_text
    from .reference import AS_EARNEST, as_stored, hierarchy_for, score_reference

    F.check_mode(fidelity, "fidelity")
    hierarchy = hierarchy_for(taxonomy)
    limit = int(max_chars) if max_chars is not None else None
    by_id = {s.sample_id: s for s in samples}
    rows = []
    for rec in generations.to_dict(orient="records"):
        sid = str(rec["item_id"])
        if sid not in by_id:
            raise KeyError(f"generation for item_id {sid!r}: no such StatFormBench sample")
        s = by_id[sid]
        row = {"source": s.source, "category_cg": s.category_cg, "category_fg": s.category_fg}
        response = rec.get("response")
        row.update(score_response(response, s, taxonomy, limit))
        text, _ = as_text(response)
        if row["parse_status"] == "too_long":   # the cap holds in both modes (theirs has none: labelled)
            ref = {"error_type": "too_long", **{m: 0 for m in AS_EARNEST}}
        else:
            ref = score_reference(response if text is None else as_stored(text), s, hierarchy)
        row["reference_error_type"] = ref["error_type"]
        for m, col in AS_EARNEST.items():
            row[f"reference_{col}"] = float(ref[m])
            row[f"earnest_{col}"] = float(row[col])
        row["scoring_fidelity"] = fidelity
        row["hit_max_tokens"] = str(rec.get("stop_reason", "")) == "max_new_tokens"
        for m in METRICS:
            col = METRIC_COLUMNS[m]
            row[col] = row[f"{fidelity}_{col}"]
        rows.append(row)
    scored = pd.DataFrame(rows, columns=SCORED_COLUMNS, index=generations.index)
    for col in ("correct_cg", "correct_fg"):
        scored[col] = scored[col].astype(float) > 0.5
    return pd.concat([generations, scored], axis=1)


def aggregate(scored: pd.DataFrame, by: Sequence[str] = ("model",)) -> pd.DataFrame:
    """The six metrics (means over samples, in [0, 1]) and N per group, plus the unparseable count."""
    by = list(by)
    cols = [METRIC_COLUMNS[m] for m in METRICS]
    frame = scored.copy()
    frame[cols] = frame[cols].astype(float)
    frame["_unparsed"] = frame["parse_status"].isin(UNPARSEABLE).astype(int)
    g = frame.groupby(by, sort=False) if by else None
    if g is None:
        means = frame[cols].mean().to_frame().T
        means["N"] = len(frame)
        means["unparseable"] = int(frame["_unparsed"].sum())
        out = means
    else:
        out = g[cols].mean()
        out["N"] = g.size()
        out["unparseable"] = g["_unparsed"].sum()
        out = out.reset_index()
    return out.rename(columns={METRIC_COLUMNS[m]: m for m in METRICS})


def metric_matrix(scored: pd.DataFrame) -> np.ndarray:
    """The per-sample metric values as an (n, 6) float array in the order of ``METRICS``."""
    return scored[[METRIC_COLUMNS[m] for m in METRICS]].to_numpy(dtype=float)
