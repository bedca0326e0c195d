"""Kolmogorov-Smirnov test on the integers in GSM-Base vs GSM-Variants questions, and Figure 8.

snakemake.input.base, snakemake.input.variants: item parquets (column question);
snakemake.output.table: CSV path of the result table (.md and .tex are written beside it, same stem);
snakemake.output.figure, .svg, .pdf: Figure 8, drawn once and saved as each (earnest.plotting.save_figure);
snakemake.params.fidelity: how numbers are read (earnest.gsm.gamma);
snakemake.log[0]: log file.
"""

from pathlib import Path

import pandas as pd

from earnest.gsm.ks import integers_of, ks_test, plot_integer_distributions
from earnest.tables import write_table
from earnest.wording import format_p
from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "ks_test")  # noqa: F821

try:
    base = pd.read_parquet(snakemake.input.base)["question"]  # noqa: F821
    variants = pd.read_parquet(snakemake.input.variants)["question"]  # noqa: F821
    fidelity = snakemake.params.fidelity  # noqa: F821
    res = ks_test(base, variants, fidelity=fidelity)
    log.info("K-S D = %.4f, p = %.3g (%d / %d integers)", res.statistic, res.pvalue, res.n_base, res.n_variants)
    table = pd.DataFrame([{"D": res.statistic, "p": res.pvalue, "integers GSM-Base": res.n_base,
                           "integers GSM-Variants": res.n_variants}])
    stem = Path(snakemake.output.table).with_suffix("")  # noqa: F821
    write_table(table, stem, "Two-sample Kolmogorov-Smirnov test of the integers written in GSM-Base "
                "against GSM-Variants questions (section 4.3).",
                formatters={"D": lambda x: f"{x:.4f}", "p": format_p})
    plot_integer_distributions(integers_of(base, fidelity=fidelity), integers_of(variants, fidelity=fidelity),
                               Path(snakemake.output.figure).with_suffix(""), ks=res)  # noqa: F821
except Exception:
    log.exception("K-S test failed")
    raise
