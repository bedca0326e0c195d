"""StatFormBench analyses beyond the paper's tables: a constant outcome is "not estimable" for that
outcome only, strategies compared paired with a test and Holm, the truncation share, the stratified
``limit``, the config checks that used to fail late or not at all, and the empty-build error."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from earnest.statform.analysis import paired_test, strategy_tests, truncation_table
from earnest.statform.data import DataError, load_samples, stratified_limit
from earnest.statform.metrics import score_generations
from earnest.statform.pipeline import analyse
from earnest.statform.taxonomy import load_taxonomy, taxonomy_for

RES = Path(__file__).resolve().parents[1] / "resources" / "statform"
SAMPLES = load_samples(RES / "sample.jsonl")
TAX = taxonomy_for(SAMPLES, RES / "taxonomy.yaml")


def _scored(answer, models=("a", "b"), prompt="zero_shot", stop=lambda m, i: "eos"):
    rows = []
    for m in models:
        for i, s in enumerate(SAMPLES):
            rows.append({"item_id": s.sample_id, "model": m, "prompt": prompt, "response": answer(m, i, s),
                         "stop_reason": stop(m, i)})
    return score_generations(pd.DataFrame(rows), SAMPLES, TAX)


def _answer(cat, s):
    return json.dumps({"category": cat, "variables": {v.id: v.to_dict() for v in s.variables}})


def test_a_constant_outcome_is_not_estimable_and_the_rest_is_written(tmp_path):
    # both models name the right coarse category on some samples and never the right fine one: ACC_FG is 0
    # for every answer, so its GLMM cannot be fitted; ACC_CG varies and is fitted
    def answer(m, i, s):
        right = i % 2 == 0 if m == "a" else i % 3 == 0
        return _answer(f"{s.category_cg if right else 'Clustering'}\\Not A Fine Category", s)

    scored = _scored(answer)
    assert not scored["correct_fg"].any() and scored["correct_cg"].nunique() == 2
    path = tmp_path / "scored.parquet"
    scored.to_parquet(path)
    written = analyse([path], tmp_path / "tables", tmp_path / "figures", n_boot=50)
    fg = pd.read_csv(tmp_path / "tables" / "glmm_fg.csv")
    assert fg.loc[0, "result"].startswith("not estimable: every answer of every model scores correct_fg = 0")
    cg = pd.read_csv(tmp_path / "tables" / "glmm_cg.csv")
    assert list(cg[["model_a", "model_b"]].iloc[0]) == ["a", "b"] and np.isfinite(cg.loc[0, "p"])
    names = {Path(p).name for p in written}
    assert {"main.csv", "truncation.csv", "fidelity_sensitivity.csv", "category_accuracy.png",
            "confusion_fine_a.png"} <= names


def test_strategies_are_compared_paired_with_holm():
    def base(m, i, s):
        return _answer(s.category if i % 2 else "Clustering\\Clustering", s)

    def better(m, i, s):
        return _answer(s.category, s)

    scored = pd.concat([_scored(base, ("a",), "zero_shot"), _scored(better, ("a",), "few_shot_2")], ignore_index=True)
    tests = strategy_tests(scored, "zero_shot").set_index("metric")
    n_wrong = sum(1 for i in range(len(SAMPLES)) if i % 2 == 0)
    fg = tests.loc["ACC_FG"]
    assert fg["test"] == "exact McNemar" and fg["note"] == f"0 lost, {n_wrong} gained"
    assert fg["difference"] == pytest.approx(n_wrong / len(SAMPLES))
    assert fg["p"] == pytest.approx(2 * 0.5 ** n_wrong)
    # the variable metrics do not differ: no test, no P; Holm over the tests made
    assert np.isnan(tests.loc["JCV", "p"]) and tests.loc["JCV", "note"] == "no sample differs"
    tested = tests["p"].notna().sum()
    assert tests.loc["ACC_FG", "p_holm"] == pytest.approx(min(1.0, tested * fg["p"]))
    assert bool(tests.loc["ACC_FG", "significant_after_holm"]) and not tests.loc["JCV", "significant_after_holm"]


def test_paired_test_of_a_variable_metric():
    base = np.array([0.0, 0.5, 0.5, 1.0, 0.2, 0.3])
    other = base + np.array([0.1, 0.2, -0.05, 0.0, 0.3, 0.4])
    stat, p, note = paired_test(base, other, "JCV")
    from scipy.stats import wilcoxon

    assert p == pytest.approx(wilcoxon(other - base).pvalue) and note == "5 samples differ"


def test_truncation_share_per_model_and_strategy():
    scored = _scored(lambda m, i, s: _answer(s.category, s), stop=lambda m, i: "max_new_tokens" if m == "a" and i < 5 else "eos")
    t = truncation_table(scored).set_index("model")
    assert t.loc["a", "hit_max_new_tokens"] == 5 and t.loc["b", "hit_max_new_tokens"] == 0
    assert t.loc["a", "share"] == pytest.approx(5 / len(SAMPLES))


def test_limit_is_a_seeded_sample_stratified_by_source_and_category():
    picked = stratified_limit(SAMPLES, 10, seed=3)
    assert len(picked) == 10 and picked == stratified_limit(SAMPLES, 10, seed=3)
    assert {s.source for s in picked} == {"textbook", "case"}          # the first 10 samples are all textbook
    assert [s.source for s in SAMPLES[:10]].count("case") == 0
    n_case = sum(s.source == "case" for s in SAMPLES)
    assert sum(s.source == "case" for s in picked) == round(10 * n_case / len(SAMPLES))
    assert picked == [s for s in SAMPLES if s in picked]                 # in the file's order
    assert stratified_limit(SAMPLES, 10, seed=4) != picked
    assert stratified_limit(SAMPLES, 0) == SAMPLES and stratified_limit(SAMPLES, 1000) == SAMPLES
    with pytest.raises(DataError, match="statform.limit: -3 must be a whole number >= 0"):
        stratified_limit(SAMPLES, -3)


def _config(**statform):
    import yaml

    from earnest.config import validate_schema

    root = Path(__file__).resolve().parents[1]
    cfg = yaml.safe_load((root / "config" / "config.yaml").read_text())
    cfg["statform"].update(statform)
    return validate_schema(cfg, root / "config" / "schema.yaml")


@pytest.mark.parametrize("statform, message", [
    ({"strategies": {}, "main_strategy": "zero_shot"}, "statform.strategies: no prompting strategy"),
    ({"strategies": {"zero_shot": {"kind": "zero_shot"}, "fs": {"kind": "few_shot", "k": 1000}}},
     "statform.strategies.fs.k: 1000 examples per prompt, but the few-shot pool resources/statform/fewshot_pool.jsonl holds 6"),
    ({"strategies": {"zero_shot": {"kind": "zero_shot"}, "d": {"kind": "definitions"}},
      "taxonomy": "resources/statform/taxonomy_release.yaml", "fewshot_pool": "resources/statform/fewshot_pool_release.json"},
     "statform.strategies.d: the definitions strategy needs a taxonomy with definitions"),
])
def test_statform_config_problems_stop_before_any_job(statform, message):
    from earnest.config import ConfigError, _check_statform

    with pytest.raises(ConfigError) as err:
        _check_statform(_config(**statform), Path(__file__).resolve().parents[1])
    assert message in str(err.value)


def test_an_empty_build_is_an_error(tmp_path):
    from earnest.statform.build.final import finalize

    sample = {"sample_id": "e1-1", "unit": "e1", "entry_id": "e1", "source": "textbook", "status": "active",
              "stage": "rewrite", "reason": "", "flags": [], "label": {"category": "Mean Test"},
              "background": "b", "question": "q"}
    with pytest.raises(ValueError, match=r"the build holds no sample for the benchmark \(1 created; outcomes "
                                         r"\{'pending_review': 1\}.*statform_build.review.decisions"):
        finalize([sample], {}, load_taxonomy(RES / "taxonomy.yaml"), True, tmp_path / "b.jsonl", tmp_path / "s.parquet",
                 tmp_path / "t.yaml")
    assert not (tmp_path / "b.jsonl").exists()


def test_figures_3_and_5(tmp_path):
    from earnest.statform.data import samples_to_frame
    from earnest.statform.figures import fewshot_points, write_paper_figures

    def answer(m, i, s):
        return _answer(s.category, s)

    scored = pd.concat([_scored(answer, ("a",), "zero_shot"), _scored(answer, ("a",), "fs1"),
                        _scored(answer, ("a",), "fs3")], ignore_index=True)
    strategies = {"zero_shot": {"kind": "zero_shot"}, "fs1": {"kind": "few_shot", "k": 1},
                  "fs3": {"kind": "few_shot", "k": 3}}
    points = fewshot_points(scored, strategies)
    assert sorted(points["k"].unique()) == [0, 1, 3] and set(points["metric"]) == {"ACC_FG", "JCV", "VRI"}
    samples = tmp_path / "samples.parquet"
    samples_to_frame(SAMPLES).to_parquet(samples)
    paths = write_paper_figures(scored, tmp_path, samples_path=samples, strategies=strategies)
    written = {p.name for p in paths}
    assert written == {f"{n}.{ext}" for n in ("dataset_statistics", "category_accuracy", "fewshot") for ext in ("png", "pdf", "svg")}
    import re

    from earnest.plotting import REPORT_WIDTH_PT

    for svg in (p for p in paths if p.suffix == ".svg"):     # shown at full size in the report
        assert float(re.search(r'<svg[^>]*?width="([\d.]+)pt"', svg.read_text()).group(1)) <= REPORT_WIDTH_PT, svg


def test_silent_and_vague_inputs_now_name_file_and_key(tmp_path):
    from earnest.statform.data import check_disjoint, check_known_categories, parse_record

    rec = {"sample_id": "s1", "source": "textbook", "background": "", "question": "q?",
           "category": "Descriptive Statistics\\Measures of Dispersion"}
    with pytest.raises(DataError, match=r"data.jsonl:3 \(sample s1\): field 'variables' is missing"):
        parse_record(rec, "data.jsonl:3")
    odd = parse_record({**rec, "category": "Descriptive Statistics\\Vibes", "variables": {}}, "data.jsonl:3")
    with pytest.raises(DataError, match=r"data.jsonl: sample s1: category 'Descriptive Statistics\\\\Vibes' is not in the taxonomy"):
        check_known_categories([odd], TAX, "data.jsonl")
    pool = [parse_record({**rec, "sample_id": "p9", "variables": {}}, "pool.jsonl:1")]
    with pytest.raises(DataError, match=r"the few-shot pool \(pool.jsonl\) and the evaluation set \(data.jsonl\) share 1 "
                                         r"question text\(s\), e.g. sample s1 of the evaluation set and sample p9 of the pool"):
        check_disjoint([parse_record({**rec, "variables": {}}, "data.jsonl:3")], pool, "data.jsonl", "pool.jsonl")


def test_a_wide_confusion_matrix_fits_the_report_at_full_size(tmp_path):
    """The paper's fine matrix (15 true labels) with a model that predicts 30 other labels was 26 in
    wide, shown in the report at a third of its size: it stays within the report's width, every share
    of a row kept (the least chosen other labels in one column), and the file's labels name its model."""
    import re

    from earnest.plotting import REPORT_WIDTH_PT
    from earnest.statform.analysis import OTHER_LABEL, UNPARSED_LABEL, file_name_of, fit_columns, plot_confusion
    from earnest.statform.figures import figure_labels

    rows = [f"Coarse category number {i}\\Fine category number {i}" for i in range(15)]
    cols = rows + [f"Predicted elsewhere {j}" for j in range(30)] + [UNPARSED_LABEL]
    cm = pd.DataFrame(np.random.default_rng(1).random((15, len(cols))), index=rows, columns=cols)
    cm = cm.div(cm.sum(axis=1), axis=0)
    fitted = fit_columns(cm, 24)
    assert fitted.shape == (15, 24) and list(fitted.columns[:15]) == rows
    assert fitted.columns[-1] == OTHER_LABEL and UNPARSED_LABEL in fitted.columns
    assert np.allclose(fitted.sum(axis=1), 1.0)
    assert fit_columns(cm.iloc[:, :20], 24).equals(cm.iloc[:, :20])          # what fits is left as it is
    model = "org/model:v1"
    paths = plot_confusion(cm, f"{model}: fine categories", tmp_path / f"confusion_fine_{file_name_of(model)}")
    width = float(re.search(r'<svg[^>]*?width="([\d.]+)pt"', paths["svg"].read_text()).group(1))
    assert width <= REPORT_WIDTH_PT, width
    assert paths["png"].read_bytes()[:4] == b"\x89PNG" and paths["pdf"].read_bytes()[:4] == b"%PDF"
    assert figure_labels(paths["svg"].stem, ["other", model]) == {
        "figure": "confusion matrix, fine categories (L2)", "model": model, "dataset": "StatFormBench"}
    assert figure_labels("category_accuracy", [model])["model"] == "all models"
