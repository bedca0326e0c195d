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


#: The column of a per-language GLMM 1 table naming the templates it was fitted on (comma-separated
#: ids): the cross-lingual job keeps a language's fit only where these are the templates common to
#: every language, the templates the one-job analysis fitted.
FIT_TEMPLATES = "fit_templates"


def _templates_text(templates) -> str:
    return ",".join(str(int(t)) for t in sorted(set(templates)))


def language_glmm1_from_scored(frames: Iterable[pd.DataFrame], language: str, resamples: int, seed: int, *,
                               reasoning_only: bool = False, fidelity: str = F.EARNEST,
                               workers: int = 1, engine=None, prior=None) -> pd.DataFrame:
    """GLMM 1 of one language (:func:`earnest.stats.crosslingual.language_glmm1`) for every model x
    prompt of its scored tables, with :data:`FIT_TEMPLATES`; no Holm (the cross-lingual job's). What
    the workflow's per-language job runs: it reads only that language's tables, so adding a language
    fits only that language (rules/languages.smk)."""
    from earnest.stats.glmm import validate_glmm_input

    # the rows the cross-lingual input holds for this language (validate_cross_input, one language)
    df = cross_lingual_input({language: frames}, reasoning_only=reasoning_only)
    data = validate_glmm_input(df, 1, f"scored tables ({language})")
    data["language"] = language
    parts = []
    for _, g in data.groupby(["model", "prompt"], sort=True):
        g = g.reset_index(drop=True)
        s = C.language_glmm1(g, range(resamples), seed, fidelity=fidelity, workers=workers,
                             engine=engine or C.ENGINE, prior=prior)
        s[FIT_TEMPLATES] = _templates_text(g["template"])
        parts.append(s)
    return pd.concat(parts, ignore_index=True)


def exclusions(problems: Iterable[pd.DataFrame]) -> tuple[pd.DataFrame, list[int]]:
    """(every language's failing items together, results/tables/languages/excluded_items.csv; the
    templates the comparison leaves out of every language: those with a failing item not kept)."""
    from earnest.gsm.item_validation import PROBLEM_COLUMNS, excluded_templates

    frames = [p for p in problems if p is not None and len(p)]
    table = (pd.concat(frames, ignore_index=True)[PROBLEM_COLUMNS] if frames else pd.DataFrame(columns=PROBLEM_COLUMNS))
    table = table.sort_values(["language", "template_id", "item_id"]).reset_index(drop=True)
    return table, excluded_templates(table)


def answer_language_rates(scored: Mapping[str, Iterable[pd.DataFrame]]) -> dict[str, float]:
    """Per language, the share of its answers written in it (:mod:`earnest.gsm.answer_language`)."""
    from earnest.gsm.answer_language import answer_language_rate

    return {x: answer_language_rate([r for f in frames for r in f["response"]], x) for x, frames in scored.items()}


def run_cross_lingual(data: pd.DataFrame, resamples: int, seed: int, *, random: str = C.DEFAULT_RANDOM,
                      reference: str | None = None, alpha: float = ALPHA, fidelity: str = F.EARNEST,
                      workers: int = 1, glmm1: pd.DataFrame | None = None, engine=None,
                      exclude: Iterable[int] = (),
                      log=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(cross-lingual summaries, per-language GLMM 1 summaries) of every model x prompt in ``data``,
    bootstrapped over the templates every language has (``resamples`` resamples from ``seed``,
    the laplace engine).

    ``glmm1``: the per-language GLMM 1s already fitted (:func:`language_glmm1_from_scored`, one job per
    language); a language's fit is used where it was fitted on the templates common to every
    language (then it is the fit this function would make), else refitted here (said in ``log``).
    Without it every language is fitted here (:func:`earnest.stats.crosslingual.per_language_glmm1`).
    ``exclude``: templates left out of every language (:func:`exclusions`: a language's item of them
    failed its check), so that every language is compared on the same templates."""
    exclude = {int(t) for t in exclude}
    if exclude:
        data = data[~data["template"].astype(int).isin(exclude)]
        if log is not None:
            log.info("templates left out of every language (an item failed its check): %s", sorted(exclude))
    from earnest.stats.glmm import prior_for

    data = C.validate_cross_input(data, common_only=True)
    prior = prior_for(fidelity)
    engine = engine or C.ENGINE
    summaries = []
    for (model, prompt), g in data.groupby(["model", "prompt"], sort=True):
        g = g.reset_index(drop=True)
        # the cross-lingual model: the laplace engine (one random intercept per cluster), penalised in earnest mode
        shards = C.bootstrap(g, range(resamples), seed, random=random, reference=reference, workers=workers,
                             prior=prior)
        wald = C.full_fit(g, random=random, reference=reference, prior=prior)
        prof = C.profile(g, wald, random=random, reference=reference, prior=prior)
        summaries.append(C.summarise(shards, g, model=str(model), prompt=str(prompt), random=random,
                                     reference=reference, wald=wald, alpha=alpha, fidelity=fidelity,
                                     profile=prof, prior=prior))
    if glmm1 is None:
        per_language = C.per_language_glmm1(data, range(resamples), seed, fidelity=fidelity, workers=workers,
                                            engine=engine)
    else:
        parts = []
        for (model, prompt, lang), g in data.groupby(["model", "prompt", "language"], sort=False):
            fit = glmm1[(glmm1["model"] == model) & (glmm1["prompt"] == prompt) & (glmm1["language"] == lang)]
            if len(fit) and set(fit[FIT_TEMPLATES]) == {_templates_text(g["template"])}:
                parts.append(fit.drop(columns=[FIT_TEMPLATES]).reset_index(drop=True))
                continue
            if log is not None:
                log.warning("GLMM 1 of %s (%s, %s) refitted on the %d templates common to every language "
                            "(its own job fitted %s)", lang, model, prompt, g["template"].nunique(),
                            "other templates" if len(fit) else "nothing")
            parts.append(C.language_glmm1(g.reset_index(drop=True), range(resamples), seed, fidelity=fidelity,
                                          workers=workers, engine=engine))
        per_language = C.holm_across_languages(parts, fidelity, alpha)
    return pd.concat(summaries, ignore_index=True), per_language


def provenance_notes(languages: Iterable[str], templates: Iterable[int] | None = None) -> list[str]:
    """What the package records of each language's translation, for the table's caption: the
    languages whose (selected) templates nobody reviewed (machine translations), and those translated
    from another language than English (French, German, Russian and part of Italian come from the
    Danish, whose GSM8K originals were localised: other prices, so their GSM-Base is not the English
    GSM-Base translated)."""
    from earnest.gsm.template_reading import provenance

    names = language_names(languages)
    machine, other = [], []
    for x in languages:
        if x == "eng":
            continue
        rows = provenance(x)
        rows = {t: p for t, p in rows.items() if templates is None or t in set(templates)}
        if rows and not any(p.human_validated for p in rows.values()):
            model = sorted({p.translation_model for p in rows.values()})
            machine.append(f"{names[x]} ({', '.join(model)})")
        via = [p.source_language for p in rows.values() if p.source_language not in ("", "eng")]
        if via:
            share = "" if len(via) == len(rows) else f" ({len(via)} of {len(rows)} templates)"
            other.append(f"{names[x]}{share} from the package's {', '.join(sorted(set(via)))} templates")
    notes = []
    if machine:
        notes.append(f"Machine translations nobody reviewed (the package's record): {'; '.join(machine)}.")
    if other:
        notes.append(f"Translated from another language than English, whose originals have other prices (their "
                     f"GSM-Base is not the English GSM-Base translated): {'; '.join(other)}.")
    return notes


def write_cross_lingual(summary: pd.DataFrame, glmm1: pd.DataFrame, tables: str | Path, figures: str | Path,
                        languages: Iterable[str], *, excluded: pd.DataFrame | None = None,
                        rates: Mapping[str, float] | None = None,
                        summary_templates: Iterable[int] | None = None,
                        modes: Mapping[str, str] | None = None) -> dict[str, Path]:
    """``tables``/cross_lingual.{csv,md,tex}, ``tables``/glmm1_by_language.csv, one published-number
    note per language other than English (``tables``/published_<language>.md),
    ``figures``/variant_effect_by_language.{png,pdf} and, with ``excluded`` (:func:`exclusions`),
    ``tables``/excluded_items.csv; the table counts each language's items left out and, with
    ``rates`` (:func:`answer_language_rates`), the share of answers written in the language; the
    caption says which languages are machine translations and which come from another source
    (:func:`provenance_notes`, on ``summary_templates``, the templates compared)."""
    from earnest.gsm.published import write_comparison

    tables, figures = Path(tables), Path(figures)
    languages = list(languages)
    names = language_names(languages)
    extra, notes = {}, []
    if excluded is not None:
        left = excluded[~excluded["kept"].astype(bool)]
        extra["Items left out"] = {x: str(int((left["language"] == x).sum())) for x in languages}
        dropped = sorted({int(t) for t in left["template_id"]})
        kept = int(excluded["kept"].astype(bool).sum())
        notes.append(f"Items left out: those failing their check (wrong gold answer or placeholder, "
                     f"excluded_items.csv); their templates ({len(dropped)}: {', '.join(map(str, dropped)) or 'none'}) "
                     "are left out of every language." + (f" {kept} failing items kept by the config." if kept else ""))
    if rates is not None:
        # n/a: no answer of the language has a letter (only digits and punctuation)
        extra["Answers in the language (%)"] = {x: ("n/a" if rates.get(x) != rates.get(x) else f"{100 * rates[x]:.1f}")
                                                for x in languages if x in rates}
    if modes:
        extra["Prompt mode"] = {x: modes.get(x, "native") for x in languages}
    notes += provenance_notes(languages, sorted(set(summary_templates)) if summary_templates else None)
    out = dict(C.write_cross_table(summary, tables / "cross_lingual", names=names, extra=extra, note=" ".join(notes)))
    tables.mkdir(parents=True, exist_ok=True)
    if excluded is not None:
        excluded.to_csv(tables / "excluded_items.csv", index=False)
        out["excluded"] = tables / "excluded_items.csv"
    glmm1.to_csv(tables / "glmm1_by_language.csv", index=False)
    out["glmm1"] = tables / "glmm1_by_language.csv"
    for x in languages:
        if published_note(x):
            out[f"published_{x}"] = write_comparison(pd.DataFrame(), tables / f"published_{x}", language=x)["md"]
    figs = C.plot_language_effects(summary, figures / "variant_effect_by_language", names=names, glmm1=glmm1)
    out["figure"] = figs[0]
    return out
