"""The GLMM engines' interface and registry; the engines themselves are one module each,
:mod:`earnest.stats.engines.lme4` and :mod:`earnest.stats.engines.laplace`, registered by name like
the model backends (:mod:`earnest.backends`): ``stats.engine`` in the config, ``--engine`` on the
command line.

Each engine (:class:`Engine`) says what it supports and provides the steps of a bootstrapped GLMM:

* :meth:`Engine.bootstrap`: the fits of a shard's resamples of a model frame;
* :meth:`Engine.full_fit`: the full-data fit with its Wald statistics (:class:`earnest.stats.glmm.WaldFit`);
* :meth:`Engine.diagnose`: what a non-convergent full-data fit adds (lme4: the same fit with its
  PIRLS converged and the optimiser refits of Listing 6; laplace: nothing);
* :meth:`Engine.cross_check`: the engine checked against lme4 on a few resamples per shard
  (laplace; lme4 needs none);
* :meth:`Engine.bootstrap_items`: the paired comparison's bootstrap with item intercepts
  (:mod:`earnest.stats.compare`; engines whose :attr:`Engine.fits_item_effects` is true);
* :meth:`Engine.pairwise`: every pair of a factor's levels contrasted in a binomial GLMM with one
  random intercept (StatFormBench's model comparison, :mod:`earnest.statform.glmm`);
* what rows it fits (:attr:`Engine.rows`), which rows reproduce each fidelity mode's clean verdicts
  (:attr:`Engine.faithful_rows`), whether its resamples' cluster labels matter, whether it fits
  the paired comparison's item effects, and the engine to refit with when it fails numerically.

``get_engine(name)`` looks one up; an unknown name is a ValueError listing the registered ones.
Resolve the engine once, where a name comes in (the command line, the config), and pass the
:class:`Engine` down: every function here and in :mod:`earnest.stats.run` takes the object (a
name is still accepted and looked up once, for callers outside the chain). Nothing outside this
package compares engine names (tests/test_engines.py checks it). The whole-analysis steps that
use them (one shard, one summary) are :mod:`earnest.stats.run`.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from earnest import fidelity
from earnest.stats import glmm as G
from earnest.stats.defaults import SHARDS


class EngineUnavailable(RuntimeError):
    """An engine could not be set up (e.g. R, lme4 or rpy2 missing); the message carries the cause."""


class Engine:
    """One GLMM engine. Subclasses set the attributes and implement :meth:`bootstrap` and :meth:`full_fit`."""

    #: the name in the config (``stats.engine``), on the command line and in the shards' ``engine`` column
    name: str = ""
    #: the rows it can fit (:data:`earnest.stats.glmm.ROWS`)
    rows: tuple[str, ...] = G.ROWS
    #: per fidelity mode, the rows on which its clean verdicts are that mode's (:func:`rows_note`)
    faithful_rows: dict[str, tuple[str, ...]] = {}
    #: whether its resamples' cluster labels (:func:`earnest.stats.glmm.cluster_labels`) change its fits
    uses_cluster_labels: bool = False
    #: whether it is checked against lme4 on resamples of every shard (:meth:`cross_check`)
    has_cross_check: bool = False
    #: whether it fits the paired comparison's item random intercepts (:mod:`earnest.stats.compare`)
    fits_item_effects: bool = False
    #: whether it fits the cross-lingual model (:mod:`earnest.stats.crosslingual`)
    fits_cross_language: bool = False
    #: the engine that refits a data set it gives up on numerically (power simulations), or None
    fallback: str | None = None
    #: GLMM input rows above which each of its full-data fits takes minutes (None: never)
    slow_rows: int | None = None

    def bootstrap(self, frame: pd.DataFrame, glmm: int, resamples: list[int], base_seed: int, cores: int = 1,
                  labels: str = "draw", prior=None) -> pd.DataFrame:
        """Shard records (:data:`earnest.stats.glmm.SHARD_COLUMNS` plus ``engine``) of the listed resamples;
        ``prior``: the fixed effects' prior (:func:`earnest.stats.glmm.prior_for`; None: unpenalised)."""
        raise NotImplementedError

    def full_fit(self, data: pd.DataFrame, glmm: int, prior=None) -> G.WaldFit:
        """The full-data fit of validated GLMM input of one model x prompt (penalised by ``prior``)."""
        raise NotImplementedError

    def fixed_deviance(self, data: pd.DataFrame, glmm: int, prior, term: str | None = None,
                       value: float = 0.0) -> float:
        """The profile likelihood's deviance (:mod:`earnest.stats.profile`): the Laplace deviance plus
        ``prior``'s penalty, minimised with fixed effect ``term`` held at ``value`` (None: the full
        fit's minimum); NaN when the fit fails. Both engines compute the same number (to ~1e-5)."""
        raise NotImplementedError

    def diagnose(self, data: pd.DataFrame, glmm: int, wald: G.WaldFit, fidelity_mode: str, *,
                 refit: bool = True) -> tuple[dict, pd.DataFrame]:
        """For a full-data fit that is not clean: (summary columns to add, optimiser refits).
        Default: nothing."""
        return {}, pd.DataFrame()

    def cross_check(self, data: pd.DataFrame, glmm: int, shard: pd.DataFrame, n_check: int,
                    base_seed: int, prior=None) -> pd.DataFrame:
        """The check of a shard against lme4 (:data:`CHECK_COLUMNS`; no rows when it has none)."""
        return empty_check()

    def bootstrap_items(self, frame: pd.DataFrame, resamples: list[int], base_seed: int, cores: int,
                        agq: int) -> pd.DataFrame:
        """The paired comparison's bootstrap (:mod:`earnest.stats.compare`): the template resamples of
        ``frame`` (:func:`earnest.stats.compare.compare_frame`: template, item, variant, succ, fail)
        fitted with template and item random intercepts (``agq`` > 1: item intercepts alone, by
        adaptive Gauss-Hermite quadrature); :data:`earnest.stats.glmm.SHARD_COLUMNS`. Only engines
        whose :attr:`fits_item_effects` is true provide it."""
        raise NotImplementedError(f"the {self.name} engine fits no item random intercepts")

    def cross_bootstrap(self, cross, resamples, base_seed: int, *, full: bool = False,
                        workers: int = 1, prior=None) -> pd.DataFrame:
        """The cross-lingual model ``correct ~ variant * language + random intercepts`` on the listed
        template resamples of one model x prompt (:mod:`earnest.stats.crosslingual`), one row per
        resample and term (:data:`earnest.stats.glmm.SHARD_COLUMNS` plus ``engine``); ``full``: one
        fit of all the data (resample -1). ``cross`` is what the model reads of the data
        (:class:`earnest.stats.crosslingual.CrossData`): ``languages`` (the reference first),
        ``random``, ``frame`` (aggregated rows: template, language, variant, succ, fail),
        ``design()`` (the laplace engine's design) and ``resample_weights(resamples, base_seed)``
        (seeds and each cluster's weights in that design). Only engines whose :attr:`fits_cross_language`
        is true provide it; the terms are named as :func:`earnest.stats.crosslingual.terms_for`
        names them or as R names them (the caller maps them)."""
        raise NotImplementedError(f"the {self.name} engine fits no cross-lingual model")

    def cross_full_fit(self, cross, prior=None) -> G.WaldFit:
        """The cross-lingual model's full-data fit with Wald statistics (``cross`` as in
        :meth:`cross_bootstrap`)."""
        raise NotImplementedError(f"the {self.name} engine fits no cross-lingual model")

    def pairwise(self, correct, group, cluster) -> dict:
        """Every pair of levels of ``group`` contrasted in the binomial GLMM
        ``correct ~ group + (1 | cluster)`` (Wald z with the fit's covariance):
        a dict of vectors model_a, model_b, estimate, se, z, p (one entry per pair; Holm is the verdict's),
        sample_sd, singular and messages (one entry each). :class:`EngineUnavailable` when the engine cannot be set up; otherwise
        raises what the fit raises."""
        raise NotImplementedError(f"the {self.name} engine fits no pairwise comparison")

    def unfaithful_note(self, rows: str, fidelity_mode: str) -> str:
        """Why its fits on ``rows`` do not reproduce ``fidelity_mode``'s clean verdicts."""
        return (f"fidelity {fidelity_mode!r} with stats.rows {rows!r}: lme4's convergence checks on {rows} rows flag "
                f"other resamples than on the reference's per-answer rows (same likelihood, same estimates)")

    def rows_refusal(self, rows: str, fidelity_mode: str) -> str:
        """The complaint when asked to fit ``rows`` it cannot fit."""
        return f"stats.engine: {self.name} cannot fit {rows} rows (it fits {', '.join(self.rows)})"

    def __repr__(self) -> str:
        return f"<GLMM engine {self.name}>"


#: engine name -> engine, in the order registered (:func:`register`; :mod:`earnest.stats.engines`
#: registers lme4 first): the first is the one that fits everything (the fallback of :func:`engine_for`)
ENGINES: dict[str, Engine] = {}


def register(engine: Engine) -> Engine:
    """Add ``engine`` to the registry under its name (each engine's module registers its own)."""
    ENGINES[engine.name] = engine
    return engine


def get_engine(name: str | Engine) -> Engine:
    """The engine registered as ``name`` (an :class:`Engine` is returned as it is); ValueError
    listing the registered ones otherwise."""
    if isinstance(name, Engine):
        return name
    if name not in ENGINES:
        raise ValueError(f"unknown GLMM engine {name!r}; choose one of {', '.join(ENGINES)}")
    return ENGINES[name]


def check_engine(name: str) -> str:
    """``name`` if it is a registered engine (ValueError listing them otherwise)."""
    return get_engine(name).name


def engine_names() -> tuple[str, ...]:
    """The registered engines' names (the choices of ``--engine``)."""
    return tuple(ENGINES)


def engine_for(preferred: str | Engine, *, rows: str | None = None, item_effects: bool = False) -> Engine:
    """The engine (:class:`Engine`) to fit with: ``preferred`` (a name or an engine) if it fits
    ``rows`` (and, with ``item_effects``, the paired comparison's item intercepts), else the first
    registered engine that does: what the workflow runs where the configured engine cannot (the
    other fidelity mode's per-answer rows, compare's item effects). Its ``name`` is what a config or
    a workflow rule's params carry."""
    def fits(e: Engine) -> bool:
        return (rows is None or rows in e.rows) and (not item_effects or e.fits_item_effects)

    eng = get_engine(preferred)
    if fits(eng):
        return eng
    return next(e for e in ENGINES.values() if fits(e))


def rows_note(rows: str, fidelity_mode: str, engine: Engine | str) -> str:
    """'' when ``engine`` on ``rows`` reproduces ``fidelity_mode``'s clean verdicts, else why not."""
    eng = get_engine(engine)
    if rows in eng.faithful_rows[fidelity.check_mode(fidelity_mode)]:
        return ""
    return eng.unfaithful_note(rows, fidelity_mode)


def resolve_rows(rows: str | None, fidelity_mode: str = fidelity.DEFAULT, *, engine: Engine | str = G.LME4) -> str:
    """The rows the bootstrap fits: ``rows`` if given (``answers`` | ``aggregated``), else the
    fidelity mode's (:data:`earnest.stats.glmm.ROWS_BY_FIDELITY`). Rows the engine cannot fit
    (laplace: answers) are a ValueError that says what to change. A pair that does not reproduce
    the mode's clean verdicts (:attr:`Engine.faithful_rows`, e.g. reference with the laplace
    engine) gives a UserWarning saying why (:func:`rows_note`)."""
    eng = get_engine(engine)
    if rows in (None, "", "auto"):
        rows = G.ROWS_BY_FIDELITY[fidelity.check_mode(fidelity_mode)]
    elif rows not in G.ROWS:
        raise ValueError(f"stats.rows: {rows!r} is not one of {', '.join(G.ROWS)}")
    if rows not in eng.rows:
        raise ValueError(eng.rows_refusal(rows, fidelity_mode))
    note = rows_note(rows, fidelity_mode, eng)
    if note:
        warnings.warn(note, UserWarning, stacklevel=2)
    return rows


def run_bootstrap(frame: pd.DataFrame, glmm: int, resamples, base_seed: int, cores: int = 1,
                  engine: Engine | str = G.LME4, labels: str = "draw", prior=None) -> pd.DataFrame:
    """Fit ``glmm`` on each listed resample of ``frame`` (from :func:`earnest.stats.glmm.model_frame`)
    with ``engine``: the bootstrap shard table, one row per resample and term
    (:data:`earnest.stats.glmm.SHARD_COLUMNS` plus ``engine``). ``cores``: R workers (lme4) or
    processes (laplace). ``labels``: the cluster labels of the resamples (engines whose
    :attr:`Engine.uses_cluster_labels` is false ignore them)."""
    glmm = G._check_glmm(glmm)
    eng = get_engine(engine)
    G._check_labels(labels)
    resamples = [int(b) for b in resamples]
    if not resamples:
        return pd.DataFrame({c: [] for c in G.SHARD_COLUMNS + ("engine",)})
    return eng.bootstrap(frame, glmm, resamples, base_seed, cores, labels, prior=prior)


def unfitted_shard(error: str, glmm: int, n_resamples: int, base_seed: int, shard: int, n_shards: int,
                   engine: Engine | str) -> pd.DataFrame:
    """The shard of a model x prompt that is not fitted (no rows, :data:`earnest.stats.glmm.NO_ROWS`;
    fixed effects not estimable, :class:`earnest.stats.glmm.NotEstimable`'s reason): every resample
    an error row with ``error``, so the summary says why instead of the job failing."""
    eng = get_engine(engine)
    resamples = G.shard_resamples(n_resamples, shard, n_shards)
    return pd.DataFrame([
        {"resample": int(b), "seed": G.resample_seed(base_seed, int(b)), "term": term, "estimate": np.nan,
         "ranef_var": np.nan, "converged": False, "singular": None, "messages": "",
         "lme4_messages": "", "error": error, "engine": eng.name}
        for b in resamples for term in G.TERMS[G._check_glmm(glmm)]],
        columns=list(G.SHARD_COLUMNS) + ["engine"])


def run_shard(df: pd.DataFrame, glmm: int, n_resamples: int, base_seed: int, shard: int = 0,
              n_shards: int = SHARDS, cores: int = 1, aggregate: bool = True, engine: Engine | str = G.LME4,
              labels: str = "draw", prior=None) -> pd.DataFrame:
    """Shard ``shard`` of ``n_shards`` of a B=``n_resamples`` bootstrap for one model x prompt.

    ``df`` is validated GLMM input (see :func:`earnest.stats.glmm.validate_glmm_input`) for a single
    model x prompt. With no rows (e.g. the reasoning-only analysis excluded every item as a code
    error) every resample is recorded as an error, so the summary says so instead of the run
    failing; likewise when its fixed effects are not estimable (:class:`earnest.stats.glmm.NotEstimable`,
    e.g. gamma collinear with variant: every resample an error row with the reason, no engine
    called). ``aggregate``: binomial rows (an engine that fits aggregated rows only always
    aggregates; the likelihood is the same). ``labels``: the cluster labels
    (:func:`earnest.stats.glmm.cluster_labels`).
    """
    eng = get_engine(engine)
    G._check_labels(labels)
    if len(df) == 0:
        return unfitted_shard(G.NO_ROWS, glmm, n_resamples, base_seed, shard, n_shards, eng)
    try:
        frame = G.model_frame(df, glmm, aggregate=aggregate or "answers" not in eng.rows)
    except G.NotEstimable as exc:           # e.g. gamma collinear with variant: no engine is asked
        return unfitted_shard(exc.reason, glmm, n_resamples, base_seed, shard, n_shards, eng)
    return run_bootstrap(frame, glmm, G.shard_resamples(n_resamples, shard, n_shards), base_seed, cores, eng,
                         labels, prior)


# ---------------------------------------------------------------------------- the check against lme4
# (an engine's Engine.cross_check, laplace's: earnest.stats.engines.laplace.cross_check; run once per
# shard by earnest.stats.run.bootstrap_shard)
CHECK_TOL = 1e-4
CHECK_MAX_ROWS = 200_000     # lme4 model-frame rows above which shards are not refitted with lme4
CHECK_COLUMNS = ("resample", "term", "estimate", "converged", "messages", "default_estimate", "default_converged",
                 "default_messages", "tight_estimate", "tight_converged", "tight_messages", "abs_diff",
                 "deviance_gap", "clean_reference", "clean_earnest", "default_clean_reference",
                 "default_clean_earnest", "tight_clean_reference", "tight_clean_earnest")


def empty_check() -> pd.DataFrame:
    """A cross-check without rows (:data:`CHECK_COLUMNS`): what a shard of an engine without one writes."""
    return pd.DataFrame({c: [] for c in CHECK_COLUMNS})


def check_summary(check: pd.DataFrame, tol: float = CHECK_TOL) -> dict:
    """The verdict of :func:`cross_check` rows: resamples checked, largest difference where both
    are clean, clean-flag agreement with each lme4 fit (``clean_agree_default``/``_tight``: the
    earnest rule's flag, ``converged``; ``clean_agree_{default,tight}_{reference,earnest}``: under
    each clean rule), and a warning text ('' when fine).

    A difference above ``tol`` is a warning unless lme4's point has a higher Laplace deviance than
    laplace's (``deviance_gap`` > 1e-9: lme4's optimiser stopped short on a flat deviance, e.g.
    Nelder-Mead's tolerance; counted in ``lme4_short``), and so is a clean flag that differs from
    lme4's with converged PIRLS."""
    per = check.drop_duplicates("resample")
    n = len(per)
    gap = check.get("deviance_gap", pd.Series(np.nan, index=check.index)).astype(float)
    short = gap > 1e-9                                    # far above the engine's rounding of the deviance
    far = check["abs_diff"] > tol
    diff = float(np.nanmax(check["abs_diff"])) if check["abs_diff"].notna().any() else float("nan")
    agree = int((per["converged"] == per["default_converged"]).sum())
    agree_tight = int((per["converged"] == per["tight_converged"]).sum())
    # laplace clean, lme4 (converged PIRLS) not, at a point of higher deviance: lme4's optimiser
    # stopped short and its gradient check says so; expected, not a disagreement about the fit
    gap_per = per.get("deviance_gap", pd.Series(np.nan, index=per.index)).astype(float)
    stopped_short = int((per["converged"] & ~per["tight_converged"] & (gap_per > 1e-9)).sum())
    unexplained = check[far & ~short]
    warning = ""
    if len(unexplained):
        warning = (f"laplace and lme4 (converged PIRLS) estimates differ by {unexplained['abs_diff'].max():.2g} > "
                   f"{tol:g} on resamples both call clean, and lme4's optimum is not worse")
    elif n and agree_tight + stopped_short < n:
        warning = (f"laplace and lme4 (converged PIRLS) disagree on the clean flag of "
                   f"{n - agree_tight - stopped_short} of {n} checked resamples where lme4's optimum is not worse")
    # the same agreement under each clean rule (checks written before these columns: NaN)
    per_rule = {}
    for m in fidelity.MODES:
        for name in ("default", "tight"):
            cols = [f"clean_{m}", f"{name}_clean_{m}"]
            per_rule[f"clean_agree_{name}_{m}"] = (int((per[cols[0]].astype(bool) == per[cols[1]].astype(bool)).sum())
                                                   if all(c in per.columns for c in cols) else float("nan"))
    return {"checked": n, "max_abs_diff": diff, "lme4_short": int(check.loc[far & short, "resample"].nunique()),
            "clean_agree_default": agree, "clean_agree_tight": agree_tight, "lme4_stopped_short": stopped_short,
            **per_rule, "warning": warning}
