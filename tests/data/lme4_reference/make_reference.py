"""Write lme4's fits of a few fixed simulated data sets as literals (tests/data/lme4_reference/): what
tests/test_laplace_literals.py checks the laplace engine against without R, as statsmodels checks its
models against R's numbers.

    PYTHONPATH=src python3 tests/data/lme4_reference/make_reference.py

writes <name>.csv (the GLMM input of each data set, so the test does not depend on the simulator's
random numbers) and lme4_fits.json (per data set and GLMM: lme4's version, R's version, the rows fitted,
and for glmer with its PIRLS converged, glmerControl(tolPwrss = 1e-12), and with its defaults: fixed
effects and their Wald SEs (vcov(), from the finite-difference Hessian lme4 computes), the random
intercept's variance and its theta, and the deviance -2 logLik: the Laplace approximation glmer
minimises, with the binomial coefficients of the aggregated rows).
Run it again only to add a data set or after changing how lme4 is called; the numbers are lme4's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "src"))

from earnest.stats import glmm as G  # noqa: E402
from earnest.stats import rbridge  # noqa: E402
from earnest.stats.simulate import simulate_glmm_input  # noqa: E402

#: name -> (what it is, simulate_glmm_input's arguments)
DATASETS = {
    "clear_effect": ("a clear variant effect at ~60% accuracy (true log OR -0.9, gamma -0.3)",
                     dict(n_templates=24, n_variants=8, variant_effect=-0.9, gamma_effect=-0.3, intercept=0.6,
                          ranef_sd=1.2, seed=101)),
    "null_effect": ("no variant effect (log OR 0, gamma 0)",
             dict(n_templates=24, n_variants=8, variant_effect=0.0, gamma_effect=0.0, intercept=0.4, ranef_sd=1.0,
                  seed=202)),
    "near_ceiling": ("near the ceiling, ~98% base accuracy, with an effect (true log OR -1.8)",
                     dict(n_templates=30, n_variants=10, variant_effect=-1.8, gamma_effect=-0.2, intercept=5.0,
                          ranef_sd=0.8, seed=303)),
}

FIT_R = r"""
function(d, glmm, tol_pwrss) {
  f <- if (glmm == 1L) cbind(succ, fail) ~ variant + (1 | template)
       else cbind(succ, fail) ~ variant + gamma_c + (1 | template)
  d$template <- factor(d$template)
  control <- if (tol_pwrss > 0) lme4::glmerControl(tolPwrss = tol_pwrss) else lme4::glmerControl()
  msgs <- character(0)
  fit <- withCallingHandlers(lme4::glmer(f, data = d, family = binomial, control = control),
    warning = function(w) { msgs <<- c(msgs, conditionMessage(w)); invokeRestart("muffleWarning") },
    message = function(m) invokeRestart("muffleMessage"))
  cm <- coef(summary(fit))
  list(terms = rownames(cm), estimate = unname(cm[, 1]), se = unname(cm[, 2]),
       ranef_var = as.numeric(lme4::VarCorr(fit)$template[1, 1]),
       deviance = as.numeric(-2 * logLik(fit)),
       theta = as.numeric(lme4::getME(fit, "theta")),
       messages = c(msgs, as.character(fit@optinfo$conv$lme4$messages)))
}
"""


def main() -> None:
    ro = rbridge.r()
    fit = ro.r(FIT_R)
    versions = {"lme4": str(ro.r('as.character(packageVersion("lme4"))')[0]),
                "R": str(ro.r("R.version.string")[0])}
    out = {"versions": versions, "datasets": {}}
    for name, (what, args) in DATASETS.items():
        raw = simulate_glmm_input(**args, model=name, prompt="sim")
        raw.to_csv(HERE / f"{name}.csv", index=False, float_format="%.17g")
        fits = {}
        for glmm in (1, 2):
            data = G.validate_glmm_input(raw, glmm)
            frame = G.model_frame(data, glmm, aggregate=True)
            per = {}
            for label, tol in (("tight", 1e-12), ("default", 0.0)):
                res = fit(rbridge.to_r_frame(frame), glmm, tol)
                r = {k: list(res.rx2(k)) for k in res.names}
                per[label] = {"terms": [str(t) for t in r["terms"]],
                              "estimate": [float(x) for x in r["estimate"]], "se": [float(x) for x in r["se"]],
                              "ranef_var": float(r["ranef_var"][0]), "theta": float(r["theta"][0]),
                              "deviance": float(r["deviance"][0]),
                              "messages": [str(m) for m in r["messages"]]}
            fits[f"glmm{glmm}"] = {"rows": int(len(frame)), **per}
        acc = raw.groupby("variant")["correct"].mean().round(4).to_dict()
        out["datasets"][name] = {"what": what, "simulate": args, "accuracy_by_variant": acc, "fits": fits}
    (HERE / "lme4_fits.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: {g: v["fits"][g]["tight"]["estimate"] for g in v["fits"]}
                      for k, v in out["datasets"].items()}, indent=1))


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
