"""The sensitivity table: both fidelity modes side by side, changed conclusions flagged (no R)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from earnest.gsm.sensitivity import compare_modes as _compare_modes
from earnest.gsm.sensitivity import write_sensitivity
from earnest.stats.summaries import build_summaries


def compare_modes(by_mode):
    """compare_modes on the summaries tables built from these summary rows."""
    return _compare_modes({m: build_summaries(rows) for m, rows in by_mode.items()})


def _row(model, prompt, glmm, term, p, log_or=-0.5, fidelity="reference", **kw):
    r = {"analysis": "all", "glmm": glmm, "model": model, "prompt": prompt, "term": term, "fidelity": fidelity,
         "rows": "answers" if fidelity == "reference" else "aggregated",
         "n_resamples": 100, "n_clean": 97, "n_errors": 0, "n_singular": 0, "median_log_or": log_or,
         "odds_ratio": float(np.exp(log_or)), "ci_low_log": -1.0, "ci_high_log": 0.1, "ci_low": 0.3, "ci_high": 1.1,
         "p_boot": p, "ranef_var_mean": 5.0, "ranef_var_sd": 1.0, "acc_base": 40.0, "acc_variants": 35.0,
         "delta_var": -5.0, "n_base": 100, "n_variants": 5000, "wald_estimate": log_or, "wald_se": 0.2,
         "wald_z": -2.5, "wald_p": p, "wald_converged": True, "wald_singular": False, "wald_max_grad": 1e-5,
         "wald_tol": 0.002, "wald_messages": "", "wald_ranef_var": 6.0}
    r.update(kw)
    return r


def _summaries():
    ref = pd.DataFrame([
        _row("a", "gsm", 1, "variant", 0.01),
        _row("b", "gsm", 1, "variant", 0.30),
        _row("c", "gsm", 1, "variant", 0.60, log_or=0.1),
        _row("a", "gsm", 2, "gamma_c", 0.02), _row("a", "gsm", 2, "variant", 0.5),
    ])
    ear = pd.DataFrame([
        _row("a", "gsm", 1, "variant", 0.012, fidelity="earnest"),                 # same conclusion
        _row("b", "gsm", 1, "variant", 0.04, fidelity="earnest", acc_variants=30.0),  # becomes significant
        _row("c", "gsm", 1, "variant", 0.70, log_or=-0.1, fidelity="earnest"),    # direction flips
        _row("a", "gsm", 2, "gamma_c", 0.02, fidelity="earnest"), _row("a", "gsm", 2, "variant", 0.5, fidelity="earnest"),
    ])
    return ref, ear


def test_changed_conclusions_are_flagged():
    ref, ear = _summaries()
    t = compare_modes({"reference": ref, "earnest": ear})
    g1 = t[t["glmm"] == 1].set_index("model")
    assert g1.loc["a", "changed"] == ""
    # b: significant under earnest only; Holm over 3 models (0.012*3 = 0.036 and 0.04*2 = 0.08) keeps it not
    assert g1.loc["b", "changed"] == "significance"
    assert g1.loc["b", "p_holm_earnest"] == pytest.approx(0.08)
    assert g1.loc["c", "changed"] == "direction"
    assert g1.loc["b", "acc_variants_earnest"] == 30.0 and g1.loc["b", "acc_variants_reference"] == 35.0
    # GLMM 2 rows come after GLMM 1, gamma_c before variant; Holm there is within the model's prompts
    assert t[["glmm", "term"]].drop_duplicates().values.tolist() == [[1, "variant"], [2, "gamma_c"], [2, "variant"]]
    assert t.loc[(t["glmm"] == 2) & (t["term"] == "gamma_c"), "p_holm_reference"].item() == pytest.approx(0.02)


def test_a_degenerate_fit_is_never_a_significant_conclusion():
    ref, ear = _summaries()
    ref.loc[0, ["acc_base", "acc_variants"]] = 0.0          # no correct answer at all: degenerate
    t = compare_modes({"reference": ref, "earnest": ear})
    a = t[(t["glmm"] == 1) & (t["model"] == "a")].iloc[0]
    assert not a["significant_uncorrected_reference"] and a["significant_uncorrected_earnest"] and a["changed"].startswith("significance")


def test_a_separated_reference_fit_prints_a_bounded_odds_ratio_and_the_authors_verdict(tmp_path):
    """A reference-mode fit whose resamples separated (estimates at +421 log-odds, P 0): the authors'
    procedure calls it significant and reference mode reports that (issue 54.1: no rule of earnest's
    changes a reference verdict), but the table never prints its odds ratio's hundreds of digits."""
    ref, ear = _summaries()
    ref.loc[0, ["median_log_or", "odds_ratio", "p_boot"]] = [421.0, float(np.exp(421.0)), 0.0]   # separated
    t = compare_modes({"earnest": ear, "reference": ref})
    paths = write_sensitivity(t, tmp_path / "s", ["earnest", "reference"], regenerated=False)
    md = paths["md"].read_text()
    row = next(x for x in md.splitlines() if "| a |" in x.replace("**", "") and "Variant" in x)
    assert ">1000000" in row and "e+" not in md and len(max(md.split(), key=len)) < 80


def test_rows_in_one_mode_only_and_bad_modes():
    ref, ear = _summaries()
    t = compare_modes({"earnest": ear, "reference": ref[ref["model"] != "c"]})
    c = t[(t["glmm"] == 1) & (t["model"] == "c")].iloc[0]
    assert c["changed"] == "estimated in earnest only"
    with pytest.raises(ValueError, match="both modes"):
        compare_modes({"reference": ref, "paper": ear})


def test_written_table(tmp_path):
    ref, ear = _summaries()
    t = compare_modes({"earnest": ear, "reference": ref})
    paths = write_sensitivity(t, tmp_path / "sensitivity", ["earnest", "reference"], regenerated=False,
                              prompt_labels={"gsm": "GSM"})
    md = paths["md"].read_text()
    assert "| GLMM 1 Variant | GSM | b | 40.0 / 30.0 | 0.61 | 0.040 (0.080) | yes | 40.0 / 35.0 | 0.61 | 0.300 (0.600) | no | **significance** |" in md
    assert "from the same generations" in md and "2 of 5 rows change" in md
    csv = pd.read_csv(paths["csv"])
    assert {"p_boot_earnest", "p_boot_reference", "rows_reference", "changed"} <= set(csv.columns)


def test_each_mode_has_its_scoring_env_and_interpreter():
    """Issue 41.2: the helpers the scoring rules take their conda env and interpreter of model code
    from, per mode (rules/score.smk, rules/sensitivity.smk; tests/test_workflow.py checks the rules)."""
    from earnest.config import sandbox_python, validate_schema
    from earnest.fidelity import score_env
    from earnest.schema import SCHEMA_PATH

    assert score_env("reference") == "envs/score-reference.yaml" and score_env("earnest") == "envs/score.yaml"
    assert "python=3.12" in (Path(__file__).resolve().parents[1] / score_env("reference")).read_text()
    assert sandbox_python("", "reference") == "" and sandbox_python("python3.12", "earnest") == "python3.12"
    per_mode = {"reference": "/opt/py312/bin/python3.12"}
    assert sandbox_python(per_mode, "reference") == per_mode["reference"] and sandbox_python(per_mode, "earnest") == ""
    with pytest.raises(ValueError):
        sandbox_python("", "fast")
    # the schema takes a string or a mapping per mode, nothing else
    import yaml

    from earnest.config import ConfigError

    schema = yaml.safe_load(SCHEMA_PATH.read_text())
    node = {"type": "object", "properties": {"sandbox": schema["properties"]["sandbox"]}}
    for ok in ("", "python3.12", per_mode, {"earnest": "", "reference": "python3.12"}):
        validate_schema({"sandbox": {"python": ok}}, node)
    for bad in ({"fast": "python3"}, 3, {"reference": 3}):
        with pytest.raises(ConfigError):
            validate_schema({"sandbox": {"python": bad}}, node)
