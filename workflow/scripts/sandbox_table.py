"""Which Python ran model code, under which sandbox layers (earnest.gsm.scoring.sandbox_table).

snakemake.input.scored: the scored parquets of the code prompts; snakemake.output.md (csv and tex
beside it); snakemake.log[0]: log file.
"""

from pathlib import Path

import pandas as pd

from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "sandbox_table")  # noqa: F821

from earnest.gsm.scoring import SANDBOX_TABLE_CAPTION, sandbox_table  # noqa: E402
from earnest.tables import write_table  # noqa: E402

try:
    sm = snakemake  # noqa: F821
    files = [sm.input.scored] if isinstance(sm.input.scored, str) else list(sm.input.scored)
    table = sandbox_table(pd.concat([pd.read_parquet(f) for f in files], ignore_index=True))
    out = Path(sm.output.md)
    write_table(table, out.parent / out.stem, SANDBOX_TABLE_CAPTION)
    log.info("%d scored files -> %d rows", len(files), len(table))
except Exception:
    log.exception("sandbox table failed")
    raise
