"""Figures drawn from small hand-made summaries tables (earnest.stats.summaries.build_summaries):
files exist and are not trivial, hatching follows the table's significant_uncorrected column, degenerate values
do not crash, missing columns are named."""

import math

import numpy as np
import pandas as pd
import pytest

from earnest.gsm import plots
from earnest.gsm.error_table import ERROR_TABLE_COLUMNS, error_class_table, write_error_class_table
from earnest.stats.summaries import build_summaries, figure2_models, read_summaries, write_summaries
from earnest.tables import TableColumnError, read_table

PROMPTS = ["gsm", "simple_nl", "structured_nl", "simple_code", "structured_code"]
STYLES = {"gsm": "text", "simple_nl": "text", "structured_nl": "text", "simple_code": "code",
          "structured_code": "code"}


def summary_rows(models, prompts, p=0.2, est=-0.4, ex2=()):
    """The summaries table of these models x prompts (GLMM 1 variant; GLMM 2 variant, gamma_c)."""
    rows = []
    for i, m in enumerate(models):
        for j, pr in enumerate(prompts):
            for glmm, term in ((1, "variant"), (2, "variant"), (2, "gamma_c")):
                e = est + 0.05 * i - 0.03 * j
                rows.append(dict(analysis="all", glmm=glmm, model=m, prompt=pr, term=term, n_resamples=200,
                                 n_clean=195, n_errors=0, n_singular=5, median_log_or=e, odds_ratio=math.exp(e),
                                 ci_low_log=e - 0.5, ci_high_log=e + 0.5, ci_low=math.exp(e - 0.5),
                                 ci_high=math.exp(e + 0.5), p_boot=p, acc_base=60.0 - i, acc_variants=55.0 - i,
                                 delta_var=-5.0, n_base=100, n_variants=5000, ranef_var_mean=1.0,
                                 ranef_var_sd=0.2, wald_estimate=np.nan, wald_se=np.nan, wald_p=np.nan,
                                 wald_converged=None, wald_singular=None, wald_max_grad=np.nan, wald_tol=np.nan,
                                 wald_messages=""))
    return build_summaries(pd.DataFrame(rows), {"gsm": "GSM prompt (Ex1)"}, ex2_models=ex2)


def assert_figure(paths, min_png=8000):
    png, pdf = paths
    assert png.suffix == ".png" and pdf.suffix == ".pdf"
    assert png.stat().st_size > min_png
    assert pdf.exists() and pdf.stat().st_size > 1000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ---------------------------------------------------------------- significance / hatching
def test_bars_are_hatched_exactly_where_the_table_says_not_significant():
    plt = plots._plt()
    table = summary_rows(["a", "b", "c"], ["gsm"]).query("glmm == 1")
    table["significant_uncorrected"] = [True, False, True]
    fig, ax = plt.subplots()
    plots._hbars(ax, np.arange(3), table["delta_var"].to_numpy(), plots._hatch(table), "red")
    hatches = [bar.get_hatch() for bar in ax.patches]
    plt.close(fig)
    assert hatches == [None, plots._HATCH, None]


# ---------------------------------------------------------------- Figure 1
def test_figure_variant_effect_one_model_from_the_written_table(tmp_path):
    path = write_summaries(summary_rows(["SmolLM2-135M"], ["gsm"], p=0.03), tmp_path / "stats" / "summaries.parquet")
    s = read_summaries(path)
    assert s["significant_uncorrected"].all() and set(s["prompt_label"]) == {"GSM prompt (Ex1)"}
    assert_figure(plots.figure_variant_effect(s, "gsm", tmp_path / "fig1"))


def test_figure_variant_effect_twenty_models_with_degenerate_rows(tmp_path):
    models = [f"model-{i}" for i in range(20)]
    s = summary_rows(models, ["gsm"])
    g1 = (s.glmm == 1)
    s.loc[g1 & (s.model == "model-3"), ["median_log_or", "ci_low_log", "ci_high_log", "p_boot"]] = np.nan
    s.loc[g1 & (s.model == "model-3"), "n_clean"] = 0
    s.loc[g1 & (s.model == "model-5"), ["median_log_or", "ci_low_log", "ci_high_log"]] = [np.inf, 3.0, np.inf]
    s.loc[g1 & (s.model == "model-6"), ["median_log_or", "ci_low_log", "ci_high_log"]] = [-40.0, -80.0, -1.0]
    s.loc[g1 & (s.model == "model-7"), "delta_var"] = np.nan
    s.loc[g1 & (s.model == "model-8"), "degenerate"] = True
    back = read_summaries(write_summaries(s, tmp_path / "summaries.parquet"))
    assert np.isinf(back.loc[(back.glmm == 1) & (back.model == "model-5"), "median_log_or"]).all()
    assert_figure(plots.figure_variant_effect(back, "gsm", tmp_path / "fig1_20", models=models[::-1]),
                  min_png=30000)


def test_figure_for_a_prompt_without_results_says_so(tmp_path):
    s = summary_rows(["m"], ["gsm"])
    assert_figure(plots.figure_variant_effect(s, "simple_code", tmp_path / "none"), min_png=3000)


# ---------------------------------------------------------------- Figures 2 and 3
@pytest.mark.parametrize("n_models", [1, 8])
def test_figures_2_and_3(tmp_path, n_models):
    models = [f"m{i}" for i in range(n_models)]
    s = summary_rows(models, PROMPTS, p=0.01, ex2=models)
    s = pd.concat([s, summary_rows(["gsm-only"], ["gsm"])])  # an Ex1-only model stays out of Figures 2-3
    s.loc[(s.model == "m0") & (s.prompt == "simple_code") & (s.glmm == 2), "median_log_or"] = np.nan
    s.loc[(s.model == "m0") & (s.prompt == "simple_nl") & (s.glmm == 2) & (s.term == "variant"),
          "median_log_or"] = 25.0
    s.loc[(s.model == "m0") & (s.prompt == "structured_nl"), ["degenerate", "significant_uncorrected"]] = [True, False]
    shown = figure2_models(s)
    assert shown == models
    assert_figure(plots.figure_prompt_comparison(s, PROMPTS, tmp_path / "fig2", models=shown))
    assert_figure(plots.figure_number_effect(s, PROMPTS, tmp_path / "fig3", models=shown))


def test_degenerate_fits_are_marked_in_figure_2(tmp_path):
    s = summary_rows(["a", "b"], ["gsm", "simple_nl"], p=0.01, ex2=["a", "b"])
    s.loc[s.model == "a", ["degenerate", "significant_uncorrected"]] = [True, False]
    plt = plots._plt()
    fig, ax = plt.subplots()
    sub = plots._select(s, glmm=1, term="variant")
    plots._grouped(ax, ["a", "b"], ["gsm", "simple_nl"], plots._cells(sub, "delta_var"),
                   dict(zip(zip(sub.model, sub.prompt), plots._hatch(sub))), {"gsm": "red", "simple_nl": "blue"},
                   marks=plots._flags(sub, "degenerate"))
    marks = [t for t in ax.texts if t.get_text() == plots.DEGENERATE_MARK]
    hatches = [bar.get_hatch() for bar in ax.patches]
    plt.close(fig)
    assert len(marks) == 2                                    # both prompts of model a
    assert hatches == [plots._HATCH, plots._HATCH, None, None]  # degenerate = not significant


def test_ex2_models_fall_back_to_all_models_without_ex2_results():
    s = summary_rows(["b", "a"], ["gsm"])
    assert figure2_models(s) == ["b", "a"]
    assert figure2_models(summary_rows(["b", "a"], ["gsm"], ex2=["a"])) == ["a"]


def test_figure_3_with_only_glmm1_results(tmp_path):
    s = summary_rows(["m"], ["gsm"])
    s = s[s.glmm == 1]
    assert_figure(plots.figure_number_effect(s, PROMPTS, tmp_path / "fig3"))


# ---------------------------------------------------------------- missing columns
def test_missing_column_names_file_and_column(tmp_path):
    path = tmp_path / "summaries.parquet"
    summary_rows(["m"], ["gsm"]).drop(columns=["significant_uncorrected"]).to_parquet(path)
    with pytest.raises(ValueError, match=r"summaries\.parquet: missing column\(s\) significant_uncorrected"):
        read_summaries(path)
    with pytest.raises(FileNotFoundError, match="nowhere.parquet"):
        read_summaries(tmp_path / "nowhere.parquet")


def test_figure_functions_check_columns():
    with pytest.raises(TableColumnError, match="delta_var"):
        plots.figure_prompt_comparison(summary_rows(["m"], ["gsm"]).drop(columns=["delta_var"]), PROMPTS, "x")


# ---------------------------------------------------------------- Figures 9-11
def scored(models):
    rows = []
    for m in models:
        rows.append(pd.DataFrame({"model": m, "prompt": "gsm", "dataset": "gsm_variants",
                                  "error_class": ["", "", "wrong_answer", "wrong_answer", "empty_response",
                                                  "wrong_answer_last_number"]}))
        rows.append(pd.DataFrame({"model": m, "prompt": "gsm", "dataset": "gsm_base",
                                  "error_class": ["", "no_number_found"]}))
        rows.append(pd.DataFrame({"model": m, "prompt": "simple_code", "dataset": "gsm_variants",
                                  "error_class": ["", "wrong_answer", "syntax_error", "syntax_error", "name_error"]}))
    return pd.concat(rows, ignore_index=True)


def test_error_class_table_counts():
    t = error_class_table(scored(["a"]), STYLES)
    assert list(t.columns) == list(ERROR_TABLE_COLUMNS)
    cell = t.set_index(["prompt", "dataset", "error_class"])
    assert cell.loc[("gsm", "gsm_variants", "wrong_answer"), "count"] == 2
    assert cell.loc[("gsm", "gsm_variants", "wrong_answer"), "n_responses"] == 6
    assert cell.loc[("gsm", "gsm_variants", "no_number_found"), "count"] == 0  # listed with zero
    assert cell.loc[("simple_code", "gsm_variants", "syntax_error"), "count"] == 2
    assert cell.loc[("simple_code", "gsm_variants", "syntax_error"), "percent_of_responses"] == 40.0
    assert cell.loc[("simple_code", "gsm_variants", "syntax_error"), "label"] == "Syntax error"
    # text classes are not listed for a code prompt
    assert "empty_response" not in set(t[t.prompt == "simple_code"].error_class)
    # an answer the machine failed to run: its own class, listed only where there is one (issue 53.4)
    assert "infrastructure_error" not in set(t.error_class)
    df = scored(["a"])
    df.loc[df.index[-1], "error_class"] = "infrastructure_error"
    cell = error_class_table(df, STYLES).set_index(["prompt", "dataset", "error_class"])
    assert cell.loc[("simple_code", "gsm_variants", "infrastructure_error"), "count"] == 1
    assert cell.loc[("simple_code", "gsm_variants", "infrastructure_error"), "label"] == "Not run (machine failure)"


@pytest.mark.parametrize("mode, listed, absent", [("reference", "Forbidden string", "Forbidden construct"),
                                                   ("earnest", "Forbidden construct", "Forbidden string")])
def test_error_class_table_lists_the_forbidden_label_of_its_mode(mode, listed, absent):
    # the label comes from earnest.gsm.failure_classes, once per class; each mode lists only its own
    t = error_class_table(scored(["a"]), STYLES, fidelity=mode)
    code = t[(t.prompt == "simple_code") & (t.dataset == "gsm_variants")]
    assert list(code["label"]).count(listed) == 1
    assert absent not in set(t["label"])
    assert ("Timeout" in set(code["label"])) == (mode == "earnest")


def test_error_class_table_needs_styles_and_columns():
    with pytest.raises(ValueError, match="simple_code"):
        error_class_table(scored(["a"]), {"gsm": "text"})
    with pytest.raises(TableColumnError, match="error_class"):
        error_class_table(scored(["a"]).drop(columns=["error_class"]), STYLES)


@pytest.mark.parametrize("n_models", [1, 20])
def test_error_figures_from_the_written_table(tmp_path, n_models):
    models = [f"model-{i}" for i in range(n_models)]
    table = error_class_table(scored(models), STYLES)
    paths = write_error_class_table(table, tmp_path / "error_classes")
    assert set(paths) == {"csv", "md", "tex"}
    md = paths["md"].read_text()
    assert "Syntax error" in md and "Wrong answer — last number" in md
    back = read_table(paths["csv"], ERROR_TABLE_COLUMNS)
    assert back["count"].sum() == table["count"].sum()
    assert_figure(plots.figure_error_classes(back, ["gsm", "simple_nl"], tmp_path / "fig9"))
    assert_figure(plots.figure_error_classes(back, ["simple_code", "structured_code"], tmp_path / "fig10",
                                             datasets=["gsm_variants"]))
    assert_figure(plots.figure_error_classes(back, ["simple_code"], tmp_path / "fig11", datasets=["gsm_variants"],
                                             exclude=["wrong_answer"], proportions=True))


def test_error_figure_without_code_prompts_says_so(tmp_path):
    table = error_class_table(scored(["a"])[lambda d: d.prompt == "gsm"], STYLES)
    assert_figure(plots.figure_error_classes(table, ["simple_code"], tmp_path / "fig10"), min_png=3000)


def test_empty_error_table_is_written(tmp_path):
    table = error_class_table(pd.DataFrame(columns=["model", "prompt", "dataset", "error_class"]), STYLES)
    paths = write_error_class_table(table, tmp_path / "error_classes")
    assert "No scored answers" in paths["md"].read_text()
