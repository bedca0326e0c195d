"""The StatFormBench stages as file-to-file functions (what the workflow scripts call).

1. :func:`prepare_data`: dataset + few-shot pool (+ optional taxonomy file) -> samples parquet,
   pool parquet, resolved taxonomy YAML.
2. :func:`generate`: samples + pool + taxonomy, one model, one prompting strategy -> generations
   parquet (the project's generations contract: item_id, model, prompt, dataset, response,
   prompt_tokens, new_tokens, stop_reason, seconds).
3. :func:`score`: generations + samples + taxonomy -> scored parquet (generation columns plus
   :data:`earnest.statform.metrics.SCORE_COLUMNS`).
4. :func:`analyse`: scored parquets -> tables (CSV/Markdown/LaTeX) and confusion figures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import pandas as pd
import yaml

from earnest.backends import load_backend
from earnest.generation import CHECKPOINT_EVERY, run_requests

from . import analysis
from .analysis import RESAMPLES
from .data import check_disjoint, check_known_categories, samples_from_frame, samples_to_frame, stratified_limit
from .release import load_any
from .metrics import score_generations
from .prompts import build_requests, load_prompt_template, parse_strategy
from .taxonomy import Taxonomy, load_taxonomy, taxonomy_for

DATASET = "statform"


def _read_samples(path: str | Path):
    return samples_from_frame(pd.read_parquet(path), where=str(path))


def prepare_data(dataset: str | Path, pool: str | Path | None, taxonomy: str | Path | None,
                 out_samples: str | Path, out_pool: str | Path, out_taxonomy: str | Path,
                 limit: int | None = None, seed: int = 0) -> dict:
    """Read, validate and tabulate the evaluation set and the few-shot pool; resolve the taxonomy.

    The taxonomy is the file (if given; every sample's category must be in it) or the labels of
    both sets. ``limit`` draws a seeded sample stratified by source and category
    (:func:`~earnest.statform.data.stratified_limit`). Returns counts for the log.
    """
    tax_file = load_taxonomy(taxonomy) if taxonomy else None
    samples = load_any(dataset, taxonomy=tax_file)
    samples = stratified_limit(samples, limit, seed)
    pool_samples = load_any(pool, taxonomy=tax_file) if pool else []
    if tax_file is not None:
        check_known_categories(samples, tax_file, str(dataset))
        check_known_categories(pool_samples, tax_file, str(pool))
    check_disjoint(samples, pool_samples, dataset, pool)
    tax = taxonomy_for(list(samples) + list(pool_samples), taxonomy)
    for path in (out_samples, out_pool, out_taxonomy):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    samples_to_frame(samples).to_parquet(out_samples, index=False)
    samples_to_frame(pool_samples).to_parquet(out_pool, index=False)
    Path(out_taxonomy).write_text(yaml.safe_dump(tax.to_dict(), sort_keys=False, allow_unicode=True), encoding="utf-8")
    return {"samples": len(samples), "pool": len(pool_samples), "coarse": len(tax.coarse()), "fine": len(tax.pairs())}


def generate(samples_path: str | Path, pool_path: str | Path, taxonomy_path: str | Path, model_name: str,
             model_cfg: dict, strategy: str, strategy_cfg: dict | None, max_new_tokens: int,
             out: str | Path, prompt_template: str | Path | None = None, checkpoint_every: int = CHECKPOINT_EVERY,
             fidelity: str = "earnest") -> pd.DataFrame:
    """Ask one model every sample under one strategy; write and return the generations table.

    Generation checkpoints and resumes as GSM-Symbolic generation does
    (:func:`earnest.generation.run_requests`): a request that got no answer (e.g. HTTP 500 after
    every retry) is not stored as a model answer; the call raises after saving the others, and a
    rerun asks only for the missing ones.
    """
    spec = parse_strategy(strategy, strategy_cfg)
    samples = _read_samples(samples_path)
    pool = _read_samples(pool_path) if spec["kind"] == "few_shot" else []
    tax: Taxonomy = load_taxonomy(taxonomy_path)
    # reference mode sends the authors' prompts (earnest.statform.reference); the template is earnest's
    template = load_prompt_template(prompt_template) if fidelity != "reference" else None
    requests = build_requests(samples, tax, spec["kind"], k=spec["k"], pool=pool, seed=spec["seed"],
                              layout=spec["layout"], template=template, fidelity=fidelity)
    backend = load_backend(model_name, model_cfg)
    try:
        return run_requests(requests, backend, model=model_name, prompt=strategy, dataset=DATASET, output=out,
                            max_new_tokens=int(max_new_tokens), checkpoint_every=checkpoint_every)
    finally:
        backend.close()


def score(generations: str | Path | Sequence[str | Path], samples_path: str | Path, taxonomy_path: str | Path,
          out: str | Path, fidelity: str = "earnest", max_chars: int | None = None) -> pd.DataFrame:
    """Score one or more generations tables in both fidelity modes (the analyses read ``fidelity``'s
    columns); write and return the scored table."""
    paths = [generations] if isinstance(generations, (str, Path)) else list(generations)
    gens = pd.concat([pd.read_parquet(p) for p in paths], ignore_index=True)
    scored = score_generations(gens, _read_samples(samples_path), load_taxonomy(taxonomy_path), fidelity=fidelity,
                               max_chars=max_chars)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    scored.to_parquet(out, index=False)
    return scored


def analyse(scored_paths: Sequence[str | Path], tables_dir: str | Path, figures_dir: str | Path, *,
            main_strategy: str = "zero_shot", baseline: str = "zero_shot", n_boot: int = RESAMPLES, seed: int = 0,
            min_category_n: int = 0, top_fine: int = 15, glmm: bool = True, fidelity: str = "earnest",
            samples_path: str | Path | None = None, strategies: dict | None = None) -> list[Path]:
    """Every StatFormBench table and figure from the scored tables; returns the files written.

    Tables: ``main``, ``by_source``, ``category_coarse``, ``category_fine``, ``parse_status``
    (CSV only), ``strategies`` (when a model has more than one strategy), ``glmm_cg`` and
    ``glmm_fg`` (when ``glmm`` and at least two models). Figures: ``confusion_{coarse,fine}_<model>``.
    """
    scored = pd.concat([pd.read_parquet(p) for p in scored_paths], ignore_index=True)
    if scored.duplicated(["model", "prompt", "item_id"]).any():
        raise ValueError("scored tables hold the same (model, prompt, item_id) twice")
    tables_dir, figures_dir = Path(tables_dir), Path(figures_dir)
    tables_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    written += analysis.write_main_table(scored, tables_dir / "main", strategy=main_strategy, n_boot=n_boot,
                                         seed=seed).values()
    written += analysis.write_source_table(scored, tables_dir / "by_source", strategy=main_strategy,
                                           n_boot=n_boot, seed=seed).values()
    for level in ("coarse", "fine"):
        written += analysis.write_category_table(scored, tables_dir / f"category_{level}", level=level,
                                                 strategy=main_strategy, min_n=min_category_n).values()
    parse_path = tables_dir / "parse_status.csv"
    analysis.unparseable_counts(scored).to_csv(parse_path, index=False)
    written.append(parse_path)
    written += analysis.write_truncation_table(scored, tables_dir / "truncation").values()
    if "reference_jcv" in scored.columns:
        written += analysis.write_fidelity_table(scored, tables_dir / "fidelity_sensitivity").values()
    if scored.groupby("model")["prompt"].nunique().max() > 1:
        written += analysis.write_strategy_table(scored, tables_dir / "strategies", baseline=baseline,
                                                 n_boot=n_boot, seed=seed).values()
        written += analysis.write_strategy_tests(scored, tables_dir / "strategy_tests", baseline=baseline,
                                                 fidelity=fidelity).values()
    if glmm and scored.loc[scored["prompt"] == main_strategy, "model"].nunique() >= 2:
        from .glmm import GLMMError, constant_outcome, pairwise_glmm, write_not_estimable, write_pairwise_table

        sub = scored[scored["prompt"] == main_strategy]
        for outcome, name in (("correct_cg", "glmm_cg"), ("correct_fg", "glmm_fg")):
            # an outcome that cannot be fitted is "not estimable" for that outcome only; the rest is written
            reason = constant_outcome(sub, outcome)
            if reason is None:
                try:
                    pairs = pairwise_glmm(scored, outcome, strategy=main_strategy)
                except GLMMError as exc:
                    reason = f"not estimable: the GLMM could not be fitted ({exc})"
            if reason is not None:
                written += write_not_estimable(outcome, main_strategy, reason, tables_dir / name).values()
            else:
                written += write_pairwise_table(pairs, tables_dir / name).values()
    written += analysis.write_confusion_figures(scored, figures_dir, strategy=main_strategy, top_fine=top_fine)
    from . import figures

    written += figures.write_paper_figures(scored, figures_dir, samples_path=samples_path, strategy=main_strategy,
                                           strategies=strategies, min_n=min_category_n)
    return written
