"""Reference-mode statistics: per-answer rows and the reference's rule for a clean fit.

The paper's numbers come from a Python loop of pymer4 ``glmer`` fits on one row per answer, which
keeps a resample's estimate when ``fit@optinfo$conv$lme4$messages`` is empty and ``isSingular`` is
false (results_analyser/glmm.py of the authors' code). Here that loop is written out in R against
plain ``glmer(correct ~ variant + (1 | cluster))`` on 0/1 answers, resample by resample from the
engine's documented template draws, and the engine's reference-mode bootstrap must keep exactly the
same resamples with the same estimates. Needs R with lme4 and rpy2.
"""

import numpy as np
import pandas as pd
import pytest

from earnest.stats import glmm as G
from earnest.stats import rbridge
from earnest.stats.run import run_glmm
from earnest.stats.simulate import simulate_glmm_input
from earnest.stats.summary import clean_mask, not_converged_mask

# The reference's bootstrap step for one resample, on answers: glmer on the 0/1 response, the
# resample's templates as distinct clusters, clean = no lme4 convergence message and not singular;
# a fit that fails is neither.
_REFERENCE_LOOP = """function(d, seeds) {
  templates <- sort(unique(d$template))
  rows <- split(seq_len(nrow(d)), factor(d$template, levels = templates))
  out <- lapply(seeds, function(s) {
    set.seed(s, kind = "Mersenne-Twister", normal.kind = "Inversion", sample.kind = "Rejection")
    drawn <- rows[sample.int(length(templates), length(templates), replace = TRUE)]
    b <- d[unlist(drawn), , drop = FALSE]
    b$cluster <- factor(rep.int(seq_along(drawn), lengths(drawn)))
    fit <- tryCatch(suppressWarnings(suppressMessages(
      glmer(correct ~ variant + (1 | cluster), data = b, family = binomial))), error = function(e) NULL)
    if (is.null(fit)) return(c(estimate = NA_real_, clean = 0))   # the reference's n_failed
    msgs <- fit@optinfo$conv$lme4$messages
    c(estimate = unname(fixef(fit)["variant"]),
      clean = as.numeric(length(msgs) == 0 && !isSingular(fit)))
  })
  do.call(rbind, out)
}"""


@pytest.fixture(scope="module")
def low_accuracy():
    # about 4% correct: lme4's checks flag a good part of the resamples, and which ones depends
    # on whether the rows are answers or aggregated counts
    return G.validate_glmm_input(simulate_glmm_input(20, 10, variant_effect=-0.3, intercept=-3.5,
                                                     ranef_sd=2.0, seed=3), 1)


def _reference_loop(df, resamples, base_seed):
    ro = rbridge.r()
    d = df[["template", "variant", "correct"]]
    seeds = [G.resample_seed(base_seed, b) for b in resamples]
    res = np.asarray(ro.r(_REFERENCE_LOOP)(rbridge.to_r_frame(d), ro.IntVector(seeds)))
    return pd.DataFrame({"resample": list(resamples), "estimate": res[:, 0], "clean": res[:, 1].astype(bool)})


def test_rows_follow_the_fidelity_mode():
    assert G.resolve_rows(None, "reference") == "answers"
    assert G.resolve_rows(None, "earnest") == "aggregated"
    with pytest.warns(UserWarning, match="flag other resamples"):
        assert G.resolve_rows("aggregated", "reference") == "aggregated"
    with pytest.raises(ValueError, match="stats.rows: 'binomial'"):
        G.resolve_rows("binomial", "earnest")
    with pytest.raises(ValueError, match="not a fidelity mode"):
        G.resolve_rows(None, "paper")


def test_reference_bootstrap_on_answers_is_the_reference_loop(low_accuracy, tmp_path):
    B, seed = 24, 5
    summary = run_glmm(low_accuracy, 1, B, seed, tmp_path, fidelity="reference", cores=1, log=lambda m: None)[0]
    ref = _reference_loop(low_accuracy, range(B), seed)
    shards = pd.read_parquet(tmp_path / "glmm1" / "sim" / "gsm" / "shard-0.parquet")
    assert shards.attrs["rows"] == "answers"
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


def test_aggregated_rows_flag_other_resamples(low_accuracy):
    """Why reference mode fits answers: the same likelihood on aggregated counts passes lme4's
    convergence checks on a different set of resamples."""
    resamples = range(24)
    ans = G.run_bootstrap(G.model_frame(low_accuracy, 1, aggregate=False), 1, resamples, 5)
    agg = G.run_bootstrap(G.model_frame(low_accuracy, 1, aggregate=True), 1, resamples, 5)
    ca = clean_mask(ans, "reference")[ans["term"] == "variant"].to_numpy()
    cg = clean_mask(agg, "reference")[agg["term"] == "variant"].to_numpy()
    assert (ca != cg).any()


def test_clean_rule_per_mode():
    """One function decides: reference ignores warnings that are not lme4 convergence messages
    (a scale warning, say) but drops singular fits; earnest drops any warning. A fit whose optimiser
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
    ]
    sh = pd.DataFrame([{"resample": i, "seed": i, "term": "variant", "estimate": -0.2, "ranef_var": 1.0,
                        "converged": c, "singular": s, "messages": m, "lme4_messages": lm, "error": e}
                       for i, (m, lm, s, e, c) in enumerate(rows)], columns=list(G.SHARD_COLUMNS))
    assert clean_mask(sh, "reference").tolist() == [True, True, False, False, False, False, False]
    assert clean_mask(sh, "earnest").tolist() == [True, False, False, False, False, False, False]
    assert not_converged_mask(sh).tolist() == [False, False, True, False, False, True, True]
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
        G.resolve_rows(None, "reference", engine="laplace")
    with pytest.warns(UserWarning, match="not the reference's fit: the reference fits one row per answer with lme4"):
        assert G.resolve_rows("aggregated", "reference", engine="laplace") == "aggregated"
    with pytest.warns(UserWarning, match="lme4's convergence checks on aggregated rows flag other resamples"):
        assert G.resolve_rows("aggregated", "reference") == "aggregated"
    with warnings.catch_warnings():
        warnings.simplefilter("error")                   # the faithful pairs say nothing
        assert G.resolve_rows(None, "reference") == "answers"
        assert G.resolve_rows(None, "earnest", engine="laplace") == "aggregated"
        assert G.resolve_rows("answers", "earnest") == "answers"


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
