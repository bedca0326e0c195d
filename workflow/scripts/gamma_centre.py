"""Reference mode's centre of GLMM 2's gamma for one prompt: the mean over the authors' pool, the
scored tables of every model of the prompt (earnest.gsm.glmm_input.pool_gamma_centre), written apart
from the GLMM inputs so that only GLMM 2's fits read it.

snakemake.input.pool: the scored parquets of every model of the prompt (GSM-Base and the variant set);
snakemake.params.reasoning_only: bool: the rows the reasoning-only analysis keeps;
snakemake.output[0]: JSON {"gamma_centre": value or null, "tables": [...]}; snakemake.log[0]: log file.
"""

from earnest.gsm.glmm_input import pool_gamma_centre, read_scored, save_pool_centre
from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "gamma_centre")  # noqa: F821

try:
    pool = snakemake.input.pool  # noqa: F821
    pool = [pool] if isinstance(pool, str) else list(pool)
    centre = pool_gamma_centre(read_scored(pool), reasoning_only=bool(snakemake.params.reasoning_only),  # noqa: F821
                               source=", ".join(pool))
    save_pool_centre(snakemake.output[0], centre, pool)  # noqa: F821
    log.info("GLMM 2's gamma centred on %r, the mean over %d scored tables of the prompt's models", centre, len(pool))
except Exception:
    log.exception("the pool's centre of gamma failed")
    raise
