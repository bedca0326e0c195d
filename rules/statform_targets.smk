# StatFormBench (rules/statform.smk): settings, the files its jobs read, and its targets.
from earnest.statform.figures import figure_labels as statform_figure_labels
from earnest.statform.prompts import default_prompt_path
from earnest.statform.reference import PROMPT_FILES, reference_prompt_dir

SF = config["statform"]
SF_MODELS = list(SF["models"])
SF_STRATEGIES = dict(SF["strategies"])
SF_DIR = "results/statform"


wildcard_constraints:
    strategy=_alternatives(SF_STRATEGIES) if SF_STRATEGIES else "zero_shot",


SF_RELEASE = SF["release"]
# statform.source official: the release file, fetched (or copied from statform.release.path) by statform_release
SF_RELEASE_FILE = f"{SF_DIR}/release/{SF_RELEASE['revision']}/statformbench.json"


def statform_dataset():
    """The samples statform_data reads: the release (source official), the benchmark built by
    rules/statform_build.smk (made, not read), or the file statform.dataset."""
    if SF["source"] == "official":
        return SF_RELEASE_FILE
    return BUILT_BENCHMARK if SF["dataset"] == BUILT_BENCHMARK else _repo_path(SF["dataset"])


def statform_taxonomy():
    """statform.taxonomy, read with the data (none: labels from the data only)."""
    return [str(_repo_path(SF["taxonomy"]))] if SF["taxonomy"] else []


def statform_prompt_template():
    """The prompt files the generation sends: with fidelity reference the authors' two prompts, else the
    template every strategy fills (statform.prompt_template, else the shipped one)."""
    if config["fidelity"] == "reference":
        return [str(_portable(reference_prompt_dir() / f)) for f in PROMPT_FILES.values()]
    return str(_repo_path(SF["prompt_template"])) if SF["prompt_template"] else str(_portable(default_prompt_path()))


def statform_targets():
    return [f"{SF_DIR}/tables", f"{SF_DIR}/figures"]
