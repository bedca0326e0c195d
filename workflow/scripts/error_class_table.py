"""The error-class count table (Appendix F) from the scored tables (earnest.gsm.error_table).

snakemake.input.scored: scored parquets; snakemake.params: styles (prompt -> text|code),
prompt_labels (prompt -> label), fidelity (which failure classes are listed);
snakemake.output.csv / .md / .tex (one stem); snakemake.log[0]: log file.
"""

from pathlib import Path

import pandas as pd

from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "error_class_table")  # noqa: F821

from earnest.gsm.error_table import error_class_table, write_error_class_table  # noqa: E402
from earnest.tables import require_columns  # noqa: E402

COLUMNS = ["model", "prompt", "dataset", "error_class"]

try:
    sm = snakemake  # noqa: F821
    files = [sm.input.scored] if isinstance(sm.input.scored, str) else list(sm.input.scored)
    frames = [require_columns(pd.read_parquet(f), COLUMNS, f)[COLUMNS] for f in files]
    scored = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)
    table = error_class_table(scored, dict(sm.params.styles), prompt_labels=dict(sm.params.prompt_labels),
                              fidelity=sm.params.fidelity)
    out = Path(sm.output.csv)
    paths = write_error_class_table(table, out.parent / out.stem)
    log.info("%d scored files -> %d count rows: %s", len(files), len(table), ", ".join(map(str, paths.values())))
except Exception:
    log.exception("the error-class table failed")
    raise
