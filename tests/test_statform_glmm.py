"""StatFormBench's paired GLMM (lme4 through rpy2): a separated pair is degenerate, never significant."""

import numpy as np
import pandas as pd

from earnest.statform.glmm import pairwise_glmm, write_pairwise_table


def test_a_model_right_on_every_sample_makes_its_pairs_degenerate(tmp_path):
    rng = np.random.default_rng(4)
    rows = []
    for i in range(40):
        for model, acc in (("a", 0.5), ("b", 0.7), ("c", 1.0)):
            rows.append({"item_id": f"s{i}", "model": model, "prompt": "zero_shot",
                         "correct_fg": int(rng.random() < acc)})
    pairs = pairwise_glmm(pd.DataFrame(rows), "correct_fg").set_index(["model_a", "model_b"])
    assert not pairs.loc[("a", "b"), "degenerate"]
    # the verdict's record: the degenerate pairs are not estimable and leave Holm's family of one
    assert pairs.loc[("a", "b"), "holm_m"] == 1 and pairs.loc[("a", "b"), "p_holm"] == pairs.loc[("a", "b"), "p_value"]
    assert pairs.loc[("a", "b"), "verdict"] in ("significant", "not significant")
    assert (pairs.loc[("a", "b"), "verdict"] == "significant") == (pairs.loc[("a", "b"), "p"] < 0.05)
    assert set(pairs.loc[[("a", "c"), ("b", "c")], "verdict"]) == {"not estimable"}
    for pair in (("a", "c"), ("b", "c")):
        assert pairs.loc[pair, "degenerate"] and "c answered every sample right (40/40)" in pairs.loc[pair, "fit_problems"]
    paths = write_pairwise_table(pairs.reset_index(), tmp_path / "pairs")
    md = paths["md"].read_text()
    assert md.count("§") >= 3 and "e+" not in md          # the caption and both degenerate rows
