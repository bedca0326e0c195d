"""Reference-mode statistics: per-answer rows and the reference's rule for a clean fit.

The paper's numbers come from a Python loop of pymer4 ``glmer`` fits on one row per answer, which
keeps a resample's estimate when ``fit@optinfo$conv$lme4$messages`` is empty and ``isSingular`` is
false (results_analyser/glmm.py of the authors' code). Here that loop is written out in R against
plain ``glmer(correct ~ variant + (1 | id))`` on 0/1 answers, on data frames built as the reference's
bootstrap builds them (its templates relabelled "<id>_<k>"), resample by resample from the engine's
documented template draws, and the engine's reference-mode bootstrap must keep exactly the same
resamples with the same estimates. Needs R with lme4 and rpy2.
"""

import numpy as np
import pandas as pd
import pytest

from earnest.stats import engines as E
from earnest.stats import glmm as G
from earnest.stats import rbridge
from earnest.stats.rdraws import r_sample_draws
from earnest.stats.run import run_glmm
from earnest.stats.simulate import simulate_glmm_input
from earnest.stats.summary import clean_mask, not_converged_mask

# One fit of the reference's bootstrap step, on the data frame it builds: glmer on the 0/1 response
# with the cluster column `id` as it arrives from pandas (character strings; glmer makes the factor);
# clean = no lme4 convergence message and not singular; a fit that fails is neither (its n_failed).
_REFERENCE_FIT = """function(b) {
  fit <- tryCatch(suppressWarnings(suppressMessages(
    glmer(correct ~ variant + (1 | id), data = b, family = binomial))), error = function(e) NULL)
  if (is.null(fit)) return(c(estimate = NA_real_, clean = 0, character = NA))
  msgs <- fit@optinfo$conv$lme4$messages
  c(estimate = unname(fixef(fit)["variant"]), clean = as.numeric(length(msgs) == 0 && !isSingular(fit)),
    character = as.numeric(is.character(b$id)))
}"""


def _reference_frame(df, drawn):
    """The data frame of one resample as the reference's ``bootstrap_fit_df`` builds it (its
    algorithm, written out here): for each drawn template id, in draw order, that template's rows
    (in the data's order) with ``id`` set to the string "<template id>_<position of the draw>",
    concatenated with a new index."""
    chunks = []
    for new_idx, orig_id in enumerate(drawn):
        chunk = df[df["template"] == orig_id].copy()
        chunk["id"] = f"{orig_id}_{new_idx}"
        chunks.append(chunk)
    return pd.concat(chunks, ignore_index=True)


def _reference_loop(df, resamples, base_seed):
    """The reference's bootstrap loop on earnest's template draws (resample b draws with R's
    ``sample.int`` from ``resample_seed(base_seed, b)``: earnest.stats.rdraws; the reference's own
    numpy draws are other draws of the same distribution, FIDELITY.md point 8)."""
    ro = rbridge.r()
    fit = ro.r(_REFERENCE_FIT)
    templates = np.sort(df["template"].unique())
    d = df[["template", "variant", "correct"]]
    rows = []
    for b in resamples:
        drawn = templates[r_sample_draws([G.resample_seed(base_seed, b)], len(templates))[0]]
        est, clean, is_chr = np.asarray(fit(rbridge.to_r_frame(_reference_frame(d, drawn))))
        assert is_chr == 1 or np.isnan(is_chr)      # the labels reach lme4 as strings, as from pandas
        rows.append({"resample": b, "estimate": est, "clean": bool(clean)})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def low_accuracy():
    # about 4% correct: lme4's checks flag a good part of the resamples, and which ones depends
    # on whether the rows are answers or aggregated counts
    return G.validate_glmm_input(simulate_glmm_input(20, 10, variant_effect=-0.3, intercept=-3.5,
                                                     ranef_sd=2.0, seed=3), 1)


def test_rows_follow_the_fidelity_mode():
    assert E.resolve_rows(None, "reference") == "answers"
    assert E.resolve_rows(None, "earnest") == "aggregated"
    with pytest.warns(UserWarning, match="flag other resamples"):
        assert E.resolve_rows("aggregated", "reference") == "aggregated"
    with pytest.raises(ValueError, match="stats.rows: 'binomial'"):
        E.resolve_rows("binomial", "earnest")
    with pytest.raises(ValueError, match="not a fidelity mode"):
        E.resolve_rows(None, "paper")


@pytest.fixture(scope="module")
def zero_base():
    # no correct answer on GSM-Base, about 9% on GSM-Variants: a fit at the edge of lme4's checks,
    # where the order of the random effects' levels decides which resamples pass them
    df = simulate_glmm_input(20, 10, variant_effect=-0.3, intercept=-2.5, ranef_sd=2.0, seed=3)
    df.loc[df["variant"] == 0, "correct"] = 0
    return G.validate_glmm_input(df, 1)


def test_cluster_labels_follow_the_fidelity_mode():
    assert G.cluster_labels("reference") == "reference"
    assert G.cluster_labels("earnest") == "draw"
    with pytest.raises(ValueError, match="cluster labels 'names'"):
        E.run_bootstrap(G.model_frame(simulate_glmm_input(3, 2), 1), 1, [0], 1, labels="names")


@pytest.mark.parametrize("data", ["low_accuracy", "zero_base"])
def test_reference_bootstrap_on_answers_is_the_reference_loop(data, request, tmp_path):
    df = request.getfixturevalue(data)
    B, seed = 24, 5
    summary = run_glmm(df, 1, B, seed, tmp_path, fidelity="reference", cores=1, log=lambda m: None)[0]
    ref = _reference_loop(df, range(B), seed)
    shards = pd.read_parquet(tmp_path / "glmm1" / "sim" / "gsm" / "shard-0.parquet")
    assert shards.attrs["rows"] == "answers" and shards.attrs["cluster_labels"] == "reference"
    v = shards[shards["term"] == "variant"].reset_index(drop=True)
    kept = clean_mask(v, "reference").to_numpy()
    # the same resamples are clean, with the same estimates, as in the reference's loop
    assert kept.tolist() == ref["clean"].tolist()
    np.testing.assert_allclose(v["estimate"], ref["estimate"], rtol=0, atol=1e-8)
    assert 0 < kept.sum() < B            # the data really exercise the rule
    row = summary[summary["term"] == "variant"].iloc[0]
    assert row["fidelity"] == "reference" and row["rows"] == "answers"
    assert row["n_clean"] == kept.sum()
    assert row["median_log_or"] == pytest.approx(np.median(ref.loc[ref["clean"], "estimate"]), abs=1e-8)
    if data == "zero_base":
        # earnest's own labels (clusters numbered in draw order) fit other resamples here: the
        # reference loop above tells the two apart
        own = E.run_bootstrap(G.model_frame(df, 1, aggregate=False), 1, range(B), seed, labels="draw")
        own = own[own["term"] == "variant"].reset_index(drop=True)
        same = (clean_mask(own, "reference").to_numpy() == kept) & np.isclose(own["estimate"], v["estimate"],
                                                                                rtol=0, atol=1e-6)
        assert not same.all()


def test_earnest_mode_shards_keep_draw_labels(zero_base, tmp_path):
    """Earnest mode labels clusters by draw; a shard fitted with other labels is refitted, not reused."""
    run_glmm(zero_base, 1, 4, 5, tmp_path, fidelity="earnest", rows="answers", cores=1, log=lambda m: None)
    path = tmp_path / "glmm1" / "sim" / "gsm" / "shard-0.parquet"
    assert pd.read_parquet(path).attrs["cluster_labels"] == "draw"
    said = []
    run_glmm(zero_base, 1, 4, 5, tmp_path, fidelity="reference", cores=1, log=said.append)
    assert pd.read_parquet(path).attrs["cluster_labels"] == "reference"
    assert not any("already done" in m for m in said)


def test_aggregated_rows_flag_other_resamples(low_accuracy):
    """Why reference mode fits answers: the same likelihood on aggregated counts passes lme4's
    convergence checks on a different set of resamples."""
    resamples = range(24)
    ans = E.run_bootstrap(G.model_frame(low_accuracy, 1, aggregate=False), 1, resamples, 5)
    agg = E.run_bootstrap(G.model_frame(low_accuracy, 1, aggregate=True), 1, resamples, 5)
    ca = clean_mask(ans, "reference")[ans["term"] == "variant"].to_numpy()
    cg = clean_mask(agg, "reference")[agg["term"] == "variant"].to_numpy()
    assert (ca != cg).any()


def test_clean_rule_per_mode():
    """One function decides: reference ignores warnings that are not lme4 convergence messages
    (a scale warning, say) but drops singular fits; earnest drops any warning but the singular fit's
    (a variance at 0 is a fit of the model), and a singular fit with another warning. A fit whose optimiser
    did not converge (an optimiser's convergence code, laplace's Newton) is clean under neither
    (issue 25; the authors' rule would keep the first)."""
    rows = [  # (messages, lme4_messages, singular, error, converged)
        ("", "", False, "", True),                                                     # clean in both
        ("Some predictor variables are on very different scales: consider rescaling", "", False, "", False),
        ("Model failed to converge with max|grad| = 0.03", "Model failed to converge with max|grad| = 0.03",
         False, "", False),
        ("boundary (singular) fit: see help('isSingular')", "boundary (singular) fit: see help('isSingular')",
         True, "", False),
        ("", "", False, "Error in glmer: boom", False),
        ("convergence code 1 from bobyqa", "", False, "", False),                      # optimiser warning only
        ("laplace: Newton's method did not converge in 60 iterations (optimiser not converged)",
         "laplace: Newton's method did not converge in 60 iterations (optimiser not converged)", False, "", False),
        ("boundary (singular) fit: see help('isSingular') | Some predictor variables are on very different scales",
         "boundary (singular) fit: see help('isSingular')", True, "", False),
    ]
    sh = pd.DataFrame([{"resample": i, "seed": i, "term": "variant", "estimate": -0.2, "ranef_var": 1.0,
                        "converged": c, "singular": s, "messages": m, "lme4_messages": lm, "error": e}
                       for i, (m, lm, s, e, c) in enumerate(rows)], columns=list(G.SHARD_COLUMNS))
    assert clean_mask(sh, "reference").tolist() == [True, True, False, False, False, False, False, False]
    assert clean_mask(sh, "earnest").tolist() == [True, False, False, True, False, False, False, False]
    assert not_converged_mask(sh).tolist() == [False, False, True, False, False, True, True, False]
    with pytest.raises(ValueError, match="lme4_messages"):
        clean_mask(sh.drop(columns="lme4_messages"), "reference")


def test_reference_glmm2_leaves_out_questions_without_digits(low_accuracy):
    """The reference's gamma of a question without digits is missing; its GLMM 2 fits drop the row
    (lme4's na.action), GLMM 1 keeps it. Earnest mode refuses a missing gamma."""
    df = low_accuracy.assign(gamma=np.linspace(1.0, 3.0, len(low_accuracy)))
    df.loc[[0, 5, 17], "gamma"] = np.nan
    with pytest.raises(G.GLMMInputError, match="'gamma' must be a finite number, found nan in data row 1"):
        G.validate_glmm_input(df, 2)
    ok = G.validate_glmm_input(df, 2, fidelity="reference")
    frame = G.model_frame(ok, 2, aggregate=False)
    assert len(frame) == len(df) - 3
    kept = df["gamma"].dropna()
    np.testing.assert_allclose(frame["gamma_c"], kept - kept.mean())
    assert len(G.model_frame(ok, 1, aggregate=False)) == len(df)
    bad = df.astype({"gamma": object})
    bad.loc[3, "gamma"] = "many"
    with pytest.raises(G.GLMMInputError, match="found 'many' in data row 4"):
        G.validate_glmm_input(bad, 2, fidelity="reference")


def test_laplace_engine_cannot_fit_answers():
    """Which rows each engine x mode fits, and a warning where the pair cannot give the mode's clean set."""
    import warnings
    with pytest.raises(ValueError, match="laplace fits aggregated rows only"):
        E.resolve_rows(None, "reference", engine="laplace")
    with pytest.warns(UserWarning, match="not the reference's fit: the reference fits one row per answer with lme4"):
        assert E.resolve_rows("aggregated", "reference", engine="laplace") == "aggregated"
    with pytest.warns(UserWarning, match="lme4's convergence checks on aggregated rows flag other resamples"):
        assert E.resolve_rows("aggregated", "reference") == "aggregated"
    with warnings.catch_warnings():
        warnings.simplefilter("error")                   # the faithful pairs say nothing
        assert E.resolve_rows(None, "reference") == "answers"
        assert E.resolve_rows(None, "earnest", engine="laplace") == "aggregated"
        assert E.resolve_rows("answers", "earnest") == "answers"


def test_cli_reference_mode(low_accuracy, tmp_path, capsys):
    """earnest glmm --fidelity reference fits answers and says so; with the laplace engine it refuses."""
    from earnest.cli import main

    src = tmp_path / "in.csv"
    low_accuracy.to_csv(src, index=False)
    args = ["glmm", str(src), "--glmm", "1", "--resamples", "4", "--seed", "1", "--cores", "1",
            "--fidelity", "reference"]
    assert main(args + ["--out", str(tmp_path / "o"), "--engine", "laplace"]) == 2
    assert "--engine laplace fits aggregated rows only" in capsys.readouterr().err
    assert main(args + ["--out", str(tmp_path / "o")]) == 0
    s = pd.read_csv(tmp_path / "o" / "summary_glmm1.csv")
    assert s["fidelity"].tolist() == ["reference"] and s["rows"].tolist() == ["answers"]
    assert "WARNING" not in capsys.readouterr().err
    # the labelled speed path runs, and says why its clean set is not the reference's
    assert main(args + ["--out", str(tmp_path / "fast"), "--engine", "laplace", "--rows", "aggregated",
                        "--check-resamples", "1"]) == 0
    err = capsys.readouterr().err
    assert err.count("WARNING fidelity 'reference' with stats.engine laplace is not the reference's fit") == 1
    s = pd.read_csv(tmp_path / "fast" / "summary_glmm1.csv")
    assert s["rows"].tolist() == ["aggregated"] and {"n_clean_reference", "n_clean_earnest",
                                                     "n_not_converged"} <= set(s.columns)
    assert s["n_clean"].tolist() == s["n_clean_reference"].tolist()


# ---------------------------------------------------------------- issue 41.7: the authors' crashes

def test_no_clean_resample_and_one_template_are_summarised_not_a_crash():
    """The authors' bootstrap summary selects the fixed effects' columns of the clean estimates
    (``_summarise_model_bootstrap``: ``clean_estimates.loc[:, labels]``); with no clean resample that
    frame has no columns, the selection raises KeyError and their bootstrap loop stops there, for that
    model and every model after it. One template is such a case: every fit fails (a grouping factor
    of one level). earnest summarises the group (reference mode: no clean estimate, so no P and no
    interval; earnest mode: its separated resamples at their bound) as degenerate, never significant,
    and the other groups as usual, in both modes."""
    from earnest.stats.run import summarise_group
    from earnest.stats.summaries import build_summaries

    with pytest.raises(KeyError):   # the authors' step, written out: no clean estimate, no columns
        pd.DataFrame([]).loc[:, ["is_variant"]]
    one = simulate_glmm_input(1, 10, variant_effect=-0.5, seed=4, model="one_template")
    many = simulate_glmm_input(12, 10, variant_effect=-0.5, seed=4, model="ordinary")
    rows = []
    for mode in ("reference", "earnest"):
        for df in (one, many):
            data = G.validate_glmm_input(df, 1, fidelity=mode)
            shards = E.run_shard(data, 1, 6, 11, aggregate=mode == "earnest", engine="lme4",
                                 labels=G.cluster_labels(mode))
            summary, _ = summarise_group(data, shards, 1, fidelity=mode, rows="answers")
            rows.append(summary)
            if df is one:
                per = shards.drop_duplicates("resample")
                assert (per["error"] != "").all()                  # every fit failed
                assert int(summary[f"n_clean_{mode}"].iloc[0]) == 0
                if mode == "reference":   # (earnest mode counts separated resamples at their bound)
                    assert int(summary["n_clean"].iloc[0]) == 0 and np.isnan(summary["p_boot"].iloc[0])
                    assert np.isnan(summary["ci_low_log"].iloc[0]) and np.isnan(summary["ci_high_log"].iloc[0])
    for mode, part in zip(("reference", "earnest"), (rows[:2], rows[2:])):
        s = build_summaries(pd.concat(part, ignore_index=True)).set_index("model")
        assert s.loc["one_template", "degenerate"] and not s.loc["one_template", "significant_holm"], mode
        assert s.loc["ordinary", "n_clean"] > 0 and np.isfinite(s.loc["ordinary", "p_boot"]), mode
