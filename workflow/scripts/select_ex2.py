"""Ex1 -> Ex2: the models whose variant effect (GLMM 1, Ex1 prompt) has an uncorrected bootstrap
p below alpha go on to the alternative prompt formats.

snakemake.input.summaries: Ex1 GLMM 1 summary parquets; snakemake.params.alpha;
snakemake.output[0]: YAML {ex2_models: [...], alpha, decisions: {model: {p_boot, selected}}}.
"""
import sys
from pathlib import Path

import pandas as pd
import yaml

sys.path.insert(0, str(Path(snakemake.scriptdir)))  # noqa: F821
from _common import setup  # noqa: E402

log = setup(snakemake)  # noqa: F821
alpha = float(snakemake.params.alpha)  # noqa: F821
decisions = {}
for path in snakemake.input.summaries:  # noqa: F821
    s = pd.read_parquet(path)
    row = s[s["term"] == "variant"]
    if len(row) != 1:
        raise ValueError(f"{path}: expected one 'variant' row, found {len(row)}")
    r = row.iloc[0]
    p = float(r["p_boot"])
    decisions[str(r["model"])] = {"p_boot": None if pd.isna(p) else p, "selected": bool(p < alpha)}
    log.info("%s: variant effect p_boot=%s -> %s", r["model"], p, "Ex2" if p < alpha else "stops after Ex1")
selected = [m for m, d in decisions.items() if d["selected"]]
with open(snakemake.output[0], "w") as fh:  # noqa: F821
    yaml.safe_dump({"ex2_models": selected, "alpha": alpha, "decisions": decisions}, fh, sort_keys=False)
