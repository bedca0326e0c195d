"""StatFormBench construction: one raw entry of the config (statform_build) as its own file, so that
editing one entry reruns only that entry's jobs (earnest.statform.build.files.write_entry).

snakemake.params.record: the entry as JSON text; snakemake.output[0]: entries/{unit}.json;
snakemake.log[0]: log file.
"""

import json

from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "sfb_entry")  # noqa: F821

from earnest.statform.build.files import write_entry  # noqa: E402

write_entry(json.loads(snakemake.params.record), snakemake.output[0])  # noqa: F821
log.info("wrote %s", snakemake.output[0])  # noqa: F821
