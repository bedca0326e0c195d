"""StatFormBench's official release: the authors' data/statformbench.json at a pinned revision.

snakemake.params: repo, revision, file (config statform.release), sha256 (checked when given),
  path (a local copy, offline: copied instead of fetched);
snakemake.output[0]: the release file (read and checked as a release before it is in place; its
  sha256 is logged and written beside it as <file>.sha256); snakemake.log[0]: log file.
"""

from pathlib import Path

from earnest.joblog import job_logger
from earnest.statform.release import install_release

log = job_logger(snakemake.log[0], "statform_release")  # noqa: F821

try:
    sm = snakemake  # noqa: F821
    p = sm.params
    got = install_release(sm.output[0], local=p.path, repo=p.repo, revision=p.revision, file=p.file, sha256=p.sha256)
    Path(f"{sm.output[0]}.sha256").write_text(got["sha256"] + "\n")
    log.info("release %s: %d samples, sha256 %s%s", got["origin"], got["samples"], got["sha256"],
             "" if p.sha256 else " (not pinned: set statform.release.sha256 to this value)")
except Exception:
    log.exception("statform release failed")
    raise
