"""The sensitivity table: this run's fidelity mode and the other one, side by side.

snakemake.input.main: the summaries table of this run (config fidelity); snakemake.input.other: the
summaries table of the other mode (results/sensitivity/<mode>/stats/summaries.parquet);
snakemake.params: modes ([this run's, other]), regenerate (bool), models (display order);
snakemake.output.table/csv/tex: results/tables/sensitivity.{md,csv,tex}; snakemake.log[0].
"""

from earnest.joblog import job_logger  # noqa: E402

log = job_logger(snakemake.log[0], "sensitivity_table")  # noqa: F821
from pathlib import Path  # noqa: E402

from earnest.gsm.sensitivity import compare_modes, write_sensitivity  # noqa: E402
from earnest.stats.summaries import read_summaries  # noqa: E402

sm = snakemake  # noqa: F821
modes = list(sm.params.modes)
main, other = read_summaries(sm.input.main), read_summaries(sm.input.other)
alpha = float(main["alpha"].iloc[0]) if len(main) else 0.05
table = compare_modes({modes[0]: main, modes[1]: other})
stem = Path(sm.output.table).with_suffix("")
write_sensitivity(table, stem, modes, regenerated=bool(sm.params.regenerate), alpha=alpha,
                  prompt_labels=dict(zip(main["prompt"], main["prompt_label"])), models=list(sm.params.models))
log.info("%d rows, %d with a changed conclusion -> %s", len(table), int((table["changed"] != "").sum()), stem)
