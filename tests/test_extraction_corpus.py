"""Extraction by locale (issue 51): the issue's cases one by one, per language, and the corpus of
native-style answers (tests/data/extraction_corpus/, >= 25 per shipped language) read at >= 95%."""

import math
from pathlib import Path

import pytest
import yaml

from earnest.gsm.extraction import extract_text
from earnest.gsm.failure_classes import NUMBER_IN_WORDS
from earnest.gsm.locales import LOCALES, integers_in

CORPUS = Path(__file__).parent / "data" / "extraction_corpus"


def _read(language):
    return yaml.safe_load((CORPUS / f"{language}.yaml").read_text(encoding="utf-8"))


def _right(found, want) -> bool:
    if want == "words":
        return found.error_class == NUMBER_IN_WORDS
    return found.value is not None and math.isclose(found.value, float(want), rel_tol=1e-12)


@pytest.mark.parametrize("language, text, want", [
    # a decimal comma before three digits is a decimal where the language writes decimal commas
    ("fra", "Chaque part pèse 0,125 kg. La réponse finale est 0,125.", 0.125),
    ("deu", "Die endgültige Antwort lautet 0,125.", 0.125),
    ("ita", "La risposta finale è 0,125.", 0.125),
    ("rus", "Окончательный ответ: 0,125", 0.125),
    ("rus", "Окончательный ответ: 1,250 кг", 1.25),
    ("rus", "Бюджет 12,000 рублей. Окончательный ответ: 12,000", 12000),   # the package's own grouping
    ("deu", "Die endgültige Antwort lautet 1.250,5", 1250.5),               # another group says thousands
    # MGSM's cues
    ("fra", "Il en reste 12. La réponse est 12.", 12),
    ("deu", "Es bleiben 7 übrig, also 5 Äpfel. Die Antwort lautet 5.", 5),
    ("rus", "Осталось 3 яблока, потом 4. Ответ: 7", 7),
    ("zho", "剩下 3 個，再買 4 個。答案是 7。", 7),
    ("jpn", "3個残り、4個買います。答えは7です。", 7),
    ("tha", "เหลือ 3 ผล ซื้อเพิ่ม 4 ผล คำตอบคือ 7 ผล", 7),
    ("hin", "३ बचे, ४ और खरीदे। उत्तर: ७", 7),
    ("ara", "بقي 3 واشترى 4. الإجابة: 7", 7),
    # a sign after a cue
    ("rus", "Окончательный ответ -3", -3),
    ("rus", "Окончательный ответ — 3", 3),
    # fullwidth digits and separators
    ("zho", "最終答案是 １，２３４。", 1234),
    ("jpn", "最終的な答えは１，２３４です。", 1234),
    ("zho", "100，100 - 30 = 70。最終答案是 70。", 70),
    # multipliers
    ("zho", "最終答案是 3萬。", 30000),
    ("zho", "答案是2.5万元", 25000),
    ("kor", "최종 답은 3만 원입니다.", 30000),
    ("jpn", "最終的な答えは1.5万円です。", 15000),
    ("hin", "अंतिम उत्तर है २ लाख।", 200000),
    ("deu", "Die endgültige Antwort lautet 1,5 Mio. Euro.", 1500000),
    ("fra", "La réponse finale est 2 millions.", 2000000),
    ("rus", "Окончательный ответ: 5 тыс. рублей", 5000),
    # an Arabic line beginning "س:" (also the letter of x) does not end the answer
    ("ara", "لنفكر.\nس: عدد التفاح المتبقي\nس = 15 - 3\nالإجابة النهائية هي 12", 12),
    # a number written only in words: its own error class
    ("deu", "Die endgültige Antwort lautet zwölf.", "words"),
    ("kor", "최종 답은 열두 개입니다.", "words"),
])
def test_issue_cases(language, text, want):
    assert _right(extract_text(text, language=language), want), extract_text(text, language=language)


def test_swahili_shilling_amounts_count_for_gamma():
    assert integers_in("Alinunua kwa Sh50 na KSh1,200, si x2.", "swh") == [50, 1200]


def test_nothing_read_before_a_new_question_stays_empty():
    assert extract_text("\nس: سؤال جديد", language="ara").error_class == "empty_after_trimming"


SHIPPED = sorted(LOCALES)


def test_corpus_covers_every_shipped_language():
    assert sorted(p.stem for p in CORPUS.glob("*.yaml")) == SHIPPED
    for language in SHIPPED:
        assert len(_read(language)) >= 25, language


@pytest.mark.parametrize("language", SHIPPED)
def test_corpus_read_as_a_native_reader_would(language):
    cases = _read(language)
    misses = [(c["t"], c["want"], extract_text(c["t"], language=language)) for c in cases
              if not _right(extract_text(c["t"], language=language), c["want"])]
    assert (len(cases) - len(misses)) / len(cases) >= 0.95, misses
