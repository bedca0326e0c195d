"""The bootstrap summaries table: the one contract downstream of the statistics.

One row per analysis x GLMM x model x prompt x term, built by :func:`build_summaries` from the
per-group summaries of :func:`earnest.stats.summary.summarise` (``results/stats/<analysis>/glmm<g>/
<model>/<prompt>/summary.parquet``) and written by the workflow's rule ``summaries`` to
``results/stats/summaries.parquet`` (the Ex1 rows alone, for the Ex1 -> Ex2 checkpoint, to
``results/stats/ex1/summaries.parquet`` by the rule ``ex1_summaries``). The statistics tables, the
figures, the comparison with the published numbers and the Ex2 checkpoint read only this table;
nothing downstream recomputes a P value, a correction or a verdict.

The decisions made here, once:

* ``degenerate``: the fit's verdict (:func:`earnest.stats.diagnostics.fit_problems`) is
  "degenerate": no correct or no wrong answers, complete separation on the variant indicator, no
  clean resample, or a median or interval end beyond +-10 log-odds (built from diverging estimates
  of separated resamples, whichever engine and rule made it). Its estimate, interval and P value
  carry no information.
* ``n_clean_reference``, ``n_clean_earnest`` (from :func:`earnest.stats.summary.summarise`): the
  clean resamples under each rule, whichever rule ``n_clean`` follows; ``n_not_converged``: the
  resamples whose optimiser did not converge, clean under no rule.
* ``significant_uncorrected``: the uncorrected bootstrap P value is below ``alpha`` and the fit
  is not degenerate (the paper's bold P values and hatching, and the Ex1 -> Ex2 rule of section 3.6).
* ``significant_holm``: the same with the Holm-Bonferroni P value, in the published tables'
  families (:data:`earnest.stats.summary.HOLM_FAMILY`: GLMM 1 across the models of a prompt,
  GLMM 2 across the prompts of a model, per analysis and term); a fit without a P value counts in
  its family's size in reference mode and not in earnest mode (:func:`earnest.stats.summary.holm`),
  the mode being the rows' ``fidelity`` (one mode per table).
* ``wald_significant``: the full-data Wald P value below ``alpha``, not degenerate;
  ``wald_mismatch``: the bootstrap and Wald calls differ (the paper's double dagger, Table 16).
* ``prompt_label``: the prompt format's ``paper_name`` in ``formats.yaml`` (its name when empty).
* ``ex2``: the model went on to Ex2 (the config's ``experiments.ex2_models``, else the checkpoint's
  decision by :func:`ex2_selection`); Figures 2-3 show these models.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from earnest.stats.diagnostics import diverged_statement, fit_problems
from earnest import fidelity as F
from earnest.stats.summary import ALPHA, HOLM_FAMILY, not_estimable_reason
from earnest.stats.verdict import NOT_ESTIMABLE, VERDICT_COLUMNS, bounded_p, decide, wald_significant

#: Columns added to the per-group summary columns.
DECISION_COLUMNS = ("prompt_label", "ex2", "alpha", "p_value", "p_source", "not_estimable_reason", "p_holm", "holm_m",
                    "verdict", "verdict_reason", "unresolved", "resolving_resamples",
                    "fit_verdict", "fit_problems", "degenerate",
                    "significant_uncorrected", "significant_holm", "wald_significant", "wald_mismatch")
#: Columns every reader of the table may rely on (the per-group columns readers use, and the decisions).
SUMMARIES_COLUMNS = ("analysis", "glmm", "model", "prompt", "term", "n_resamples", "n_clean", "n_errors",
                     "n_singular", "median_log_or", "odds_ratio", "ci_low_log", "ci_high_log", "ci_low", "ci_high",
                     "p_boot", "ranef_var_mean", "ranef_var_sd", "acc_base", "acc_variants", "delta_var", "n_base",
                     "n_variants", "wald_estimate", "wald_se", "wald_p", "wald_converged", "wald_singular",
                     "wald_max_grad", "wald_tol", "wald_messages") + DECISION_COLUMNS

KEY = ["analysis", "glmm", "model", "prompt", "term"]


class SummariesError(ValueError):
    """The summaries table (or a per-group summary) is malformed; the message names the file."""


def build_summaries(rows: pd.DataFrame, prompt_labels: Mapping[str, str] | None = None, *,
                    alpha: float = ALPHA, ex2_models: Sequence[str] = (),
                    source: str = "summaries") -> pd.DataFrame:
    """The summaries table from concatenated per-group summary rows (any analyses, GLMMs, models,
    prompts). ``prompt_labels``: prompt -> label (formats.yaml ``paper_name``); prompts without one
    are labelled by their name. ``ex2_models``: the models that went on to Ex2. Raises :class:`SummariesError` naming ``source`` when a column is
    missing or a row appears twice."""
    missing = [c for c in SUMMARIES_COLUMNS if c not in DECISION_COLUMNS and c not in rows.columns]
    if missing:
        raise SummariesError(f"{source}: missing column(s) {', '.join(missing)}")
    s = rows.copy()
    for c in ("analysis", "model", "prompt", "term"):
        s[c] = s[c].astype(str)
    s["glmm"] = s["glmm"].astype(int)
    dup = s.duplicated(KEY)
    if dup.any():
        r = s.loc[dup].iloc[0]
        raise SummariesError(f"{source}: more than one row for analysis {r['analysis']}, GLMM {r['glmm']}, "
                             f"model {r['model']}, prompt {r['prompt']}, term {r['term']}")
    labels = dict(prompt_labels or {})
    s["prompt_label"] = [labels.get(p) or p for p in s["prompt"]]
    s["ex2"] = s["model"].isin([str(m) for m in ex2_models])
    s["alpha"] = float(alpha)
    mode = table_fidelity(s, source)
    s = _with_p_columns(s, mode)
    # the verdict, decided once (earnest.stats.verdict.decide) within the published tables' Holm families
    for c in VERDICT_COLUMNS:
        s[c] = None
    for glmm, keys in HOLM_FAMILY.items():
        part = s[s["glmm"].astype(int) == glmm]
        if len(part):
            decided = decide(part, list(keys), alpha=alpha, fidelity=mode)
            for c in VERDICT_COLUMNS:
                s.loc[part.index, c] = decided[c].to_numpy()
    problems = [fit_problems(r) for _, r in s.iterrows()]
    s["fit_verdict"] = [v for v, _ in problems]
    s["fit_problems"] = ["; ".join(st) for _, st in problems]
    s["degenerate"] = s["verdict"] == NOT_ESTIMABLE
    for c in ("significant_uncorrected", "significant_holm", "unresolved"):
        s[c] = s[c].astype(bool)
    s["p_holm"] = s["p_holm"].astype(float)
    s["wald_significant"] = wald_significant(s["wald_p"], s["degenerate"], alpha)
    both = s["p_value"].notna() & s["wald_p"].notna()
    s["wald_mismatch"] = both & (s["significant_uncorrected"] != s["wald_significant"])
    extra = [c for c in s.columns if c not in SUMMARIES_COLUMNS]
    return s[list(SUMMARIES_COLUMNS) + extra].reset_index(drop=True)


def _with_p_columns(s: pd.DataFrame, mode: str) -> pd.DataFrame:
    """Per-group summaries written before the verdict's columns existed (p_value, not_estimable_reason):
    the same columns from their P value and interval, unpenalised (:func:`earnest.stats.verdict.fit_p`
    needs the estimates; here the bootstrap P and its bound stand)."""
    s = s.copy()
    if "p_value" not in s.columns:
        bound = s["p_bound"].astype(float) if "p_bound" in s.columns else pd.Series(float("nan"), index=s.index)
        ps = [bounded_p(p, b, mode) for p, b in zip(s["p_boot"].astype(float), bound)]
        s["p_value"] = [p for p, _ in ps]
        s["p_source"] = [src for _, src in ps]
    if "not_estimable_reason" not in s.columns:
        s["not_estimable_reason"] = ""
    # from the rows' own counts too (rows of an older summary, or of another writer)
    s["not_estimable_reason"] = [
        str(r or "") or not_estimable_reason({"n_base": nb, "n_variants": nv, "acc_base": ab, "acc_variants": av})
        for r, nb, nv, ab, av in zip(s["not_estimable_reason"].fillna(""), s["n_base"], s["n_variants"],
                                     s["acc_base"], s["acc_variants"])]
    if "p_bound" not in s.columns:
        s["p_bound"] = float("nan")
    if mode != F.REFERENCE:
        # earnest mode on unpenalised fits (shards without a prior: written before it, or by another
        # tool): estimates beyond +-10 are fits of separated resamples running off to infinity, which
        # say nothing; the penalised fits earnest makes now never do (the reference reports them as its
        # procedure does: a note, fit_problems, not a verdict)
        prior = s["prior"].fillna("").astype(str) if "prior" in s.columns else pd.Series("", index=s.index)
        for i in s.index[(prior == "") & (s["not_estimable_reason"] == "")]:
            r = s.loc[i]
            built = r.get("diverged")
            why = diverged_statement(r.get("median_log_or"), r.get("ci_low_log"), r.get("ci_high_log"),
                                     built_from=bool(built) if built is not None and not pd.isna(built) else False,
                                     n_diverged=r.get("n_diverged"))
            if why:
                s.loc[i, "not_estimable_reason"] = why
    return s


def table_fidelity(rows: pd.DataFrame, source: str = "summaries") -> str:
    """The fidelity mode of summary rows (their ``fidelity`` column, written by
    :func:`earnest.stats.summary.summarise`; the default mode for rows without one). A table holds
    one mode: rows of both raise :class:`SummariesError` naming ``source``."""
    if "fidelity" not in rows.columns:
        return F.DEFAULT
    modes = sorted(set(rows["fidelity"].dropna().astype(str)))
    if len(modes) > 1:
        raise SummariesError(f"{source}: rows of more than one fidelity mode ({', '.join(modes)}); "
                             f"a summaries table holds one mode (the sensitivity run keeps the other apart)")
    if not modes:
        return F.DEFAULT
    try:
        return F.check_mode(modes[0], f"{source}: column 'fidelity'")
    except ValueError as exc:
        raise SummariesError(str(exc)) from None


#: The fields of one fit in the JSON summary (:func:`summary_records`), in order.
JSON_FIELDS = ("analysis", "glmm", "model", "prompt", "prompt_label", "effect", "odds_ratio", "ci_low", "ci_high",
               "median_log_or", "p_boot", "p_lr", "p_value", "p_source", "p_holm", "alpha", "verdict",
               "verdict_reason", "significant_uncorrected", "significant_holm", "ci_low_unbounded", "ci_high_unbounded",
               "prior", "fit_verdict", "fit_problems", "engine", "n_resamples", "n_clean", "n_base", "n_variants",
               "acc_base", "acc_variants")


def verdict(row) -> str:
    """The call of one summary row in words (:data:`earnest.stats.verdict.VERDICTS`), as the table's
    ``verdict`` column holds it (decided by :func:`earnest.stats.verdict.decide`)."""
    return str(row["verdict"])


def summary_records(table: pd.DataFrame) -> list[dict]:
    """One JSON-ready object per fit (analysis x GLMM x model x prompt x effect) of the summaries
    table, fields :data:`JSON_FIELDS` (``effect`` is the term; numbers that are not finite, such
    as a separated fit's odds ratio, are null)."""
    import math

    def clean(v):
        if hasattr(v, "item"):
            v = v.item()
        if isinstance(v, float) and not math.isfinite(v):
            return None
        return v

    out = []
    for _, r in table.iterrows():
        rec = {}
        for f in JSON_FIELDS:
            if f == "effect":
                rec[f] = str(r["term"])
            elif f == "verdict":
                rec[f] = verdict(r)
            elif f in r.index:
                rec[f] = clean(r[f])
        out.append(rec)
    return out


def write_summary_json(table: pd.DataFrame, path: str | Path) -> Path:
    """:func:`summary_records` as a JSON array at ``path`` (strict JSON: no NaN or Infinity)."""
    import json
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summary_records(table), indent=1, allow_nan=False, ensure_ascii=False) + "\n",
                    encoding="utf-8")
    return path


def read_summary_files(paths: Sequence[str | Path]) -> pd.DataFrame:
    """Concatenate per-group summary Parquet files (empty ones are skipped)."""
    frames = [pd.read_parquet(p) for p in paths]
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(SUMMARIES_COLUMNS))


def write_summaries(table: pd.DataFrame, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_parquet(path, index=False)
    return path


def read_summaries(path: str | Path) -> pd.DataFrame:
    """Read the summaries table and check it has every contract column (error names the file)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: summaries table not found")
    table = pd.read_parquet(path)
    missing = [c for c in SUMMARIES_COLUMNS if c not in table.columns]
    if missing:
        raise SummariesError(f"{path}: missing column(s) {', '.join(missing)} "
                             f"(written by an older version? rerun the rule summaries)")
    return table


def select(table: pd.DataFrame, *, glmm: int, term: str, analysis: str = "all",
           prompts: Sequence[str] | None = None, models: Sequence[str] | None = None) -> pd.DataFrame:
    """The rows of one GLMM and term (and optionally some prompts and models)."""
    sub = table[(table["analysis"] == analysis) & (table["glmm"] == glmm) & (table["term"] == term)]
    if prompts is not None:
        sub = sub[sub["prompt"].isin([str(p) for p in prompts])]
    if models is not None:
        sub = sub[sub["model"].isin([str(m) for m in models])]
    return sub.reset_index(drop=True)


def figure2_models(table: pd.DataFrame) -> list[str]:
    """The models Figures 2-3 compare across prompts: the Ex2 models (column ``ex2``), in table
    order; every model when none went on to Ex2 (the figures then show the Ex1 prompt alone)."""
    models = list(dict.fromkeys(table["model"]))
    ex2 = list(dict.fromkeys(table.loc[table["ex2"].astype(bool), "model"]))
    return ex2 or models


def ex2_selection(table: pd.DataFrame, ex1_prompt: str) -> tuple[list[str], dict]:
    """Section 3.6's Ex1 -> Ex2 rule: the models whose variant effect (GLMM 1, all errors, the Ex1
    prompt) is ``significant_uncorrected``. Returns (models, decisions) with decisions[model] = {p_boot,
    verdict, problems, selected}, in the table's model order."""
    rows = select(table, glmm=1, term="variant", prompts=[ex1_prompt])
    decisions = {}
    for r in rows.itertuples(index=False):
        decisions[r.model] = {"p_boot": None if pd.isna(r.p_boot) else float(r.p_boot), "verdict": r.fit_verdict,
                              "problems": [x for x in str(r.fit_problems).split("; ") if x],
                              "selected": bool(r.significant_uncorrected)}
    return [m for m, d in decisions.items() if d["selected"]], decisions
