"""The cross-lingual GLMM: is the variant effect the same in every language?

    correct ~ variant * language + (1 | template:language)          (random = "template_language", default)
    correct ~ variant * language + (1 | template)                   (random = "template")
    correct ~ variant * language + (1 | template) + (1 | template:language)   (random = "both", lme4 only)

binomial, logit link, one reference language (English where present): ``variant`` is the variant
effect (log odds ratio GSM-Variants vs GSM-Base) in the reference language, ``language[L]`` the
difference of language L's GSM-Base log odds from the reference's, and ``variant:language[L]``
the difference of L's variant effect from the reference's: the terms that answer the question.
The variant effect *in* language L is ``variant + variant:language[L]``, computed resample by
resample.

**Which random effects, and why (docs/languages.md).** GLMM 1 per language (the paper's model on
one language's answers) gives every template its own intercept in every language. The default
cross-lingual model keeps exactly that, ``(1 | template:language)`` with one variance: a template
may be easy in English and hard in a translation whose wording, units or numbers changed (about a
third of the French templates draw other numbers, :mod:`earnest.gsm.instantiate`). ``(1 | template)``
alone would force a template's difficulty to be the same in every language; the translation-specific
part it leaves out would, in a logistic model, shrink every fixed effect towards 0
(non-collapsibility), the variant effects of the noisier languages most, and read as a language x
variant interaction that is none. The dependence between a template's languages, which
``(1 | template:language)`` does not model, is carried by the bootstrap: it resamples *templates*,
each drawn template bringing its rows in every language (the same templates in every language),
so the intervals and P values account for it whatever the model assumes. ``both`` (a template
intercept plus a template x language deviation) is the fullest structure; it needs lme4 (two
nested random effects are not one-dimensional integrals per cluster), ``random="template"`` is
offered for comparison.

**Engines.** ``laplace`` (:mod:`earnest.stats.engines.laplace`) takes any fixed-effect columns and one
random intercept per cluster, fitted for all resamples at once: a cluster is a template (or a
template x language cell), and a resample's weight of a template applies to all its clusters.
``lme4``: glmer through R (:file:`R/crosslingual.R`), one fit per resample, the same template draws
(R's ``sample.int`` from :func:`earnest.stats.glmm.resample_seed`, reproduced by
:mod:`earnest.stats.rdraws`), so both engines fit the same resamples.

**Inference** as for GLMM 1: percentile intervals and Eq. 4's bootstrap P over the clean fits
(:func:`earnest.stats.summary.clean_mask`); Holm across languages for the per-language variant
effects and, separately, for the interactions; and a joint test that all interactions are 0 (a
Wald statistic with the bootstrap covariance of the interaction estimates, referred to the
bootstrap distribution of the same statistic centred at the bootstrap mean, and to chi-square).
A resample without a clean fit (typically a separated one: every GSM-Base answer of a language
right or wrong among the drawn templates, so the interaction has no finite estimate) is left out and
counted (``n_clean``); a summary built on fewer than half of the resamples, or whose interval reaches
the diverging bound, is flagged ``degenerate``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from earnest import fidelity as F
from earnest.stats.defaults import ALPHA, ENGINE
from earnest.stats.engines import laplace
from earnest.stats.glmm import (LANGUAGE_TERM, LME4, GLMMInputError, WaldFit, check_unique_columns, text_column,
                                validate_glmm_input)
from earnest.stats.summary import clean_mask, diverged_order_statistics
from earnest.stats.summary import not_estimable_reason as _reason, rarer_answers
from earnest.stats.verdict import NOT_ESTIMABLE, SPARSE_EVENTS, decide, fit_p
from earnest.wording import (DEGENERATE_MARK, DEGENERATE_TEXT, INTERCEPT, VARIANT, format_fit_p,
                             format_or_interval, format_p, unresolved_text)

CROSS_INPUT_COLUMNS = ("model", "prompt", "language", "template", "variant", "correct")
RANDOM = ("template_language", "template", "both")
DEFAULT_RANDOM = "template_language"
FORMULAS = {"template_language": "correct ~ variant * language + (1 | template:language)",
            "template": "correct ~ variant * language + (1 | template)",
            "both": "correct ~ variant * language + (1 | template) + (1 | template:language)"}
ENGINES = (laplace.ENGINE, LME4)
SUMMARY_COLUMNS = ["model", "prompt", "kind", "term", "language", "reference", "random", "engine",
                   "n_resamples", "n_clean", "estimate", "se", "median_log_or", "odds_ratio", "ci_low_log",
                   "ci_high_log", "ci_low", "ci_high", "ci_low_unbounded", "ci_high_unbounded", "boot_low_log",
                   "boot_high_log", "pl_low_log", "pl_high_log", "p_boot", "p_bound", "p_lr", "p_value", "p_source",
                   "separated_data", "sparse_data", "rarer_count", "p_holm", "holm_m", "significant_uncorrected",
                   "significant_holm", "unresolved", "resolving_resamples", "verdict", "verdict_reason",
                   "not_estimable_reason", "p_chi2", "diverged", "degenerate", "acc_base", "acc_variants", "n_templates"]


def language_term(language: str) -> str:
    return LANGUAGE_TERM.format(language)


def interaction_term(language: str) -> str:
    return f"variant:language[{language}]"


def terms_for(languages: list[str]) -> list[str]:
    """The fixed effects, in design order, for ``languages`` (the first is the reference)."""
    others = languages[1:]
    return [INTERCEPT, VARIANT] + [language_term(x) for x in others] + [interaction_term(x) for x in others]


def _check_random(random: str) -> str:
    if random not in RANDOM:
        raise ValueError(f"random effects {random!r}: use one of {', '.join(RANDOM)}")
    return random


def order_languages(languages, reference: str | None = None) -> list[str]:
    """The reference first (``reference``; else English where present, else the first in order), then
    the other languages in the order given."""
    langs = list(dict.fromkeys(str(x) for x in languages))
    if reference is None:
        reference = "eng" if "eng" in langs else langs[0]
    if reference not in langs:
        raise ValueError(f"reference language {reference!r} is not among the data's languages ({', '.join(langs)})")
    return [reference] + [x for x in langs if x != reference]


def validate_cross_input(df: pd.DataFrame, source: str = "cross-lingual input", *,
                         common_only: bool = False) -> pd.DataFrame:
    """The checked input (:data:`CROSS_INPUT_COLUMNS`) of one or more model x prompt pairs.

    Every language of a model x prompt must hold the same templates (the bootstrap draws templates,
    each with its rows in every language): GLMMInputError naming the languages and templates that
    differ, unless ``common_only`` keeps the templates every language has. At least two languages,
    both values of ``variant`` in every language and two templates are needed."""
    check_unique_columns(list(df.columns), source)
    if "language" not in df.columns:
        raise GLMMInputError(f"{source}: missing column 'language' (the cross-lingual model needs "
                             f"{', '.join(CROSS_INPUT_COLUMNS)})")
    out = validate_glmm_input(df, 1, source)
    out["language"] = text_column(df["language"].reset_index(drop=True), "language", source)
    parts = []
    for (model, prompt), g in out.groupby(["model", "prompt"], sort=True):
        where = f"{source}: model {model!r}, prompt {prompt!r}"
        per = {lang: set(s.astype(int)) for lang, s in g.groupby("language", sort=False)["template"]}
        if len(per) < 2:
            raise GLMMInputError(f"{where}: one language ({', '.join(per)}); the cross-lingual model compares "
                                 "two or more (GLMM 1 fits one)")
        common = set.intersection(*per.values())
        differ = {lang: sorted(s - common) for lang, s in per.items() if s - common}
        if differ:
            if not common_only:
                shown = "; ".join(f"{lang} also has {v[:5]}{'...' if len(v) > 5 else ''}" for lang, v in differ.items())
                raise GLMMInputError(f"{where}: the languages hold different templates ({shown}); the bootstrap "
                                     "resamples templates with all their languages, so every language needs the same "
                                     "templates (keep the common ones: common_only)")
            g = g[g["template"].isin(common)]
        if len(common) < 2:
            raise GLMMInputError(f"{where}: {len(common)} template(s) common to every language; 2 or more are needed")
        for lang, sub in g.groupby("language", sort=False):
            if sub["variant"].nunique() < 2:
                raise GLMMInputError(f"{where}: language {lang!r} has only variant {int(sub['variant'].iloc[0])}; "
                                     "the variant effect compares GSM-Base (0) with GSM-Variants (1)")
        parts.append(g)
    return pd.concat(parts, ignore_index=True)


@dataclass
class CrossDesign:
    """The laplace engine's design of one model x prompt, with what maps it back.

    ``design.templates`` holds cluster numbers 0..C-1; ``cluster_template`` the position (in
    ``templates``, ascending ids) of each cluster's template; ``templates`` the template ids."""

    design: laplace.Design
    languages: list[str]
    random: str
    templates: np.ndarray
    cluster_template: np.ndarray
    frame: pd.DataFrame      # aggregated rows: template, language, variant, succ, fail (design order)

    @property
    def terms(self) -> list[str]:
        return list(self.design.terms)

    @property
    def reference(self) -> str:
        return self.languages[0]


def aggregate(df: pd.DataFrame) -> pd.DataFrame:
    """One binomial row per template x language x variant (the likelihood is unchanged)."""
    d = pd.DataFrame({"template": df["template"].astype(np.int64), "language": df["language"].astype(str),
                      "variant": df["variant"].astype(np.int64), "succ": df["correct"].astype(np.int64)})
    d["fail"] = 1 - d["succ"]
    return d.groupby(["template", "language", "variant"], sort=True, as_index=False)[["succ", "fail"]].sum()


def cross_design(df: pd.DataFrame, *, languages: list[str] | None = None, reference: str | None = None,
                 random: str = DEFAULT_RANDOM) -> CrossDesign:
    """The design of one model x prompt's validated input (:func:`validate_cross_input`)."""
    random = _check_random(random)
    if random == "both":
        raise ValueError("random 'both' (two nested random intercepts) needs the lme4 engine")
    langs = order_languages(languages if languages is not None else df["language"].unique(), reference)
    f = aggregate(df[df["language"].isin(langs)])
    templates = np.unique(f["template"].to_numpy())
    tpos = np.searchsorted(templates, f["template"].to_numpy())
    lpos = f["language"].map({x: i for i, x in enumerate(langs)}).to_numpy()
    if random == "template":
        cluster = tpos
    else:
        cluster = tpos * len(langs) + lpos
    order = np.argsort(cluster, kind="stable")
    f = f.iloc[order].reset_index(drop=True)
    cluster, tpos, lpos = cluster[order], tpos[order], lpos[order]
    ids, tix = np.unique(cluster, return_inverse=True)
    cluster_template = ids if random == "template" else ids // len(langs)
    variant = f["variant"].to_numpy(float)
    cols = [np.ones(len(f)), variant]
    cols += [(lpos == i).astype(float) for i in range(1, len(langs))]
    cols += [variant * (lpos == i) for i in range(1, len(langs))]
    succ = f["succ"].to_numpy(float)
    trials = succ + f["fail"].to_numpy(float)
    starts = np.flatnonzero(np.r_[True, tix[1:] != tix[:-1]])
    des = laplace.Design(glmm=1, X=np.column_stack(cols), y=succ, trials=trials, tix=tix.astype(np.int64),
                         starts=starts, templates=np.arange(len(ids)), terms=tuple(terms_for(langs)))
    des.lchoose = laplace._lchoose(trials, succ)
    des.binary1 = True
    des.cell = des.tix + len(ids) * des.X[:, 1].astype(np.int64)
    return CrossDesign(des, langs, random, templates, cluster_template.astype(np.int64), f)


def resample_weights(cd: CrossDesign, resamples, base_seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(seeds, weights (B, clusters)): R's template draws of :func:`earnest.stats.glmm.resample_seed`
    (the same as GLMM 1's on the same templates), each template's weight given to all its clusters."""
    seeds, K = laplace.resample_weights(len(cd.templates), resamples, base_seed)
    return seeds, K[:, cd.cluster_template]


class CrossData:
    """What an engine reads of one model x prompt's cross-lingual input
    (:meth:`earnest.stats.engines.base.Engine.cross_bootstrap`): ``languages`` (the reference first),
    ``random``, ``frame`` (aggregated rows, the language categorical in that order), ``design()``
    (the laplace engine's design, built when first asked for) and :meth:`resample_weights` on it."""

    def __init__(self, df: pd.DataFrame, *, languages: list[str] | None, reference: str | None, random: str):
        self.df, self.random = df, _check_random(random)
        self.languages = order_languages(languages if languages is not None else df["language"].unique(), reference)
        self._design = None

    @property
    def frame(self) -> pd.DataFrame:
        f = aggregate(self.df[self.df["language"].isin(self.languages)])
        f["language"] = pd.Categorical(f["language"], categories=self.languages)
        return f

    @property
    def terms(self) -> list[str]:
        """The fixed effects in design order (:func:`terms_for`)."""
        return terms_for(self.languages)

    def design(self) -> CrossDesign:
        if self._design is None:   # languages already in order, the reference first
            self._design = cross_design(self.df, languages=self.languages, reference=self.languages[0],
                                        random=self.random)
        return self._design

    def resample_weights(self, resamples, base_seed: int) -> tuple[np.ndarray, np.ndarray]:
        """(seeds, weights per cluster of :meth:`design`): :func:`resample_weights`."""
        return resample_weights(self.design(), resamples, base_seed)


def _cross_engine(engine):
    """The engine object of ``engine`` (a name or an engine) that fits the cross-lingual model."""
    from earnest.stats import engines as E

    eng = E.get_engine(engine)
    if not eng.fits_cross_language:
        raise ValueError(f"engine {eng.name!r}: use one of {', '.join(ENGINES)}")
    return eng


def _our_terms(out: pd.DataFrame, languages: list[str]) -> pd.DataFrame:
    """R's term names (``language<x>``, ``variant:language<x>``) as :func:`terms_for` names them."""
    names = {INTERCEPT: INTERCEPT, VARIANT: VARIANT}
    for x in languages[1:]:
        names[f"language{x}"] = language_term(x)
        names[f"variant:language{x}"] = interaction_term(x)
    out["term"] = out["term"].map(lambda t: names.get(t, t))
    return out


def bootstrap(df: pd.DataFrame, resamples, base_seed: int, *, random: str = DEFAULT_RANDOM,
              engine=laplace.ENGINE, languages: list[str] | None = None, reference: str | None = None,
              workers: int = 1, prior=None) -> pd.DataFrame:
    """Shard records (glmm.SHARD_COLUMNS and ``engine``) of the listed resamples of one model x
    prompt: one row per resample and term (:func:`terms_for`), fitted by ``engine`` (a name or an
    engine object) through the engine interface (:meth:`~earnest.stats.engines.base.Engine.cross_bootstrap`)."""
    eng = _cross_engine(engine)
    resamples = np.asarray([int(b) for b in resamples], dtype=np.int64)
    cross = CrossData(df, languages=languages, reference=reference, random=random)
    return _our_terms(eng.cross_bootstrap(cross, resamples, base_seed, workers=workers, prior=prior), cross.languages)


def full_fit(df: pd.DataFrame, *, random: str = DEFAULT_RANDOM, engine=laplace.ENGINE,
             languages: list[str] | None = None, reference: str | None = None, prior=None) -> WaldFit:
    """The full-data fit with Wald statistics (terms :func:`terms_for`), penalised by ``prior``."""
    eng = _cross_engine(engine)
    cross = CrossData(df, languages=languages, reference=reference, random=random)
    fit = eng.cross_full_fit(cross, prior=prior)
    fit.coefs = _our_terms(fit.coefs, cross.languages)
    return fit


# ------------------------------------------------------------------------------------ summaries

def profile(df: pd.DataFrame, wald: WaldFit, *, random: str = DEFAULT_RANDOM, languages: list[str] | None = None,
            reference: str | None = None, prior=None, level: float = 0.95) -> dict:
    """term -> the penalised profile likelihood's test and interval (:mod:`earnest.stats.profile`) of
    each single fixed effect of the cross-lingual model but the intercept, by the laplace engine's
    design (the per-language variant effects are sums of two terms: the bootstrap alone judges them).
    Empty without a prior (reference mode) or a random structure laplace cannot fit."""
    from earnest.stats.profile import profile_term

    if prior is None or random == "both" or wald is None or wald.error:
        return {}
    cross = CrossData(df, languages=languages, reference=reference, random=random)
    des = cross.design().design.with_prior(prior)
    names = dict(zip(terms_for(cross.languages), des.terms))

    def dev(term, value):
        return laplace.fixed_deviance(des, None if term is None else names[term], value)

    full = dev(None, 0.0)
    est = dict(zip(wald.coefs["term"], wald.coefs["estimate"].astype(float)))
    return {t: profile_term(None, None, 1, prior, t, est.get(t, float("nan")), level=level, full=full, dev=dev)
            for t in terms_for(cross.languages) if t != INTERCEPT}


def _accuracy(df: pd.DataFrame, language: str, variant: int) -> float:
    sub = df[(df["language"] == language) & (df["variant"] == variant)]
    return float(sub["correct"].mean() * 100.0) if len(sub) else float("nan")


def joint_test(estimates: np.ndarray, point: np.ndarray | None = None) -> tuple[float, float, float]:
    """(statistic, bootstrap P, chi-square P) of "every coordinate is 0" from bootstrap estimates
    (B, m): the Wald statistic t' S^-1 t with S the bootstrap covariance and t the point estimate
    (default the bootstrap mean); the bootstrap P is the share of resamples whose statistic, centred
    at the bootstrap mean, is at least as large."""
    from scipy.stats import chi2

    E = np.asarray(estimates, dtype=float)
    E = E[np.all(np.isfinite(E), axis=1)]
    if E.shape[0] <= E.shape[1] + 1:
        return float("nan"), float("nan"), float("nan")
    centre = E.mean(axis=0)
    t = centre if point is None or not np.all(np.isfinite(point)) else np.asarray(point, dtype=float)
    S = np.cov(E, rowvar=False).reshape(E.shape[1], E.shape[1])
    try:
        Si = np.linalg.pinv(S)
    except np.linalg.LinAlgError:
        return float("nan"), float("nan"), float("nan")
    stat = float(t @ Si @ t)
    D = E - centre
    null = np.einsum("bi,ij,bj->b", D, Si, D)
    p_boot = float(np.mean(null >= stat))
    return stat, p_boot, float(chi2.sf(stat, E.shape[1]))


def summarise(shards: pd.DataFrame, data: pd.DataFrame, *, model: str = "", prompt: str = "",
              random: str = DEFAULT_RANDOM, languages: list[str] | None = None, reference: str | None = None,
              wald: WaldFit | None = None, level: float = 0.95, alpha: float = ALPHA,
              fidelity: str = F.DEFAULT, profile: dict | None = None, prior=None) -> pd.DataFrame:
    """The cross-lingual model's table for one model x prompt (:data:`SUMMARY_COLUMNS`).

    ``kind``: ``term`` (each fixed effect but the intercept), ``language_variant`` (the variant
    effect in each language, ``variant + variant:language[L]`` resample by resample; Holm across the
    languages), ``interaction`` (Holm across the interaction terms) and ``joint`` (all interactions
    0). ``data``: the validated input of the same model x prompt (for the accuracies)."""
    F.check_mode(fidelity)
    langs = order_languages(languages if languages is not None else data["language"].unique(), reference)
    terms = terms_for(langs)
    engine = "+".join(sorted(shards["engine"].astype(str).unique())) if "engine" in shards.columns else ""
    n_res = int(shards["resample"].nunique())
    clean = shards[clean_mask(shards, fidelity)]
    wide = clean.pivot_table(index="resample", columns="term", values="estimate", aggfunc="first")
    wide = wide.reindex(columns=terms)
    wide = wide[wide.notna().all(axis=1)]
    point = {}
    se = {}
    if wald is not None:
        point = dict(zip(wald.coefs["term"], wald.coefs["estimate"].astype(float)))
        se = dict(zip(wald.coefs["term"], wald.coefs["se"].astype(float)))
    common = dict(model=model, prompt=prompt, reference=langs[0], random=random, engine=engine,
                  n_resamples=n_res, n_templates=int(data["template"].nunique()))

    everything = _reason({"n_base": int((data["variant"] == 0).sum()), "n_variants": int((data["variant"] == 1).sum()),
                          "acc_base": 100.0 * data.loc[data["variant"] == 0, "correct"].mean(),
                          "acc_variants": 100.0 * data.loc[data["variant"] == 1, "correct"].mean()})

    def rarer(x):
        sub = data[data["language"] == x]
        n0, n1 = int((sub["variant"] == 0).sum()), int((sub["variant"] == 1).sum())
        return rarer_answers({"n_base": n0, "n_variants": n1, "acc_base": _accuracy(data, x, 0),
                              "acc_variants": _accuracy(data, x, 1)})

    def row(kind, term, language, theta, est=float("nan"), s=float("nan"), acc=(float("nan"), float("nan")),
            reason="", about=""):
        theta = np.asarray(theta, dtype=float)
        med = float(np.median(theta)) if theta.size else float("nan")
        prof = (profile or {}).get(term, {})
        # a term's data are sparse (separated: 0) where a language it involves has few answers of a
        # condition's rarer outcome (the reference for the variant term and every interaction; the
        # language itself for its own terms)
        other = language or about
        involved = [langs[0]] + ([other] if other and other != langs[0] else [])
        counts = [c for c in (rarer(x) for x in involved) if not np.isnan(c)] if kind != "joint" else []
        rec = fit_p(theta, fidelity=fidelity, level=level, p_lr=prof.get("p_lr", float("nan")),
                    pl_low=prof.get("pl_low_log", float("nan")), pl_high=prof.get("pl_high_log", float("nan")),
                    rarer=min(counts) if counts else float("nan"))
        diverged = bool(diverged_order_statistics(theta, level)) if theta.size else True
        why = everything or reason or ("" if theta.size else f"none of the {n_res} resamples gave a clean fit")
        if not why and prior is None and fidelity != F.REFERENCE and diverged:
            why = ("built from estimates of separated resamples beyond +-10 log-odds (unpenalised fits): "
                   "no information")
        return dict(common, kind=kind, term=term, language=language, n_clean=int(theta.size), estimate=est, se=s,
                    median_log_or=med, odds_ratio=float(np.exp(med)) if np.isfinite(med) else float("nan"),
                    **rec, p_chi2=float("nan"), diverged=diverged, not_estimable_reason=why,
                    acc_base=acc[0], acc_variants=acc[1])

    about = {t: x for x in langs[1:] for t in (language_term(x), interaction_term(x))}
    rows = [row("term", t, "", wide[t].to_numpy(), point.get(t, float("nan")), se.get(t, float("nan")),
                about=about.get(t, "")) for t in terms if t != INTERCEPT]
    for x in langs:
        theta = wide[VARIANT].to_numpy() + (wide[interaction_term(x)].to_numpy() if x != langs[0] else 0.0)
        est = point.get(VARIANT, float("nan")) + (point.get(interaction_term(x), float("nan"))
                                                  if x != langs[0] else 0.0)
        sub = data[data["language"] == x]
        acc = (_accuracy(data, x, 0), _accuracy(data, x, 1))
        why = _reason({"n_base": int((sub["variant"] == 0).sum()), "n_variants": int((sub["variant"] == 1).sum()),
                       "acc_base": acc[0], "acc_variants": acc[1]})
        rows.append(row("language_variant", f"variant in {x}", x, theta, est, acc=acc, reason=why))
    for x in langs[1:]:
        t = interaction_term(x)
        rows.append(row("interaction", t, x, wide[t].to_numpy(), point.get(t, float("nan")), se.get(t, float("nan"))))
    inter = [interaction_term(x) for x in langs[1:]]
    stat, pj, pc = joint_test(wide[inter].to_numpy(), np.array([point.get(t, np.nan) for t in inter])
                              if point else None)
    joint = row("joint", "variant x language (all)", "", np.array([]))
    # the joint test's P is a share of the n resamples (1/n apart): a P of 0 is below 1/n (earnest mode)
    jb = 1.0 / len(wide) if pj == 0 and len(wide) and fidelity != F.REFERENCE else float("nan")
    joint.update(estimate=stat, p_boot=pj, p_chi2=pc, p_bound=jb, n_clean=int(len(wide)), diverged=False,
                 median_log_or=float("nan"), p_value=jb if pj == 0 and not np.isnan(jb) else pj,
                 p_source="bootstrap (joint Wald statistic)", not_estimable_reason=everything or (
                     "" if len(wide) > len(inter) + 1 else "too few clean resamples for the joint test"))
    out = pd.concat([pd.DataFrame(rows), pd.DataFrame([joint])], ignore_index=True)
    # Holm across the languages' variant effects and, separately, across the interactions; each
    # single term and the joint test alone: the verdict's one rule (earnest.stats.verdict.decide)
    families = [out.index[out["kind"] == k] for k in ("language_variant", "interaction")]
    families += [pd.Index([i]) for i in out.index[out["kind"].isin(["term", "joint"])]]
    out = decide(out, [f for f in families if len(f)], alpha=alpha, fidelity=fidelity)
    out["degenerate"] = out["verdict"] == NOT_ESTIMABLE
    return out[SUMMARY_COLUMNS]


def language_glmm1(data: pd.DataFrame, resamples, base_seed: int, *, level: float = 0.95,
                   fidelity: str = F.DEFAULT, workers: int = 1, engine=ENGINE, prior=None) -> pd.DataFrame:
    """GLMM 1 (the paper's model) on the answers of one language of one model x prompt (``data``:
    :data:`CROSS_INPUT_COLUMNS`, one model, prompt and language), fitted by ``engine`` (a name or an
    engine object: the run's stats.engine, as every other GLMM 1 of the run) with the fidelity mode's
    rows, cluster labels and prior, and summarised as every GLMM is (:func:`earnest.stats.run.summarise_group`:
    the full-data fit, earnest mode's profile likelihood, :func:`earnest.stats.summary.summarise`), with
    its ``language`` column; no Holm (that is across the languages: :func:`holm_across_languages`). The
    resamples are resample b's templates and seed whatever the other languages are, so each language
    is its own job (rules/languages.smk)."""
    import warnings

    from earnest.stats import engines as E
    from earnest.stats.glmm import cluster_labels, model_frame, prior_for
    from earnest.stats.run import summarise_group

    keys = data[["model", "prompt", "language"]].drop_duplicates()
    if len(keys) != 1:
        raise ValueError(f"language_glmm1 fits one model x prompt x language; the data hold {len(keys)}")
    model, prompt, lang = keys.iloc[0]
    eng = E.get_engine(engine)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)      # the rows' note is the run's GLMM 1s' to give
        rows = E.resolve_rows(None, fidelity, engine=eng)
    prior = prior_for(fidelity, prior)
    sub = data.drop(columns=["language"]).reset_index(drop=True)
    frame = model_frame(sub, 1, aggregate=rows == "aggregated" or "answers" not in eng.rows)
    shards = E.run_bootstrap(frame, 1, list(resamples), base_seed, workers, eng, cluster_labels(fidelity), prior)
    s, _ = summarise_group(sub, shards, 1, fidelity=fidelity, rows=rows, engine=eng, prior=prior, level=level,
                           refit_nonconvergent=False, model=str(model), prompt=str(prompt))
    s.insert(2, "language", lang)
    return s


def holm_across_languages(parts, fidelity: str = F.DEFAULT, alpha: float = ALPHA) -> pd.DataFrame:
    """The per-language GLMM 1 summaries (:func:`language_glmm1`) in one table with the verdict's
    columns (:func:`earnest.stats.verdict.decide`), Holm across the languages within model x prompt x
    term (``p_holm_languages``, the same as ``p_holm``; a P of 0 counts as its bound); ``degenerate``:
    not estimable."""
    from earnest.stats.summaries import _with_p_columns

    res = pd.concat(list(parts), ignore_index=True)
    res = _with_p_columns(res, fidelity)
    res = decide(res, ["model", "prompt", "term"], alpha=alpha, fidelity=fidelity)
    res["p_holm_languages"] = res["p_holm"]
    res["degenerate"] = res["verdict"] == NOT_ESTIMABLE
    return res


def per_language_glmm1(data: pd.DataFrame, resamples, base_seed: int, *, level: float = 0.95,
                       fidelity: str = F.DEFAULT, workers: int = 1, engine=ENGINE) -> pd.DataFrame:
    """GLMM 1 (the paper's model, :mod:`earnest.stats.engines.laplace`) on each language's answers of one
    model x prompt, with the same resamples (same templates, same seeds: resample b draws the same
    templates in every language), summarised by :func:`earnest.stats.summary.summarise`, and Holm
    across the languages (``p_holm_languages``; a P of 0 counts as its bound): :func:`language_glmm1`
    per language, then :func:`holm_across_languages`."""
    parts = [language_glmm1(g.reset_index(drop=True), resamples, base_seed, level=level, fidelity=fidelity,
                            workers=workers, engine=engine)
             for _, g in data.groupby(["model", "prompt", "language"], sort=False)]
    return holm_across_languages(parts, fidelity)


# ------------------------------------------------------------------------------------ table, figure

def _pct(x) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{float(x):.1f}"


def _p(x, bound=None) -> str:
    """A P value as every table shows it (earnest.wording.format_p: a P of 0 as below its bound)."""
    return format_p(x, bound=bound)


def _or_text(r) -> str:
    """An odds ratio and its interval by the tables' one rule (earnest.wording.format_or_interval): a
    degenerate fit shows the degenerate mark alone, never its number."""
    if not bool(r["degenerate"]) and not np.isfinite(float(r["odds_ratio"])):
        return "no clean fit"
    return format_or_interval(r["odds_ratio"], r["ci_low"], r["ci_high"], bool(r["degenerate"]),
                              missing="no clean fit")


def _wald_text(j) -> str:
    x = j["estimate"]
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{float(x):.2f}"


def write_cross_table(summary: pd.DataFrame, stem, *, names: dict[str, str] | None = None,
                      extra: dict[str, dict] | None = None, note: str = "") -> dict:
    """The cross-lingual table (CSV raw; Markdown and LaTeX for reading): per language its
    accuracies, its variant effect (odds ratio, 95% interval, P, Holm across languages) and its
    interaction with the reference, then the joint test. ``extra``: more columns, {column: {language:
    value}} (shown per language, in the CSV too); ``note``: appended to the caption."""
    from earnest.tables import write_table

    names, extra = names or {}, extra or {}
    rows = []
    for (model, prompt), g in summary.groupby(["model", "prompt"], sort=False):
        lv = g[g["kind"] == "language_variant"]
        inter = g[g["kind"] == "interaction"].set_index("language")
        for _, r in lv.iterrows():
            lang = r["language"]
            i = inter.loc[lang] if lang in inter.index else None
            rows.append({
                "Model": model, "Prompt": prompt, "Language": names.get(lang, lang),
                "Base (%)": _pct(r["acc_base"]), "Variants (%)": _pct(r["acc_variants"]),
                "Variant OR [95% CI]": _or_text(r),
                "P": format_fit_p(r), "P Holm": format_fit_p(r, corrected=True) + unresolved_text(r),
                "Ratio of ORs vs reference [95% CI]": "reference" if i is None else _or_text(i),
                "P (interaction)": "" if i is None else format_fit_p(i),
                "P Holm (interaction)": "" if i is None else format_fit_p(i, corrected=True) + unresolved_text(i),
                **{col: values.get(lang, "") for col, values in extra.items()},
            })
        j = g[g["kind"] == "joint"]
        if len(j):
            j = j.iloc[0]
            rows.append({"Model": model, "Prompt": prompt, "Language": "all (joint test)", "Base (%)": "",
                         "Variants (%)": "", "Variant OR [95% CI]": f"Wald {_wald_text(j)}", "P": "",
                         "P Holm": "", "Ratio of ORs vs reference [95% CI]": "variant x language = 0",
                         "P (interaction)": format_fit_p(j),
                         "P Holm (interaction)": f"chi2 {_p(j['p_chi2'])}", **{col: "" for col in extra}})
    display = pd.DataFrame(rows)
    random = summary["random"].iloc[0] if len(summary) else DEFAULT_RANDOM
    ref = summary["reference"].iloc[0] if len(summary) else ""
    caption = (f"Cross-lingual GLMM {FORMULAS.get(random, random)}, reference language {names.get(ref, ref)}, "
               "bootstrapped over templates (the same templates in every language). Variant OR: the odds ratio "
               "GSM-Variants vs GSM-Base in each language (variant + variant:language), median over the clean "
               "resamples (earnest mode: fits penalised by a weak normal prior, so no separated resample is dropped) "
               "and 95% interval: the percentile interval, in earnest mode widened to the penalised profile "
               "likelihood's where the P value includes its test; P: the verdict's (earnest.stats.verdict: Eq. 4, "
               "below 2/n where every estimate lies on one side, and for single terms in earnest mode, where a "
               f"language's condition has at most {SPARSE_EVENTS} answers of its rarer outcome, the larger "
               "of that and the penalised likelihood-ratio test's), Holm across languages. Ratio of ORs: the "
               "language's variant OR over the reference's (the interaction), Holm across languages. The last row "
               "tests that the variant effect is the same in every language (all interactions 0: bootstrap P, and "
               "the chi-square P of the Wald statistic with the bootstrap covariance). "
               f"{DEGENERATE_MARK}: {DEGENERATE_TEXT}; never a finding." + (f" {note}" if note else ""))
    csv = summary.assign(**{col: summary["language"].map(values) for col, values in extra.items()})
    return write_table(display, stem, caption, csv=csv)


def plot_language_effects(summary: pd.DataFrame, stem, *, names: dict[str, str] | None = None,
                          glmm1: pd.DataFrame | None = None) -> list[Path]:
    """Figure: the variant odds ratio per language with its 95% interval (log scale, 1 dashed),
    one panel per model x prompt; ``glmm1``: the per-language GLMM 1 summaries
    (:func:`per_language_glmm1`) drawn beside the cross-lingual model's."""
    from earnest.plotting import NOTE_COLOUR, empty_figure, pyplot, save_figure

    names = names or {}
    lv = summary[summary["kind"] == "language_variant"]
    if lv.empty:
        return empty_figure(stem, "Variant effect per language", "no cross-lingual summary to draw")
    plt = pyplot()
    from matplotlib.ticker import FuncFormatter, NullFormatter

    panels = list(lv.groupby(["model", "prompt"], sort=False))
    nlang = lv["language"].nunique()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.8 * len(panels), 0.55 * nlang + 1.6), squeeze=False)
    for ax, ((model, prompt), g) in zip(axes[0], panels):
        g = g.reset_index(drop=True)
        y = np.arange(len(g))[::-1].astype(float)
        for k, r in g.iterrows():
            if bool(r["degenerate"]) or not np.isfinite(r["odds_ratio"]):
                # a degenerate fit is never drawn as an estimate: its row says why it has none
                ax.text(1.0, y[k], "  no estimate (degenerate)", color=NOTE_COLOUR, fontsize=8, va="center",
                        ha="left")
                continue
            colour = "black" if r["significant_holm"] else "#555555"
            ax.errorbar([r["odds_ratio"]], [y[k] + 0.12],
                        xerr=[[max(r["odds_ratio"] - r["ci_low"], 0)], [max(r["ci_high"] - r["odds_ratio"], 0)]],
                        fmt="o", color=colour, capsize=3, label="cross-lingual model" if k == 0 else None)
        if glmm1 is not None and len(glmm1):
            m = glmm1[(glmm1["model"] == model) & (glmm1["prompt"] == prompt) & (glmm1["term"] == VARIANT)]
            m = m.set_index("language")
            for k, r in g.iterrows():
                if r["language"] in m.index:
                    q = m.loc[r["language"]]
                    if bool(q.get("degenerate", False)) or not np.isfinite(q["odds_ratio"]):
                        continue
                    ax.errorbar([q["odds_ratio"]], [y[k] - 0.12],
                                xerr=[[max(q["odds_ratio"] - q["ci_low"], 0)],
                                      [max(q["ci_high"] - q["odds_ratio"], 0)]],
                                fmt="s", color="#2166ac", capsize=3, mfc="white",
                                label="GLMM 1 per language" if k == 0 else None)
        ax.axvline(1.0, ls="--", color="grey", lw=1)
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())     # minor labels crowd each other on a log axis
        ax.set_ylim(y.min() - 0.6, y.max() + 0.6)
        ax.set_yticks(y)
        ax.set_yticklabels([names.get(x, x) + ("*" if s else "") for x, s in zip(g["language"], g["significant_holm"])])
        ax.set_xlabel("odds ratio GSM-Variants vs GSM-Base (95% interval)")
        ax.set_title(f"{model}, {prompt}", fontsize=10)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8, loc="best")
    fig.suptitle("Variant effect per language (* significant after Holm across languages)", fontsize=11, y=1.04)
    return save_figure(fig, stem)


# ------------------------------------------------------------------------------------ simulation

def simulate(templates: int, languages: list[str], *, n_variants: int = 10, variant_effect: float = -0.5,
             language_effects: dict[str, float] | None = None, interaction: dict[str, float] | None = None,
             intercept: float = 0.5, sd_template: float = 1.0, sd_template_language: float = 0.3, seed: int = 0,
             model: str = "sim", prompt: str = "gsm") -> pd.DataFrame:
    """Answers from the cross-lingual model with known effects: a shared template intercept (sd
    ``sd_template``) plus a template x language deviation (sd ``sd_template_language``), one GSM-Base
    answer and ``n_variants`` GSM-Variants answers per template and language. ``language_effects``
    and ``interaction`` map a language to its base log-odds shift and its variant-effect shift."""
    rng = np.random.default_rng(seed)
    language_effects = language_effects or {}
    interaction = interaction or {}
    u = rng.normal(0.0, sd_template, templates)
    rows = []
    for x in languages:
        v = rng.normal(0.0, sd_template_language, templates)
        for t in range(templates):
            for variant, n in ((0, 1), (1, n_variants)):
                eta = (intercept + language_effects.get(x, 0.0) + u[t] + v[t]
                       + variant * (variant_effect + interaction.get(x, 0.0)))
                p = 1.0 / (1.0 + math.exp(-eta))
                for c in rng.random(n) < p:
                    rows.append((model, prompt, x, t, variant, int(c)))
    return pd.DataFrame(rows, columns=list(CROSS_INPUT_COLUMNS))
