"""The sensitivity table: this run's fidelity mode and the other one, side by side.

snakemake.input.main: summary parquets of this run (config fidelity); snakemake.input.other: summary
parquets of the other mode (results/sensitivity/<mode>/stats/...); snakemake.params: modes ([this
run's, other]), regenerate (bool), alpha, models (display order), prompt_labels;
snakemake.output.table/csv/tex: results/tables/sensitivity.{md,csv,tex}; snakemake.log[0].
"""

from earnest.joblog import job_logger  # noqa: E402

log = job_logger(snakemake.log[0], "sensitivity_table")  # noqa: F821
from pathlib import Path  # noqa: E402

import pandas as pd  # noqa: E402

from earnest.stats.sensitivity import compare_modes, write_sensitivity  # noqa: E402

sm = snakemake  # noqa: F821


def _concat(paths):
    paths = [paths] if isinstance(paths, str) else list(paths)
    return pd.concat([pd.read_parquet(p) for p in paths], ignore_index=True)


modes = list(sm.params.modes)
table = compare_modes({modes[0]: _concat(sm.input.main), modes[1]: _concat(sm.input.other)},
                      alpha=float(sm.params.alpha))
stem = Path(sm.output.table).with_suffix("")
write_sensitivity(table, stem, modes, regenerated=bool(sm.params.regenerate), alpha=float(sm.params.alpha),
                  prompt_labels=dict(sm.params.prompt_labels), models=list(sm.params.models))
log.info("%d rows, %d with a changed conclusion -> %s", len(table), int((table["changed"] != "").sum()), stem)
