"""What a user of the library calls, in one place: ``from earnest import api``.

Each name is imported from the module that owns it the first time it is used (nothing heavy —
torch, R, the templates package — is imported by ``import earnest.api``). The names, by what they do:

Items (GSM-Symbolic)
    ``package_base_items(templates)``, ``package_variant_items(template, n, seed, instantiator)``,
    ``controlled_variant_items`` (Ex4's matched / shifted variants), ``language_items`` (other
    languages), ``read_release_jsonl`` + ``release_items`` (Apple's released files).
Prompts
    ``load_formats(resources_dir, fidelity=...)`` → ``{name: PromptFormat}``; ``fmt.render(question)``
    gives the prompt; ``language_format(language)`` the GSM prompt in another language.
Generation
    ``load_backend(name, model_cfg)`` and ``generate_dataset(items, fmt, backend, ...)``.
Extraction and scoring
    ``extract_text(response, fidelity=...)``, ``extract_text_locale(response, language)``,
    ``extract_code(response, sandbox)``, ``Sandbox``; ``score_table(generations, items, style, ...)``,
    ``is_correct(extraction, gold)``.
Fits (bootstrapped binomial GLMMs)
    ``glmm_input_from_scored(scored)`` → the GLMM's input; ``run_glmm(df, glmm, n_resamples, seed,
    out_dir, ...)`` → shards and summaries; ``engine_for(name)`` the engine object
    (:class:`earnest.stats.engines.Engine`; ``.name`` is ``lme4`` or ``laplace``) that fits what is asked.
Other harnesses' results
    ``read_lmeval_samples(paths)``, ``read_inspect_logs(paths)``, ``lmeval_to_glmm_input(samples)``.
Comparisons and power
    ``compare_family(data, family, fixed, ...)`` (paired comparisons), ``power_study(...)``,
    ``wald_power(...)``, ``wald_mde(...)``, ``design_mde(...)``.
StatFormBench
    ``load_samples(path)``, ``load_taxonomy(path)``, ``score_generations(generations, samples,
    taxonomy)``, ``aggregate(scored)``, ``pairwise_glmm(scored)``.

Every function's docstring is its reference; the workflow's scripts call the same functions.
"""

from __future__ import annotations

import importlib

#: public name -> "module:attribute" (the owner of each name; one place to look it up)
NAMES: dict[str, str] = {
    # items
    "package_base_items": "earnest.gsm.datasets:package_base_items",
    "package_variant_items": "earnest.gsm.datasets:package_variant_items",
    "controlled_variant_items": "earnest.gsm.datasets:controlled_variant_items",
    "language_items": "earnest.gsm.datasets:language_items",
    "read_release_jsonl": "earnest.gsm.datasets:read_release_jsonl",
    "release_items": "earnest.gsm.datasets:release_items",
    # prompts
    "load_formats": "earnest.gsm.prompts:load_formats",
    "language_format": "earnest.gsm.prompts:language_format",
    "PromptFormat": "earnest.gsm.prompts:PromptFormat",
    # generation
    "load_backend": "earnest.backends:load_backend",
    "generate_dataset": "earnest.generation:generate_dataset",
    # extraction and scoring
    "extract_text": "earnest.gsm.extraction:extract_text",
    "extract_text_locale": "earnest.gsm.extraction:extract_text_locale",
    "extract_code": "earnest.gsm.extraction:extract_code",
    "Sandbox": "earnest.sandbox.pool:Sandbox",
    "score_table": "earnest.gsm.scoring:score_table",
    "is_correct": "earnest.gsm.scoring:is_correct",
    # fits
    "glmm_input_from_scored": "earnest.gsm.glmm_input:glmm_input_from_scored",
    "run_glmm": "earnest.stats.run:run_glmm",
    "engine_for": "earnest.stats.engines:engine_for",
    # other harnesses
    "read_lmeval_samples": "earnest.readers.lmeval:read_samples",
    "read_inspect_logs": "earnest.readers.inspect_log:read_logs",
    "lmeval_to_glmm_input": "earnest.readers.lmeval:to_glmm_input",
    # comparisons and power
    "compare_family": "earnest.stats.compare:compare_family",
    "power_study": "earnest.stats.power:power_study",
    "wald_power": "earnest.stats.power:wald_power",
    "wald_mde": "earnest.stats.power:wald_mde",
    "design_mde": "earnest.stats.power:design_mde",
    # StatFormBench
    "load_samples": "earnest.statform.data:load_samples",
    "load_taxonomy": "earnest.statform.taxonomy:load_taxonomy",
    "score_generations": "earnest.statform.metrics:score_generations",
    "aggregate": "earnest.statform.metrics:aggregate",
    "pairwise_glmm": "earnest.statform.glmm:pairwise_glmm",
}

__all__ = sorted(NAMES)


def __getattr__(name: str):
    target = NAMES.get(name)
    if target is None:
        raise AttributeError(f"earnest.api has no {name!r}; it names: {', '.join(__all__)}")
    module, _, attr = target.partition(":")
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value  # the next use is a plain attribute
    return value


def __dir__():
    return __all__
