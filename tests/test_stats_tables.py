"""The one table writer: CSV keeps raw values, Markdown, LaTeX and HTML carry display text, bold and caption."""

import pandas as pd
import pytest

from earnest.tables import latex_escape, write_table


def test_three_files_with_caption_and_bold(tmp_path):
    df = pd.DataFrame({"Model": ["phi_2", "gemma-2b"], "P value": [0.0004, 0.2]})
    bold = pd.DataFrame({"Model": [False, False], "P value": [True, False]})
    paths = write_table(df, tmp_path / "t.glmm1", "Variant effect & 95% CI",
                        formatters={"P value": lambda p: "<0.001" if p < 0.001 else f"{p:.3f}"}, bold=bold,
                        label="tab:x")
    assert {p.name for p in paths.values()} == {"t.glmm1.csv", "t.glmm1.md", "t.glmm1.tex", "t.glmm1.html"}
    back = pd.read_csv(paths["csv"])
    assert back["P value"].tolist() == [0.0004, 0.2]          # raw numbers, not display text
    md = paths["md"].read_text()
    assert "| phi_2 | **<0.001** |" in md and "| gemma-2b | 0.200 |" in md
    assert md.strip().endswith("*Variant effect & 95% CI*")
    tex = paths["tex"].read_text()
    assert r"phi\_2 & \textbf{<0.001} \\" in tex
    assert r"\caption{Variant effect \& 95\% CI}" in tex and r"\label{tab:x}" in tex
    # the report's page: the same cells (escaped, bold kept), the caption, no network, a sort script
    page = paths["html"].read_text()
    assert "<td>phi_2</td><td class=\"num\"><b>&lt;0.001</b></td>" in page
    assert '<p class="caption">Variant effect &amp; 95% CI</p>' in page and "<h1>t.glmm1</h1>" in page
    assert "http" not in page and "aria-sort" in page


def test_csv_override_and_symbols(tmp_path):
    display = pd.DataFrame({"Model": ["m"], "Cell": ["0.76; 0.003 ‡ / 0.012"]})
    raw = pd.DataFrame({"model": ["m"], "odds_ratio": [0.76], "p": [0.003]})
    paths = write_table(display, tmp_path / "g", "GLMM 2 grid", csv=raw)
    assert list(pd.read_csv(paths["csv"]).columns) == ["model", "odds_ratio", "p"]
    assert r"$\ddagger$" in paths["tex"].read_text()
    assert latex_escape("a_b ± 5%") == r"a\_b $\pm$ 5\%"


def test_rejects_missing_caption_and_bad_mask(tmp_path):
    df = pd.DataFrame({"a": [1]})
    with pytest.raises(ValueError, match="caption"):
        write_table(df, tmp_path / "x", " ")
    with pytest.raises(ValueError, match="bold mask"):
        write_table(df, tmp_path / "x", "c", bold=pd.DataFrame({"b": [True]}))
    with pytest.raises(KeyError, match="nope"):
        write_table(df, tmp_path / "x", "c", formatters={"nope": str})
