# Config checks, registries, wildcard constraints and the helpers every stage shares (paths, the
# model x prompt design, model inputs, Slurm resources, the run's targets). Each stage's own input
# functions and target lists are in rules/<stage>_targets.smk, included by rules/<stage>.smk.
# Everything here runs when Snakemake builds the DAG, so bad input stops the run before any job.
# The checks themselves live in the library (earnest.config), the defaults in config/schema.yaml;
# jobs import the installed earnest package (pip install -e .; the conda envs install it too).
import dataclasses
import os
import re
import sys
from pathlib import Path


from earnest.backends.hf import model_device, model_dtype, resolve_gguf
from earnest.config import (
    BUILT_BENCHMARK,
    ConfigError,
    check_workflow_config,
    config_locations,
    locate,
    resolve_path,
    sandbox_python,
    validate_schema,
)
from earnest.fidelity import score_env
from earnest.gsm.datasets import DATASETS, release_path
from earnest.gsm.prompts import PromptFormatError, load_formats
from earnest.stats.engines import engine_for
from earnest.gsm.report import stats_table_labels
from earnest.runlock import clear_stale_locks, record_owner, release_owner

# After a killed Snakemake (kill -9, a lost login session) its locks stay in .snakemake/locks and
# the next run would refuse to start: remove them when the run that took them is gone
# (earnest.runlock). Only the main Snakemake process does this, never a job started by it.
if workflow.exec_mode.name == "DEFAULT":
    _stale = clear_stale_locks(Path(".snakemake"))
    if _stale:
        print(f"earnest: {_stale}", file=sys.stderr)

    onstart:
        record_owner(Path(".snakemake"))

    onsuccess:
        release_owner(Path(".snakemake"))

    onerror:
        release_owner(Path(".snakemake"))


BASEDIR = Path(workflow.basedir)
# the conda environments (envs/*.yaml) pip-install the package from here: `-e ${EARNEST_SOURCE}`
os.environ.setdefault("EARNEST_SOURCE", str(BASEDIR))


def _portable(path):
    """A path as the rules record it (inputs, params: what Snakemake compares to decide a rerun):
    relative to the working directory when it lies inside it (a run in its checkout, or a project
    folder holding the workflow), else as it is. A finished run copied or moved then plans nothing:
    its own files keep their names, and a workflow outside it keeps its place."""
    path = Path(path)
    if path.is_absolute():
        here = Path.cwd().resolve()
        if path.resolve().is_relative_to(here):
            return Path(os.path.relpath(path.resolve(), here))
    return path


def _shipped(rel):
    """A file shipped with the workflow (``resources/...``), as :func:`_portable` records it."""
    return str(_portable(BASEDIR / rel))


def env_container(env):
    """The container image of environment ``env`` (envs/<env>.yaml) from config ``containers``: its
    own, else ``all``'s, else None (no container; snakemake --sdm apptainer then runs the job on the
    host). docs/hpc.md, "Sites without conda"."""
    images = config.get("containers") or {}
    return images.get(env) or images.get("all") or None


def _repo_path(p):
    """A config path: absolute (kept as written), or relative to the working directory, else to the
    workflow (then as :func:`_portable` records it)."""
    if Path(p).expanduser().is_absolute():
        return Path(p).expanduser()
    return _portable(resolve_path(p, BASEDIR))


def config_error(message):
    """Stop before any job with the message alone, its key's config file and line in front (a
    WorkflowError would be prefixed with this file's name and line instead)."""
    print(f"earnest: config error: {locate(str(message), _where)}", file=sys.stderr)
    sys.exit(1)


# every problem of the config files, each named by file, line and key (earnest.config)
_where = {}
try:
    _where = config_locations(workflow.configfiles)
    CHECKED, FORMATS = check_workflow_config(config, workflow.configfiles, BASEDIR, locations=_where)
except (ConfigError, PromptFormatError) as exc:
    config_error(exc)

EXP = config["experiments"]
EX1_PROMPT = EXP["ex1_prompt"]
EX2_PROMPTS = list(EXP["ex2_prompts"])
# the formats this run uses (Ex1's, then Ex2's): what tables, figures and comparisons are told of, so
# that adding another format to formats.yaml changes none of their parameters
RUN_PROMPTS = list(dict.fromkeys([EX1_PROMPT, *EX2_PROMPTS]))
CODE_PROMPTS = [p for p in RUN_PROMPTS if FORMATS[p].style == "code"]
MODELS = config["models"]
# models evaluated on GSM-Symbolic (a model entry with gsm_symbolic: false is used by StatFormBench only)
GSM_MODELS = [m for m in MODELS if MODELS[m]["gsm_symbolic"]]
GSM = config["gsm_symbolic"]
TEMPLATES = CHECKED.templates
# Ex4 (rules/experiments.smk): number-controlled variant sets, each a dataset of its own
EX4 = config["ex4"]
CONTROLLED = (["gsm_matched"] + [f"gsm_shifted{k}" for k in EX4["shifts"]]) if EX4["enabled"] else []

# ---------------------------------------------------------------- Slurm routing
SLURM = config["slurm"]
GPU_PARTITION = SLURM["gpu_partition"]
CPU_PARTITION = SLURM["cpu_partition"]
# "" = no -A: Slurm's default account; a named one is checked by the plugin with sacctmgr
SLURM_ACCOUNT = SLURM["account"]
# what every CPU job asks Slurm for (`resources: **CPU_JOB`; the profile adds memory, and a runtime
# where the rule names none)
CPU_JOB = {"slurm_partition": CPU_PARTITION, "slurm_account": SLURM_ACCOUNT}


def minutes(n):
    """A runtime resource of n minutes on the first attempt, n times the attempt on a retry (a job
    Slurm stopped at its time limit is given more)."""
    return lambda wildcards, attempt: n * attempt


# a small CPU job (item tables, scoring, GLMM inputs and summaries, tables, figures): these travel in
# the group jobs prep, post, inputs, fits and final, whose time Snakemake sums over their steps
SMALL_JOB = {**CPU_JOB, "runtime": minutes(SLURM["small_job_runtime"])}
# where a bootstrap shard and a fit's summary travel (slurm.bundle_shards): with their model x
# prompt's scoring in its post job, or each shard a job of its own and the summaries in `fits` jobs
# (the summary cannot share the post job that its shards left: a group may not be left and re-entered)
SHARD_GROUP = "post" if SLURM["bundle_shards"] else None
FIT_GROUP = "post" if SLURM["bundle_shards"] else "fits"
# a GLMM input and reference mode's centre of gamma (the gamma_centre rule), with their scoring in the
# post job (bundled), or in `inputs` jobs: the centre reads every model's scored tables of the prompt
# and its GLMM 2 fits read it, so in one group with them a prompt's whole grid would be one component
# (one post job of hours); apart, each scored table, input and centre is a component of its own
INPUT_GROUP = "post" if SLURM["bundle_shards"] else "inputs"
# a paired-comparison family: a job of its own, or (bundled: a small run, whose families take
# seconds) in the final job beside the tables, instead of one more job after it on a small node
COMPARE_GROUP = "final" if SLURM["bundle_shards"] else None
# the job groups of the rules above (profiles/slurm merges several connected components of each into
# one Slurm job with `group-components`)
JOB_GROUPS = ("prep", "post", "inputs", "fits", "final")

# Inside a Slurm group job the job runs `snakemake --executor slurm-jobstep --jobs 1` on its members,
# and that Snakemake groups them again without the profile's group-components (plugin 2.8 passes no
# group arguments to the job): each connected component became a group job of its own, run one after
# the other (--jobs 1), each through its own srun and Snakemake start, so the five components of a
# post=5 job ran in series on CPUs the job held for all of them, and longer than the time the job
# asked for (computed for its members side by side). Every member of this Slurm job belongs in one
# group: merge the components back, so that one srun runs them all on the job's CPUs, as the time
# limit assumes. Snakemake sets a run's group settings after reading the Snakefile, so they are
# replaced when the job's Snakemake starts executing. Only in a Slurm job's own Snakemake (remote
# mode, a --local-groupid); the main one keeps the profile's setting, a local run has no groups.
if workflow.exec_mode.name == "REMOTE" and "--local-groupid" in sys.argv:
    _execute_job = workflow.execute

    def _execute_one_group(*args, **kwargs):
        workflow.group_settings = dataclasses.replace(
            workflow.group_settings,
            group_components={g: 1_000_000 for g in JOB_GROUPS},
        )
        return _execute_job(*args, **kwargs)

    workflow.execute = _execute_one_group


def model_resources(model):
    return MODELS[model]["resources"]


def on_gpu(model):
    """A model's generation runs on a GPU node: it asks for GPUs (resources.gpu) and is not placed on
    the CPU (device cpu, the transformers backend's default; an API client never needs a GPU)."""
    m = MODELS[model]
    return int(m["resources"]["gpu"]) > 0 and m["backend"] == "transformers" and model_device(m) != "cpu"


def gpus(wildcards):
    n = int(model_resources(wildcards.model)["gpu"])
    return n if SLURM["request_gpus"] and on_gpu(wildcards.model) else 0


def generation_partition(wildcards):
    return GPU_PARTITION if on_gpu(wildcards.model) else CPU_PARTITION


# what a generation job asks for (`resources: **GENERATION_JOB`): its model's resources (config
# models.<name>.resources), in the gpu partition when it runs on a GPU
GENERATION_JOB = {
    "slurm_partition": generation_partition,
    "slurm_account": SLURM_ACCOUNT,
    "gpu": gpus,
    "mem_mb": lambda wc: model_resources(wc.model)["mem_mb"],
    "runtime": lambda wc: model_resources(wc.model)["runtime"],
}


if workflow.exec_mode.name == "DEFAULT":
    for _m in MODELS:
        if int(model_resources(_m)["gpu"]) > 0 and not on_gpu(_m):
            print(
                f"earnest: models.{_m} runs on the CPU (device {model_device(MODELS[_m])}, backend "
                f"{MODELS[_m]['backend']}): its generation jobs go to the cpu partition and resources.gpu "
                f"({model_resources(_m)['gpu']}) is not requested",
                file=sys.stderr,
            )


# ---------------------------------------------------------------- wildcard constraints
def _alternatives(names):
    return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))


wildcard_constraints:
    model=_alternatives(MODELS),
    prompt=_alternatives(FORMATS),
    dataset=_alternatives(list(DATASETS) + CONTROLLED),
    glmm="1|2",
    analysis=r"all|reasoning_only|matched|variants_matched|shifted\d+",
    shard=r"\d+",
    template=r"\d+",


# the fidelity mode of the run (earnest.fidelity)
FIDELITY = config["fidelity"]
STATS_DIR = "results/stats"
# the summaries table: the one contract downstream of the statistics (earnest.stats.summaries)
SUMMARIES = f"{STATS_DIR}/summaries.parquet"
EX1_SUMMARIES = f"{STATS_DIR}/ex1/summaries.parquet"
EX2_DECISION = "results/experiments/ex2_models.yaml"
# each prompt's label in tables and figures: its paper_name in formats.yaml, else its name
PROMPT_LABELS = {p: FORMATS[p].label for p in RUN_PROMPTS}


# ---------------------------------------------------------------- paths and the model x prompt design
def gen_path(model, prompt, dataset):
    return f"results/generations/{model}/{prompt}/{dataset}.parquet"


def scored_path(model, prompt, dataset):
    return f"results/scored/{model}/{prompt}/{dataset}.parquet"


def summary_path(analysis, glmm, model, prompt):
    return f"{STATS_DIR}/{analysis}/glmm{glmm}/{model}/{prompt}/summary.parquet"


def ex2_models():
    """Models that go on to Ex2: the config's list, else what the Ex1 checkpoint decided. The one
    place the Ex2 set is worked out; the summaries table records it (column ex2)."""
    if EXP["ex2_models"] is not None:
        return list(EXP["ex2_models"])
    import yaml

    with checkpoints.ex2_selection.get().output[0].open() as fh:
        return list(yaml.safe_load(fh)["ex2_models"] or [])


def ex2_decision_file(wildcards=None):
    """The checkpoint's decision, when the config leaves the Ex2 models to it."""
    return [EX2_DECISION] if EXP["ex2_models"] is None else []


def model_prompts():
    """(model, prompt) pairs of Ex1 and Ex2."""
    pairs = [(m, EX1_PROMPT) for m in GSM_MODELS]
    pairs += [(m, p) for m in ex2_models() for p in EX2_PROMPTS]
    return pairs


# ---------------------------------------------------------------- what a model's jobs need
GGUF_DIR = "results/models/gguf"


def model_inputs(wildcards):
    """What a model's jobs need first: a hub model fetched on the login node (rule fetch_model), a
    GGUF model converted once to a plain checkpoint (rule convert_gguf)."""
    m = MODELS[wildcards.model]
    if m.get("hub"):
        return [f"results/models/{wildcards.model}.fetched"]
    if m.get("gguf"):
        return [f"{GGUF_DIR}/{wildcards.model}"]
    return []


def model_cfg(model):
    """A model's config entry as the backend sees it: hub models load offline from the fetch cache,
    GGUF models from their converted checkpoint."""
    cfg = dict(MODELS[model])
    if cfg.get("hub"):
        cfg.setdefault("cache_dir", config["fetch"]["cache_dir"])
        cfg["offline"] = True
    if cfg.get("gguf"):
        cfg["path"] = f"{GGUF_DIR}/{model}"
        del cfg["gguf"]
    return cfg


# ---------------------------------------------------------------- the run's targets (rule all)
def all_targets(wildcards=None):
    """The run's results and, where the config turns them on, its logs (rules/logs_targets.smk)."""
    return run_targets() + inspect_log_targets() + mlflow_targets()


def run_targets():
    """Every stage's results; each stage's list is its rules/<stage>_targets.smk's."""
    # the generations themselves are results (every score traces back to its text), and listing them
    # makes a deleted generation file be rebuilt, with what depends on it
    targets = [gen_path(m, p, d) for m, p in model_prompts() for d in DATASETS]
    targets += [
        SUMMARIES,
        "results/tables/stats",
        "results/tables/ks.csv",
        "results/figures/fig8_integers.png",
    ]
    targets += figure_targets()
    if config["sensitivity"]["enabled"]:
        targets.append("results/tables/sensitivity.md")
    if config["statform"]["enabled"]:
        targets += statform_targets()
    if config["statform_build"]["enabled"]:
        targets += statform_build_targets()
    targets += power_targets()
    targets += compare_targets()
    targets += ex4_targets()
    targets += language_targets()  # [] unless gsm_symbolic.languages names another language
    if any(FORMATS[p].style == "code" for _, p in model_prompts()):
        targets.append("results/tables/sandbox.md")  # which Python and layers ran model code
    targets += report_targets()  # the findings and the answers pages of the report
    return targets
