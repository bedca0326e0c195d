"""Comparison with the published GSM-Symbolic numbers (Tables 4-5 in resources/published)."""

import numpy as np
import pandas as pd
import pytest

from earnest.tables import TableColumnError
from earnest.gsm.published import COMPARISON_COLUMNS, compare_published, load_published, variant_sd, write_comparison


@pytest.fixture(scope="module")
def published(repo):
    return load_published(repo / "resources" / "published")


def summaries(models, prompt="gsm"):
    rows = []
    for i, m in enumerate(models):
        for glmm, term in ((1, "variant"), (2, "variant"), (2, "gamma_c")):
            rows.append(dict(analysis="all", glmm=glmm, model=m, prompt=prompt, term=term, acc_base=50.0 + i,
                             acc_variants=44.0 + i, delta_var=-6.0, n_base=20, n_variants=100, p_boot=0.1))
    return pd.DataFrame(rows)


def test_picks_shared_models_in_paper_order(published):
    t4, t5 = published
    s = pd.concat([summaries(["phi-local", "gemma-2b", "SmolLM2-135M"]), summaries(["gemma-2b"], "simple_nl")])
    c = compare_published(s, t4, t5, prompt="gsm", paper_names={"phi-local": "phi-2"})
    assert list(c.columns) == COMPARISON_COLUMNS
    assert c["model"].tolist() == ["gemma-2b", "phi-local"]  # Table 4's row order; SmolLM2 is not a paper model
    assert c["paper_model"].tolist() == ["gemma-2b", "phi-2"]
    g = c.set_index("paper_model")
    # Table 4: gemma-2b 11.0 / 8.2 (± 2.21) / 19.0 / 12.0; Table 5: 2.8, 7.0; phi-2: 53.0, 60.0, 11.6, 20.3
    assert g.loc["gemma-2b", ["gsm_base_m", "gsm_variants_m", "gsm_variants_m_sd", "gsm_base_o"]].tolist() == \
        [11.0, 8.2, 2.21, 19.0]
    assert g.loc["gemma-2b", ["drop_m", "drop_o"]].tolist() == [2.8, 7.0]
    assert g.loc["phi-2", ["gsm_base_m", "gsm_base_o", "drop_m", "drop_o"]].tolist() == [53.0, 60.0, 11.6, 20.3]
    # this run: GLMM 1 rows of the GSM prompt; Table 5's sign (drop = base - variants = -delta_var)
    assert g.loc["gemma-2b", "gsm_base_run"] == 51.0 and g.loc["gemma-2b", "drop_run"] == 6.0
    assert g.loc["gemma-2b", "drop_run_minus_o"] == pytest.approx(-1.0)
    assert g.loc["phi-2", "drop_run_minus_m"] == pytest.approx(6.0 - 11.6)


def test_no_shared_model_gives_an_empty_table_with_a_note(published, tmp_path):
    t4, t5 = published
    c = compare_published(summaries(["SmolLM2-135M"]), t4, t5)
    assert c.empty and list(c.columns) == COMPARISON_COLUMNS
    paths = write_comparison(c, tmp_path / "published_comparison")
    assert "No model of this run is among the paper's models" in paths["md"].read_text()
    assert pd.read_csv(paths["csv"]).empty


def test_written_table_shows_sizes_and_sd(published, tmp_path):
    t4, t5 = published
    sd = pd.DataFrame({"model": ["gemma-2b"], "gsm_variants_run_sd": [3.5]})
    c = compare_published(summaries(["gemma-2b"]), t4, t5, sd=sd)
    paths = write_comparison(c, tmp_path / "cmp")
    md = paths["md"].read_text()
    assert "8.2 (± 2.21)" in md and "44.0 (± 3.50)" in md
    assert "20 GSM-Base and 100 GSM-Variants" in md
    assert pd.read_csv(paths["csv"])["gsm_variants_run_sd"].iloc[0] == 3.5


def test_variant_sd_over_instance_sets():
    scored = pd.DataFrame({"model": "m", "dataset": ["gsm_variants"] * 6 + ["gsm_base"] * 2,
                           "instance": [0, 0, 1, 1, 2, 2, -1, -1],
                           "correct": [True, True, True, False, False, False, True, True]})
    sd = variant_sd(scored)
    assert sd["gsm_variants_run_sd"].iloc[0] == pytest.approx(np.std([100.0, 50.0, 0.0], ddof=1))


def test_errors_name_the_file_and_column(repo, tmp_path):
    bad = tmp_path / "pub"
    bad.mkdir()
    pd.read_csv(repo / "resources/published/table4_accuracy.csv").drop(columns=["gsm_base_o"]).to_csv(
        bad / "table4_accuracy.csv", index=False)
    (bad / "table5_variant_delta.csv").write_bytes((repo / "resources/published/table5_variant_delta.csv").read_bytes())
    with pytest.raises(TableColumnError, match=r"table4_accuracy\.csv.*gsm_base_o"):
        load_published(bad)


def test_one_paper_name_for_two_models_is_an_error(published):
    t4, t5 = published
    with pytest.raises(ValueError, match="phi-2"):
        compare_published(summaries(["a", "phi-2"]), t4, t5, paper_names={"a": "phi-2"})
