"""The laplace engine checked against lme4 WITHOUT R (issue 50): lme4 1.1-31's fits of three fixed
simulated data sets (a clear effect, no effect, near the ceiling), GLMM 1 and GLMM 2, stored as
literals in tests/data/lme4_reference/lme4_fits.json by make_reference.py there (its README gives
the versions), as statsmodels checks its models against R's numbers.

Tolerances. laplace minimises lme4's Laplace deviance evaluated exactly; lme4 with its PIRLS
iterated to convergence (glmerControl(tolPwrss = 1e-12), the "tight" literals) minimises the same
function, and its bobyqa stops within ~1e-5 of the optimum: measured differences are at most
2.1e-5 (estimates), 4.4e-6 relative (Wald SEs, both from deriv12's finite-difference Hessian,
step 1e-4), 1.8e-5 (random-intercept variance) and 5e-8 (deviance), so the test allows 1e-4,
1e-4 relative, 1e-4 and 1e-6: ten times the largest difference seen, far below any difference a
wrong deviance, Hessian or parametrisation makes (a changed binomial constant or a Hessian off by
a factor 2 moves these by orders of magnitude more). Against glmer's defaults (PIRLS stopped at a
relative change of 1e-7: estimates off by up to 2.3e-3, SEs by 1.2%, docs/engines.md) the test
asks for 5e-3 and 2%, and that laplace's deviance is never above lme4's (it finds the optimum lme4
stops short of)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from earnest.stats import glmm as G
from earnest.stats.engines import laplace as LP

REF = Path(__file__).parent / "data" / "lme4_reference"
LITERALS = json.loads((REF / "lme4_fits.json").read_text())
CASES = [(name, glmm) for name in LITERALS["datasets"] for glmm in (1, 2)]


def _laplace(name: str, glmm: int):
    raw = pd.read_csv(REF / f"{name}.csv", keep_default_na=False)
    data = G.validate_glmm_input(raw, glmm)
    des = LP.Design.from_input(data, glmm)
    deviance = float(LP.fit_arrays(des, np.ones((1, des.n_templates)), checks=LP.DERIV12).deviance[0])
    return LP.full_fit(data, glmm), deviance, des


def test_the_literals_cover_the_cases_asked_for():
    assert LITERALS["versions"]["lme4"] == "1.1.31"
    d = LITERALS["datasets"]
    assert set(d) == {"clear_effect", "null_effect", "near_ceiling"}
    assert d["near_ceiling"]["accuracy_by_variant"]["0"] > 0.95
    assert d["clear_effect"]["fits"]["glmm1"]["tight"]["estimate"][1] < -1.0
    assert abs(d["null_effect"]["simulate"]["variant_effect"]) == 0


@pytest.mark.parametrize("name, glmm", CASES)
def test_laplace_reproduces_lme4s_literals(name, glmm):
    lit = LITERALS["datasets"][name]["fits"][f"glmm{glmm}"]
    wf, deviance, des = _laplace(name, glmm)
    assert len(des.y) == lit["rows"]
    tight, default = lit["tight"], lit["default"]
    assert list(wf.coefs["term"]) == tight["terms"] and not tight["messages"] and not wf.messages
    est, se = wf.coefs["estimate"].to_numpy(float), wf.coefs["se"].to_numpy(float)
    np.testing.assert_allclose(est, tight["estimate"], rtol=0, atol=1e-4)
    np.testing.assert_allclose(se, tight["se"], rtol=1e-4, atol=0)
    assert wf.ranef_var == pytest.approx(tight["ranef_var"], abs=1e-4)
    assert deviance == pytest.approx(tight["deviance"], abs=1e-6)
    # glmer's defaults stop short of the optimum laplace finds
    np.testing.assert_allclose(est, default["estimate"], rtol=0, atol=5e-3)
    np.testing.assert_allclose(se, default["se"], rtol=2e-2, atol=0)
    assert deviance <= default["deviance"] + 1e-6


def test_the_check_runs_without_r():
    # a fresh interpreter in which rpy2 cannot be imported: the laplace engine fits and matches
    code = ("import sys; sys.modules['rpy2'] = None\n"
            "sys.path.insert(0, 'tests')\n"
            "import test_laplace_literals as T\n"
            "T.test_laplace_reproduces_lme4s_literals('clear_effect', 2)\n"
            "assert 'rpy2.robjects' not in sys.modules\n"
            "print('ok')\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parents[1], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]
