"""The paper's table layouts from summary rows (no R needed)."""

import numpy as np
import pandas as pd
import pytest

from earnest.gsm import paper_tables as PT
from earnest.stats.summaries import build_summaries


def _row(model, prompt, glmm, term, p, wald_p, analysis="all", **kw):
    r = {"analysis": analysis, "glmm": glmm, "model": model, "prompt": prompt, "term": term,
         "n_resamples": 100, "n_clean": 97, "n_errors": 0, "n_singular": 0, "median_log_or": -0.5,
         "odds_ratio": float(np.exp(-0.5)), "ci_low_log": -1.0, "ci_high_log": 0.1, "ci_low": float(np.exp(-1)),
         "ci_high": float(np.exp(0.1)), "p_boot": p, "ranef_var_mean": 5.0, "ranef_var_sd": 1.0,
         "acc_base": 19.0, "acc_variants": 12.04, "delta_var": -6.96, "n_base": 100, "n_variants": 5000,
         "wald_estimate": -0.5, "wald_se": 0.2, "wald_z": -2.5, "wald_p": wald_p, "wald_converged": True,
         "wald_singular": False, "wald_max_grad": 1e-5, "wald_tol": 0.002, "wald_messages": "", "wald_ranef_var": 6.53}
    r.update(kw)
    return r


def _summaries(labels=None):
    rows = [
        _row("gemma-2b", "gsm", 1, "variant", 0.030, 0.01),
        _row("phi-2", "gsm", 1, "variant", 0.0004, 0.0001),
        _row("gemma-2-2b", "gsm", 1, "variant", 0.321, 0.02, wald_converged=False,
             wald_messages="Model failed to converge with max|grad| = 0.160006 (tol = 0.002, component 1)"),
    ]
    for prompt in ("gsm", "simple_code"):
        for model in ("gemma-2b", "phi-2"):
            rows.append(_row(model, prompt, 2, "variant", 0.2, 0.3))
            rows.append(_row(model, prompt, 2, "gamma_c", 0.003, 0.06))
    rows.append(_row("gemma-2b", "simple_code", 1, "variant", 0.0496, 0.04))
    rows.append(_row("gemma-2b", "simple_code", 1, "variant", 0.067, 0.04, analysis="reasoning_only",
                     n_variants=4975, median_log_or=-0.465))
    return build_summaries(pd.DataFrame(rows), labels)


def test_variant_effect_table_layout():
    s = _summaries()
    d, raw, bold = PT.variant_effect_table(s, "gsm", models=["phi-2"])
    assert list(d.columns) == ["Model", "Ā GSM-Base", "Ā GSM-Variants", "Δvar", "P value", "Corrected P value"]
    assert d["Model"].tolist() == ["phi-2", "gemma-2b", "gemma-2-2b"]
    assert d["P value"].tolist() == ["<0.001", "0.030", "0.321 ‡"]
    # Holm over 3 models: 0.0004*3, 0.03*2, 0.321
    assert raw["p_holm"].tolist() == pytest.approx([0.0012, 0.06, 0.321])
    assert d["Corrected P value"].tolist() == ["0.001", "0.060", "0.321"]
    assert bold["P value"].tolist() == [True, True, False]
    assert bold["Corrected P value"].tolist() == [True, False, False]


def test_all_tables_written(tmp_path):
    s = _summaries({"gsm": "GSM prompt (Ex1)", "simple_code": "code-simple"})
    glmm_input = pd.DataFrame({"model": "phi-2", "prompt": "gsm", "template": [0, 0, 1, 1],
                               "variant": [0, 1, 0, 1], "correct": [1, 0, 1, 1]})
    refits = pd.DataFrame({"analysis": "all", "glmm": 1, "model": "gemma-2-2b", "prompt": "gsm",
                           "optimiser": ["bobyqa", "bobyqa", "Nelder_Mead", "Nelder_Mead"],
                           "term": ["(Intercept)", "variant"] * 2, "estimate": [-2.358318, -0.3157934, -2.358322, -0.3157909],
                           "converged": [True, True, False, False], "singular": False, "messages": "", "error": ""})
    paths = PT.write_stats_tables(s, tmp_path, refits=refits, glmm_input=glmm_input, code_prompts=["simple_code"])
    names = {p.name for p in paths}
    for stem in ("glmm1_variant_gsm", "glmm1_bootstrap_gsm", "glmm2_gamma_c", "glmm2_variant", "wald_mismatch",
                 "nonconvergent_glmm1", "nonconvergent_glmm2", "optimiser_refits", "separation_gsm",
                 "reasoning_only_glmm1_simple_code"):
        assert {f"{stem}.csv", f"{stem}.md", f"{stem}.tex"} <= names, stem
    grid = (tmp_path / "glmm2_gamma_c.md").read_text()
    assert "| Model | GSM prompt (Ex1) | code-simple |" in grid
    assert "**0.61; 0.003 ‡ / 0.006**" in grid
    boot = (tmp_path / "glmm1_bootstrap_gsm.md").read_text()
    # the full-data fit's random-intercept variance and its square root, as the paper prints them
    assert "| gemma-2b | 0.61 | [0.37, 1.11] | 6.53 ± 2.56 | 97 |" in boot
    # captions name the prompt once, whether or not its label already says "prompt"
    assert "*Additional statistics for the GSM prompt (Ex1), GLMM 1 " in boot
    assert "with the GSM prompt (Ex1), as returned by GLMM 1" in (tmp_path / "glmm1_variant_gsm.md").read_text()
    ro = (tmp_path / "reasoning_only_glmm1_simple_code.md").read_text()
    assert "analysis for the code-simple prompt (layout of Tables 20-21)" in ro
    # a P value below alpha is never shown as alpha itself (0.0496 would round to a bold "0.050")
    assert "| gemma-2b * | -7.0 | **0.0496** | -7.0 | 0.067 | 0.5 | 0.035 |" in ro
    nc = pd.read_csv(tmp_path / "nonconvergent_glmm1.csv")
    assert nc["diagnostics"].tolist() == ["max|grad| = 0.160006 (tol = 0.002, component 1)"]
    opt = (tmp_path / "optimiser_refits.md").read_text()
    assert "-0.315793" in opt and "Nelder_Mead" in opt


def test_glmm2_grid_corrects_across_the_prompts_of_each_model():
    """Tables 14-15: Holm within a model's row (its prompts), not within a prompt's column."""
    rows = []
    for model, ps in (("a", (0.01, 0.02, 0.5)), ("b", (0.04, 0.3, 0.03))):
        for prompt, p in zip(("gsm", "simple_nl", "simple_code"), ps):
            rows.append(_row(model, prompt, 2, "gamma_c", p, p))
            rows.append(_row(model, prompt, 2, "variant", 0.5, 0.5))
    s = build_summaries(pd.DataFrame(rows))
    _, raw, _ = PT.glmm2_grid_table(s, "gamma_c")
    got = raw.set_index(["model", "prompt"])["p_holm"]
    assert got[("a", "gsm")] == pytest.approx(0.03)            # 3 x 0.01 within model a
    assert got[("a", "simple_nl")] == pytest.approx(0.04)      # 2 x 0.02
    assert got[("b", "simple_code")] == pytest.approx(0.09)    # 3 x 0.03 within model b
    assert got[("b", "gsm")] == pytest.approx(0.09)            # max(2 x 0.04, 0.09)


def test_glmm2_tables_name_another_covariate(tmp_path):
    s = _summaries()
    s["covariate"] = np.where(s["glmm"] == 2, "carries", "")
    PT.write_stats_tables(s, tmp_path)
    assert "the covariate carries (centred; in the term gamma_c)" in (tmp_path / "glmm2_gamma_c.md").read_text()
    assert "(covariate carries)" in (tmp_path / "glmm2_bootstrap_gamma_c_gsm.md").read_text()
    plain = tmp_path / "plain"
    PT.write_stats_tables(_summaries(), plain)
    assert "the large-number effect" in (plain / "glmm2_gamma_c.md").read_text()


def test_a_degenerate_fit_prints_the_mark_in_place_of_its_odds_ratio():
    """Tables 3 and 14-15 print a degenerate fit's odds ratio and interval as the degenerate mark (the
    same rule as Ex4's and the sensitivity table's: earnest.wording.format_estimate), never its number."""
    sep = dict(median_log_or=-14.0, odds_ratio=float(np.exp(-14.0)), ci_low_log=-400.0, ci_high_log=-12.0,
               ci_low=float(np.exp(-400.0)), ci_high=float(np.exp(-12.0)))
    rows = [_row("a", "gsm", 1, "variant", 0.0, 0.2, **sep), _row("b", "gsm", 1, "variant", 0.03, 0.02),
            _row("a", "gsm", 2, "variant", 0.0, 0.2, **sep), _row("a", "gsm", 2, "gamma_c", 0.003, 0.06)]
    s = build_summaries(pd.DataFrame(rows))
    assert s.loc[(s.model == "a") & (s.glmm == 1), "degenerate"].all()
    d, _ = PT.bootstrap_stats_table(s, "gsm")
    a = d.set_index("Model").loc["a"]
    assert a["Odds ratio"] == "§" and a["95% CI"] == "[§, §]"
    assert d.set_index("Model").loc["b", "Odds ratio"] == "0.61"
    grid, _, bold = PT.glmm2_grid_table(s, "variant")
    assert grid.iloc[0, 1].startswith("§; ") and not bold.iloc[0, 1]
