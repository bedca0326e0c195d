"""Fetch one hub model's pinned revision into the cache directory (run on the login node).

snakemake.params: hub (repo id), revision (commit id or None), cache_dir; snakemake.output[0]: marker file.
"""

from earnest.joblog import job_logger  # noqa: E402

log = job_logger(snakemake.log[0], "fetch_model")  # noqa: F821
from huggingface_hub import snapshot_download  # noqa: E402

p = snakemake.params  # noqa: F821
path = snapshot_download(repo_id=p.hub, revision=p.revision, cache_dir=p.cache_dir)
log.info("fetched %s@%s into %s", p.hub, p.revision, path)
