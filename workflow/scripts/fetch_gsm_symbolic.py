"""Fetch the official GSM-Symbolic release file at its pinned revision (run on the login node).

snakemake.params: repo (hub dataset id), revision (commit id), file (path in the repository),
cache_dir (huggingface_hub cache or None); snakemake.output[0]: the release file the items rules read.
"""

from earnest.joblog import job_logger  # noqa: E402

log = job_logger(snakemake.log[0], "fetch_gsm_symbolic")  # noqa: F821
from earnest.gsm.datasets import fetch_release, read_release_jsonl  # noqa: E402

p = snakemake.params  # noqa: F821
path = fetch_release(p.repo, p.revision, p.file, snakemake.output[0], cache_dir=p.cache_dir)  # noqa: F821
log.info("fetched %s@%s:%s -> %s (%d records)", p.repo, p.revision, p.file, path, len(read_release_jsonl(path)))
