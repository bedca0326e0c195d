"""gamma is centred in one place: earnest.stats.glmm.centre_gamma, which model_frame (the rows the R
engine fits) uses; the scored tables carry gamma as the items have it."""

import numpy as np
import pandas as pd
import pytest

from earnest.gsm.scoring import SCORED_COLUMNS
from earnest.stats.glmm import centre_gamma, model_frame


def _input(gammas, variants):
    n = len(gammas)
    return pd.DataFrame({"model": "m", "prompt": "gsm", "template": np.arange(n) % 2, "variant": variants,
                         "correct": np.arange(n) % 2, "gamma": gammas})


def test_centred_over_the_rows_of_one_model_and_prompt():
    df = _input([1.0, 3.0, 5.0, 7.0], [0, 0, 1, 1])
    assert centre_gamma(df).tolist() == pytest.approx([-3.0, -1.0, 1.0, 3.0])
    frame = model_frame(df, 2, aggregate=False)
    assert frame["gamma_c"].tolist() == pytest.approx([-3.0, -1.0, 1.0, 3.0])
    # after the reasoning-only exclusions the mean is that of the rows kept
    kept = df.iloc[[0, 1, 2]]
    assert model_frame(kept, 2, aggregate=False)["gamma_c"].tolist() == pytest.approx([-2.0, 0.0, 2.0])
    assert "gamma_c" not in model_frame(df, 1).columns


def test_no_upstream_table_stores_a_centred_gamma():
    assert "gamma" in SCORED_COLUMNS and "gamma_c" not in SCORED_COLUMNS


# ---------------------------------------------------------------- issue 41.6: the authors' pool

def _scored(model, dataset, gammas, correct=None, error_class=None):
    n = len(gammas)
    return pd.DataFrame({"model": model, "prompt": "gsm", "dataset": dataset, "template_id": np.arange(n),
                         "correct": correct if correct is not None else [i % 2 == 0 for i in range(n)],
                         "gamma": gammas, "error_class": error_class or [""] * n})


def _authors_gamma_c(frames_by_variant):
    """The authors' get_number_effect_glmm_data, written out: every model's GSM-Base rows, then every
    model's GSM-Variants rows, concatenated; sum_logs_c = sum_logs - sum_logs.mean() (NaN skipped)."""
    df = pd.concat(frames_by_variant, ignore_index=True)
    return df.assign(sum_logs_c=df["gamma"] - df["gamma"].mean())


def test_reference_mode_centres_over_every_model_of_the_prompt(tmp_path):
    """Issue 41.6: the authors centre gamma over all models of the prompt (their pool), earnest mode
    over the rows of one model x prompt; the GLMM input carries the pool's mean in gamma_centre."""
    from earnest.gsm.glmm_input import glmm_input_from_scored, pool_gamma_centre, save_pool_centre, with_pool_centre
    from earnest.stats.glmm import GAMMA_CENTRE, validate_glmm_input

    base = {"a": [1.0, 2.0, 3.1], "b": [1.0, 2.0, 3.1]}
    variants = {"a": [4.0, 5.5, np.nan], "b": [0.3, 7.25, 2.0]}   # the models' variant sets differ
    scored = {m: [_scored(m, "gsm_base", base[m]), _scored(m, "gsm_variants", variants[m])] for m in "ab"}
    theirs = _authors_gamma_c([_scored(m, "gsm_base", base[m]) for m in "ab"]
                              + [_scored(m, "gsm_variants", variants[m]) for m in "ab"])
    centre = pool_gamma_centre([f for m in "ab" for f in scored[m]])
    assert centre == theirs["gamma"].mean()
    for m in "ab":
        # the workflow's way: the centre's own file, read back into the input by GLMM 2's fits
        saved = tmp_path / "centre.json"
        save_pool_centre(saved, centre, [f"results/scored/{m}/gsm/x.parquet" for m in "ab"])
        inp = with_pool_centre(glmm_input_from_scored(scored[m]), saved)
        ref = model_frame(validate_glmm_input(inp, 2, fidelity="reference"), 2, aggregate=False)
        want = theirs[theirs.model == m]["sum_logs_c"].dropna().to_numpy()
        assert np.array_equal(ref["gamma_c"].to_numpy(), want)           # their numbers, bit for bit
        kept = inp.dropna(subset=["gamma"])          # earnest mode has no gamma-less rows
        own = model_frame(validate_glmm_input(kept, 2, fidelity="earnest"), 2, aggregate=False)
        g = kept["gamma"]
        assert own["gamma_c"].tolist() == pytest.approx((g - g.mean()).tolist())   # earnest: unchanged
        assert not np.allclose(own["gamma_c"], ref["gamma_c"])
    # an input of several models (earnest glmm --fidelity reference) without the column: the pool is
    # every model of the prompt in it
    both = glmm_input_from_scored(scored["a"] + scored["b"])
    v = validate_glmm_input(both, 2, fidelity="reference")
    assert v[GAMMA_CENTRE].tolist() == pytest.approx([centre] * len(v))
    kept = both.dropna(subset=["gamma"]).assign(**{GAMMA_CENTRE: 0.0})
    assert GAMMA_CENTRE not in validate_glmm_input(kept, 2, fidelity="earnest")


def test_a_pool_centre_file_is_read_back_exactly_or_refused_by_name(tmp_path):
    """The centre's file (rule gamma_centre) round-trips bit for bit; a pool without gamma has none;
    a damaged file is refused naming it, before any fit."""
    from earnest.gsm.glmm_input import load_pool_centre, save_pool_centre
    from earnest.stats.glmm import GLMMInputError

    f = tmp_path / "gsm.json"
    for value in (0.1 + 0.2, 1 / 3, -7.25e-17):
        save_pool_centre(f, value, ["results/scored/a/gsm/gsm_base.parquet"])
        assert load_pool_centre(f) == value
    save_pool_centre(f, float("nan"), [])
    assert np.isnan(load_pool_centre(f))
    for text in ("{", "[]", '{"gamma_centre": "1.5"}', '{"gamma_centre": true}', '{"tables": []}'):
        f.write_text(text)
        with pytest.raises(GLMMInputError, match=str(f).replace("\\", "\\\\")):
            load_pool_centre(f)


def test_the_pool_of_the_reasoning_only_analysis_is_the_rows_it_keeps():
    from earnest.gsm.glmm_input import glmm_input_from_scored, pool_gamma_centre

    a = _scored("a", "gsm_base", [1.0, 2.0, 9.0], correct=[True, True, False],
                error_class=["", "", "syntax_error"])
    b = _scored("b", "gsm_variants", [3.0, 4.0, 8.0], correct=[False, True, False],
                error_class=["wrong_answer", "", "name_error"])
    assert pool_gamma_centre([a, b]) == pytest.approx(np.mean([1, 2, 9, 3, 4, 8]))
    assert pool_gamma_centre([a, b], reasoning_only=True) == pytest.approx(np.mean([1, 2, 3, 4]))
    assert len(glmm_input_from_scored([a, b], reasoning_only=True)) == 4


def test_a_gamma_centre_must_be_one_finite_value_per_model_and_prompt():
    from earnest.stats.glmm import GAMMA_CENTRE, GLMMInputError, validate_glmm_input

    df = _input([1.0, 3.0, 5.0, 7.0], [0, 0, 1, 1])
    with pytest.raises(GLMMInputError, match="more than one value"):
        validate_glmm_input(df.assign(**{GAMMA_CENTRE: [1.0, 1.0, 2.0, 1.0]}), 2, fidelity="reference")
    with pytest.raises(GLMMInputError, match="finite"):
        validate_glmm_input(df.assign(**{GAMMA_CENTRE: np.inf}), 2, fidelity="reference")
    v = validate_glmm_input(df.assign(**{GAMMA_CENTRE: 2.0}), 2, fidelity="reference")
    assert model_frame(v, 2, aggregate=False)["gamma_c"].tolist() == [-1.0, 1.0, 3.0, 5.0]
    assert GAMMA_CENTRE not in validate_glmm_input(df.assign(**{GAMMA_CENTRE: 2.0}), 1, fidelity="reference")
