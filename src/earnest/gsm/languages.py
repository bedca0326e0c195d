"""GSM-Symbolic across languages, assembled: the scored tables of every language into the
cross-lingual GLMM's input, its fits (earnest.stats.crosslingual) and per-language GLMM 1s, and the
table, figure and published-number notes they give (docs/languages.md).

What the workflow's cross-lingual job runs (rules/languages.smk); each step is a function, so the
same analysis runs from Python on any scored tables."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Mapping

import pandas as pd

from earnest import fidelity as F
from earnest.gsm.glmm_input import glmm_input_from_scored
from earnest.gsm.locales import get_locale
from earnest.gsm.published import published_note
from earnest.stats import crosslingual as C
from earnest.stats.summary import ALPHA


def language_names(languages: Iterable[str]) -> dict[str, str]:
    """Display names (the locale table's; the code where it has none)."""
    return {x: (get_locale(x).name if get_locale(x).name not in ("", x) else x) for x in languages}


def cross_lingual_input(scored: Mapping[str, Iterable[pd.DataFrame]], *, reasoning_only: bool = False) -> pd.DataFrame:
    """The cross-lingual model's input (:data:`earnest.stats.crosslingual.CROSS_INPUT_COLUMNS`) from each
    language's scored tables (GSM-Base and GSM-Variants of one or more model x prompt pairs)."""
    parts = []
    for language, frames in scored.items():
        df = glmm_input_from_scored(list(frames), reasoning_only=reasoning_only, source=f"scored tables ({language})")
        df["language"] = language
        parts.append(df)
    return pd.concat(parts, ignore_index=True)


def run_cross_lingual(data: pd.DataFrame, resamples: int, seed: int, *, random: str = C.DEFAULT_RANDOM,
                      reference: str | None = None, alpha: float = ALPHA, fidelity: str = F.EARNEST,
                      workers: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(cross-lingual summaries, per-language GLMM 1 summaries) of every model x prompt in ``data``,
    bootstrapped over the templates every language has (``resamples`` resamples from ``seed``,
    the laplace engine)."""
    data = C.validate_cross_input(data, common_only=True)
    summaries = []
    for (model, prompt), g in data.groupby(["model", "prompt"], sort=True):
        g = g.reset_index(drop=True)
        shards = C.bootstrap(g, range(resamples), seed, random=random, reference=reference, workers=workers)
        wald = C.full_fit(g, random=random, reference=reference)
        summaries.append(C.summarise(shards, g, model=str(model), prompt=str(prompt), random=random,
                                     reference=reference, wald=wald, alpha=alpha, fidelity=fidelity))
    glmm1 = C.per_language_glmm1(data, range(resamples), seed, fidelity=fidelity, workers=workers)
    return pd.concat(summaries, ignore_index=True), glmm1


def write_cross_lingual(summary: pd.DataFrame, glmm1: pd.DataFrame, tables: str | Path, figures: str | Path,
                        languages: Iterable[str]) -> dict[str, Path]:
    """``tables``/cross_lingual.{csv,md,tex}, ``tables``/glmm1_by_language.csv, one published-number
    note per language other than English (``tables``/published_<language>.md), and
    ``figures``/variant_effect_by_language.{png,pdf}."""
    from earnest.gsm.published import write_comparison

    tables, figures = Path(tables), Path(figures)
    names = language_names(languages)
    out = dict(C.write_cross_table(summary, tables / "cross_lingual", names=names))
    tables.mkdir(parents=True, exist_ok=True)
    glmm1.to_csv(tables / "glmm1_by_language.csv", index=False)
    out["glmm1"] = tables / "glmm1_by_language.csv"
    for x in languages:
        if published_note(x):
            out[f"published_{x}"] = write_comparison(pd.DataFrame(), tables / f"published_{x}", language=x)["md"]
    figs = C.plot_language_effects(summary, figures / "variant_effect_by_language", names=names, glmm1=glmm1)
    out["figure"] = figs[0]
    return out
