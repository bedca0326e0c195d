"""One model x prompt format x dataset's answers as an Inspect AI log (earnest.inspect_export).

snakemake.input.scored, .generations, .dataset_items: the scored table, its answers (their
prompt_sha256 and trace) and its items (their questions); snakemake.params.prompts_dir (as configured: relative to the
working directory, else the workflow's folder), snakemake.params.fidelity: the prompt format as the
answers were generated with it; snakemake.output[0]: the .eval log; snakemake.log[0]: log file.
"""

from pathlib import Path

import pandas as pd

from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "inspect_log")  # noqa: F821

import earnest  # noqa: E402
from earnest.config import resolve_path  # noqa: E402
from earnest.gsm.prompts import load_formats  # noqa: E402
from earnest.inspect_export import answers_table, write_inspect_log  # noqa: E402

sm = snakemake  # noqa: F821
workflow_dir = Path(earnest.__file__).resolve().parents[2]   # the checkout whose src/ the workflow runs
fmt = load_formats(resolve_path(sm.params.prompts_dir, workflow_dir), fidelity=sm.params.fidelity)[sm.wildcards.prompt]
scored = answers_table(pd.read_parquet(sm.input.scored), pd.read_parquet(sm.input.generations),
                       pd.read_parquet(sm.input.dataset_items), where=sm.input.scored)
path = write_inspect_log(scored, fmt.render, sm.output[0], model=sm.wildcards.model, prompt=sm.wildcards.prompt,
                         dataset=sm.wildcards.dataset, where=sm.input.scored)
log.info("%s: %d samples, accuracy %.3f (inspect view --log-dir %s)", path, len(scored),
         scored["correct"].mean() if len(scored) else float("nan"), Path(sm.output[0]).parents[2])
