"""Paired comparisons: two models, or two prompts, on the same items.

For a pair (a, b) of one family (the models of one prompt, or the prompts of one model), only the
items both answered are kept. The GLMM is

    correct ~ condition + (1 | template) [+ (1 | item)]         (condition: 1 = a, 0 = b)

binomial with logit link, bootstrapped over templates exactly as GLMM 1 (the same seeds draw the
same templates; a template drawn twice is two clusters, its items distinct items in each copy).
``exp(condition)`` is the odds ratio of a correct answer under a relative to b; its estimate is the
median of the clean bootstrap estimates, the interval their 2.5th-97.5th percentiles, the P value
Eq. 4 (:mod:`earnest.stats.summary`). With item intercepts (the default) the OR is conditional
on the item, as a paired design asks; without them the template intercept alone absorbs the
pairing (GLMM 1's R code, fast, with ``aggregate`` rows). With two 0/1 answers per item the item
variance's estimate is often 0: such a boundary (singular) fit is a fit of the model and counts as
clean (it keeps its singular flag and lme4's message, which the reference rule drops); dropping
those resamples skewed the interval (``benchmarks/power_validity.py``). The Laplace estimate with
item intercepts is attenuated (about 7% at item sd 1, not shrinking with more templates), while
McNemar's ratio n_ab / n_ba, the conditional ML estimate of the same OR, is not.

Beside it, McNemar's exact test on the discordant items (a right and b wrong: n_ab; the reverse:
n_ba), the familiar baseline that treats items as independent, and its conditional OR n_ab / n_ba.
Holm-Bonferroni runs across all pairs of a family, for the bootstrap and for McNemar separately.
"""

from __future__ import annotations

import itertools
import math
from typing import Callable, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from earnest.stats import engines as E
from earnest.stats import glmm as G
from earnest.stats.diagnostics import DIVERGED_LOG_OR, fit_problems
from earnest.stats.summary import (bootstrap_p, check_alpha, clean_mask, diverged_order_statistics, holm,
                                   percentile_interval, separation_sides, significant, with_separated)
from earnest.stats.verdict import decide, fit_p, rarer_count
from earnest.wording import DEGENERATE_MARK, VARIANT, format_fit_p, format_or_interval, format_p, unresolved_text
from earnest.stats.defaults import AGQ, ALPHA, ENGINE, ITEM_EFFECTS

COMPARE_INPUT_COLUMNS = ("model", "prompt", "template", "item", "correct")
FAMILIES = ("models", "prompts")
MAX_AGQ = 25                # lme4's limit on quadrature points
PAIR_COLUMNS = ("family", "fixed", "a", "b", "n_items", "n_templates", "acc_a", "acc_b", "odds_ratio",
                "median_log_or", "ci_low", "ci_high", "ci_low_log", "ci_high_log", "n_diverged", "diverged", "n_separated", "p_boot", "n_resamples", "n_clean", "item_effects", "agq",
                "n_ab", "n_ba", "mcnemar_or", "p_mcnemar", "p_holm", "p_mcnemar_holm", "fit_verdict",
                "fit_problems", "degenerate", "significant_holm", "p_mcnemar_holm_below_alpha", "p_bound", "p_lr",
                "p_value", "p_source", "ci_low_unbounded", "ci_high_unbounded", "prior", "not_estimable_reason",
                "holm_m", "unresolved", "resolving_resamples", "verdict", "verdict_reason")


class CompareInputError(ValueError):
    """The comparison input is malformed; the message names the source and the column or row."""


def read_compare_input(path) -> pd.DataFrame:
    """A compare input table from CSV or Parquet, read as the GLMM input is (:func:`G.read_input_table`)."""
    return G.read_input_table(path, "compare input", ",".join(COMPARE_INPUT_COLUMNS), CompareInputError)


def validate_compare_input(df: pd.DataFrame, source: str = "compare input") -> pd.DataFrame:
    """Check the columns (model, prompt, template, item, correct 0/1; none named twice, no empty model,
    prompt or item) and that no item is answered twice by one model x prompt; return a clean copy."""
    G.check_unique_columns(list(df.columns), source, CompareInputError)
    for col in COMPARE_INPUT_COLUMNS:
        if col not in df.columns:
            raise CompareInputError(f"{source}: missing column '{col}' (needs {', '.join(COMPARE_INPUT_COLUMNS)})")
    out = df[list(COMPARE_INPUT_COLUMNS)].copy()
    out["correct"] = G.binary_column(out["correct"], "correct", source, CompareInputError)
    out["template"] = G.integer_ids(out["template"], "template", source, CompareInputError)
    for col in ("model", "prompt", "item"):   # model and prompt names become file names (G.text_column)
        out[col] = G.text_column(out[col], col, source, CompareInputError, folder=col != "item")
    dup = out.duplicated(["model", "prompt", "item"])
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        r = out.iloc[i]
        raise CompareInputError(f"{source}: item {r['item']!r} answered twice by {r['model']} / {r['prompt']} "
                                f"(data row {i + 1})")
    # an item is one question of one template, whoever answers it
    first = out.drop_duplicates("item").set_index("item")["template"]
    other = out["template"].to_numpy() != first.loc[out["item"]].to_numpy()
    if other.any():
        i = int(np.flatnonzero(other)[0])
        r = out.iloc[i]
        j = int(np.flatnonzero((out["item"] == r["item"]).to_numpy())[0])
        raise CompareInputError(f"{source}: item {r['item']!r} is under template {r['template']} in data row {i + 1} "
                                f"({r['model']} / {r['prompt']}) but under template {out['template'].iloc[j]} in data "
                                f"row {j + 1} ({out['model'].iloc[j]} / {out['prompt'].iloc[j]}); an item belongs to "
                                f"one template")
    return out.reset_index(drop=True)


def check_pairs(data: pd.DataFrame, family: str) -> list[tuple[str, str, str, int]]:
    """(fixed, a, b, paired items) of every pair that ``family`` compares, checked before any fit
    (:func:`common_items`)."""
    return [(fixed, a, b, len(common_items(data, family, fixed, a, b)))
            for fixed, conds in family_conditions(data, family).items() for a, b in itertools.combinations(conds, 2)]


def common_items(data: pd.DataFrame, family: str, fixed: str, a: str, b: str) -> pd.DataFrame:
    """:func:`paired_rows`, refusing a pair without a common item (CompareInputError naming it):
    0 paired items is no comparison, not one with p = 1."""
    pairs = paired_rows(data, family, fixed, a, b)
    if not len(pairs):
        what = f"prompt {fixed!r}: models" if family == "models" else f"model {fixed!r}: prompts"
        raise CompareInputError(f"{what} {a!r} and {b!r} answered no common item (items pair by the 'item' "
                                f"column), so they cannot be compared")
    return pairs


def compare_input_from_scored(scored: pd.DataFrame) -> pd.DataFrame:
    """Compare input from scored tables (CONTRACTS.md): template_id -> template, item_id -> item. Several
    samples of a question (column ``sample``, a model's ``decoding.samples``) pair as Inspect's epochs do
    (:func:`earnest.readers.lmeval.to_compare_input`): sample s of one condition with sample s of the other,
    each pair a paired unit (item ``<item_id>#sample<s>``)."""
    need = ("model", "prompt", "template_id", "item_id", "correct")
    missing = [c for c in need if c not in scored.columns]
    if missing:
        raise CompareInputError(f"scored tables: missing columns {missing}")
    if "sample" in scored.columns:   # (a condition with one answer per question: its sample 0)
        samples = pd.to_numeric(scored["sample"]).fillna(0).astype(int)
        scored = scored.assign(item_id=[f"{i}#sample{s}" for i, s in zip(scored["item_id"], samples)])
    return validate_compare_input(scored.rename(columns={"template_id": "template", "item_id": "item"}),
                                  "scored tables")


def paired_rows(data: pd.DataFrame, family: str, fixed: str, a: str, b: str) -> pd.DataFrame:
    """The items both a and b answered: columns template, item, correct_a, correct_b."""
    key = "model" if family == "models" else "prompt"
    other = "prompt" if family == "models" else "model"
    sub = data[data[other] == fixed]
    ra = sub[sub[key] == a][["template", "item", "correct"]]
    rb = sub[sub[key] == b][["template", "item", "correct"]]
    both = ra.merge(rb, on="item", suffixes=("_a", "_b"))
    mismatch = both["template_a"] != both["template_b"]
    if mismatch.any():
        raise CompareInputError(f"item {both.loc[mismatch, 'item'].iloc[0]!r} has different templates under {a} and {b}")
    return both.rename(columns={"template_a": "template"}).drop(columns="template_b").sort_values(
        ["template", "item"]).reset_index(drop=True)


def mcnemar(correct_a, correct_b) -> dict:
    """Exact McNemar test on paired 0/1 answers: discordant counts, conditional OR, two-sided p."""
    a = np.asarray(correct_a, dtype=int)
    b = np.asarray(correct_b, dtype=int)
    n_ab = int(((a == 1) & (b == 0)).sum())
    n_ba = int(((a == 0) & (b == 1)).sum())
    n = n_ab + n_ba
    p = float(stats.binomtest(n_ab, n, 0.5).pvalue) if n else 1.0
    ratio = (n_ab / n_ba) if n_ba else (math.inf if n_ab else float("nan"))
    return {"n_ab": n_ab, "n_ba": n_ba, "mcnemar_or": ratio, "p_mcnemar": p}


def compare_frame(pairs: pd.DataFrame) -> pd.DataFrame:
    """The rows the R engine fits: template, item (int code), variant (1 = a), succ, fail."""
    codes = pd.factorize(pairs["item"])[0].astype(np.int64)
    n = len(pairs)
    return pd.DataFrame({
        "template": np.r_[pairs["template"].to_numpy(), pairs["template"].to_numpy()].astype(np.int64),
        "item": np.r_[codes, codes],
        "variant": np.r_[np.ones(n, dtype=np.int64), np.zeros(n, dtype=np.int64)],
        "succ": np.r_[pairs["correct_a"].to_numpy(), pairs["correct_b"].to_numpy()].astype(np.int64),
    }).assign(fail=lambda d: 1 - d["succ"])


def check_agq(agq, item_effects: bool = ITEM_EFFECTS) -> int:
    """``agq``: 1 = lme4's Laplace approximation with template and item intercepts; k > 1 = item
    intercepts alone by adaptive Gauss-Hermite quadrature with k points (R/compare.R)."""
    if isinstance(agq, bool) or not isinstance(agq, (int, np.integer)) or not 1 <= int(agq) <= MAX_AGQ:
        raise CompareInputError(f"agq must be an integer from 1 to {MAX_AGQ}, not {G.show_value(agq)}")
    if int(agq) > 1 and not item_effects:
        raise CompareInputError("agq > 1 fits item intercepts by quadrature: it needs item_effects (not "
                                "--no-item-effects)")
    return int(agq)


def bootstrap_pair(pairs: pd.DataFrame, n_resamples: int, seed: int, *, item_effects: bool = ITEM_EFFECTS,
                   cores: int = 1, engine: E.Engine | str = ENGINE, agq: int = AGQ, prior=None) -> pd.DataFrame:
    """Bootstrap shard table (``SHARD_COLUMNS``) of one pair; term "variant" is the condition.
    ``engine`` (an :class:`earnest.stats.engines.Engine`, or its name) fits the template-only model
    (GLMM 1's code, :meth:`~earnest.stats.engines.Engine.bootstrap`) or, with item intercepts, the
    paired model (:meth:`~earnest.stats.engines.Engine.bootstrap_items`; lme4).
    ``agq``: see :func:`check_agq`."""
    agq = check_agq(agq, item_effects)
    frame = compare_frame(pairs)
    resamples = list(range(int(n_resamples)))
    eng = E.get_engine(engine)
    if not item_effects:
        agg = frame.groupby(["template", "variant"], as_index=False)[["succ", "fail"]].sum()
        return E.run_bootstrap(agg, 1, resamples, seed, cores, eng, prior=prior)
    if not eng.fits_item_effects:
        raise CompareInputError(f"item random intercepts need the lme4 engine (the {eng.name} engine fits one "
                                f"random intercept); use item_effects=False (--no-item-effects) with it")
    return eng.bootstrap_items(frame, resamples, seed, cores, agq)


def compare_pair(pairs: pd.DataFrame, n_resamples: int, seed: int, *, item_effects: bool = ITEM_EFFECTS,
                 cores: int = 1, engine: E.Engine | str = ENGINE, agq: int = AGQ, a: str = "a", b: str = "b") -> dict:
    """The bootstrap GLMM and McNemar statistics of one pair (no Holm yet), with its verdict
    (:func:`pair_verdict`; ``a`` and ``b`` name the conditions in its statements)."""
    row = {"n_items": int(len(pairs)), "n_templates": int(pairs["template"].nunique()) if len(pairs) else 0,
           "acc_a": 100.0 * pairs["correct_a"].mean() if len(pairs) else float("nan"),
           "acc_b": 100.0 * pairs["correct_b"].mean() if len(pairs) else float("nan"),
           "n_resamples": int(n_resamples), "item_effects": bool(item_effects),
           "agq": check_agq(agq, item_effects)}
    row.update(mcnemar(pairs["correct_a"], pairs["correct_b"]))
    theta = np.array([])
    n_separated = 0
    # the template-intercept model is GLMM 1's, penalised as earnest mode's fits are; the item-intercept
    # model (lme4's R/compare.R) is not, and keeps its separated resamples at their bound
    prior = None if item_effects else G.prior_for("earnest")
    prof = {}
    if len(pairs) and row["n_templates"] >= 2:
        eng = E.get_engine(engine)
        shards = bootstrap_pair(pairs, n_resamples, seed, item_effects=item_effects, cores=cores, engine=eng,
                                agq=agq, prior=prior)
        per = shards.drop_duplicates("resample")
        sides = pd.Series(separation_sides(compare_frame(pairs), per["seed"].to_numpy()),
                          index=per["resample"].to_numpy())
        kept = shards[clean_mask(shards) & (shards["term"] == VARIANT)]
        if prior is None:
            # separated resamples at their bound on their side, as in the GLMM summaries (one rule)
            theta, n_separated = with_separated(kept, sides)
        else:
            theta = kept["estimate"].astype(float).to_numpy()
            n_separated = int(sides.isin((-1.0, 1.0)).sum())
            prof = _pair_profile(pairs, eng, prior)
    med = float(np.median(theta)) if theta.size else float("nan")
    lo, hi = percentile_interval(theta)
    with np.errstate(over="ignore"):  # a separated pair's log ORs run to +-thousands: exp gives 0 or inf
        odds = [float(np.exp(v)) if theta.size else float("nan") for v in (med, lo, hi)]
    row.update(median_log_or=med, odds_ratio=odds[0], ci_low=odds[1], ci_high=odds[2], ci_low_log=lo, ci_high_log=hi,
               n_diverged=int(np.sum(np.abs(theta) > DIVERGED_LOG_OR)), diverged=diverged_order_statistics(theta),
               p_boot=bootstrap_p(theta), n_clean=int(theta.size), n_separated=n_separated)
    # the verdict's P value and interval (earnest.stats.verdict.fit_p: with the penalised profile likelihood
    # where the pair's model is penalised)
    n = row["n_items"]
    rarer = rarer_count([(pairs["correct_a"].sum(), n), (pairs["correct_b"].sum(), n)])
    rec = fit_p(theta, fidelity="earnest", p_lr=prof.get("p_lr", float("nan")),
                pl_low=prof.get("pl_low_log", float("nan")), pl_high=prof.get("pl_high_log", float("nan")),
                rarer=rarer)
    row.update({k: rec[k] for k in ("p_bound", "p_lr", "p_value", "p_source", "separated_data", "sparse_data",
                                    "rarer_count", "ci_low_log", "ci_high_log",
                                    "ci_low", "ci_high", "ci_low_unbounded", "ci_high_unbounded")})
    row["prior"] = prior.label() if prior is not None else ""
    row.update(pair_verdict(row, a, b))
    return row


def _pair_profile(pairs: pd.DataFrame, eng, prior) -> dict:
    """The penalised likelihood-ratio test and profile interval of a pair's template-intercept model
    (GLMM 1 on the pair: variant 1 = condition a), :mod:`earnest.stats.profile`."""
    from earnest.stats.profile import profile_term

    f = compare_frame(pairs)
    data = pd.DataFrame({"model": "pair", "prompt": "pair", "template": f["template"], "variant": f["variant"],
                         "correct": f["succ"]})
    full = eng.fixed_deviance(data, 1, prior)
    wald = eng.full_fit(data, 1, prior=prior)
    est = float(wald.coefs.set_index("term").loc[VARIANT, "estimate"])
    return profile_term(eng, data, 1, prior, VARIANT, est, full=full)


def pair_verdict(row: dict, a: str = "a", b: str = "b") -> dict:
    """fit_verdict, fit_problems and degenerate of one pair by the GLMM summaries' rule
    (:func:`earnest.stats.diagnostics.fit_problems`; condition b is its variant 0, a its variant 1):
    a pair where one condition answered every item alike (0/60 against 2/60), or (with item
    intercepts) whose discordant items all favour one side, is separated: its OR diverges, and it is
    never significant; so is a pair whose median or interval is built from bootstrap estimates beyond
    +-10 log-odds (resamples with quasi-separation), as in the summaries."""
    n = int(row["n_items"])
    verdict, statements = fit_problems({
        "n_base": n, "n_variants": n, "acc_base": row["acc_b"] if n else 0.0, "acc_variants": row["acc_a"] if n else 0.0,
        "term": "variant", "n_resamples": row["n_resamples"], "n_clean": row["n_clean"],
        "item_effects": row["item_effects"], "n_ab": row["n_ab"], "n_ba": row["n_ba"], "prior": row.get("prior", ""),
        **{k: row[k] for k in ("median_log_or", "ci_low_log", "ci_high_log", "diverged", "n_diverged") if k in row}},
        labels=(b, a))
    reason = "; ".join(statements) if verdict == "degenerate" else ""
    return {"fit_verdict": verdict, "fit_problems": "; ".join(statements), "degenerate": verdict == "degenerate",
            "not_estimable_reason": reason}


def family_conditions(data: pd.DataFrame, family: str) -> dict[str, list[str]]:
    """fixed value -> the conditions compared under it (models of a prompt, or prompts of a model)."""
    if family not in FAMILIES:
        raise CompareInputError(f"family must be one of {', '.join(FAMILIES)}, not {family!r}")
    key, other = ("model", "prompt") if family == "models" else ("prompt", "model")
    return {str(f): sorted(map(str, sub[key].unique())) for f, sub in data.groupby(other, sort=True)}


def compare_family(data: pd.DataFrame, family: str, fixed: str, conditions: Sequence[str] | None = None, *,
                   n_resamples: int, seed: int, alpha: float = ALPHA, item_effects: bool = ITEM_EFFECTS, cores: int = 1,
                   engine: E.Engine | str = ENGINE, agq: int = AGQ, log: Callable[[str], None] | None = None) -> pd.DataFrame:
    """Every pair of ``conditions`` (default: all of ``fixed``) with Holm across the pairs
    (:data:`PAIR_COLUMNS`). Pair k uses the base seed ``seed + k``. ``engine`` is resolved here, once,
    and passed to every pair as the :class:`earnest.stats.engines.Engine`."""
    alpha = check_alpha(alpha)
    engine = E.get_engine(engine)
    conds = list(conditions) if conditions is not None else family_conditions(data, family).get(str(fixed), [])
    rows = []
    for k, (a, b) in enumerate(itertools.combinations(conds, 2)):
        pairs = common_items(data, family, fixed, a, b)
        r = compare_pair(pairs, n_resamples, seed + k, item_effects=item_effects, cores=cores, engine=engine,
                         agq=agq, a=a, b=b)
        rows.append({"family": family, "fixed": fixed, "a": a, "b": b, **r})
        if log:
            log(f"{family} / {fixed}: {a} vs {b}: {r['n_items']} paired items, OR {r['odds_ratio']:.3f} "
                f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}], p_boot {r['p_boot']:.4f}, McNemar p {r['p_mcnemar']:.4f}"
                + (f"; DEGENERATE: {r['fit_problems']}" if r["degenerate"] else ""))
    out = pd.DataFrame(rows, columns=[c for c in PAIR_COLUMNS])
    if len(out):
        # the verdict's one rule (earnest.stats.verdict.decide): Holm across the pairs of the family, a pair
        # that is not estimable tests nothing and is never significant (its McNemar test still stands)
        decided = decide(out, None, alpha=alpha, fidelity="earnest")
        for col in ("p_holm", "holm_m", "significant_holm", "unresolved", "resolving_resamples", "verdict",
                    "verdict_reason"):
            out[col] = decided[col].to_numpy()
        out["p_mcnemar_holm"] = holm(out["p_mcnemar"].to_numpy(dtype=float))
        out["p_mcnemar_holm_below_alpha"] = significant(out["p_mcnemar_holm"].to_numpy(dtype=float), alpha)
    return out


def write_pairs_table(pairs: pd.DataFrame, stem, *, alpha: float = ALPHA, labels: dict | None = None) -> dict:
    """``stem.{csv,md,tex}``: one row per pair; a degenerate pair's OR and interval print the
    degenerate mark alone (:func:`earnest.wording.format_or_interval`, as in the GLMM tables: its
    number carries no information) and are never bold."""
    from earnest.tables import write_table

    def f(v, spec=".3f"):
        return "n/a" if v is None or not (isinstance(v, (int, float)) and math.isfinite(v)) else format(v, spec)

    def fp(v):
        return format_p(v, alpha, missing="n/a")

    lab = labels or {}
    shown = pd.DataFrame({
        "fixed": [lab.get(x, x) for x in pairs["fixed"]],
        "a": [lab.get(x, x) for x in pairs["a"]], "b": [lab.get(x, x) for x in pairs["b"]],
        "items": pairs["n_items"],
        "acc_a / acc_b": [f"{f(x, '.1f')} / {f(y, '.1f')}" for x, y in zip(pairs["acc_a"], pairs["acc_b"])],
        "OR [95% CI]": [format_or_interval(o, lo, hi, bool(d))
                        for o, lo, hi, d in zip(pairs["odds_ratio"], pairs["ci_low"], pairs["ci_high"],
                                                pairs["degenerate"])],
        # a pair that is not estimable shows the mark alone, no P (the display rule)
        "p / Holm": [DEGENERATE_MARK if bool(r["degenerate"]) else
                     f"{format_fit_p(r, alpha, missing='n/a')} / {format_fit_p(r, alpha, corrected=True, missing='n/a')}"
                     f"{unresolved_text(r)}" for _, r in pairs.iterrows()],
        "clean": [f"{c}/{n}" for c, n in zip(pairs["n_clean"], pairs["n_resamples"])],
        "McNemar n_ab:n_ba": [f"{x}:{y}" for x, y in zip(pairs["n_ab"], pairs["n_ba"])],
        "McNemar p / Holm": [f"{fp(p)} / {fp(h)}" for p, h in zip(pairs["p_mcnemar"], pairs["p_mcnemar_holm"])],
    })
    bold = pd.DataFrame(False, index=shown.index, columns=shown.columns)
    if len(pairs):
        bold["p / Holm"] = pairs["significant_holm"].astype(bool).to_numpy()
        bold["McNemar p / Holm"] = pairs["p_mcnemar_holm_below_alpha"].astype(bool).to_numpy()
    item = "template and item" if len(pairs) and bool(pairs["item_effects"].iloc[0]) else "template"
    agq = int(pairs["agq"].iloc[0]) if len(pairs) and "agq" in pairs else 1
    if agq > 1:
        item = f"item random intercepts (adaptive Gauss-Hermite quadrature, {agq} points)"
    else:
        item += " random intercepts (Laplace approximation)"
    return write_table(shown, stem,
                       f"Paired comparisons on the items both answered: OR of a correct answer under a vs b from "
                       f"the GLMM correct ~ condition + {item}, bootstrapped over templates "
                       f"(median, 2.5-97.5th percentiles; without item intercepts the fits are penalised by a weak "
                       f"normal prior and the interval and P include the penalised profile likelihood's, "
                       f"earnest.stats.verdict); McNemar's exact test beside it. Holm "
                       f"across the pairs of each family; bold: Holm-adjusted p < {alpha:g}. {DEGENERATE_MARK}: degenerate pair "
                       f"(a condition answered every item alike, or with item intercepts every discordant item "
                       f"favours one side: the OR diverges, its estimate, interval and bootstrap p carry no "
                       f"information and it is never significant; McNemar's test stands; see fit_problems).",
                       bold=bold, csv=pairs)


def simulate_paired(n_templates: int, items_per_template: int, *, log_or: float, intercept: float = 0.0,
                    template_sd: float = 1.5, item_sd: float = 1.0, seed: int = 0, a: str = "a",
                    b: str = "b", prompt: str = "p") -> pd.DataFrame:
    """Compare input of two models answering the same items with a known conditional log OR
    (a vs b): logit P = intercept + u_template + v_item + log_or * [model a]."""
    rng = np.random.default_rng(seed)
    template = np.repeat(np.arange(n_templates), items_per_template)
    u = rng.normal(0, template_sd, n_templates)[template]
    v = rng.normal(0, item_sd, template.size)
    rows = []
    for name, shift in ((a, log_or), (b, 0.0)):
        p = 1 / (1 + np.exp(-(intercept + u + v + shift)))
        rows.append(pd.DataFrame({"model": name, "prompt": prompt, "template": template,
                                  "item": [f"t{t}-i{i}" for i, t in enumerate(template)],
                                  "correct": (rng.random(template.size) < p).astype(np.int64)}))
    return pd.concat(rows, ignore_index=True)
