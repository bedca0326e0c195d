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
