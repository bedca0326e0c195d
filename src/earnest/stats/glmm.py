"""GLMM 1 and GLMM 2 of section 3.5: the input contract, the model frame and what every engine's
fits share (seeds, shards, the shard and full-data fit records).

GLMM 1:  correct ~ variant + (1 | template)
GLMM 2:  correct ~ variant + gamma_c + (1 | template)      (gamma centred per model x prompt;
                                                           reference mode: over every model of the prompt)

Both are binomial with logit link. The bootstrap resamples templates with replacement; a template
drawn twice becomes two clusters. Resample b of a run with base seed S always uses the seed
:func:`resample_seed` (S, b), so results are identical however the resamples are split into shards.

This module holds the model (input contract, model frame, seeds, shards) and the records the
engines return (:data:`SHARD_COLUMNS`, :class:`WaldFit`); it fits nothing. The engines that fit it,
lme4 (:mod:`earnest.stats.engines.lme4`) and laplace (:mod:`earnest.stats.engines.laplace`), are
one module each behind :class:`earnest.stats.engines.base.Engine`. Shards carry an ``engine``
column naming what fitted each resample (:data:`GLMER_FALLBACK` where lme4's fast path was
refused; :func:`engine_name` maps it back to the engine).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from earnest import fidelity
from earnest.jsonl import read_utf8
from earnest.stats.defaults import COLLINEARITY_THRESHOLD, COVARIATE
from earnest.wording import EFFECTS, GAMMA_C, INTERCEPT, TERMS, VARIANT  # noqa: F401 (EFFECTS re-exported)
from earnest.stats.defaults import PRIOR_EFFECT_SD, PRIOR_INTERCEPT_SD

GLMM_INPUT_COLUMNS = ("model", "prompt", "template", "variant", "correct")
#: Optional GLMM input column: how many answers (epochs: Inspect's ``--epochs``, answering every
#: question again) each row's ``correct`` is the mean of, the same number in every row of a model x
#: prompt. Several epochs of one question are not independent answers: counted as such they shrink
#: the Wald SE (two identical epochs by 1 - 1/sqrt(2), ~29%). The readers average them per question
#: (:func:`earnest.readers.lmeval.to_glmm_input`), so each question weighs one answer and
#: ``correct`` is a proportion in steps of 1/epochs; the fits give such a row the weight of one
#: answer (laplace: the proportion as a binomial count of one trial; lme4: its epochs' counts with
#: prior weight 1/epochs, the same likelihood up to a constant). Two identical epochs then give
#: exactly one epoch's fit.
EPOCHS = "epochs"
#: Optional GLMM input column (GLMM 2, reference mode): the value gamma is centred on, the mean gamma of
#: the authors' pool (every model of the prompt; :func:`earnest.gsm.glmm_input.pool_gamma_centre`).
GAMMA_CENTRE = "gamma_centre"
# TERMS, EFFECTS (earnest.wording): the effects the paper reports; the intercept is kept in the
# shards but never tested
NO_ROWS = "no rows to fit: every item of this model x prompt was excluded"
# converged: no warning and no error at all; messages: every warning; lme4_messages: lme4's own
# convergence-check messages alone (fit@optinfo$conv$lme4$messages), what the paper's code reads.
# Which resamples count as clean is decided by earnest.stats.summary.clean_mask, per fidelity mode.
SHARD_COLUMNS = ("resample", "seed", "term", "estimate", "ranef_var", "converged", "singular",
                 "messages", "lme4_messages", "error")
#: The rows the engine fits, per fidelity mode unless ``stats.rows`` says otherwise: ``answers``,
#: one row per answer as the paper's pymer4 fits (lme4's convergence checks then flag the same
#: resamples as there); ``aggregated``, one binomial row per template x variant [x gamma_c], the
#: same likelihood and several times faster, but lme4's checks flag different resamples.
ROWS = ("answers", "aggregated")
ROWS_BY_FIDELITY = {fidelity.REFERENCE: "answers", fidelity.EARNEST: "aggregated"}
#: How the lme4 engine labels the clusters of a bootstrap resample, per fidelity mode: ``draw``,
#: cluster k is the k-th draw (levels in draw order); ``reference``, as the paper authors' bootstrap
#: does, the string "<template id>_<k>" (k the 0-based draw position), whose factor levels lme4 orders
#: as R sorts strings. The clusters and the model are the same; the order of the random effects'
#: columns, and so lme4's floating-point sums, differ, which can change fits at the edge of lme4's
#: convergence checks (resources/FIDELITY.md, point 8). The laplace engine has no labels.
CLUSTER_LABELS = ("draw", "reference")
CLUSTER_LABELS_BY_FIDELITY = {fidelity.REFERENCE: "reference", fidelity.EARNEST: "draw"}
#: The lme4 engine's name, and what its shards record for a resample its fast path refused
LME4 = "lme4"
GLMER_FALLBACK = f"{LME4} (glmer fallback)"
#: Template ids are handed to R as its integers (32-bit, and -2**31 is R's NA), so they must lie in
#: +-ID_MAX; a larger id would overflow, or (read as a float) merge with its neighbours.
ID_MAX = 2**31 - 1
#: gamma is a sum of log10 of a question's numbers: at most its count of digits (GSM: 0 to about 60).
#: Beyond +-GAMMA_MAX it cannot be such a sum, and its centring and the fit's sums overflow.
GAMMA_MAX = 1e6


class GLMMInputError(ValueError):
    """The GLMM input table is malformed; the message names the file and the column."""


class NotEstimable(GLMMInputError):
    """The fixed effects of one model x prompt's GLMM cannot be estimated from its rows: the
    fixed-effect design is rank deficient (e.g. GLMM 2's covariate equal to, or a linear function
    of, ``variant``; a covariate or ``variant`` constant). ``reason`` is the sentence the summaries
    carry (column ``not_estimable_reason``), e.g. "not estimable: gamma is collinear with variant".

    Raised by :func:`model_frame` (:func:`check_fixed_effects`), so before either engine fits
    anything; :func:`earnest.stats.engines.run_shard` turns it into shard rows whose ``error`` is
    the reason and :func:`earnest.stats.run.summarise_group` into summary rows with that reason, so
    the other model x prompt pairs of a job are fitted and written as usual."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def show_value(value) -> str:
    """repr of a cell without numpy's type wrapper."""
    return repr(value.item() if hasattr(value, "item") else value)


def _row(i: int) -> str:
    return f"data row {i + 1}"


def binary_column(values: pd.Series, col: str, source: str, error=None) -> pd.Series:
    """``values`` as int64 0/1 (booleans too); ``error`` (default GLMMInputError) names the first
    other value and its data row."""
    if pd.api.types.is_bool_dtype(values):
        values = values.astype(int)
    num = pd.to_numeric(values, errors="coerce")
    ok = num.isin([0, 1])
    if not ok.all():
        bad = int(np.flatnonzero(~ok.to_numpy())[0])
        raise (error or GLMMInputError)(f"{source}: column '{col}' must be 0/1, found {show_value(values.iloc[bad])} "
                                        f"in {_row(bad)}")
    return num.astype(np.int64)


def integer_ids(values: pd.Series, col: str, source: str, error=None, *, what: str = "ids") -> pd.Series:
    """``values`` as int64 ids (``what="counts"``: counts); ``error`` (default GLMMInputError) names
    the first value that is not an integer, or not within +-:data:`ID_MAX`, and its data row."""
    num = pd.to_numeric(values, errors="coerce")
    if num.isna().any() or not np.all(np.mod(num.to_numpy(), 1) == 0):
        bad = int(np.flatnonzero(num.isna().to_numpy() | (np.mod(num.fillna(0.5).to_numpy(), 1) != 0))[0])
        raise (error or GLMMInputError)(f"{source}: column '{col}' must hold integer {what}, found "
                                        f"{show_value(values.iloc[bad])} in {_row(bad)}")
    arr = num.to_numpy()
    far = (arr > ID_MAX) | (arr < -ID_MAX)   # uint64 and float compare exactly with these bounds
    if far.any():
        bad = int(np.flatnonzero(far)[0])
        fix = "; renumber them (0, 1, 2, ...)" if what == "ids" else ""
        raise (error or GLMMInputError)(
            f"{source}: column '{col}' holds {show_value(values.iloc[bad])} in {_row(bad)}; {what} must lie within "
            f"+-{ID_MAX} (R's integers: larger ones overflow or merge with their neighbours){fix}")
    return num.astype(np.int64)


def _check_glmm(glmm: int) -> int:
    if glmm not in (1, 2):
        raise ValueError(f"glmm must be 1 or 2, not {glmm!r}")
    return int(glmm)


def read_glmm_input(path: str | Path) -> pd.DataFrame:
    """Read a GLMM input table from CSV or Parquet (by suffix); :func:`read_input_table`."""
    return read_input_table(path, "GLMM input", ",".join(GLMM_INPUT_COLUMNS) + "[,gamma]")


def read_input_table(path: str | Path, what: str, header: str, error: type[Exception] = GLMMInputError) -> pd.DataFrame:
    """An input table (``what``, e.g. "GLMM input", whose header line is ``header``) from CSV or
    Parquet (by suffix). ``error`` (default GLMMInputError) names the file, and the line where there
    is one, for text that is not UTF-8, a row whose number of fields differs from the header's, a
    column named twice, a file that is not Parquet, or a file without header or rows."""
    path = Path(path)
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:   # pyarrow's own errors name no file
            check_unique_columns(list(pq.read_schema(path).names), str(path), error)
            df = pd.read_parquet(path)
        except pa.ArrowException as exc:
            raise error(f"{path}: not a readable Parquet file ({exc})") from None
    elif path.suffix in (".csv", ".txt"):
        df = _read_csv_checked(path, header, error)
    else:
        raise error(f"{path}: {what} must be .csv or .parquet")
    if df.empty:
        raise error(f"{path}: no data rows (columns: {', '.join(map(str, df.columns)) or 'none'})")
    check_unique_columns(list(df.columns), str(path), error)
    return df


def check_unique_columns(columns: list, source: str, error: type[Exception] = GLMMInputError) -> None:
    """``error`` naming the first column name given twice (which one counts would be a guess)."""
    seen: dict = {}
    for i, name in enumerate(columns, 1):
        if name in seen:
            raise error(f"{source}: column {name!r} appears twice (columns {seen[name]} and {i}); keep one")
        seen[name] = i


def _read_csv_checked(path: Path, header_line: str, error: type[Exception]) -> pd.DataFrame:
    """A CSV file as a table; ``error`` naming ``path:line`` for text that is not UTF-8, a row
    whose number of fields differs from the header's, or a file without header or rows."""
    import csv
    import io

    text = read_utf8(path, error=error)
    if not text.strip():
        raise error(f"{path}: empty file; expected a header line ({header_line}) and one line per item")
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
        width = len(header)
        check_unique_columns(header, f"{path}:1", error)   # pandas would rename the second 'x' to 'x.1'

        for row in reader:
            if row and len(row) != width:
                raise error(f"{path}:{reader.line_num}: {len(row)} fields, but the header (line 1) has {width}")
    except csv.Error as exc:
        raise error(f"{path}:{reader.line_num}: {exc}") from None
    return pd.read_csv(io.StringIO(text))


def safe_name(name: str) -> str:
    """A model or prompt name usable as one path component ('org/model' -> 'org__model')."""
    return re.sub(r"[^A-Za-z0-9._+-]", "_", name.replace("/", "__"))


def text_column(values: pd.Series, col: str, source: str, error: type[Exception] = GLMMInputError,
                folder: bool = False) -> pd.Series:
    """``values`` as str; ``error`` naming the first empty cell and its data row (groupby would drop
    such a row, and str() would make NaN a name 'nan'). With ``folder`` (names that become file or
    folder names, :func:`safe_name`), also two names that would share one (``a b`` and ``a_b``: the
    second would reuse the first's shards) and the names '.' and '..'."""
    blank = values.isna().to_numpy() | (values.astype(str).str.strip() == "").to_numpy()
    if blank.any():
        bad = int(np.flatnonzero(blank)[0])
        raise error(f"{source}: column '{col}' is empty in {_row(bad)}")
    out = values.astype(str)
    if folder:
        first: dict[str, str] = {}
        for name in out.unique():
            safe = safe_name(name)
            if safe in (".", ".."):
                raise error(f"{source}: column '{col}' holds {name!r} in {_row(int(np.flatnonzero(out == name)[0]))}; "
                            "it names folders of the results, so it cannot be '.' or '..'")
            if safe in first:
                rows = [_row(int(np.flatnonzero(out == n)[0])) for n in (first[safe], name)]
                raise error(f"{source}: column '{col}' holds {first[safe]!r} ({rows[0]}) and {name!r} ({rows[1]}), "
                            f"which share the folder and file name {safe!r} (characters other than letters, digits, "
                            "'.', '_', '+', '-' become '_'); rename one")
            first[safe] = name
    return out


def validate_glmm_input(df: pd.DataFrame, glmm: int, source: str = "GLMM input", *,
                        fidelity: str = fidelity.DEFAULT) -> pd.DataFrame:
    """Check the columns of the GLMM input contract and return a clean copy.

    Raises :class:`GLMMInputError` naming ``source`` and the offending column when a column is
    missing or named twice, ``correct`` or ``variant`` hold anything but 0/1, ``template`` is not
    integral or beyond +-:data:`ID_MAX`, ``model`` or ``prompt`` is empty, or (GLMM 2) ``gamma`` is
    missing, not finite or beyond +-:data:`GAMMA_MAX`. Booleans are accepted for ``correct``. With
    ``fidelity="reference"`` an empty ``gamma`` is allowed: the reference's gamma of a question
    without digits, a row GLMM 2 leaves out (:func:`model_frame`), as the reference's fits do.

    GLMM 2's centre (:func:`centre_gamma`): in reference mode the authors' pool's, every model of the
    prompt: the input's ``gamma_centre`` column where it has one (the workflow writes the pool's mean
    there; one value per model x prompt), else the mean gamma over all rows of the prompt in this
    input (all its models), put in that column. earnest mode centres per model x prompt and drops
    the column.
    """
    glmm = _check_glmm(glmm)
    needed = list(GLMM_INPUT_COLUMNS) + (["gamma"] if glmm == 2 else [])
    check_unique_columns(list(df.columns), source)
    for col in needed:
        if col not in df.columns:
            raise GLMMInputError(f"{source}: missing column '{col}' (GLMM {glmm} needs {', '.join(needed)})")
    out = df[needed + ([EPOCHS] if EPOCHS in df.columns else [])].copy()
    for col in ("correct", "variant"):
        vals = out[col]
        if vals.isna().any():
            bad = int(np.flatnonzero(vals.isna().to_numpy())[0])
            raise GLMMInputError(f"{source}: column '{col}' is empty in {_row(bad)}")
        if col == "correct" and EPOCHS in out.columns:
            continue
        out[col] = binary_column(vals, col, source)
    if EPOCHS in out.columns:
        out[EPOCHS], out["correct"] = _epoch_columns(out, source)
    out["template"] = integer_ids(out["template"], "template", source)
    if glmm == 2:
        g = pd.to_numeric(out["gamma"], errors="coerce")
        wrong = ~np.isfinite(g.to_numpy(dtype=float))
        if fidelity == "reference":
            wrong &= ~out["gamma"].isna().to_numpy()
        if wrong.any():
            bad = int(np.flatnonzero(wrong)[0])
            raise GLMMInputError(f"{source}: column 'gamma' must be a finite number, found "
                                 f"{show_value(out['gamma'].iloc[bad])} in {_row(bad)}")
        far = np.abs(g.to_numpy(dtype=float)) > GAMMA_MAX
        if far.any():
            bad = int(np.flatnonzero(far)[0])
            raise GLMMInputError(f"{source}: column 'gamma' holds {show_value(out['gamma'].iloc[bad])} in {_row(bad)}; "
                                 f"gamma, a sum of log10 of a question's numbers (at most its number of digits), "
                                 f"must lie within +-{GAMMA_MAX:g}")
        out["gamma"] = g.astype(float)
        if fidelity == "reference":
            out[GAMMA_CENTRE] = _pool_centres(df, out, source)
    for col in ("model", "prompt"):
        out[col] = text_column(out[col], col, source, folder=True)
    return out.reset_index(drop=True)


def average_repeats(rows: pd.DataFrame, key: list[str], *, what: str = "epochs", where=None, fix: str = "",
                    error=None) -> tuple[pd.DataFrame, bool]:
    """(rows, whether any were averaged): the one rule for a question answered more than once (Inspect's
    epochs, a model's ``decoding.samples``). Where a question (``key``: model, prompt, ..., item) has several
    rows, one row of it whose ``correct`` is their mean and :data:`EPOCHS` their number: repeated answers to
    one question are not independent, and as rows of their own they would shrink the GLMM's Wald SE and
    weigh a question by its repeats. Every question of a model x prompt must have the same number (``error``,
    GLMMInputError by default, naming two that differ, ``where(row)`` saying which, ``fix`` the way out)."""
    error = error or GLMMInputError
    where = where or (lambda r: f"item {r[key[-1]]!r}")
    n = rows.groupby(key, sort=False)["correct"].transform("size")
    if (n <= 1).all():
        return rows, False
    for (model, prompt), sub in rows.assign(_n=n).groupby(["model", "prompt"], sort=True):
        counts = sub.drop_duplicates(key)
        if counts["_n"].nunique() > 1:
            lo, hi = counts.sort_values("_n").iloc[0], counts.sort_values("_n").iloc[-1]
            raise error(f"model {model!r}, prompt {prompt!r}: unbalanced {what}: {where(lo)} has {lo['_n']} answers, "
                        f"{where(hi)} {hi['_n']}; the GLMM averages each question's {what} and needs the same number "
                        f"for every question{fix}")
    first = rows.drop_duplicates(key).set_index(key)
    mean = rows.groupby(key, sort=False)["correct"].mean()
    first["correct"] = mean.reindex(first.index).to_numpy()
    first[EPOCHS] = rows.groupby(key, sort=False)["correct"].size().reindex(first.index).to_numpy()
    return first.reset_index()[list(rows.columns) + [EPOCHS]], True


def _epoch_columns(out: pd.DataFrame, source: str) -> tuple[pd.Series, pd.Series]:
    """The validated ``epochs`` (integers >= 1, one value per model x prompt) and ``correct`` (a
    mean of that many 0/1 answers: a multiple of 1/epochs in [0, 1]) of GLMM input with
    :data:`EPOCHS`; GLMMInputError naming the column and data row otherwise."""
    epochs = integer_ids(out[EPOCHS], EPOCHS, source, what="counts")
    if (epochs < 1).any():
        bad = int(np.flatnonzero((epochs < 1).to_numpy())[0])
        raise GLMMInputError(f"{source}: column '{EPOCHS}' must be at least 1, found {show_value(out[EPOCHS].iloc[bad])} "
                             f"in {_row(bad)}")
    per = pd.DataFrame({"m": out["model"].astype(str), "p": out["prompt"].astype(str), "e": epochs})
    n = per.groupby(["m", "p"])["e"].nunique()
    if (n > 1).any():
        m, pr = n[n > 1].index[0]
        seen = sorted(per.loc[(per["m"] == m) & (per["p"] == pr), "e"].unique().tolist())
        raise GLMMInputError(f"{source}: column '{EPOCHS}' holds {', '.join(map(str, seen))} for model {m!r}, prompt "
                             f"{pr!r}: unbalanced epochs (questions answered a different number of times); every "
                             "question of a fit must be the mean of the same number of answers (read one epoch, or "
                             "the epochs every question has)")
    c = pd.to_numeric(out["correct"], errors="coerce")
    k = c.to_numpy(float) * epochs.to_numpy(float)
    bad = ~np.isfinite(k) | (c.to_numpy(float) < 0) | (c.to_numpy(float) > 1) | (np.abs(k - np.rint(k)) > 1e-6)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise GLMMInputError(f"{source}: column 'correct' must be the share of {int(epochs.iloc[i])} epochs' 0/1 answers "
                             f"(0, 1/{int(epochs.iloc[i])}, ..., 1; column '{EPOCHS}'), found "
                             f"{show_value(out['correct'].iloc[i])} in {_row(i)}")
    exact = np.rint(k) / epochs.to_numpy(float)
    if (epochs == 1).all():
        return epochs, pd.Series(exact.astype(np.int64), index=out.index)
    return epochs, pd.Series(exact, index=out.index)


def _pool_centres(raw: pd.DataFrame, out: pd.DataFrame, source: str) -> pd.Series:
    """Reference mode's centre of gamma for each row (validate_glmm_input): the input's own
    ``gamma_centre`` (finite, one value per model x prompt), else the mean gamma over every row of the
    row's prompt (pandas' mean: rows without gamma skipped), as the authors' pool of all models."""
    if GAMMA_CENTRE in raw.columns:
        c = pd.to_numeric(raw[GAMMA_CENTRE], errors="coerce").astype(float).reset_index(drop=True)
        known = out["gamma"].notna().to_numpy()
        bad = known & ~np.isfinite(c.to_numpy())
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise GLMMInputError(f"{source}: column '{GAMMA_CENTRE}' must be a finite number, found "
                                 f"{show_value(raw[GAMMA_CENTRE].iloc[i])} in {_row(i)}")
        per = pd.DataFrame({"m": out["model"].astype(str).to_numpy(), "p": out["prompt"].astype(str).to_numpy(),
                            "c": c.to_numpy()}).groupby(["m", "p"])["c"].nunique(dropna=True)
        if (per > 1).any():
            m, pr = per[per > 1].index[0]
            raise GLMMInputError(f"{source}: column '{GAMMA_CENTRE}' holds more than one value for model {m!r}, "
                                 f"prompt {pr!r}; it is the one value gamma is centred on")
        return c
    prompts = out["prompt"].astype(str)
    return out["gamma"].groupby(prompts.to_numpy()).transform("mean").astype(float)


def check_estimable(df: pd.DataFrame, source: str = "GLMM input") -> None:
    """Refuse data whose variant effect cannot be estimated, before any fit: per model x prompt,
    both values of ``variant`` and at least two templates are needed (GLMMInputError with the reason).

    ``earnest glmm`` applies it to its input; the workflow refuses such data in its config
    (:func:`earnest.config.check_config`) and keeps its own handling of model x prompt pairs whose
    items were excluded by an analysis."""
    for (model, prompt), g in df.groupby(["model", "prompt"], sort=False):
        where = f"{source}: model {model!r}, prompt {prompt!r}"
        levels = sorted(g["variant"].unique().tolist())
        if len(levels) < 2:
            raise GLMMInputError(
                f"{where}: column 'variant' is {levels[0]} in every row; the variant effect compares "
                "GSM-Base (variant 0) with GSM-Variants (variant 1), so both are needed")
        templates = g["template"].unique()
        if len(templates) < 2:
            raise GLMMInputError(
                f"{where}: every row is template {templates[0]}; the GLMMs' random intercept per template "
                "and the bootstrap over templates need at least 2 templates")


def unpaired_templates(df: pd.DataFrame) -> list[dict]:
    """Per model x prompt whose templates are not all paired: the templates with GSM-Base rows
    (variant 0) but no GSM-Variants rows, and the reverse. Such a template says nothing about the
    variant effect except through its intercept (a run cut short, ``lm_eval --limit``: base
    documents of some templates, variants of others): the fit runs, but on fewer templates than the
    data seem to hold, and a reader must be told. [] where every template has both."""
    out = []
    for (model, prompt), g in df.groupby(["model", "prompt"], sort=True):
        base = set(g.loc[g["variant"] == 0, "template"].tolist())
        var = set(g.loc[g["variant"] == 1, "template"].tolist())
        if base != var:
            out.append({"model": str(model), "prompt": str(prompt), "base_only": sorted(base - var),
                        "variants_only": sorted(var - base), "paired": len(base & var)})
    return out


def unpaired_note(df: pd.DataFrame) -> str:
    """The sentence a warning and the tables' captions give for :func:`unpaired_templates` ('' if none)."""
    parts = []
    for u in unpaired_templates(df):
        sides = []
        for key, what in (("base_only", "GSM-Base but no GSM-Variants"), ("variants_only", "GSM-Variants but no GSM-Base")):
            if u[key]:
                shown = ", ".join(map(str, u[key][:8])) + (", ..." if len(u[key]) > 8 else "")
                sides.append(f"{len(u[key])} with {what} ({shown})")
        parts.append(f"model {u['model']}, prompt {u['prompt']}: {u['paired']} templates paired, " + "; ".join(sides))
    if not parts:
        return ""
    return ("Templates not paired (their rows inform only their own intercept, not the variant effect; a run cut "
            "short or sampled, e.g. lm_eval --limit?): " + " | ".join(parts) + ".")


def groups(df: pd.DataFrame):
    """(model, prompt, rows) for every model x prompt in a GLMM input, in sorted order."""
    for (model, prompt), sub in df.groupby(["model", "prompt"], sort=True):
        yield str(model), str(prompt), sub.reset_index(drop=True)


def _single_group(df: pd.DataFrame) -> None:
    pairs = df[["model", "prompt"]].drop_duplicates()
    if len(pairs) != 1:
        raise GLMMInputError(f"expected the rows of one model x prompt, found {len(pairs)} combinations")


def centre_gamma(df: pd.DataFrame) -> pd.Series:
    """gamma_c, the covariate of GLMM 2: gamma minus its mean over the rows of one model x prompt
    (GSM-Base and GSM-Variants together; in the reasoning-only analysis, the rows it keeps), or,
    where the rows carry a ``gamma_centre`` (reference mode's validated input: the authors' pool,
    every model of the prompt), minus that. Rows without gamma (reference fidelity: a question
    without digits) are not counted and stay without.

    The one place gamma is centred: :func:`model_frame` (the rows the R engine fits) calls it, and
    no table upstream stores a centred gamma. In exact arithmetic the centre moves only the
    intercept; lme4's fits are not exact (its optimiser stops at a tolerance, its convergence checks
    are thresholds), so another centre moves the estimates of variant and gamma_c a little (up to
    8e-5 log-odds measured between the two centres) and may move a fit across a check: reference
    mode takes the authors' centre."""
    g = df["gamma"].astype(float)
    if GAMMA_CENTRE in df.columns and len(df):
        centre = df[GAMMA_CENTRE].astype(float).dropna().unique()
        if len(centre) > 1:
            raise GLMMInputError(f"column '{GAMMA_CENTRE}' holds {len(centre)} values for one model x prompt")
        if len(centre):
            return g - float(centre[0])
    return g - float(g.mean())


#: the prefix of every :class:`NotEstimable` reason
NOT_ESTIMABLE = "not estimable"
#: lme4's tolerance for a rank-deficient fixed-effect matrix (glmerControl's check.rankX, qr's tol 1e-7)
RANK_TOL = 1e-7


def _design_columns(df: pd.DataFrame, glmm: int) -> tuple[np.ndarray, list[str], np.ndarray]:
    """(X with the intercept first, the columns' names, the answers each row stands for) of the
    rows GLMM ``glmm`` fits (GLMM 2: rows with gamma), from GLMM input or a model frame."""
    if glmm == 2 and "gamma" in df.columns:
        df = df[df["gamma"].notna()]
    cols = [np.ones(len(df)), df["variant"].to_numpy(float)]
    names = [INTERCEPT, VARIANT]
    if glmm == 2:
        g = df[GAMMA_C] if GAMMA_C in df.columns else df["gamma"]
        cols.append(g.to_numpy(float))
        names.append(GAMMA_C)
    if "succ" in df.columns:
        n = (df["succ"].to_numpy(float) + df["fail"].to_numpy(float))
    else:
        n = np.ones(len(df))
    return np.column_stack(cols), names, n


def _rank_problem(X: np.ndarray, names: list[str], covariate: str) -> str:
    """'' when the columns of X (intercept, variant[, gamma_c]) have full rank, else why not: which
    column is a linear function of the ones before it (lme4 drops that column and its coefficient
    has no estimate)."""
    shown = {INTERCEPT: "the intercept", VARIANT: "variant", GAMMA_C: str(covariate)}
    if X.shape[0] == 0:
        return ""
    for k in range(1, X.shape[1]):
        before, col = X[:, :k], X[:, k]
        coef, *_ = np.linalg.lstsq(before, col, rcond=None)
        resid = col - before @ coef
        # relative to the column's size; a column whose every value is below ~1e-6 (e.g. a constant
        # centred to rounding noise) counts as zero
        scale = max(float(np.linalg.norm(col)), 1e-6 * np.sqrt(len(col)))
        if float(np.linalg.norm(resid)) <= RANK_TOL * scale:
            who = shown[names[k]]
            if k == 1 or np.allclose(coef[1:], 0.0, atol=RANK_TOL * (1 + np.abs(coef[0]))):
                value = col[0]
                return (f"{NOT_ESTIMABLE}: {who} is constant ({value:g} in every row the GLMM fits), so it is collinear "
                        "with the intercept")
            return f"{NOT_ESTIMABLE}: {who} is collinear with variant"
    return ""


def check_fixed_effects(df: pd.DataFrame, glmm: int, *, covariate: str = COVARIATE) -> None:
    """Raise :class:`NotEstimable` when the fixed-effect design of one model x prompt's GLMM
    ``glmm`` (intercept, variant[, GLMM 2's covariate]) on the rows it fits is rank deficient, with
    the reason naming the columns (``covariate``: what GLMM 2's ``gamma`` column holds, for the
    message). Checked by :func:`model_frame`, so once before either engine runs; lme4 would drop the
    column ("fixed-effect model matrix is rank deficient") and the laplace engine report no fit."""
    glmm = _check_glmm(glmm)
    X, names, _ = _design_columns(df, glmm)
    reason = _rank_problem(X, names, covariate)
    if reason:
        raise NotEstimable(reason)


def covariate_correlation(df: pd.DataFrame) -> float:
    """The Pearson correlation of GLMM 2's covariate (``gamma``) with ``variant`` over the answers
    GLMM 2 fits (GLMM input: one row per answer; rows without gamma left out); NaN where either is
    constant or there are fewer than 2 rows."""
    d = df[df["gamma"].notna()]
    g, v = d["gamma"].to_numpy(float), d["variant"].to_numpy(float)
    if len(d) < 2 or np.ptp(g) == 0 or np.ptp(v) == 0:
        return float("nan")
    return float(np.corrcoef(g, v)[0, 1])


def collinearity_warning(df: pd.DataFrame, glmm: int, *, threshold: float = COLLINEARITY_THRESHOLD,
                         covariate: str = COVARIATE) -> tuple[str, float]:
    """(warning, correlation) of GLMM ``glmm`` on one model x prompt's GLMM input: for GLMM 2, the
    covariate's correlation with ``variant`` (:func:`covariate_correlation`) and, where its absolute
    value exceeds ``threshold`` (``stats.collinearity_threshold``) but the design is still of full
    rank, a sentence naming it ('' otherwise, and always for GLMM 1: correlation NaN)."""
    if _check_glmm(glmm) != 2 or len(df) == 0:
        return "", float("nan")
    r = covariate_correlation(df)
    if np.isfinite(r) and abs(r) > float(threshold) and abs(r) < 1 - 1e-12:
        return (f"{covariate} is nearly collinear with variant (correlation {r:.3f} over the answers, beyond "
                f"stats.collinearity_threshold {float(threshold):g}): the variant and {covariate} effects are hard to "
                f"tell apart, their estimates and intervals unstable"), r
    return "", r


def model_frame(df: pd.DataFrame, glmm: int, aggregate: bool = True) -> pd.DataFrame:
    """The rows the R engine fits, for one model x prompt.

    Columns template, variant, succ, fail (and gamma_c for GLMM 2; and ``epochs`` where the input's
    rows are per-question means over more than one epoch, :data:`EPOCHS`: then succ and fail are sums
    of those means, each question weighing one answer). With ``aggregate``, answers
    sharing (template, variant[, gamma_c]) collapse into one binomial row; the likelihood is the
    same up to a constant, so estimates and diagnostics agree with the row-level fit. Without it,
    each answer is one row (succ + fail = 1). GLMM 2 leaves out rows without gamma (only reference
    mode has them: a question without digits), as lme4's default na.action drops them from the
    reference's fits; gamma is centred over the rows it keeps.

    A rank-deficient fixed-effect design (e.g. gamma collinear with variant) is refused here, before
    any engine sees the rows: :class:`NotEstimable` with the reason (:func:`check_fixed_effects`).
    """
    glmm = _check_glmm(glmm)
    _single_group(df)
    check_fixed_effects(df, glmm)
    if glmm == 2:
        df = df[df["gamma"].notna()]
    correct = df["correct"]
    if not np.all(np.mod(correct.to_numpy(float), 1) == 0):   # per-question means over epochs (EPOCHS)
        correct = correct.astype(float)
    else:
        correct = correct.astype(np.int64)
    d = pd.DataFrame({"template": df["template"].astype(np.int64), "variant": df["variant"].astype(np.int64),
                      "succ": correct})
    d["fail"] = 1 - d["succ"]
    keys = ["template", "variant"]
    if glmm == 2:
        d[GAMMA_C] = centre_gamma(df).astype(float).to_numpy()
        keys.append(GAMMA_C)
    if aggregate:
        d = d.groupby(keys, sort=True, as_index=False)[["succ", "fail"]].sum()
    cols = keys + ["succ", "fail"]
    d = d[cols].reset_index(drop=True)
    epochs = int(df[EPOCHS].iloc[0]) if EPOCHS in df.columns and len(df) else 1
    if epochs > 1:                      # rows are per-question means over epochs (EPOCHS)
        d[EPOCHS] = epochs
    return d


def cluster_labels(fidelity_mode: str = fidelity.DEFAULT) -> str:
    """The cluster labels of the lme4 engine's resamples in ``fidelity_mode`` (:data:`CLUSTER_LABELS_BY_FIDELITY`)."""
    return CLUSTER_LABELS_BY_FIDELITY[fidelity.check_mode(fidelity_mode)]


def _check_labels(labels: str) -> str:
    if labels not in CLUSTER_LABELS:
        raise ValueError(f"cluster labels {labels!r}: use one of {', '.join(CLUSTER_LABELS)}")
    return labels


@dataclass(frozen=True)
class Prior:
    """Earnest mode's weakly informative normal prior on the fixed effects: N(0, intercept_sd^2) on the
    intercept and on every other *level* term (a language's shift of the GSM-Base log odds in the
    cross-lingual model, :func:`is_level_term`), N(0, effect_sd^2) on every effect (variant, gamma, a
    language x variant interaction), independent. Its -2 log density adds sum_j (beta_j / sd_j)^2 to the
    Laplace deviance, so the fit stays finite where the data separate (no wrong GSM-Base answer at the
    accuracy ceiling) and barely moves elsewhere (an estimate with SE 0.1 moves by ~0.2% of itself). The
    effects' prior alone keeps every fit finite; a level term gets the intercept's because shrinking a
    language's baseline towards the reference's would bias the interaction it is there to leave free
    (a language at 98% against one at 62%: +0.15 log-odds on average, benchmarks/README.md). The same
    penalty in both engines: laplace adds it to its deviance, lme4 fits
    ``blme::bglmer(fixef.prior = normal(cov = diag(sd^2)), cov.prior = NULL)`` (the random-intercept
    variance stays unpenalised, as in glmer)."""
    intercept_sd: float = PRIOR_INTERCEPT_SD
    effect_sd: float = PRIOR_EFFECT_SD

    def sd(self, terms) -> list[float]:
        """The prior's standard deviation of each fixed effect of ``terms`` (names, in design order;
        or a number of columns, the intercept first and effects after it)."""
        if isinstance(terms, (int, np.integer)):
            terms = [INTERCEPT] + [VARIANT] * (int(terms) - 1)
        return [float(self.intercept_sd if is_level_term(t) else self.effect_sd) for t in terms]

    def label(self) -> str:
        return f"normal prior, sd {self.intercept_sd:g} (intercept) / {self.effect_sd:g} (effects)"


#: how the cross-lingual model names a language's main effect (earnest.stats.crosslingual.language_term)
LANGUAGE_TERM = "language[{}]"


def is_level_term(term: str) -> bool:
    """A fixed effect that sets a baseline rather than measuring an effect: the intercept and a
    language's main effect (:data:`LANGUAGE_TERM`); :class:`Prior` gives them the intercept's sd."""
    return term == INTERCEPT or (str(term).startswith("language[") and str(term).endswith("]"))


def prior_for(fidelity_mode: str = fidelity.DEFAULT, prior: Prior | dict | None = None) -> Prior | None:
    """The prior of the fits in ``fidelity_mode``: the one place this is decided. ``reference``: None
    (the paper's unpenalised glmer, the authors' procedure); ``earnest``: ``prior`` (a :class:`Prior`,
    or a mapping of config stats.prior) or the default :class:`Prior`."""
    if fidelity.check_mode(fidelity_mode) == fidelity.REFERENCE:
        return None
    if isinstance(prior, Prior):
        return prior
    return Prior(**dict(prior or {}))


def resample_seed(base_seed: int, resample: int) -> int:
    """The R seed of bootstrap resample ``resample``: a function of the base seed and the index only."""
    ss = np.random.SeedSequence(entropy=int(base_seed), spawn_key=(int(resample),))
    return int(ss.generate_state(1, dtype=np.uint32)[0] & 0x7FFFFFFF)


def engine_name(fitted_by: str) -> str:
    """The engine that a shard's ``engine`` entry names (:data:`GLMER_FALLBACK` is lme4's)."""
    return LME4 if fitted_by == GLMER_FALLBACK else fitted_by


def shard_resamples(n_resamples: int, shard: int, n_shards: int) -> np.ndarray:
    """Resample indices of shard ``shard`` of ``n_shards``: contiguous, near-equal slices of 0..B-1."""
    if n_shards < 1 or not 0 <= shard < n_shards:
        raise ValueError(f"shard {shard} of {n_shards} does not exist")
    if n_resamples < 1:
        raise ValueError(f"number of resamples must be positive, not {n_resamples}")
    return np.array_split(np.arange(n_resamples), n_shards)[shard]


@dataclass
class WaldFit:
    """One full-data fit: Wald statistics per term and lme4's diagnostics."""
    glmm: int
    coefs: pd.DataFrame          # term, estimate, se, z, p
    converged: bool
    messages: list[str]
    error: str
    lme4_messages: list[str]     # lme4's own convergence-check messages (a subset of messages)
    ranef_var: float
    singular: bool | None
    max_grad: float
    tol: float

    @property
    def diagnostics(self) -> str:
        """The convergence message in the paper's form (Tables 17-18), or '' if converged."""
        for m in self.messages:
            i = m.find("max|grad|")
            if i >= 0:
                return m[i:]
        return "; ".join(self.messages) if self.messages else self.error
