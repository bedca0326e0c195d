"""One display rule for an estimate (issue 42.1): a degenerate fit is never shown as a number or as
a finding, in any table earnest writes.

Every table is rendered from real summaries (laplace fits of simulated data, through
build_summaries) in which every fit is then made degenerate with marker numbers no real fit has
(odds ratio 123456.789, interval [111111.1, 999999.9], P 0.0004): any marker digit in a
Markdown or LaTeX table is a degenerate estimate shown as a number, and a bold cell or a
significance mark is a degenerate fit shown as a finding (every fit is degenerate here).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from earnest.stats.run import run_glmm
from earnest.stats.simulate import simulate_glmm_input
from earnest.stats.summaries import build_summaries

OR, LO, HI = 123456.789, 111111.1, 999999.9
MARKERS = ("123456", "111111", "999999", "123,456", "1.23e", "1.11e", "1e+06", "11.72", "11.62", "13.82", "23.45")
P, P_HOLM = 0.0004, 0.0008
LABELS = {"gsm": "GSM prompt (Ex1)", "simple_code": "Ex2.C simple code prompt"}
REPO = Path(__file__).resolve().parents[1]


def _degenerate(s: pd.DataFrame) -> pd.DataFrame:
    """Every row degenerate, with the marker numbers and a P far below any alpha."""
    s = s.copy()
    s["degenerate"] = True
    s["fit_verdict"] = "degenerate"
    s["fit_problems"] = "complete separation (simulated for the display test)"
    s["odds_ratio"], s["ci_low"], s["ci_high"] = OR, LO, HI
    s["median_log_or"], s["ci_low_log"], s["ci_high_log"] = math.log(OR), math.log(LO), math.log(HI)
    s["wald_estimate"] = math.log(OR)
    s["p_boot"], s["p_holm"], s["wald_p"] = P, P_HOLM, P
    # the summaries' verdicts for a degenerate fit (build_summaries): never significant
    s["significant_uncorrected"] = s["significant_holm"] = False
    return s


@pytest.fixture(scope="module")
def summaries(tmp_path_factory) -> pd.DataFrame:
    frames = [simulate_glmm_input(12, 6, variant_effect=e, intercept=1.0, ranef_sd=0.5, seed=s, model=m, prompt=p)
              for s, (m, e) in enumerate((("gemma-2b", -0.8), ("gemma-2b-it", -0.3)))
              for p in LABELS]
    df = pd.concat(frames, ignore_index=True)
    out = tmp_path_factory.mktemp("fits")
    rows = [run_glmm(df, g, 20, 7, out, engine="laplace", check_resamples=0, log=lambda m: None)[0] for g in (1, 2)]
    s = build_summaries(pd.concat(rows, ignore_index=True), LABELS, alpha=0.05,
                        ex2_models=["gemma-2b", "gemma-2b-it"], source="simulated fits")
    return _degenerate(s)


def _shown(paths) -> str:
    """The text of every Markdown and LaTeX file among ``paths`` (files or folders)."""
    files = []
    for p in map(Path, paths):
        files += sorted(p.rglob("*")) if p.is_dir() else [p]
    files = [f for f in files if f.suffix in (".md", ".tex")]
    assert files, "no table was written"
    return "\n".join(f"--- {f.name}\n{f.read_text()}" for f in files)


def _assert_no_degenerate_finding(text: str):
    for marker in MARKERS:
        assert marker not in text, f"a degenerate fit's number ({marker}) is shown:\n{_around(text, marker)}"
    # bold cells: Markdown **x**, LaTeX \textbf
    assert not re.search(r"\*\*[^*\n]+\*\*", text), f"a degenerate fit shown in bold:\n{_around(text, '**')}"
    assert "\\textbf" not in text, _around(text, "\\textbf")


def _around(text: str, needle: str) -> str:
    i = text.find(needle)
    return text[max(0, i - 600): i + 200]


def test_degenerate_fixture_is_what_the_tables_read(summaries):
    assert summaries["degenerate"].all() and len(summaries) >= 8
    assert set(summaries["glmm"]) == {1, 2} and set(summaries["prompt"]) == set(LABELS)


def test_paper_tables(summaries, tmp_path):
    from earnest.gsm.paper_tables import write_stats_tables

    written = write_stats_tables(summaries, tmp_path / "stats", models=["gemma-2b", "gemma-2b-it"],
                                 prompts=list(LABELS), code_prompts=[])
    text = _shown([tmp_path / "stats"])
    assert len(written) >= 5
    _assert_no_degenerate_finding(text)
    # the P values are still shown (with the degenerate mark), never as a finding
    assert "<0.001" in text and "§" in text


def test_sensitivity_table(summaries, tmp_path):
    from earnest.gsm.sensitivity import compare_modes, write_sensitivity

    other = summaries.copy()
    other["fidelity"] = "reference"
    table = compare_modes({"earnest": summaries, "reference": other})
    write_sensitivity(table, tmp_path / "sensitivity", ["earnest", "reference"], regenerated=False, alpha=0.05,
                      prompt_labels=LABELS, models=["gemma-2b", "gemma-2b-it"])
    text = _shown([tmp_path])
    _assert_no_degenerate_finding(text)
    assert "§" in text


def test_ex4_table(summaries):
    from earnest.gsm.ex4 import side_by_side, side_by_side_markdown

    parts = []
    for analysis in ("all", "matched", "variants_matched"):
        part = summaries[summaries["analysis"] == "all"].copy()
        part["analysis"] = analysis
        parts.append(part)
    s = pd.concat(parts, ignore_index=True)
    contrast = pd.DataFrame({"model": ["gemma-2b", "gemma-2b-it"], "contrast_ratio": OR, "contrast_ci_low": LO,
                             "contrast_ci_high": HI, "contrast_p": P, "contrast_p_holm": P_HOLM,
                             "contrast_p_bound": np.nan, "contrast_degenerate": True,
                             "contrast_median_log_diff": math.log(OR),
                             "contrast_significant_holm": False})
    table = side_by_side(s, "gsm", 0.05, contrast)
    text = side_by_side_markdown(table, 0.05)
    _assert_no_degenerate_finding(text)
    assert not re.search(r"\d\*", text), "a significance star on a degenerate fit"
    assert (table["differs"].fillna("").isin(["", "n/a"])).all()


def test_published_comparison(summaries, tmp_path):
    from earnest.gsm.published import TABLE4_COLUMNS, TABLE5_COLUMNS, compare_published, write_comparison
    from earnest.tables import read_table

    pub = REPO / "resources" / "published"
    comparison = compare_published(summaries, read_table(pub / "table4_accuracy.csv", TABLE4_COLUMNS),
                                   read_table(pub / "table5_variant_delta.csv", TABLE5_COLUMNS), prompt="gsm")
    assert len(comparison) == 2
    write_comparison(comparison, tmp_path / "published", prompt_label=LABELS["gsm"])
    _assert_no_degenerate_finding(_shown([tmp_path]))


def test_results_mde_table(summaries, tmp_path):
    from earnest.stats.power import write_results_mde_table

    write_results_mde_table(summaries, tmp_path / "results_mde")
    text = _shown([tmp_path])
    _assert_no_degenerate_finding(text)
    assert "yes" not in (tmp_path / "results_mde.md").read_text(), "a degenerate fit called significant"


def test_compare_pairs_table(tmp_path):
    from earnest.stats.compare import PAIR_COLUMNS, write_pairs_table

    row = {c: np.nan for c in PAIR_COLUMNS}
    row.update(family="prompts", fixed="m", a="gsm", b="simple_code", n_items=20, n_templates=4, acc_a=1.0,
               acc_b=0.0, odds_ratio=OR, ci_low=LO, ci_high=HI, p_boot=P, p_holm=P_HOLM, p_mcnemar=P,
               p_mcnemar_holm=P_HOLM, fit_verdict="degenerate", fit_problems="complete separation",
               degenerate=True, significant_holm=False, p_mcnemar_holm_below_alpha=True, agq=1, item_effects=True,
               n_clean=20, n_resamples=20, n_ab=10, n_ba=0, median_log_or=math.log(OR), ci_low_log=math.log(LO),
               ci_high_log=math.log(HI))
    write_pairs_table(pd.DataFrame([row]), tmp_path / "pairs", alpha=0.05)
    text = _shown([tmp_path])
    for marker in MARKERS:
        assert marker not in text, _around(text, marker)
    # the pair's own GLMM is no finding; its McNemar test (no model fitted) still stands, in bold
    lines = [x for x in (tmp_path / "pairs.md").read_text().splitlines() if x.startswith("|")]
    cells = dict(zip([c.strip() for c in lines[0].strip("|").split("|")],
                     [c.strip() for c in lines[2].strip("|").split("|")]))
    assert cells["OR [95% CI]"] == "§" and cells["p / Holm"] == "§"     # no P beside the mark (issue 50.4)
    assert cells["McNemar p / Holm"].startswith("**")


def test_cross_lingual_table(tmp_path):
    from earnest.stats.crosslingual import SUMMARY_COLUMNS, write_cross_table

    rows = []
    for kind, lang in (("language_variant", "eng"), ("language_variant", "fra"), ("interaction", "fra")):
        r = {c: np.nan for c in SUMMARY_COLUMNS}
        r.update(model="m", prompt="gsm", kind=kind, language=lang, term="variant", reference="eng",
                 random="template", odds_ratio=OR, ci_low=LO, ci_high=HI, p_boot=P, p_holm=P_HOLM,
                 degenerate=True, significant_holm=False, acc_base=50.0, acc_variants=40.0)
        rows.append(r)
    write_cross_table(pd.DataFrame(rows), tmp_path / "cross")
    _assert_no_degenerate_finding(_shown([tmp_path]))


def test_statform_pairwise_table(tmp_path):
    from earnest.statform.glmm import write_pairwise_table

    pairs = pd.DataFrame([{"outcome": "correct_fg", "prompt": "zero_shot", "model_a": "a", "model_b": "b",
                           "odds_ratio": OR, "estimate": math.log(OR), "se": 0.5, "z": math.log(OR) / 0.5,
                           "p": P, "p_holm": P_HOLM, "degenerate": True}])
    write_pairwise_table(pairs, tmp_path / "pairs", alpha=0.05)
    _assert_no_degenerate_finding(_shown([tmp_path]))
