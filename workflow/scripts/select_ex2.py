"""Ex1 -> Ex2 (section 3.6): the models whose variant effect (GLMM 1, the Ex1 prompt) is
significant in the Ex1 summaries table go on to the alternative prompt formats
(earnest.stats.summaries.ex2_selection: the table's column significant_uncorrected, the bootstrap
P value before Holm below alpha, which never counts a degenerate fit); the decision file says why for each model.

snakemake.input[0]: the Ex1 summaries table (rule ex1_summaries); snakemake.params.ex1_prompt;
snakemake.output[0]: YAML {ex2_models: [...], alpha, decisions: {model: {p_boot, verdict, problems,
  selected}}}; snakemake.log[0]: log file.
"""

import yaml

from earnest.joblog import job_logger

log = job_logger(snakemake.log[0], "select_ex2")  # noqa: F821

from earnest.stats.summaries import ex2_selection, read_summaries  # noqa: E402

sm = snakemake  # noqa: F821
table = read_summaries(sm.input[0])
chosen, decisions = ex2_selection(table, sm.params.ex1_prompt)
for model, d in decisions.items():
    log.info("%s: variant effect p_boot=%s, fit %s -> %s", model, d["p_boot"], d["verdict"],
             "Ex2" if d["selected"] else "stops after Ex1")
alpha = float(table["alpha"].iloc[0]) if len(table) else None
with open(sm.output[0], "w") as fh:
    yaml.safe_dump({"ex2_models": chosen, "alpha": alpha, "decisions": decisions}, fh, sort_keys=False)
