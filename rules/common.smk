# Config checks, registries, wildcard constraints and target lists.
# Everything here runs when Snakemake builds the DAG, so bad input stops the run before any job.
# The checks themselves live in the library (earnest.config), the defaults in config/schema.yaml;
# jobs import the installed earnest package (pip install -e .; the conda envs install it too).
import os
import re
import sys
from pathlib import Path


from earnest.backends.hf import resolve_gguf
from earnest.config import (
    BUILT_BENCHMARK,
    ConfigError,
    check_workflow_config,
    config_locations,
    locate,
    resolve_path,
    validate_schema,
)
from earnest.gsm.datasets import DATASETS, release_path
from earnest.gsm.prompts import PromptFormatError, formats_file, load_formats
from earnest.fidelity import other as other_mode
from earnest.stats.engines import engine_for, resolve_rows
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


def _repo_path(p):
    """A config path: absolute, or relative to the working directory, else to the workflow."""
    return resolve_path(p, BASEDIR)


def config_error(message):
    """Stop before any job with the message alone, its key's config file and line in front (a
    WorkflowError would be prefixed with this file's name and line instead)."""
    print(f"earnest: config error: {locate(str(message), _where)}", file=sys.stderr)
    sys.exit(1)


# every problem of the config files, each named by file, line and key (earnest.config)
_where = {}
try:
    _where = config_locations(workflow.configfiles)
    CHECKED, FORMATS, _, _where = check_workflow_config(config, workflow.configfiles, BASEDIR)
except (ConfigError, PromptFormatError) as exc:
    config_error(exc)

# every file a prompt is made of: its template (for this fidelity mode) and formats.yaml (stops, style)
FORMATS_YAML = str(formats_file(_repo_path(config["prompts_dir"])))


def prompt_files(wc):
    return [str(FORMATS[wc.prompt].path), FORMATS_YAML]


EXP = config["experiments"]
EX1_PROMPT = EXP["ex1_prompt"]
EX2_PROMPTS = list(EXP["ex2_prompts"])
CODE_PROMPTS = [p for p in FORMATS if FORMATS[p].style == "code"]
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


def model_resources(model):
    return MODELS[model]["resources"]


def on_gpu(model):
    """A model's generation runs on a GPU node: it asks for GPUs (resources.gpu) and is not placed on
    the CPU (device cpu, the transformers backend's default; an API client never needs a GPU)."""
    m = MODELS[model]
    return int(m["resources"]["gpu"]) > 0 and m["backend"] == "transformers" and m.get("device", "cpu") != "cpu"


def gpus(wildcards):
    n = int(model_resources(wildcards.model)["gpu"])
    return n if SLURM["request_gpus"] and on_gpu(wildcards.model) else 0


def generation_partition(wildcards):
    return GPU_PARTITION if on_gpu(wildcards.model) else CPU_PARTITION


if workflow.exec_mode.name == "DEFAULT":
    for _m in MODELS:
        if int(model_resources(_m)["gpu"]) > 0 and not on_gpu(_m):
            print(
                f"earnest: models.{_m} runs on the CPU (device {MODELS[_m].get('device', 'cpu')}, backend "
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
    analysis=r"all|reasoning_only|matched|shifted\d+",
    shard=r"\d+",
    template=r"\d+",


N_SHARDS = int(config["stats"]["shards"])
# the fidelity mode (earnest.fidelity) and the rows the bootstrap fits (stats.rows, else the mode's)
FIDELITY = config["fidelity"]
try:
    STATS_ROWS = resolve_rows(config["stats"].get("rows"), FIDELITY, engine=config["stats"]["engine"])
except ValueError as exc:
    config_error(exc)
STATS_DIR = "results/stats"
# the summaries table: the one contract downstream of the statistics (earnest.stats.summaries)
SUMMARIES = f"{STATS_DIR}/summaries.parquet"
EX1_SUMMARIES = f"{STATS_DIR}/ex1/summaries.parquet"
EX2_DECISION = "results/experiments/ex2_models.yaml"
# each prompt's label in tables and figures: its paper_name in formats.yaml, else its name
PROMPT_LABELS = {p: FORMATS[p].label for p in FORMATS}


# ---------------------------------------------------------------- target lists
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


def scored_files(wildcards=None):
    return [scored_path(m, p, d) for m, p in model_prompts() for d in DATASETS]


def code_scored_files(wildcards=None):
    """The scored tables of the code prompts (their answers ran in the sandbox)."""
    return [scored_path(m, p, d) for m, p in model_prompts() for d in DATASETS if FORMATS[p].style == "code"]


def summary_files(wildcards=None):
    """Ex1 (GLMM 1), Ex2 (GLMM 1), Ex3 (GLMM 2), and the reasoning-only analysis of code prompts."""
    out = []
    for m, p in model_prompts():
        out.append(summary_path("all", 1, m, p))
        out.append(summary_path("all", 2, m, p))
        if p in CODE_PROMPTS:
            out.append(summary_path("reasoning_only", 1, m, p))
            out.append(summary_path("reasoning_only", 2, m, p))
    return out


def refit_files(wildcards=None):
    return [s.replace("summary.parquet", "refits.parquet") for s in summary_files()]


def glmm_input_files(wildcards=None):
    return [f"{STATS_DIR}/all/input/{m}/{p}.parquet" for m, p in model_prompts()]


# ---------------------------------------------------------------- generation
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


def gguf_file(wildcards):
    return str(resolve_gguf(MODELS[wildcards.model]["gguf"]))


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


# ---------------------------------------------------------------- figures
FIG_DIR = "results/figures"
# Ex1 first, then the Ex2 prompts, each once
FIG_PROMPTS = list(dict.fromkeys([EX1_PROMPT] + list(EX2_PROMPTS)))
FIG_TEXT_PROMPTS = [p for p in FIG_PROMPTS if FORMATS[p].style == "text"]
FIG_CODE_PROMPTS = [p for p in FIG_PROMPTS if FORMATS[p].style == "code"]
PROMPT_STYLES = {p: FORMATS[p].style for p in FORMATS}


def figure_targets(wildcards=None):
    """Every figure and result table this file makes (PNG and PDF, CSV/Markdown/LaTeX)."""
    out = []
    for stem in (
        [f"fig1_variant_effect_{p}" for p in FIG_PROMPTS]
        + ["fig2_prompts", "fig3_number_effect", "fig9_errors_nl"]
        + (["fig10_errors_code", "fig11_errors_code_share"] if FIG_CODE_PROMPTS else [])
    ):
        out += [f"{FIG_DIR}/{stem}.png", f"{FIG_DIR}/{stem}.pdf"]
    for stem in ("published_comparison", "error_classes"):
        out += [f"results/tables/{stem}.{ext}" for ext in ("csv", "md", "tex")]
    return out


# ---------------------------------------------------------------- StatFormBench
SF = config["statform"]
SF_MODELS = list(SF["models"])
SF_STRATEGIES = dict(SF["strategies"])
SF_DIR = "results/statform"


def statform_dataset():
    """statform.dataset; the benchmark built by rules/statform_build.smk is made, not read."""
    return BUILT_BENCHMARK if SF["dataset"] == BUILT_BENCHMARK else _repo_path(SF["dataset"])


wildcard_constraints:
    strategy=_alternatives(SF_STRATEGIES) if SF_STRATEGIES else "zero_shot",


def statform_targets():
    return [f"{SF_DIR}/tables", f"{SF_DIR}/figures"]


def all_targets(wildcards=None):
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
    if SF["enabled"]:
        targets += statform_targets()
    if config["statform_build"]["enabled"]:
        targets += statform_build_targets()
    targets += power_targets()
    targets += compare_targets()
    targets += ex4_targets()
    if any(FORMATS[p].style == "code" for _, p in model_prompts()):
        targets.append("results/tables/sandbox.md")  # which Python and layers ran model code
    return targets


def ex4_targets(wildcards=None):
    if not EX4["enabled"]:
        return []
    out = ["results/tables/ex4_matched.md", "results/tables/ex4_matched.csv"]
    if EX4["shifts"]:
        out.append("results/figures/ex4_dose_response.png")
    return out


def ex4_summary_files(wildcards=None):
    """Ex1 (GLMM 1), Ex3 (GLMM 2) and Ex4 (GLMM 1 on GSM-Matched) of every Ex1 model."""
    return [summary_path(a, g, m, EX1_PROMPT) for m in GSM_MODELS for a, g in (("all", 1), ("all", 2), ("matched", 1))]


def glmm_datasets(wildcards):
    """GSM-Base and the variant set of an analysis: GSM-Variants, or Ex4's gsm_<analysis>."""
    if wildcards.analysis in ("all", "reasoning_only"):
        return list(DATASETS)
    return ["gsm_base", f"gsm_{wildcards.analysis}"]


# ---------------------------------------------------------------- power and paired comparisons
# (rules/power.smk, rules/compare.smk)
POWER_DIR = "results/power"
COMPARE_DIR = "results/compare"


def power_targets(wildcards=None):
    out = ["results/tables/power/results_mde.csv"]
    if config["power"]["enabled"]:
        out += [f"{POWER_DIR}/paper_design/power.csv", f"{POWER_DIR}/paper_design/power_curves.png"]
    return out


def compare_conditions(family, fixed):
    """The conditions of one family: the models with results on prompt ``fixed``, or the prompts
    model ``fixed`` was run with (Ex1 and Ex2)."""
    pairs = model_prompts()
    if family == "models":
        return sorted({m for m, p in pairs if p == fixed})
    return sorted({p for m, p in pairs if m == fixed})


def compare_families():
    out = []
    pairs = model_prompts()
    for p in sorted({p for _, p in pairs}):
        if len(compare_conditions("models", p)) >= 2:
            out.append(("models", p))
    for m in sorted({m for m, _ in pairs}):
        if len(compare_conditions("prompts", m)) >= 2:
            out.append(("prompts", m))
    return out


def compare_scored(wildcards):
    conds = compare_conditions(wildcards.family, wildcards.fixed)
    if wildcards.family == "models":
        return [scored_path(m, wildcards.fixed, d) for m in conds for d in DATASETS]
    return [scored_path(wildcards.fixed, p, d) for p in conds for d in DATASETS]


def compare_targets(wildcards=None):
    if not config["compare"]["enabled"]:
        return []
    return [f"{COMPARE_DIR}/{f}/{x}/{name}" for f, x in compare_families() for name in ("pairs.csv", "matrix.png")]
