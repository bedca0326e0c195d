"""GSM-Symbolic's GLMM input (earnest.stats.glmm's contract) built from its scored tables (CONTRACTS.md), optionally without code errors (Appendix G).

Scored rows carry template_id, dataset (gsm_base | gsm_variants), correct, gamma and error_class;
the GLMM input has model, prompt, template, variant (0 = GSM-Base, 1 = GSM-Variants), correct
(0/1) and gamma (centred later, when a GLMM 2 is fitted: per model x prompt, or in reference mode
over every model of the prompt: the pool's mean, a file of its own per prompt that GLMM 2's fits read
beside the input, :func:`save_pool_centre` / :func:`with_pool_centre`, so that a model added to the
pool leaves the other models' inputs and GLMM 1 fits as they are).
"""

from __future__ import annotations

import json
import math
import re

from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from earnest.gsm.failure_classes import WRONG_ANSWER_CLASSES, judged
from earnest.stats.glmm import GAMMA_CENTRE, GLMMInputError, average_repeats, integer_ids

DATASET_VARIANT = {"gsm_base": 0, "gsm_variants": 1}
SCORED_COLUMNS = ("model", "prompt", "dataset", "template_id", "correct", "gamma")
# WRONG_ANSWER_CLASSES (earnest.gsm.failure_classes): wrong numbers, not failures to produce one; they
# stay in the reasoning-only analysis. Any other non-empty error_class is a code error.


def _normalise_class(value) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    return str(value).strip().lower().replace(" ", "_").replace("-", "_")


def code_error_mask(scored: pd.DataFrame) -> pd.Series:
    """True for rows whose answer failed as code (Appendix G): a non-empty error_class that is not
    a plain wrong answer, on a row not scored correct."""
    if "error_class" not in scored.columns:
        raise GLMMInputError("scored table: missing column 'error_class' (needed for the reasoning-only analysis)")
    cls = scored["error_class"].map(_normalise_class)
    return (~cls.isin(WRONG_ANSWER_CLASSES)) & (~scored["correct"].astype(bool))


def glmm_input_from_scored(scored: pd.DataFrame | Iterable[pd.DataFrame], *, reasoning_only: bool = False,
                           source: str = "scored table") -> pd.DataFrame:
    """The GLMM input of the scored rows of one or more model x prompt x dataset tables (where the tables
    hold several samples of each question, column ``sample``: one row per question with ``correct`` the
    share of its samples and ``epochs`` their number, :func:`earnest.stats.glmm.average_repeats`).

    With ``reasoning_only``, rows with code errors (:func:`code_error_mask`) are dropped. Answers the
    machine failed to run (``infrastructure_error``) are never in it: neither right nor wrong
    (:func:`earnest.gsm.failure_classes.judged`).
    Raises :class:`GLMMInputError` naming ``source`` and the column for a missing column, an
    unknown dataset or a non-boolean ``correct``.
    """
    frames = [scored] if isinstance(scored, pd.DataFrame) else list(scored)
    if not frames:
        raise GLMMInputError(f"{source}: no scored tables given")
    df = judged(pd.concat(frames, ignore_index=True))
    for col in SCORED_COLUMNS:
        if col not in df.columns:
            raise GLMMInputError(f"{source}: missing column '{col}'")
    # Ex4: a number-controlled variant set (gsm_matched, gsm_shifted<k>) stands where GSM-Variants does
    names = set(df["dataset"].astype(str))
    controlled = sorted(n for n in names if re.fullmatch(r"gsm_(matched|shifted[1-9]\d*)", n))
    if controlled:
        if len(controlled) > 1 or "gsm_variants" in names:
            raise GLMMInputError(f"{source}: column 'dataset' mixes variant sets {sorted(names - {'gsm_base'})}; "
                                 "one GLMM input compares GSM-Base with one of them")
        df = df.assign(dataset=df["dataset"].astype(str).replace(controlled[0], "gsm_variants"))
    unknown = sorted(set(df["dataset"].astype(str)) - set(DATASET_VARIANT))
    if unknown:
        raise GLMMInputError(f"{source}: column 'dataset' holds {unknown}, expected gsm_base and gsm_variants, "
                             "gsm_matched or gsm_shifted<k>")
    correct = df["correct"]
    if not pd.api.types.is_bool_dtype(correct):
        num = pd.to_numeric(correct, errors="coerce")
        if not num.isin([0, 1]).all():
            bad = int(np.flatnonzero(~num.isin([0, 1]).to_numpy())[0])
            raise GLMMInputError(f"{source}: column 'correct' must be boolean or 0/1, found {correct.iloc[bad]!r} in data row {bad + 1}")
        correct = num.astype(bool)
    df = df.assign(correct=correct.astype(bool))
    if reasoning_only:
        df = df[~code_error_mask(df)]
    out = pd.DataFrame({
        "model": df["model"].astype(str).to_numpy(),
        "prompt": df["prompt"].astype(str).to_numpy(),
        "template": integer_ids(df["template_id"], "template_id", source).to_numpy(),
        "variant": df["dataset"].map(DATASET_VARIANT).astype(np.int64).to_numpy(),
        "correct": df["correct"].astype(np.int64).to_numpy(),
        "gamma": df["gamma"].astype(float).to_numpy(),
    })
    if "sample" not in df.columns:
        return out
    # several samples of each question (a model's decoding.samples): one row per question, correct the share
    # of its samples answered right, epochs their number (the statistics' one rule for repeated answers)
    out["item"] = df["item_id"].astype(str).to_numpy()
    out, _ = average_repeats(out, ["model", "prompt", "variant", "item"], what="samples",
                             where=lambda r: f"{('GSM-Base', 'GSM-Variants')[r['variant']]} item {r['item']!r}",
                             fix=f" ({source}; answers the machine failed to run, and in the reasoning-only "
                                 "analysis code-error answers, are left out, which can leave questions with fewer)")
    return out.drop(columns="item")


def pool_gamma_centre(scored: pd.DataFrame | Iterable[pd.DataFrame], *, reasoning_only: bool = False,
                      source: str = "scored tables of the pool") -> float:
    """Reference mode's centre of GLMM 2's gamma: its mean over the authors' pool, the scored rows of
    every model of the prompt, GSM-Base and GSM-Variants together (in the reasoning-only analysis,
    the rows it keeps), as the authors' ``get_number_effect_glmm_data`` centres ``sum_logs`` over
    every model's rows of the prompt before each model's fit: pandas' mean, rows without gamma
    skipped, GSM-Base rows first as their concatenation has them. The GLMM input of each model x
    prompt carries it in ``gamma_centre`` (:data:`earnest.stats.glmm.GAMMA_CENTRE`)."""
    df = glmm_input_from_scored(scored, reasoning_only=reasoning_only, source=source)
    return float(df.sort_values("variant", kind="stable")["gamma"].mean())


def save_pool_centre(path: str | Path, centre: float, tables: Iterable[str]) -> None:
    """Write reference mode's pool centre of one prompt (:func:`pool_gamma_centre`) as JSON, with the
    scored tables it was taken over (as given: relative paths keep a run relocatable). A pool without
    any gamma has no centre (``null``)."""
    value = float(centre)
    record = {GAMMA_CENTRE: value if math.isfinite(value) else None, "tables": [str(t) for t in tables]}
    Path(path).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def load_pool_centre(path: str | Path) -> float:
    """The centre :func:`save_pool_centre` wrote (NaN for ``null``), refused naming the file where it
    is not such a record."""
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GLMMInputError(f"{path}: not a pool centre of gamma ({exc}); delete it and let the workflow "
                             f"rebuild it") from None
    value = record.get(GAMMA_CENTRE, "missing") if isinstance(record, dict) else "missing"
    if value is None:
        return float("nan")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise GLMMInputError(f"{path}: key '{GAMMA_CENTRE}' must be a finite number or null, found {value!r}; "
                             f"delete the file and let the workflow rebuild it")
    return float(value)


def with_pool_centre(df: pd.DataFrame, path: str | Path | None) -> pd.DataFrame:
    """The GLMM input with reference mode's pool centre (:func:`load_pool_centre`) in ``gamma_centre``,
    as :func:`earnest.stats.glmm.validate_glmm_input` reads it; unchanged without a ``path``."""
    if not path:
        return df
    return df.assign(**{GAMMA_CENTRE: load_pool_centre(path)})


def read_scored(paths: Iterable[str | Path]) -> list[pd.DataFrame]:
    """Read scored Parquet tables."""
    return [pd.read_parquet(p) for p in paths]


def restrict_variants(df: pd.DataFrame, templates) -> pd.DataFrame:
    """The GLMM input with variant rows (variant 1) only of ``templates`` (GSM-Base rows all kept):
    Ex1 on the templates Ex4 has (analysis ``variants_matched``). Its template set is then GSM-Matched's
    analysis's (every template, through GSM-Base), so both draw the same templates in every resample
    and their variant effects can be paired (:func:`earnest.stats.contrast.paired_contrast`)."""
    keep = set(int(t) for t in templates)
    return df[(df["variant"] == 0) | df["template"].isin(keep)].reset_index(drop=True)
