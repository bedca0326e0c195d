# GSM-Symbolic in other languages (rules/languages.smk): its settings, input functions and targets.

import json

from earnest.gsm.context_fit import mode_format, prompt_mode

LANGUAGES = list(GSM.get("languages") or ["eng"])
OTHER_LANGUAGES = [x for x in LANGUAGES if x != "eng"]
LANG_DIR = "results/languages"
LANG_TABLES = "results/tables/languages"
LANG_FIGURES = "results/figures/languages"


def language_targets(wildcards=None):
    """The cross-lingual results and every language's generations (none for an English-only run)."""
    if not OTHER_LANGUAGES:
        return []
    targets = [
        f"{LANG_DIR}/{x}/generations/{m}/{EX1_PROMPT}/{d}.parquet"
        for x in OTHER_LANGUAGES
        for m in GSM_MODELS
        for d in DATASETS
    ]
    targets += [f"{LANG_TABLES}/cross_lingual.md", f"{LANG_FIGURES}/variant_effect_by_language.png"]
    # each language's note (no published numbers): a new language's is missing, so the cross-lingual
    # job is planned again when a language is added
    targets += [f"{LANG_TABLES}/published_{x}.md" for x in OTHER_LANGUAGES]
    return targets


# languages read with English rules (no locale row of their own), and each language's prompt mode
ENGLISH_RULES = set(GSM["english_rules"])


def language_mode(language):
    return prompt_mode(GSM["prompt_mode"], language)


# each language's Ex1 prompt in its mode, checked by earnest.config before any job
LANGUAGE_FORMATS = (
    {
        x: mode_format(x, language_mode(x), _repo_path(config["prompts_dir"]), fidelity=FIDELITY, name=EX1_PROMPT)
        for x in OTHER_LANGUAGES
    }
    if OTHER_LANGUAGES
    else {}
)


def language_scored(model, language, dataset):
    if language == "eng":
        return scored_path(model, EX1_PROMPT, dataset)
    return f"{LANG_DIR}/{language}/scored/{model}/{EX1_PROMPT}/{dataset}.parquet"


def language_scored_inputs(wc):
    """One language's scored GSM-Base and GSM-Variants of one model: its GLMM 1's input."""
    return [language_scored(wc.model, wc.language, d) for d in DATASETS]


def language_glmm1_path(language, model, prompt):
    return f"{LANG_DIR}/{language}/glmm1/{model}/{prompt}.parquet"


def language_prompt_file(wc):
    return str(LANGUAGE_FORMATS[wc.language].path)


def language_prompt_entry(wc):
    fmt = LANGUAGE_FORMATS[wc.language]
    return json.dumps({"stop": list(fmt.stop), "style": fmt.style}, sort_keys=True)
