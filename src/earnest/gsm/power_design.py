"""GSM-Symbolic's design and the paper's published Tables 2 and 3 as power scenarios: what the
generic power analysis (:mod:`earnest.stats.power`, which knows no benchmark) is given when it is
asked about the paper (``earnest power --paper-scenario``, the workflow's ``power`` targets).

* :data:`PAPER_DESIGN`: 100 templates x 50 GSM-Variants (plus one GSM-Base) per template;
* :func:`published_tables_2_3`: Tables 2 (GSM-Base accuracy) and 3 (template-intercept variance)
  of ``resources/published`` joined per model;
* :func:`published_scenarios`: power scenarios from them (a paper model, or a quantile over the 20);
* :func:`published_results`: the tables with the Wald MDE of the paper's design.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from earnest.stats.power import PowerError, Scenario, design_mde

#: The paper's GSM-Symbolic design: 100 templates, 50 GSM-Variants per template (plus one GSM-Base).
PAPER_DESIGN = (100, 50)
#: The published GLMM 1 columns (resources/published/README.md): Table 2 rows of
#: glmm1_variant_p.csv (GSM-Base accuracy) and Table 3 rows of glmm1_bootstrap_stats.csv (the
#: random intercept's variance; its "± std. dev." is the square root, not a spread).
TABLE2_FILE, TABLE2_COLUMNS = "glmm1_variant_p.csv", ("table", "prompt", "model", "acc_base", "p_value")
TABLE3_FILE, TABLE3_COLUMNS = "glmm1_bootstrap_stats.csv", ("table", "prompt", "model", "odds_ratio", "ci_low",
                                                            "ci_high", "ranef_variance")
#: scenario names that summarise the paper's 20 models: (quantile of GSM-Base accuracy and of
#: template variance, each taken separately)
SUMMARY_SCENARIOS = {"median": 0.5, "lower_quartile": 0.25, "upper_quartile": 0.75}


def default_published_dir():
    """``resources/published`` of this checkout."""
    from pathlib import Path
    return Path(__file__).resolve().parents[3] / "resources" / "published"


def _read_published(path, columns) -> pd.DataFrame:
    from pathlib import Path
    path = Path(path)
    try:
        df = pd.read_csv(path)
    except (OSError, pd.errors.ParserError) as exc:
        raise PowerError(f"{path}: cannot read the published table ({exc})") from exc
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise PowerError(f"{path}: missing columns {missing}")
    return df


def published_tables_2_3(directory) -> pd.DataFrame:
    """The paper's Tables 2 and 3 (GSM prompt, GLMM 1) joined per model: model, acc_base (%),
    p_value (as printed), odds_ratio, ci_low, ci_high, ranef_variance."""
    from pathlib import Path
    directory = Path(directory)
    t2 = _read_published(directory / TABLE2_FILE, TABLE2_COLUMNS)
    t3 = _read_published(directory / TABLE3_FILE, TABLE3_COLUMNS)
    t2 = t2[t2["table"].astype(int) == 2][["model", "acc_base", "p_value"]]
    t3 = t3[t3["table"].astype(int) == 3][["model", "odds_ratio", "ci_low", "ci_high", "ranef_variance"]]
    both = t2.merge(t3, on="model", how="inner")
    if both.empty or len(both) != len(t2) or len(both) != len(t3):
        raise PowerError(f"{directory}: Tables 2 and 3 ({TABLE2_FILE}, {TABLE3_FILE}) do not list the same models")
    return both.reset_index(drop=True)


def published_scenarios(directory, names: Sequence[str]) -> list[Scenario]:
    """Scenarios from the paper's Tables 2 (GSM-Base accuracy) and 3 (template-intercept variance),
    read from ``directory`` (``resources/published``). A name is a paper model (its own two
    numbers) or one of :data:`SUMMARY_SCENARIOS` (that quantile over the 20 models, of each number)."""
    both = published_tables_2_3(directory)
    out = []
    for name in names:
        if name in SUMMARY_SCENARIOS:
            q = SUMMARY_SCENARIOS[name]
            out.append(Scenario(f"paper {name}", float(both["acc_base"].quantile(q)) / 100.0,
                                float(both["ranef_variance"].quantile(q))))
        elif name in set(both["model"]):
            r = both[both["model"] == name].iloc[0]
            out.append(Scenario(str(name), float(r["acc_base"]) / 100.0, float(r["ranef_variance"])))
        else:
            raise PowerError(f"power scenario {name!r}: neither a model of the paper's Tables 2-3 "
                             f"({', '.join(both['model'])}) nor one of {', '.join(SUMMARY_SCENARIOS)}")
    return out


def published_results(directory) -> pd.DataFrame:
    """The paper's Tables 2 and 3 joined per model, with the Wald-approximation MDE of the paper's
    design (100 x 50) at each model's GSM-Base accuracy and template variance."""
    both = published_tables_2_3(directory)
    mde = [design_mde(PAPER_DESIGN[0], PAPER_DESIGN[1], float(r.acc_base), float(r.ranef_variance))["mde_or"]
           for r in both.itertuples()]
    return both.assign(wald_mde_or=mde)
