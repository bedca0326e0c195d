"""GSM-Symbolic in other languages (issue 44): items with the same numbers in every language,
prompts per language, extraction and gamma in each locale's number style, the cross-lingual GLMM,
and published comparisons for English only. English behaviour is checked unchanged here too."""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from earnest.gsm import locales
from earnest.gsm.extraction import extract_text
from earnest.gsm.gamma import gamma, integers_in
from earnest.gsm.prompts import PromptFormatError, built_languages, language_format, load_formats

multilingual = pytest.importorskip("multilingual_gsm_symbolic")

LANGS = ("fra", "hin", "ara")          # French (Latin), Hindi (Devanagari digits), Arabic (Arabic script)
#: every language with a built prompt: the MGSM set (Spanish and Bengali have too few templates in the
#: package: Italian and Korean instead) and the three above
PROMPT_LANGS = LANGS + ("deu", "rus", "zho", "jpn", "swh", "tel", "tha", "ita", "kor")
#: each prompt's question and answer labels
LABELS = {"fra": ("Q : ", "R : "), "hin": ("प्रश्न: ", "उत्तर: "), "ara": ("س: ", "ج: "), "deu": ("F: ", "A: "),
          "rus": ("В: ", "О: "), "zho": ("問：", "答："), "jpn": ("問：", "答："), "swh": ("S: ", "J: "),
          "tel": ("ప్రశ్న: ", "జవాబు: "), "tha": ("คำถาม: ", "คำตอบ: "), "ita": ("D: ", "R: "),
          "kor": ("질문: ", "답변: ")}
SHOT_ANSWERS = [6, 5, 39, 8, 9, 29, 33, 8]


# ----------------------------------------------------------------------------- extraction, gamma

@pytest.mark.parametrize("language, response, value, pattern", [
    # French: decimal comma, thousands by space / NBSP / narrow NBSP / dot / apostrophe
    ("fra", "La réponse finale est 6,5.", 6.5, "final_answer"),
    ("fra", "Il reste donc 1 234 euros.", 1234, "last_number"),
    ("fra", "La réponse finale est 1\u00a0234.", 1234, "final_answer"),
    ("fra", "La réponse finale est 1\u202f234,5 €.", 1234.5, "final_answer"),
    ("fra", "La réponse finale est 2.700.000.", 2700000, "final_answer"),
    ("fra", "La réponse finale est 1'234.", 1234, "final_answer"),
    ("fra", "La réponse finale est de 12 euros.", 12, "final_answer"),
    ("fra", "la réponse finale est : **-3,25**", -3.25, "final_answer"),
    ("fra", "Donc 23 - 15 = 8. The final answer is 8.", 8, "final_answer"),   # the English cue counts too
    ("fra", "Elle a 6.5 kg.", 6.5, "last_number"),             # a dot that cannot group is a decimal point
    ("fra", "La réponse finale est 3/4.", 0.75, "final_answer"),
    ("fra", "R : 3 + 2 = 5. La réponse finale est 5.\nQ : Il y a 7 arbres.", 5, "final_answer"),
    # Hindi: Devanagari digits, the verb-final cue, Indian grouping
    ("hin", "तो ५ + ४ = ९। अंतिम उत्तर है ९।", 9, "final_answer"),
    ("hin", "अंतिम उत्तर १२,३४५ है।", 12345, "final_answer"),
    ("hin", "कुल मिलाकर १,२३,४५६ रुपये।", 123456, "last_number"),
    ("hin", "अंतिम उत्तर है 42।", 42, "final_answer"),
    ("hin", "अंतिम उत्तर है २.५।", 2.5, "final_answer"),
    ("hin", "अंतिम उत्तर है ८।\nप्रश्न: राहुल के पास ३ सेब हैं।", 8, "final_answer"),
    # Arabic: Arabic-Indic and Eastern Arabic-Indic digits, the Arabic decimal and thousands signs
    ("ara", "الإجابة النهائية هي ٦٫٥.", 6.5, "final_answer"),
    ("ara", "الإجابة النهائية هي ١٬٢٣٤.", 1234, "final_answer"),
    ("ara", "إذن بقي ۱۲۳۴ ريالًا.", 1234, "last_number"),
    ("ara", "الإجابة النهائية هي \u200f42\u200f.", 42, "final_answer"),
    ("ara", "الإجابة النهائية هي 1,500 ريال.", 1500, "final_answer"),
    ("ara", "ج: 5 + 4 = 9. الإجابة النهائية هي 9.\nس: لدى علي 3 تفاحات.", 9, "final_answer"),
    # German: decimal comma, dot / space / apostrophe thousands
    ("deu", "Die endgültige Antwort lautet 8.", 8, "final_answer"),
    ("deu", "Die endgültige Antwort lautet 6,5 Euro.", 6.5, "final_answer"),
    ("deu", "Die endgültige Antwort lautet 1.234.", 1234, "final_answer"),
    ("deu", "Sie hat also 12 000 Euro.", 12000, "last_number"),
    ("deu", "Die endgültige Antwort lautet 1'234,5.", 1234.5, "final_answer"),
    ("deu", "A: 3 + 2 = 5. Die endgültige Antwort lautet 5.\nF: Anna hat 7 Äpfel.", 5, "final_answer"),
    # Italian: as German
    ("ita", "La risposta finale è 8.", 8, "final_answer"),
    ("ita", "La risposta finale è 2,25 euro.", 2.25, "final_answer"),
    ("ita", "La risposta finale è 2.700.000.", 2700000, "final_answer"),
    ("ita", "Quindi restano 1\u00a0234 euro.", 1234, "last_number"),
    ("ita", "la risposta finale e' 7", 7, "final_answer"),
    # Russian: the package's English-style numbers (12,000) and Russian ones (2,5; 12 000), the dash cue
    ("rus", "Окончательный ответ: 8.", 8, "final_answer"),
    ("rus", "Окончательный ответ: 6,5 рубля.", 6.5, "final_answer"),
    ("rus", "Окончательный ответ — 12,000 рублей.", 12000, "final_answer"),
    ("rus", "Окончательный ответ – 8.", 8, "final_answer"),           # an en dash after the cue is no minus
    ("rus", "Итого 1\u00a0234,5 рубля.", 1234.5, "last_number"),
    ("rus", "Окончательный ответ: -3.", -3, "final_answer"),
    ("rus", "О: 3 + 2 = 5. Окончательный ответ: 5.\nВ: У Ивана 7 яблок.", 5, "final_answer"),
    # Chinese (Traditional, as the package; Simplified read too): fullwidth digits and stop, ， never groups
    ("zho", "最終答案是 8。", 8, "final_answer"),
    ("zho", "最终答案：１２．５", 12.5, "final_answer"),
    ("zho", "最終答案是 1,234 美元。", 1234, "final_answer"),
    ("zho", "45 + 55 = 100，100 - 30 = 70。所以還剩70", 70, "last_number"),
    ("zho", "最終答案是 $2.5。", 2.5, "final_answer"),
    ("zho", "答：3 + 2 = 5。最終答案是 5。\n問：志明有 7 顆蘋果。", 5, "final_answer"),
    # Japanese: fullwidth digits, the yen sign, 、 between list items
    ("jpn", "最終的な答えは8です。", 8, "final_answer"),
    ("jpn", "最終的な答えは８です。", 8, "final_answer"),
    ("jpn", "最終的な答えは￥1,500です。", 1500, "final_answer"),
    ("jpn", "最終的な答えは2.5キロです。", 2.5, "final_answer"),
    ("jpn", "それぞれ3、4、5個なので合計12個", 12, "last_number"),
    # Korean
    ("kor", "최종 답은 8입니다.", 8, "final_answer"),
    ("kor", "최종 답은 1,234달러입니다.", 1234, "final_answer"),
    ("kor", "최종 답은 2.5입니다.", 2.5, "final_answer"),
    ("kor", "답변: 3 + 2 = 5. 최종 답은 5입니다.\n질문: 민수는 사과 7개가 있습니다.", 5, "final_answer"),
    # Swahili
    ("swh", "Jibu la mwisho ni 8.", 8, "final_answer"),
    ("swh", "Jibu la mwisho ni 2.5.", 2.5, "final_answer"),
    ("swh", "Jibu la mwisho ni $1,234.", 1234, "final_answer"),
    ("swh", "J: 3 + 2 = 5. Jibu la mwisho ni 5.\nS: Juma ana maembe 7.", 5, "final_answer"),
    # Telugu: Telugu digits
    ("tel", "తుది సమాధానం 8.", 8, "final_answer"),
    ("tel", "తుది సమాధానం ౮.", 8, "final_answer"),
    ("tel", "తుది సమాధానం 1,234 డాలర్లు.", 1234, "final_answer"),
    ("tel", "తుది సమాధానం: 2.5", 2.5, "final_answer"),
    # Thai: Thai digits
    ("tha", "คำตอบสุดท้ายคือ 8", 8, "final_answer"),
    ("tha", "คำตอบสุดท้ายคือ ๑๒", 12, "final_answer"),
    ("tha", "คำตอบสุดท้ายคือ 1,234 ดอลลาร์", 1234, "final_answer"),
    ("tha", "คำตอบสุดท้ายคือ 3.5", 3.5, "final_answer"),
    ("tha", "คำตอบ: 3 + 2 = 5 คำตอบสุดท้ายคือ 5\nคำถาม: อนุชามีแอปเปิล 7 ลูก", 5, "final_answer"),
])
def test_extraction_reads_each_locale(language, response, value, pattern):
    got = extract_text(response, language=language)
    assert got.error_class == ""
    assert got.pattern == pattern
    assert got.value == pytest.approx(value)


def test_english_extraction_is_unchanged():
    # the examples, English extraction: what it did before, and does still
    assert extract_text("La réponse finale est 6,5.").value == 5.0
    assert extract_text("1 234").value == 234.0
    for r in ("The final answer is 1,234.5.", "so 3 + 4 = 7", "The final answer is -3/4"):
        assert extract_text(r, language="eng") == extract_text(r)


def test_other_languages_have_no_reference_mode():
    with pytest.raises(ValueError, match="English-only"):
        extract_text("La réponse finale est 6.", language="fra", fidelity="reference")
    with pytest.raises(ValueError, match="English-only"):
        gamma("Il a 12 pommes.", language="fra", fidelity="reference")


def test_nothing_to_extract():
    assert extract_text("", language="hin").error_class == "empty_response"
    assert extract_text("\nप्रश्न: ...", language="hin").error_class == "empty_after_trimming"
    assert extract_text("aucune réponse", language="fra").error_class == "no_number_found"


@pytest.mark.parametrize("language, text, integers", [
    ("fra", "Il a acheté 1,5 kg de pommes.", []),                  # a decimal, not the integers 1 and 5
    ("fra", "Un budget de 2.700.000 euros et 3 maisons.", [2700000, 3]),
    ("fra", "Il a 12 000 billes et 1/2 gâteau.", [12000]),
    ("hin", "अमित ने ३-मीटर लंबी शार्क देखी, जिससे २ १५-सेंटीमीटर लंबी मछलियाँ चिपकी थीं।", [3, 2, 15]),
    ("hin", "१२,००० रुपये", [12000]),
    ("ara", "رأى أحمد سمكة قرش طولها 3 أمتار و٢ من سمك الرمورا", [3, 2]),
    ("deu", "Ein Budget von 2.700.000 Euro, 1,5 kg und 3 Häuser.", [2700000, 3]),
    ("ita", "Ha 12.000 biglie e 0,75 litri.", [12000]),
    ("rus", "Бюджет 12,000 рублей, 2,5 кг и 3 дома.", [12000, 3]),       # the package's 12,000; a Russian 2,5
    ("zho", "他有 12,000 元和 １２ 顆蘋果，還有 2.5 公斤。", [12000, 12]),
    ("jpn", "りんごが3、4、5個", [3, 4, 5]),
    ("tha", "มีแอปเปิล ๑๒ ลูก และ 3 ลูก", [12, 3]),
])
def test_integers_as_the_locale_writes_them(language, text, integers):
    assert integers_in_locale(text, language) == integers
    assert gamma(text, language=language) == pytest.approx(sum(math.log10(max(abs(n), 1)) for n in integers))


def integers_in_locale(text, language):
    return locales.integers_in(text, language)


def test_english_gamma_is_unchanged():
    text = "Benny saw a 10-foot shark with 2 6-inch remoras; $1,200 and 2.5 and 1/2."
    assert gamma(text, language="eng") == gamma(text)
    assert integers_in(text) == [10, 2, 6, 1200]


def test_the_locale_table_is_the_packages_rendering():
    from multilingual_gsm_symbolic._helpers import format_numbers_by_language

    texts = ["It costs 12000 dollars and 2.5 more, <<12000*2.5=30000.0>>30000.0 total.\n#### 30000.5",
             "He has 3 apples and 1234567 pears, 0.75 each. #### 4",
             "A 10.25 m rope; 99999 and 100000.5.\n#### 12"]
    for lang in ("eng", "fra", "deu", "swe", "hin", "mar", "ara", "jpn", "ita", "nob"):
        for text in texts:
            assert locales.render_numbers(text, lang) == format_numbers_by_language(text, lang), (lang, text)


# ----------------------------------------------------------------------------- items

@pytest.fixture(scope="module")
def english():
    from earnest.gsm.instantiate import load_templates
    return load_templates("eng")


TEMPLATES = [1, 2, 38, 44, 0]      # 0 is localised in every language here (feet -> metres)


@pytest.mark.parametrize("language", LANGS)
def test_instance_k_has_the_english_numbers(language, english):
    from earnest.gsm.instantiate import instantiate, instantiate_language, parse_value

    for t in TEMPLATES:
        e = instantiate(t, 4, 1000 + t, templates=english)
        d = instantiate_language(t, 4, 1000 + t, language, english=english)
        assert len(d.instances) == 4
        if t == 0:
            assert not d.aligned and "other choices" in d.alignment
            continue
        if not d.aligned:      # e.g. French template 38 is priced in euros: its own draw, said why
            assert d.alignment
            continue
        for ie, il in zip(e.instances, d.instances):
            num = {k: float(parse_value(v)) for k, v in ie.values.items()
                   if isinstance(parse_value(v), (int, float)) and not isinstance(parse_value(v), bool)}
            for k, v in num.items():
                assert float(parse_value(il.values[k])) == pytest.approx(v), (language, t, k)
            assert float(il.gold) == pytest.approx(float(ie.gold))


def test_the_draws_do_not_depend_on_the_other_languages_or_templates(english):
    from earnest.gsm.instantiate import instantiate_language

    a = instantiate_language(2, 3, 77, "hin", english=english)
    b = instantiate_language(2, 3, 77, "hin")
    assert [i.question for i in a.instances] == [i.question for i in b.instances]


@pytest.mark.parametrize("language", ["fra", "hin"])
def test_the_instances_render_as_the_package_renders(language):
    """earnest's question for an assignment is the package's own format_question of it."""
    from multilingual_gsm_symbolic import load_data

    from earnest.gsm.instantiate import instantiate_language, load_templates

    pkg = {int(t.id_shuffled): t for t in load_data(language)}
    pool = load_templates(language)
    for t in (1, 2, 44):
        d = instantiate_language(t, 2, 5, language, templates=pool)
        for inst in d.instances:
            assert inst.question == pkg[t].format_question(inst.values)


def test_language_items(english):
    from earnest.gsm.datasets import (ITEM_COLUMNS, LANGUAGE_ITEM_COLUMNS, common_templates, controlled_variant_items,
                                      language_items)

    sel = [0, 1, 2, 38]
    frames = {}
    for lang in ("eng", "fra", "hin"):
        items, report = language_items("gsm_variants", lang, sel, 2, 20251130)
        assert list(items.columns) == LANGUAGE_ITEM_COLUMNS
        assert set(items["language"]) == {lang}
        assert list(report["status"]) == ["ok"] * 4
        frames[lang] = items
    eng0, _ = controlled_variant_items("gsm_variants", sel, 2, 20251130)
    pd.testing.assert_frame_equal(frames["eng"][ITEM_COLUMNS], eng0)           # English: the same rows
    for lang in ("fra", "hin"):
        m = frames[lang].merge(frames["eng"], on="item_id", suffixes=("", "_eng"))
        shared = m[m["numbers"] == "shared"]
        assert len(shared) >= 4
        assert (shared["answer"] == shared["answer_eng"]).all()               # same numbers, same gold
        assert (m.loc[m["template_id"] == 0, "numbers"] == "own").all()
    hin = frames["hin"]
    assert hin["question"].str.contains("[०-९]").all()                         # Devanagari digits
    assert hin["answer"].str.fullmatch(r"-?\d+(\.\d+)?").all()                 # gold as ASCII numbers
    base, _ = language_items("gsm_base", "fra", sel, 2, 20251130)
    assert list(base["numbers"]) == ["original"] * 4 and base["question"].str.contains("requin").any()
    assert common_templates(pd.concat([frames["fra"], frames["hin"]])) == sel


def test_numbers_where_english_has_words_are_the_languages_own():
    """Chinese template 74 draws a grade as a number where the English template draws a word: its
    instances draw their own numbers (they crashed the transfer before)."""
    from earnest.gsm.datasets import language_items

    items, report = language_items("gsm_variants", "zho", [74, 1], 2, 20251130)
    row = report.set_index("template_id")
    assert row.loc[74, "numbers"] == "own" and "numbers where English has words" in row.loc[74, "alignment"]
    assert row.loc[1, "numbers"] == "shared" and len(items) == 4


@pytest.mark.parametrize("language, template, reason", [
    ("jpn", 26, "fail the checks"),           # #answer compares with the English "week"
    ("jpn", 40, "names no init variable"),
    ("swh", 47, "no '#### <number>' line"),   # the translated original's answer is -57/2
    ("ita", 17, "fail the checks"),           # #answer lost the English parentheses
    ("tha", 83, "fail the checks"),
])
def test_defective_translations_are_named(language, template, reason):
    """Package 0.5.5 translations earnest refuses (config/multilingual.yaml leaves them out; so does
    it swh's, tel's and kor's template 47, as swh's here)."""
    from earnest.gsm.datasets import DatasetError, language_items

    with pytest.raises(DatasetError, match=rf"'{language}'.*template {template}\b.*{re.escape(reason)}"):
        language_items("gsm_variants", language, [template], 2, 20251130)


def test_absent_templates_and_unknown_languages_are_named():
    from earnest.gsm.datasets import DatasetError, check_languages, language_items

    _, report = language_items("gsm_base", "bel", [0, 1], 1, 1)
    assert "absent" in set(report["status"])
    assert "no active bel translation" in " ".join(report["reason"])
    with pytest.raises(DatasetError, match="'xx1'"):
        check_languages(["eng", "xx1"])


# ----------------------------------------------------------------------------- prompts

def _shots(fmt):
    """The 8 (question, answer) line pairs of a rendered 8-shot prompt."""
    lines = fmt.prefix.split("\n")
    qa = [(lines[i], lines[i + 1]) for i in range(2, len(lines) - 1, 3)]
    return qa[:8]


@pytest.mark.parametrize("language", PROMPT_LANGS)
def test_language_prompts(language):
    english = load_formats()["gsm"]
    fmt = language_format(language, "gsm")
    assert fmt.language == language and fmt.style == "text"
    assert fmt.template.count("\n") == english.template.count("\n")        # 28 lines, as Listing 1
    assert not fmt.template.endswith("\n") and "\r" not in fmt.template
    q_label, a_label = LABELS[language]
    shots = _shots(fmt)
    assert len(shots) == 8
    lines = fmt.template.split("\n")
    assert lines[1] == "" and lines[-2] == q_label + "<Question here>" and lines[-1].startswith(a_label)
    step = lines[-1][len(a_label):]                     # "Let's think step by step." in the language
    for k, ((q, a), (qe, ae)) in enumerate(zip(shots, _shots(english))):
        assert a[len(a_label):].startswith(step)
        assert built_languages()[language]["cue"] in a
        assert q.startswith(q_label) and a.startswith(a_label)
        # the answer cue reads back through the locale's extraction, giving the English shot's answer
        got = extract_text(a, language=language)
        assert (got.pattern, got.value) == ("final_answer", SHOT_ANSWERS[k])
        # the same numbers as the English shot (as sets: Hindi writes "2 each" as "२-२")
        assert {f.value for f in locales.numbers_in(q, language)} == {f.value for f in locales.numbers_in(qe, "eng")}
        assert {f.value for f in locales.numbers_in(a, language)} == {f.value for f in locales.numbers_in(ae, "eng")}
        # and correct arithmetic: the same equations as the English shot's
        equation = r"(\d+) ([-+*x]) (\d+) = (\d+)"
        found = re.findall(equation, locales.ascii_digits(a))
        assert sorted(found) == sorted(re.findall(equation, ae))
        for x, op, y, z in found:
            want = {"+": float(x) + float(y), "-": float(x) - float(y), "*": float(x) * float(y),
                    "x": float(x) * float(y)}[op]
            assert float(z) == want
    rendered = fmt.render("Une question ?")
    assert rendered.endswith(fmt.suffix) and "<Question here>" not in rendered
    assert all(s.startswith("\n") for s in fmt.stop) and "\nQ:" in fmt.stop
    if language == "hin":
        assert not re.search(r"[0-9]", fmt.template.replace("<Question here>", ""))   # Devanagari digits only
    else:                                  # ASCII digits only, as the package's questions of the language
        assert all(c.isascii() for c in fmt.template if c.isdecimal())


def test_english_prompt_bytes_are_unchanged():
    english = load_formats()["gsm"]
    assert language_format("eng", "gsm") == english
    assert english.template.startswith("As an expert problem solver") and english.language == "eng"


def test_a_language_without_a_prompt_is_an_error_naming_it():
    with pytest.raises(PromptFormatError, match="'pol'"):
        language_format("pol", "gsm")
    with pytest.raises(PromptFormatError, match="'fra'.*no 'simple_nl' prompt"):
        language_format("fra", "simple_nl")
    with pytest.raises(PromptFormatError, match="English-only"):
        language_format("fra", "gsm", fidelity="reference")
    assert set(PROMPT_LANGS) <= set(built_languages())


def test_each_built_language_has_its_cue_in_the_locale_table():
    for code, info in built_languages().items():
        if code == "eng":
            continue
        assert code in locales.LOCALES
        shot = f"... {info['cue']} 8."
        assert extract_text(shot, language=code).value == 8


# ----------------------------------------------------------------------------- statistics

@pytest.fixture(scope="module")
def simulated():
    from earnest.stats import crosslingual as C

    # Hindi's variant effect is 1.6 log odds stronger than English's (a known interaction); French's
    # is the same as English's (a known null). The data hold a shared and a template x language
    # template intercept, the structure the default model does not fully model (the bootstrap does).
    # One realisation; over seeds 0-19 of this design the Hindi interval held -1.6 in 19 of 20, the
    # French in 18 of 20, and the Hindi estimate averaged -1.65 (docs/languages.md).
    df = C.simulate(120, ["eng", "fra", "hin"], n_variants=20, variant_effect=-0.6, intercept=0.8,
                    interaction={"hin": -1.6}, language_effects={"fra": -0.2, "hin": -0.4},
                    sd_template=1.0, sd_template_language=0.3, seed=3)
    data = C.validate_cross_input(df)
    shards = C.bootstrap(data, range(200), 2024)
    wald = C.full_fit(data)
    return data, shards, wald, C.summarise(shards, data, model="sim", prompt="gsm", wald=wald)


def test_cross_lingual_model_recovers_a_known_language_effect(simulated):
    _, _, wald, s = simulated
    assert wald.converged
    inter = s[s["kind"] == "interaction"].set_index("language")
    hin = inter.loc["hin"]
    assert hin["ci_low_log"] <= -1.6 <= hin["ci_high_log"]            # recovered within its interval
    assert hin["significant_holm"] and hin["p_holm"] < 0.05
    fra = inter.loc["fra"]                                            # the known null
    assert fra["ci_low_log"] <= 0.0 <= fra["ci_high_log"]
    assert not fra["significant_holm"]
    lv = s[s["kind"] == "language_variant"].set_index("language")
    assert lv.loc["hin", "ci_low_log"] <= -2.2 <= lv.loc["hin", "ci_high_log"]
    assert lv.loc["eng", "ci_low_log"] <= -0.6 <= lv.loc["eng", "ci_high_log"]
    assert (lv["n_clean"] == 200).all() and not lv["degenerate"].any()
    joint = s[s["kind"] == "joint"].iloc[0]
    assert joint["p_boot"] < 0.05


def test_cross_lingual_model_null_is_not_significant():
    from earnest.stats import crosslingual as C

    df = C.simulate(80, ["eng", "fra", "ara"], n_variants=15, variant_effect=-0.7, intercept=0.5,
                    language_effects={"fra": 0.3, "ara": -0.5}, seed=5)
    data = C.validate_cross_input(df)
    s = C.summarise(C.bootstrap(data, range(150), 9), data, wald=C.full_fit(data))
    inter = s[s["kind"].isin(["interaction", "joint"])]
    assert not inter["significant_holm"].any()
    assert (inter[inter["kind"] == "interaction"]["ci_low_log"] <= 0).all()
    assert (inter[inter["kind"] == "interaction"]["ci_high_log"] >= 0).all()


def test_the_bootstrap_draws_the_same_templates_as_glmm1(simulated):
    from earnest.stats import crosslingual as C
    from earnest.stats.engines import laplace

    data, shards, _, _ = simulated
    cd = C.cross_design(data)
    seeds, K = C.resample_weights(cd, [0, 1, 2], 2024)
    s1, K1 = laplace.resample_weights(data["template"].nunique(), [0, 1, 2], 2024)
    assert (seeds == s1).all()
    # a template's weight goes to its clusters in every language
    assert (K == K1[:, cd.cluster_template]).all()
    assert cd.design.n_templates == 3 * data["template"].nunique()
    assert set(shards.drop_duplicates("resample")["seed"]) == set(
        laplace.resample_weights(1, range(200), 2024)[0])


def test_template_only_random_effects_and_holm_per_language(simulated):
    from earnest.stats import crosslingual as C

    data, _, _, _ = simulated
    sub = data[data["template"] < 40]
    sh = C.bootstrap(sub, range(40), 3, random="template")
    s = C.summarise(sh, sub, random="template")
    assert set(s["random"]) == {"template"} and (s[s["kind"] == "term"]["n_clean"] > 30).all()
    g1 = C.per_language_glmm1(sub, range(40), 3)
    assert list(g1["language"]) == ["eng", "fra", "hin"]
    p = g1["p_boot"].where(g1["p_bound"].isna(), g1["p_bound"]).to_numpy()
    order = np.argsort(p, kind="stable")
    assert g1["p_holm_languages"].to_numpy()[order[0]] == pytest.approx(min(1.0, 3 * p[order[0]]))
    with pytest.raises(ValueError, match="lme4"):
        C.bootstrap(sub, range(2), 3, random="both")


def test_lme4_fits_the_same_resamples(simulated):
    from earnest.stats import crosslingual as C

    rbridge = pytest.importorskip("earnest.stats.rbridge")
    try:
        rbridge.check_lme4()
    except Exception as exc:  # noqa: BLE001 - R or lme4 missing
        pytest.skip(f"lme4 unavailable: {exc}")
    data, shards, _, _ = simulated
    r = C.bootstrap(data, [0, 1], 2024, engine="lme4")
    m = r.merge(shards, on=["resample", "term"], suffixes=("_r", "_l"))
    assert len(m) == 12 and (m["seed_r"] == m["seed_l"]).all()
    assert np.allclose(m["estimate_r"], m["estimate_l"], atol=2e-3)
    both = C.bootstrap(data[data["template"] < 30], [0], 1, engine="lme4", random="both")
    assert set(both["term"]) == set(C.terms_for(["eng", "fra", "hin"]))


def test_input_checks():
    from earnest.stats import crosslingual as C
    from earnest.stats.glmm import GLMMInputError

    df = C.simulate(6, ["eng", "fra"], n_variants=2, seed=1)
    with pytest.raises(GLMMInputError, match="different templates"):
        C.validate_cross_input(df[~((df["language"] == "fra") & (df["template"] == 5))])
    assert C.validate_cross_input(df[~((df["language"] == "fra") & (df["template"] == 5))],
                                  common_only=True)["template"].nunique() == 5
    with pytest.raises(GLMMInputError, match="one language"):
        C.validate_cross_input(df[df["language"] == "eng"])
    with pytest.raises(GLMMInputError, match="missing column 'language'"):
        C.validate_cross_input(df.drop(columns=["language"]))
    assert C.order_languages(["fra", "eng", "hin"]) == ["eng", "fra", "hin"]
    assert C.order_languages(["fra", "hin"], "hin") == ["hin", "fra"]


def _scored(df):
    """Scored tables (GSM-Base, GSM-Variants) of simulated answers of one language and model."""
    out = pd.DataFrame({"model": df["model"], "prompt": df["prompt"],
                        "dataset": np.where(df["variant"] == 1, "gsm_variants", "gsm_base"),
                        "template_id": df["template"], "correct": df["correct"].astype(bool), "gamma": 0.0})
    return [out[out["dataset"] == d].reset_index(drop=True) for d in ("gsm_base", "gsm_variants")]


def test_per_language_jobs_give_the_one_job_results(tmp_path):
    """The workflow's per-language GLMM 1 jobs (language_glmm1_from_scored, written and read back as
    parquet) give the cross-lingual job exactly the per-language GLMM 1s it fitted itself before; a
    language fitted on other templates than the common ones is refitted on those."""
    from earnest.gsm.languages import FIT_TEMPLATES, cross_lingual_input, language_glmm1_from_scored, run_cross_lingual
    from earnest.stats import crosslingual as C

    df = C.simulate(30, ["eng", "fra", "hin"], n_variants=6, variant_effect=-0.6, interaction={"hin": -1.0},
                    seed=11)
    scored = {x: _scored(df[df["language"] == x]) for x in ("eng", "fra", "hin")}
    data = cross_lingual_input(scored)
    summary0, glmm0 = run_cross_lingual(data, 30, 7)
    parts = []
    for x, frames in scored.items():
        language_glmm1_from_scored(frames, x, 30, 7).to_parquet(tmp_path / f"{x}.parquet", index=False)
        parts.append(pd.read_parquet(tmp_path / f"{x}.parquet"))
    fitted = pd.concat(parts, ignore_index=True)
    summary1, glmm1 = run_cross_lingual(data, 30, 7, glmm1=fitted)
    pd.testing.assert_frame_equal(summary0, summary1)
    pd.testing.assert_frame_equal(glmm0, glmm1)
    assert glmm0.to_csv(index=False) == glmm1.to_csv(index=False)          # glmm1_by_language.csv, byte for byte
    # French missing a template: the common templates are 29, the others' jobs fitted 30: refitted
    short = dict(scored, fra=[f[f["template_id"] != 0] for f in scored["fra"]])
    assert set(fitted.loc[fitted["language"] == "eng", FIT_TEMPLATES]) == {",".join(map(str, range(30)))}
    _, glmm2 = run_cross_lingual(cross_lingual_input(short), 30, 7, glmm1=fitted)
    pd.testing.assert_frame_equal(glmm2, run_cross_lingual(cross_lingual_input(short), 30, 7)[1])


def test_table_and_figure(simulated, tmp_path):
    from earnest.stats import crosslingual as C

    data, _, _, s = simulated
    paths = C.write_cross_table(s, tmp_path / "cross", names={"eng": "English", "fra": "French", "hin": "Hindi"})
    md = paths["md"].read_text(encoding="utf-8")
    assert "Hindi" in md and "joint test" in md and "reference" in md
    assert len(pd.read_csv(paths["csv"])) == len(s)
    figs = C.plot_language_effects(s, tmp_path / "fig", glmm1=C.per_language_glmm1(data[data["template"] < 30],
                                                                                    range(20), 1))
    assert all(p.exists() and p.stat().st_size > 0 for p in figs)


# ----------------------------------------------------------------------------- published numbers

def test_published_numbers_only_for_english(tmp_path):
    from earnest.gsm.published import COMPARISON_COLUMNS, compare_published, published_note, write_comparison

    assert published_note("eng") == ""
    assert "No published GSM-Symbolic numbers exist" in published_note("fra")
    summaries = pd.DataFrame({"analysis": ["all"] * 2, "glmm": [1, 1], "model": ["m", "m"], "prompt": ["gsm"] * 2,
                              "term": ["variant"] * 2, "acc_base": [50.0, 40.0], "acc_variants": [40.0, 30.0],
                              "delta_var": [-10.0, -10.0], "language": ["eng", "fra"]})
    t4 = pd.DataFrame({c: ["m"] if c == "model" else [1.0] for c in
                       ("model", "gsm_base_m", "gsm_variants_m", "gsm_variants_m_sd", "gsm_base_o", "gsm_variants_o",
                        "gsm_variants_o_sd")})
    t5 = pd.DataFrame({"model": ["m"], "delta_var_mirzadeh": [1.0], "delta_var_ours": [2.0]})
    eng = compare_published(summaries, t4, t5)
    assert len(eng) == 1 and eng["gsm_base_run"].iloc[0] == 50.0          # the English row only
    fra = compare_published(summaries, t4, t5, language="fra")
    assert fra.empty and list(fra.columns) == COMPARISON_COLUMNS
    paths = write_comparison(fra, tmp_path / "published_fra", language="fra")
    assert "No published GSM-Symbolic numbers exist for language 'fra'" in paths["md"].read_text(encoding="utf-8")
    assert Counter(pd.read_csv(paths["csv"]).columns) == Counter(COMPARISON_COLUMNS)


# ----------------------------------------------------------------------------- config

def _config(**gsm):
    base = {"source": "package", "instantiator": "earnest", "languages": ["eng", "fra"], "variants": 2, "seed": 1}
    return {"gsm_symbolic": {**base, **gsm}, "fidelity": "earnest", "prompts_dir": "resources/prompts",
            "experiments": {"ex1_prompt": "gsm"}}


def test_config_checks_the_languages():
    from pathlib import Path

    from earnest.config import ConfigError, _check_languages

    repo = Path(__file__).resolve().parents[1]
    _check_languages(_config(), repo, [0, 1, 2])                      # fine
    _check_languages(_config(languages=["eng"], instantiator="package"), repo, [0, 1])   # English alone: as ever
    with pytest.raises(ConfigError, match="instantiator earnest"):
        _check_languages(_config(instantiator="package"), repo, [0, 1])
    with pytest.raises(ConfigError, match="no 'gsm' prompt is built for language 'pol'"):
        _check_languages(_config(languages=["eng", "pol"]), repo, [0, 1])
    with pytest.raises(ConfigError, match="'swh' has no active translation of template"):
        _check_languages(_config(languages=["eng", "swh"]), repo, list(range(100)))
    with pytest.raises(ConfigError, match="not among the"):
        _check_languages(_config(languages=["eng", "zzz"]), repo, [0, 1])
    cfg = _config()
    cfg["fidelity"] = "reference"
    with pytest.raises(ConfigError, match="English-only"):
        _check_languages(cfg, repo, [0, 1])


def test_scoring_reads_the_language():
    from earnest.gsm.scoring import GENERATION_COLUMNS, score_table

    items = pd.DataFrame({"item_id": ["t001-v00", "t001-v01", "t002-v00"], "dataset": ["gsm_variants"] * 3,
                          "template_id": [1, 1, 2], "instance": [0, 1, 0], "question": ["q"] * 3,
                          "answer": ["6.5", "1234", "8"], "gamma": [0.0] * 3})
    gens = pd.DataFrame({"item_id": items["item_id"], "model": "m", "prompt": "gsm", "dataset": "gsm_variants",
                         "response": [" La réponse finale est 6,5.", " Donc 1 234 euros. La réponse finale est 1 234.",
                                      " 5 + 3 = 8. La réponse finale est 9."],
                         "prompt_tokens": 1, "new_tokens": 1, "stop_reason": "stop",
                         "seconds": 0.0})[GENERATION_COLUMNS]
    fra = score_table(gens, items, "text", language="fra")
    assert list(fra["correct"]) == [True, True, False]
    eng = score_table(gens, items, "text")                         # English reading: both wrong, as before
    assert list(eng["correct"]) == [False, False, False]


def test_number_matched_sets_share_numbers_too():
    from earnest.gsm.datasets import language_items

    eng, _ = language_items("gsm_matched", "eng", [1, 2], 2, 20251130)
    fra, report = language_items("gsm_matched", "fra", [1, 2, 38], 2, 20251130)
    assert dict(zip(report["template_id"], report["numbers"])) == {1: "shared", 2: "shared", 38: "own"}
    m = fra.merge(eng, on="item_id", suffixes=("", "_eng"))
    assert len(m) == 4 and (m["answer"] == m["answer_eng"]).all()
