"""Ex1 -> Ex2: the models whose variant effect (GLMM 1, Ex1 prompt) has an uncorrected bootstrap
p below alpha go on to the alternative prompt formats. A degenerate fit (no correct answers, or
complete separation: see earnest.stats.diagnostics.fit_problems) is not counted as significant,
whatever its p value, and the decision file says why.

snakemake.input.summaries: Ex1 GLMM 1 summary parquets; snakemake.params.alpha;
snakemake.output[0]: YAML {ex2_models: [...], alpha, decisions: {model: {p_boot, selected}}}.
"""

import pandas as pd
import yaml

from earnest.joblog import job_logger  # noqa: E402

log = job_logger(snakemake.log[0], "select_ex2")  # noqa: F821
from earnest.stats.diagnostics import fit_problems  # noqa: E402

alpha = float(snakemake.params.alpha)  # noqa: F821
decisions = {}
for path in snakemake.input.summaries:  # noqa: F821
    s = pd.read_parquet(path)
    row = s[s["term"] == "variant"]
    if len(row) != 1:
        raise ValueError(f"{path}: expected one 'variant' row, found {len(row)}")
    r = row.iloc[0]
    p = float(r["p_boot"])
    verdict, statements = fit_problems(r)
    selected = bool(p < alpha) and verdict != "degenerate"
    decisions[str(r["model"])] = {"p_boot": None if pd.isna(p) else p, "verdict": verdict,
                                  "problems": statements, "selected": selected}
    log.info("%s: variant effect p_boot=%s, fit %s -> %s", r["model"], p, verdict,
             "Ex2" if selected else "stops after Ex1")
chosen = [m for m, d in decisions.items() if d["selected"]]
with open(snakemake.output[0], "w") as fh:  # noqa: F821
    yaml.safe_dump({"ex2_models": chosen, "alpha": alpha, "decisions": decisions}, fh, sort_keys=False)
