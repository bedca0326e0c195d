# Config validation, registries, wildcard constraints and target lists.
# Everything here runs when Snakemake builds the DAG, so bad input stops the run before any job.
import re
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

import os

sys.path.insert(0, str(Path(workflow.basedir) / "src"))
# jobs (local, conda or Slurm) import the library from this checkout
os.environ.update(PYTHONPATH=os.pathsep.join(filter(None, [str(Path(workflow.basedir) / "src"), os.environ.get("PYTHONPATH")])))

from earnest.backends import BACKENDS  # noqa: E402
from earnest.backends.hf import resolve_gguf  # noqa: E402
from earnest.datasets import DATASETS, DatasetError, read_release_jsonl  # noqa: E402
from earnest.prompts import PromptFormatError, load_formats, validate_format_names  # noqa: E402

validate(config, schema="../config/schema.yaml")

BASEDIR = Path(workflow.basedir)
SRC = str(BASEDIR / "src")


def _fail(msg):
    raise WorkflowError(f"config error: {msg}")


def _repo_path(p):
    """A config path: absolute, or relative to the working directory, else to the workflow."""
    p = Path(p).expanduser()
    if p.is_absolute() or p.exists():
        return p
    return BASEDIR / p


# ---------------------------------------------------------------- prompt formats
try:
    FORMATS = load_formats(_repo_path(config.get("prompts_dir", "resources/prompts")))
except PromptFormatError as exc:
    _fail(str(exc))

EXP = config["experiments"]
try:
    EX1_PROMPT = validate_format_names([EXP["ex1_prompt"]], FORMATS, key="experiments.ex1_prompt")[0]
    EX2_PROMPTS = validate_format_names(EXP.get("ex2_prompts", []), FORMATS, key="experiments.ex2_prompts")
except PromptFormatError as exc:
    _fail(str(exc))
CODE_PROMPTS = [p for p in FORMATS if FORMATS[p].style == "code"]

# ---------------------------------------------------------------- models
MODELS = config["models"]
PAPER_MODE = bool(config.get("paper_mode", False))
for _name, _m in MODELS.items():
    if _m.get("backend", "transformers") not in BACKENDS:
        _fail(f"models.{_name}.backend: unknown backend {_m.get('backend')!r} (known: {', '.join(sorted(BACKENDS))})")
    if _m.get("backend", "transformers") == "transformers":
        _src = [k for k in ("gguf", "path", "hub") if _m.get(k)]
        if len(_src) != 1:
            _fail(f"models.{_name}: give exactly one of gguf, path or hub (got {_src or 'none'})")
        if PAPER_MODE and _m.get("hub") and not _m.get("revision"):
            _fail(f"models.{_name}.revision: paper_mode needs every hub model pinned to a commit id")
        if _m.get("gguf"):
            try:
                resolve_gguf(_m["gguf"])
            except FileNotFoundError as exc:
                _fail(f"models.{_name}.{exc}")
for _name in EXP.get("ex2_models") or []:
    if _name not in MODELS:
        _fail(f"experiments.ex2_models: {_name!r} is not a configured model (models: {', '.join(MODELS)})")
# models evaluated on GSM-Symbolic (a model entry with gsm_symbolic: false is used by StatFormBench only)
GSM_MODELS = [m for m in MODELS if MODELS[m].get("gsm_symbolic", True)]

# ---------------------------------------------------------------- GSM-Symbolic data
GSM = config["gsm_symbolic"]
if GSM["source"] == "jsonl":
    if not GSM.get("jsonl"):
        _fail("gsm_symbolic.jsonl: source is jsonl but no file is given")
    try:  # read it now so a malformed line stops the run before any job starts
        _records = read_release_jsonl(_repo_path(GSM["jsonl"]))
    except DatasetError as exc:
        _fail(str(exc))
    _available = sorted({r["id"] for r in _records})
else:
    _available = list(range(100))
TEMPLATES = sorted(_available if GSM.get("templates") in (None, "all") else GSM["templates"])
_unknown = sorted(set(TEMPLATES) - set(_available))
if _unknown:
    _fail(f"gsm_symbolic.templates: ids {_unknown} do not exist (available: {_available[0]}..{_available[-1]})")

# ---------------------------------------------------------------- Slurm routing
SLURM = config.get("slurm", {})
GPU_PARTITION = SLURM.get("gpu_partition", "gpu")
CPU_PARTITION = SLURM.get("cpu_partition", "cpu")
# "" = no -A: Slurm's default account; a named one is checked by the plugin with sacctmgr
SLURM_ACCOUNT = SLURM.get("account", "")


def model_resources(model):
    return MODELS[model].get("resources", {})


def gpus(wildcards):
    n = int(model_resources(wildcards.model).get("gpu", 0))
    return n if SLURM.get("request_gpus", True) else 0


# ---------------------------------------------------------------- wildcard constraints
def _alternatives(names):
    return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))


wildcard_constraints:
    model=_alternatives(MODELS),
    prompt=_alternatives(FORMATS),
    dataset=_alternatives(DATASETS),
    glmm="1|2",
    analysis="all|reasoning_only",
    shard=r"\d+",
    template=r"\d+",


N_SHARDS = int(config["stats"]["shards"])
STATS_DIR = "results/stats"


# ---------------------------------------------------------------- target lists
def gen_path(model, prompt, dataset):
    return f"results/generations/{model}/{prompt}/{dataset}.parquet"


def scored_path(model, prompt, dataset):
    return f"results/scored/{model}/{prompt}/{dataset}.parquet"


def summary_path(analysis, glmm, model, prompt):
    return f"{STATS_DIR}/{analysis}/glmm{glmm}/{model}/{prompt}/summary.parquet"


def ex2_models():
    """Models that go on to Ex2: the config's list, else what the Ex1 checkpoint decided."""
    if EXP.get("ex2_models") is not None:
        return list(EXP["ex2_models"])
    import yaml

    with checkpoints.ex2_selection.get().output[0].open() as fh:
        return list(yaml.safe_load(fh)["ex2_models"] or [])


def model_prompts():
    """(model, prompt) pairs of Ex1 and Ex2."""
    pairs = [(m, EX1_PROMPT) for m in GSM_MODELS]
    pairs += [(m, p) for m in ex2_models() for p in EX2_PROMPTS]
    return pairs


def scored_files(wildcards=None):
    return [scored_path(m, p, d) for m, p in model_prompts() for d in DATASETS]


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
        cfg.setdefault("cache_dir", config.get("fetch", {}).get("cache_dir") or "results/models/hub")
        cfg["offline"] = True
    if cfg.get("gguf"):
        cfg["path"] = f"{GGUF_DIR}/{model}"
        del cfg["gguf"]
    return cfg


# ---------------------------------------------------------------- figures
FIG_DIR = "results/figures"
STATS_TABLES_DIR = "results/tables/stats"
FIG_ALPHA = float(config["stats"].get("alpha", 0.05))
# Ex1 first, then the Ex2 prompts, each once
FIG_PROMPTS = list(dict.fromkeys([EX1_PROMPT] + list(EX2_PROMPTS)))
FIG_TEXT_PROMPTS = [p for p in FIG_PROMPTS if FORMATS[p].style == "text"]
FIG_CODE_PROMPTS = [p for p in FIG_PROMPTS if FORMATS[p].style == "code"]
PROMPT_STYLES = {p: FORMATS[p].style for p in FORMATS}


def figure_targets(wildcards=None):
    """Every figure and result table this file makes (PNG and PDF, CSV/Markdown/LaTeX)."""
    out = []
    for stem in [f"fig1_variant_effect_{p}" for p in FIG_PROMPTS] + [
        "fig2_prompts", "fig3_number_effect", "fig9_errors_nl"
    ] + (["fig10_errors_code", "fig11_errors_code_share"] if FIG_CODE_PROMPTS else []):
        out += [f"{FIG_DIR}/{stem}.png", f"{FIG_DIR}/{stem}.pdf"]
    for stem in ("published_comparison", "error_classes"):
        out += [f"results/tables/{stem}.{ext}" for ext in ("csv", "md", "tex")]
    return out


# ---------------------------------------------------------------- StatFormBench
SF = config.get("statform", {})
SF_MODELS = list(SF.get("models", []))
SF_STRATEGIES = dict(SF.get("strategies", {"zero_shot": {"kind": "zero_shot"}}))
SF_DIR = "results/statform"

if SF.get("enabled", False):
    for _m in SF_MODELS:
        if _m not in MODELS:
            _fail(f"statform.models: {_m!r} is not a configured model (models: {', '.join(MODELS)})")
    for _key in ("dataset", "fewshot_pool"):
        if not SF.get(_key) or not _repo_path(SF[_key]).exists():
            _fail(f"statform.{_key}: file not found: {SF.get(_key)!r}")


wildcard_constraints:
    strategy=_alternatives(SF_STRATEGIES) if SF_STRATEGIES else "zero_shot",


def statform_targets():
    return [f"{SF_DIR}/tables", f"{SF_DIR}/figures"]


def all_targets(wildcards=None):
    # the generations themselves are results (every score traces back to its text), and listing them
    # makes a deleted generation file be rebuilt, with what depends on it
    targets = [gen_path(m, p, d) for m, p in model_prompts() for d in DATASETS]
    targets += [
        "results/tables/stats",
        "results/tables/ks.csv",
        "results/figures/fig8_integers.png",
    ]
    targets += figure_targets()
    if config.get("statform", {}).get("enabled", False):
        targets += statform_targets()
    return targets
