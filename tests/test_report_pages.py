"""The report's own pages (earnest.gsm.report): the findings show the verdicts the summaries record
(never recomputed) with the § rule explained at its first use; the answers page lists every answer;
the statistics tables get labels."""

import re

import pandas as pd
import pytest
from docutils.core import publish_parts

from earnest.gsm.report import (DEGENERATE_EXPLAINED, answers_frame, findings_frame, findings_rst, stats_table_labels,
                            write_answers, write_findings)


def _record(model, glmm, term, verdict, p, degenerate=False, **kw):
    return {"analysis": "all", "glmm": glmm, "model": model, "prompt": "gsm", "term": term, "verdict": verdict,
            "verdict_reason": kw.get("reason", ""), "degenerate": degenerate, "odds_ratio": 0.5, "ci_low": 0.3,
            "ci_high": 0.8, "p_value": p, "p_holm": min(1.0, 2 * p), "p_source": "bootstrap", "acc_base": 0.9,
            "acc_variants": 0.8, "delta_var": -10.0, "alpha": 0.05}


def test_findings_show_the_recorded_verdict_and_explain_the_mark(tmp_path):
    rows = [
        # the record says "not significant" at P 0.01: the page must show the record, not re-judge it
        _record("m_1", 1, "variant", "not significant", 0.01),
        _record("m_1", 2, "gamma_c", "significant", 0.002),
        _record("m_1", 2, "variant", "significant before Holm only", 0.03),
        _record("zeta", 1, "variant", "not estimable", float("nan"), degenerate=True,
                reason="no correct answer at all"),
        {**_record("zeta", 1, "variant", "significant", 0.001), "analysis": "reasoning_only"},  # not the main analysis
    ]
    frame = findings_frame(pd.DataFrame(rows), {"gsm": "GSM prompt (Ex1)"})
    assert frame["Verdict"].tolist() == ["not significant", "significant", "significant before Holm only",
                                         "not estimable §"]
    assert frame["Effect"].tolist()[:3] == ["variant effect (GLMM 1)", "large-number effect (GLMM 2)",
                                            "variant effect corrected for the large-number effect (GLMM 2)"]
    assert frame["Odds ratio [95% CI]"].tolist()[-1] == "§" and frame["Why"].iloc[-1] == "no correct answer at all"
    rst = findings_rst(frame)
    body = publish_parts(rst, writer="html")["body"]
    assert "<strong>m_1</strong>" in body and "<em>not significant</em> (OR 0.50 [0.30, 0.80], P 0.010)" in body
    assert body.count("with the GSM prompt (Ex1)") == 2   # once per model
    assert rst.count("§ marks a degenerate fit") == 1 and DEGENERATE_EXPLAINED.split(":")[0] in body
    html, rst_path = write_findings(pd.DataFrame(rows), tmp_path / "findings.html", {"gsm": "GSM prompt (Ex1)"})
    assert rst_path.read_text() == rst and "<td>not estimable §</td>" in html.read_text()


def test_findings_refuse_summaries_without_verdicts():
    with pytest.raises(KeyError, match="verdict_reason"):
        findings_frame(pd.DataFrame([{k: v for k, v in _record("m", 1, "variant", "x", 0.1).items()
                                      if k != "verdict_reason"}]))


def test_answers_page_lists_every_answer(tmp_path):
    scored = pd.DataFrame({
        "item_id": ["t0-base", "t0-v1"], "dataset": ["gsm_variants", "gsm_base"][::-1], "template_id": [0, 0],
        "instance": [-1, 1], "answer": ["12", "15"], "extracted": [12.0, None], "correct": [True, False],
        "error_class": ["", "no_number_found"], "response": ["x" * 1000 + " The final answer is 12", "<b>?</b>"]})
    frame = answers_frame(scored)
    # wrong answers first (the ones to look at)
    assert frame["Instance"].tolist() == ["1", "original"] and frame["Correct"].tolist() == ["no", "yes"]
    shown = frame["Answer (its end)"].iloc[1]
    assert shown.endswith("The final answer is 12") and len(shown) == 401 and shown.startswith("…")
    page = write_answers(scored, tmp_path / "a.html", "m", "GSM prompt (Ex1)").read_text()
    assert "2 answers, 1 correct, 1 wrong" in page and "left out" not in page and "&lt;b&gt;?&lt;/b&gt;" in page and "<b>?</b>" not in page


def test_answers_page_is_bounded_wrong_answers_first_and_says_where_the_rest_are(tmp_path):
    """Issue 55: on the paper's grid one answers page reached tens of MB. With max_rows (config
    report.answers_max_rows) it shows the first rows, wrong answers first, then unjudged, then right,
    and says how many were left out and where all of them are."""
    n = 7
    scored = pd.DataFrame({
        "item_id": [f"t{i}-v1" for i in range(n)], "dataset": "gsm_variants", "template_id": list(range(n)),
        "instance": 1, "answer": "3", "extracted": 3.0, "correct": [True, False, True, False, False, True, True],
        "error_class": ["", "wrong_answer", "", "infrastructure_error", "no_number_found", "", ""],
        "response": "The answer is 3", "sample": 0}, index=[0] * n)     # an index label per row is not assumed
    sources = ["results/scored/m/gsm/gsm_base.parquet", "results/scored/m/gsm/gsm_variants.parquet"]
    path = write_answers(scored, tmp_path / "a.html", "m", "GSM prompt (Ex1)", max_rows=3, sources=sources,
                         inspect_dir="results/inspect/m/gsm")
    page = path.read_text()
    body = page.split("<tbody>", 1)[1]
    assert body.count("<tr>") == 3
    assert [f"t{i}-v1" for i in (1, 4, 3)] == [c for c in re.findall(r"<td>(t\d-v1)</td>", body)]
    assert "<td>not judged</td>" in body
    assert "7 answers, 4 correct, 2 wrong, 1 not judged" in page and "4 left out (config report.answers_max_rows = 3)" in page
    assert all(s in page for s in sources) and "inspect view --log-dir results/inspect/m/gsm" in page
    assert "Sample" in page.split("<tbody>", 1)[0]
    whole = write_answers(scored, tmp_path / "b.html", "m", "GSM prompt (Ex1)", max_rows=7).read_text()
    assert whole.split("<tbody>", 1)[1].count("<tr>") == 7 and "left out" not in whole
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match=r"max_rows .*config report\.answers_max_rows"):
            write_answers(scored, tmp_path / "c.html", "m", "p", max_rows=bad)
    assert not (tmp_path / "c.html").exists()


def test_stats_table_labels():
    labels = {"simple_code": "Ex2.C simple code prompt"}
    assert stats_table_labels("glmm2_bootstrap_gamma_c_simple_code", labels) == {
        "table": "bootstrap statistics, GLMM 2 large-number effect (Tables 16-18)",
        "prompt": "Ex2.C simple code prompt", "model": "all models"}
    assert stats_table_labels("fit_problems", labels)["prompt"] == "all prompts"
    assert stats_table_labels("nonconvergent_glmm2", labels)["table"].endswith("GLMM 2")
