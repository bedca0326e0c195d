# Scoring (rules/score.smk): the scored tables the sandbox table reads.


def code_scored_files(wildcards=None):
    """The scored tables of the code prompts (their answers ran in the sandbox)."""
    return [scored_path(m, p, d) for m, p in model_prompts() for d in DATASETS if FORMATS[p].style == "code"]
