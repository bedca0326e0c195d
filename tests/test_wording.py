"""earnest.wording is the one home of labels, P-value display and caption texts: the formatter on
edge values, the Holm-family text against the families the code forms, the R engine's term names
against the module's, the report captions rendered with the values the rules pass, and a scan of
the source tree for a second definition of any of them."""

import ast
import math
import re
from pathlib import Path

import jinja2
import pytest

from earnest import fidelity as F
from earnest import wording as W
from earnest.gsm.paper_tables import caption_values
from earnest.stats.summary import HOLM_FAMILY, holm

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted([*(ROOT / "src" / "earnest").rglob("*.py"), *(ROOT / "workflow" / "scripts").glob("*.py")])
HOME = ROOT / "src" / "earnest" / "wording.py"


# ---------------------------------------------------------------- format_p
@pytest.mark.parametrize("p, text", [(0.0, "<0.001"), (1e-300, "<0.001"), (0.000999, "<0.001"), (0.001, "0.001"),
                                     (0.0123, "0.012"), (0.05, "0.050"), (1.0, "1.000"),
                                     (float("nan"), ""), (None, "")])
def test_format_p_edge_values(p, text):
    assert W.format_p(p) == text


def test_a_p_value_below_alpha_never_reads_as_alpha():
    # 0.0495 rounds to 0.050: in a bold (significant) cell that would read "not below 0.05"
    assert W.format_p(0.0495) == "0.050"
    assert W.format_p(0.0495, alpha=0.05) == "0.0495"
    assert float(W.format_p(0.04999999, alpha=0.05)) < 0.05
    assert W.format_p(0.05, alpha=0.05) == "0.050"          # at alpha: not significant, shown as it is
    assert W.format_p(0.0504, alpha=0.05) == "0.050"
    assert W.format_p(0.0094, alpha=0.01) == "0.009" and W.format_p(0.00996, alpha=0.01) == "0.00996"
    assert W.format_p(float("nan"), alpha=0.05, missing="n/a") == "n/a"


@pytest.mark.parametrize("p", [-0.1, 1.0000001, math.inf])
def test_format_p_refuses_what_is_no_p_value(p):
    with pytest.raises(ValueError, match="must lie in \\[0, 1\\]"):
        W.format_p(p)


# ---------------------------------------------------------------- Holm families, clean rule
def test_holm_family_text_says_what_the_code_groups_by():
    assert W.holm_family_text(HOLM_FAMILY[1]) == "across the models of each prompt format"
    assert W.holm_family_text(HOLM_FAMILY[2]) == "across the prompt formats of each model"
    with pytest.raises(ValueError, match="exactly one of model, prompt"):
        W.holm_family_text(("analysis", "glmm", "term"))


def test_holm_missing_text_matches_how_each_mode_counts():
    # reference: the NaN counts in m (0.01 * 4); earnest: it does not (0.01 * 3)
    p = [0.01, 0.02, 0.03, float("nan")]
    assert holm(p, F.REFERENCE)[0] == pytest.approx(0.04) and holm(p, F.EARNEST)[0] == pytest.approx(0.03)
    assert "counts in its family's size" in W.HOLM_MISSING_TEXT[F.REFERENCE]
    assert "does not count" in W.HOLM_MISSING_TEXT[F.EARNEST]
    assert set(W.HOLM_MISSING_TEXT) == set(W.CLEAN_RULE) == set(F.MODES)


# ---------------------------------------------------------------- terms and labels
def test_the_r_engine_returns_the_modules_term_names():
    text = (ROOT / "src" / "earnest" / "stats" / "R" / "glmm.R").read_text()
    body = re.search(r"earnest_terms <- function\(glmm\) \{\s*if \(glmm == 1L\) (.*) else (.*)\n", text)
    assert body, "earnest_terms not found in glmm.R"
    names = [tuple(re.findall(r'"([^"]+)"', c)) for c in body.groups()]
    assert names == [W.TERMS[1], W.TERMS[2]]


def test_effect_labels_and_titles():
    assert W.effect_label(1, W.VARIANT) == "GLMM 1 Variant" and W.effect_label(2, W.GAMMA_C) == "GLMM 2 γc"
    assert W.effect_title(2, W.GAMMA_C) == "Large-number effect (γc in GLMM 2, per unit of γ)"
    assert W.effect_title(2, W.VARIANT) == ("Variant effect corrected for the large-number effect "
                                            "(Variant in GLMM 2)")
    assert [W.effect_rank(g, t) for g, t in W.EFFECT_ORDER] == [0, 1, 2] and W.effect_rank(3, "x") == 3
    assert W.EFFECTS == {1: (W.VARIANT,), 2: (W.VARIANT, W.GAMMA_C)}


# ---------------------------------------------------------------- one definition each
def _literals(path: Path):
    """(line, text) of every string literal of ``path`` that is not a docstring (f-string parts included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docs.add(id(first.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.lineno, node.value


def _hits(pattern: str, *, code: bool = False) -> list[str]:
    """Places outside earnest.wording where ``pattern`` matches a string literal (``code``: a line of code)."""
    rx = re.compile(pattern)
    out = []
    for path in SOURCES:
        if path == HOME:
            continue
        if code:
            found = [(i, line) for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                     if not line.lstrip().startswith("#")]
        else:
            found = list(_literals(path))
        out += [f"{path.relative_to(ROOT)}:{i}: {text.strip()[:100]}" for i, text in found if rx.search(text)]
    return out


@pytest.mark.parametrize("what, pattern, code", [
    ("the P-value floor", r"<0\.001", False),
    # the display precision (logs may print more digits: they are not a display)
    ("a P-value format", r"\b(p|pvalue|p_holm|p_boot|p_mcnemar)\W*:\.3[fg]\}", True),
    ("a term label table", r"TERM_LABEL\s*=|EFFECT_LABEL\s*=|HOLM_FAMILY_TEXT|CLEAN_RULE\s*=", True),
    ("the intercept's name", r"^\(Intercept\)$", False),
    ("the γc term's name", r"^gamma_c$", False),
    ("the γc label", r"^γc$", False),
    ("the degenerate mark", r"^§$", False),
    ("the Holm family in words", r"across the (models|prompts|prompt formats) of", False),
    ("the unparseable statuses", r"^no_json$", False),
])
def test_each_label_and_format_is_defined_once(what, pattern, code):
    hits = _hits(pattern, code=code)
    if what == "the unparseable statuses":   # their one home is the StatFormBench parser; the authors'
        # evaluator's error types (one of which is also called no_json) have theirs in statform/reference.py
        hits = [h for h in hits if not h.startswith(("src/earnest/statform/parsing.py",
                                                     "src/earnest/statform/reference.py"))]
    assert not hits, f"{what} defined outside earnest.wording:\n" + "\n".join(hits)


def test_no_column_is_called_just_significant():
    """`significant` meant three things; every significance column now says what it tests: no
    column name (a subscript, a dict key, an entry of a column list, an attribute) is 'significant',
    'n_significant' or '<something>_significant' other than wald_significant / bootstrap_significant
    (the two uncorrected calls of Table 16)."""
    bad = re.compile(r"^(n_)?significant$|^\w+_significant$")
    allowed = {"wald_significant", "bootstrap_significant"}
    hits = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
                names = [node.slice.value]
            elif isinstance(node, ast.Dict):
                names = [k.value for k in node.keys if isinstance(k, ast.Constant)]
            elif isinstance(node, (ast.Tuple, ast.List)):
                names = [e.value for e in node.elts if isinstance(e, ast.Constant)]
            elif isinstance(node, ast.Attribute):
                names = [node.attr]
            hits += [f"{path.relative_to(ROOT)}:{node.lineno}: {n}" for n in names
                     if isinstance(n, str) and bad.match(n) and n not in allowed]
    assert not hits, "\n".join(hits)


# ---------------------------------------------------------------- report captions
def _render(name: str, files=(), **snakemake) -> str:
    # Snakemake renders the landing text with the report's entries as ``files`` beside ``snakemake``
    text = (ROOT / "report" / name).read_text(encoding="utf-8")
    obj = type("Snakemake", (), snakemake)
    return jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(text).render(snakemake=obj,
                                                                                       files=list(files))


@pytest.mark.parametrize("mode", F.MODES)
@pytest.mark.parametrize("engine", ["lme4", "laplace"])
def test_stats_tables_caption_names_the_engine_rule_and_families_of_the_run(mode, engine):
    params = type("Params", (), {"caption": caption_values(mode, engine)})
    text = _render("stats_tables.rst", params=params)
    assert f"``{engine}`` engine" in text and W.CLEAN_RULE[mode] in text and W.HOLM_MISSING_TEXT[mode] in text
    assert f"GLMM 1 {W.holm_family_text(HOLM_FAMILY[1])}" in text
    assert f"GLMM 2 {W.holm_family_text(HOLM_FAMILY[2])}" in text
    other = "lme4" if engine == "laplace" else "laplace"
    assert f"fitted by the ``{other}``" not in text and "lme4::glmer" not in text


def test_workflow_caption_names_the_configured_engine_and_no_wrong_family():
    config = {"stats": {"engine": "laplace", "alpha": 0.05, "resamples": 200}}
    text = _render("workflow.rst", config=config)
    assert "``laplace`` engine" in text
    # the old hand-written family, wrong for GLMM 2 (whose family is the prompts of one model)
    assert "across models per effect and prompt" not in text


@pytest.mark.parametrize("item_effects, agq, model, fitted", [
    (False, 1, "``correct ~ condition + (1|template)``", "``laplace`` engine"),
    (True, 1, "``correct ~ condition + (1|template) + (1|item)``", "lme4, Laplace"),
    (True, 5, "``correct ~ condition + (1|item)``", "quadrature with 5 points"),
])
def test_compare_caption_states_the_model_the_run_fits(item_effects, agq, model, fitted):
    # the embedded config fits template intercepts only: the caption said (1|item) regardless
    config = {"stats": {"engine": "laplace"}, "compare": {"item_effects": item_effects, "agq": agq}}
    text = _render("compare.rst", config=config)
    assert model in text and fitted in text


def test_a_bootstrap_p_of_zero_displays_below_its_bound():
    from earnest.wording import format_p

    assert format_p(0.0, 0.05, bound=1 / 200) == "<0.005"
    assert format_p(0.0, bound=1 / 60) == "<0.017"
    assert format_p(0.0, bound=1 / 2000) == "<0.001" == format_p(0.0)
    assert format_p(0.25, bound=0.01) == "0.250"
    assert format_p(1 / 136, below=True) == "<0.008" == format_p(0.0, bound=1 / 136)
