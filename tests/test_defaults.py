"""Issue 22.3: every default lives in config/schema.yaml, once. The `earnest` command line takes the
default of every option that is also a config key from the schema; the workflow's scripts read
every parameter without a default of their own (the rule passes it from the config, whose value
the schema's default fills in); the shipped configs state only what differs from the defaults."""

from __future__ import annotations

import argparse
import ast
import copy
from pathlib import Path

import pytest
import yaml

from earnest.cli import build_parser
from earnest.schema import SCHEMA_PATH, load_schema, schema_default, schema_node

REPO = Path(__file__).resolve().parents[1]

#: (subcommand, option dest) -> the config key it stands for. A key with a schema default: the
#: option's default must be that value; a key without one: the option is required or defaults to
#: None (the library then decides as the workflow does). ``not:`` = the negated option of a boolean.
CONFIG_KEYS = {
    ("prompt", "fidelity"): "fidelity",
    ("prompt", "prompts_dir"): "prompts_dir",     # None = resources/prompts of the source tree (below)
    ("lm-eval-task", "fidelity"): "fidelity",
    ("statform-score", "fidelity"): "fidelity",
    ("statform-prompt", "fidelity"): "fidelity",
    ("lm-eval-task", "prompts_dir"): "prompts_dir",
    ("lm-eval-task", "templates"): "gsm_symbolic.templates",
    ("lm-eval-task", "variants"): "gsm_symbolic.variants",
    ("lm-eval-task", "seed"): "gsm_symbolic.seed",
    ("lm-eval-task", "instantiator"): "gsm_symbolic.instantiator",
    ("extract", "fidelity"): "fidelity",
    ("extract", "python"): "sandbox.python",
    ("glmm", "resamples"): "stats.resamples",
    ("glmm", "seed"): "stats.seed",
    ("glmm", "shards"): "stats.shards",
    ("glmm", "fidelity"): "fidelity",
    ("glmm", "rows"): "stats.rows",
    ("glmm", "engine"): "stats.engine",
    ("glmm", "check_resamples"): "stats.check_resamples",
    ("power", "templates"): "power.templates",     # None = the design of the results read, else the schema's (below)
    ("power", "variants"): "power.variants",
    ("power", "odds_ratios"): "power.odds_ratios",
    ("power", "effects"): "power.effects",
    ("power", "sims"): "power.sims",
    ("power", "resamples"): "power.resamples",
    ("power", "alpha"): "stats.alpha",
    ("power", "seed"): "power.seed",
    ("power", "engine"): "power.engine",
    ("power", "cores"): "power.threads",
    ("power", "gamma_sd"): "power.gamma_sd",
    ("compare", "resamples"): "compare.resamples",
    ("compare", "seed"): "compare.seed",
    ("compare", "alpha"): "stats.alpha",
    ("compare", "no_item_effects"): "not:compare.item_effects",
    ("compare", "engine"): "stats.engine",
    ("compare", "agq"): "compare.agq",
    ("compare", "cores"): "compare.threads",
}
#: options that are no config key (what to read, where to write, command-line-only choices)
CLI_ONLY = {
    ("prompt", "format"), ("check-config", "configfile"), ("check-config", "workflow"),
    ("plan-gpu", "configfile"), ("plan-gpu", "workflow"), ("plan-gpu", "cards"), ("prompt", "question"), ("extract", "style"), ("extract", "input"),
    ("extract", "output"), ("extract", "any_python"), ("glmm", "input"), ("glmm", "glmm"), ("glmm", "out"), ("glmm", "row_level"),
    # all usable cores (the workflow gives each job stats.threads)
    ("glmm", "cores"),
    # the scenario sources of `earnest power` (the workflow's power.scenarios are paper scenarios)
    ("power", "baseline_acc"), ("power", "ranef_var"), ("power", "paper_scenario"), ("power", "published"),
    ("power", "from_summary"), ("power", "out"),
    ("compare", "input"), ("compare", "by"), ("compare", "out"),
    # the task folder to write and the release file it reads
    ("lm-eval-task", "out"), ("lm-eval-task", "release"), ("lm-eval-task", "release_from_package"),
    # the answers' language, and reading one without a locale row by English rules (the workflow's
    # gsm_symbolic.english_rules lists languages; the command reads one file of one language)
    ("extract", "language"), ("extract", "english_rules"),
    # StatFormBench: the release or samples file, the CSVs, the one sample and how it is shown; --taxonomy
    # defaults to the release's taxonomy (statform.taxonomy's null means labels from the data)
    ("statform-score", "release"), ("statform-score", "input"), ("statform-score", "output"),
    ("statform-score", "taxonomy"), ("statform-prompt", "release"), ("statform-prompt", "sample"),
    ("statform-prompt", "strategy"), ("statform-prompt", "k"), ("statform-prompt", "json"),
    ("statform-prompt", "taxonomy"),
}
#: the options of other harnesses' results (earnest.readers.lmeval.add_arguments): no config keys
READER_PREFIXES = ("lm_eval", "inspect", "id_pattern", "template_field", "variant_field", "question_field")


def _options():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for command, sp in sub.choices.items():
        for action in sp._actions:
            if action.dest != "help":
                yield command, action


def test_every_option_is_a_config_key_or_named_cli_only():
    unclassified = sorted(f"earnest {c} --{a.dest}" for c, a in _options()
                          if (c, a.dest) not in CONFIG_KEYS and (c, a.dest) not in CLI_ONLY
                          and not a.dest.startswith(READER_PREFIXES))
    assert not unclassified, f"say which config key each stands for (CONFIG_KEYS), or that it is none: {unclassified}"
    stale = (set(CONFIG_KEYS) | CLI_ONLY) - {(c, a.dest) for c, a in _options()}
    assert not stale, f"no such options: {sorted(stale)}"


def test_cli_defaults_are_the_schemas():
    found = {(c, a.dest): a for c, a in _options()}
    wrong = []
    for (command, dest), key in CONFIG_KEYS.items():
        action = found[(command, dest)]
        negate = key.startswith("not:")
        key = key.removeprefix("not:")
        node = schema_node(key)                       # the key exists in the schema
        if "default" in node and node["default"] is not None:
            expected = (not node["default"]) if negate else node["default"]
            if dest in ("templates", "variants", "prompts_dir"):
                continue                              # None stands for the schema's value (next test)
            if not action.required and action.default != expected:   # required: no default to differ
                wrong.append(f"earnest {command} --{dest}: default {action.default!r}, config/schema.yaml's "
                             f"{key} {expected!r}")
        elif not action.required and action.default is not None:
            wrong.append(f"earnest {command} --{dest}: default {action.default!r}, but {key} has no default")
    assert not wrong, wrong


def test_library_defaults_behind_the_cli_are_the_schemas():
    from earnest import fidelity
    from earnest.gsm.prompts import DEFAULT_PROMPTS_DIR
    from earnest.gsm.power_design import PAPER_DESIGN
    from earnest.stats.power import GAMMA_SD
    from earnest.statform.build.prompts import default_prompt_dir
    from earnest.statform.taxonomy import default_taxonomy_path

    assert fidelity.DEFAULT == schema_default("fidelity")
    assert DEFAULT_PROMPTS_DIR == REPO / schema_default("prompts_dir")
    assert [PAPER_DESIGN[0]] == schema_default("power.templates")
    assert [PAPER_DESIGN[1]] == schema_default("power.variants")
    assert GAMMA_SD == schema_default("power.gamma_sd")
    assert default_taxonomy_path() == REPO / schema_default("statform_build.taxonomy")
    assert default_prompt_dir() == REPO / schema_default("statform_build.prompts_dir")


def test_schema_default_names_a_missing_key():
    assert SCHEMA_PATH == REPO / "config" / "schema.yaml"
    assert schema_default("stats.check_resamples") == load_schema()["properties"]["stats"]["properties"][
        "check_resamples"]["default"]
    first = schema_default("power.odds_ratios")
    first.append(99.0)
    assert 99.0 not in schema_default("power.odds_ratios")       # a fresh copy each time
    with pytest.raises(KeyError, match="stats.resamplez"):
        schema_default("stats.resamplez")
    with pytest.raises(KeyError, match="stats.resamples has no default"):
        schema_default("stats.resamples")


# ---------------------------------------------------------------- workflow scripts
def _params_defaults(path: Path) -> list[str]:
    """Places where a script reads snakemake.params with a fallback of its own: params.get(...),
    getattr(params, name, default), `"x" in params`."""
    tree = ast.parse(path.read_text(), str(path))
    assigns = [(ast.unparse(n.value), {ast.unparse(t) for t in n.targets}) for n in ast.walk(tree)
               if isinstance(n, ast.Assign)]
    workflow = {"snakemake"} | {name for value, names in assigns if value == "snakemake" for name in names}
    params = {name for value, names in assigns if value in {f"{w}.params" for w in workflow} for name in names}

    def is_params(expr) -> bool:                    # snakemake.params, sm.params, or p = sm.params
        s = ast.unparse(expr)
        return s in params or s in {f"{w}.params" for w in workflow}

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr == "get" and is_params(f.value):
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
            if isinstance(f, ast.Name) and f.id == "getattr" and len(node.args) == 3 and is_params(node.args[0]):
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
        if isinstance(node, ast.Compare) and any(isinstance(o, (ast.In, ast.NotIn)) for o in node.ops) \
                and any(is_params(c) for c in node.comparators):
            found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_scripts_read_every_param_without_a_default():
    scripts = sorted((REPO / "workflow" / "scripts").glob("*.py"))
    assert len(scripts) > 30
    found = [f for s in scripts for f in _params_defaults(s)]
    assert not found, "the rule passes these (from the config, defaults in config/schema.yaml): " + "; ".join(found)


def test_the_scan_finds_a_default(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("sm = snakemake\np = sm.params\nx = p.get('check_resamples', 0)\n"
                   "y = getattr(snakemake.params, 'fidelity', 'earnest')\nz = 'rows' in p\n"
                   "ok = p.check_resamples\nlabels = {}\nw = labels.get('a', 'b')\n")
    assert [f.split(":")[1] for f in _params_defaults(bad)] == ["3", "4", "5"]


# ---------------------------------------------------------------- the shipped configs
def _restated(value, node, path, required=()):
    """Keys of a config file whose value is the schema's default (they should be left out)."""
    out = []
    if isinstance(value, dict) and isinstance(node, dict):
        props = node.get("properties") or {}
        extra = node.get("additionalProperties")
        for k, v in value.items():
            sub = props.get(k, extra if isinstance(extra, dict) else None)
            if not isinstance(sub, dict):
                continue
            if "default" in sub and v == sub["default"] and k not in node.get("required", ()):
                out.append(f"{path}{k}")
            else:
                out += _restated(v, sub, f"{path}{k}.")
    return out


@pytest.mark.parametrize("name", ["config.yaml", "paper.yaml"])
def test_shipped_configs_state_only_what_differs_from_the_defaults(name):
    cfg = yaml.safe_load((REPO / "config" / name).read_text())
    restated = _restated(copy.deepcopy(cfg), load_schema(), "")
    assert not restated, f"config/{name} restates the defaults of {restated} (config/schema.yaml)"


# ---------------------------------------------------------------- library signatures
#: Every library parameter that stands for a config key (issue 42.4, issue 50: every default that
#: code and schema both name) has no default, a default of None (the library then takes the
#: schema's or decides as the workflow does), or a named constant whose value is the schema's
#: default; never a literal of its own. A parameter stands for the key whose last part is its name
#: (``seed`` for ``power.seed``), found by :func:`_schema_key_of` over every key of
#: config/schema.yaml with a default; where several keys share the name, the one whose section the
#: module is in (``earnest.stats.power`` -> ``power.seed``). LIBRARY_PARAMS names the parameters
#: whose name is not their key's (``n_boot`` -> ``statform.resamples``).
LIBRARY_PARAMS = {
    "n_shards": "stats.shards",
    "n_boot": "statform.resamples",
    "source": None,          # what an error message names (a file, "GLMM input"), not statform.source
    "english_rules": None,   # whether this one language is read by English rules (a bool), not the config's list
}
#: (module, function, parameter) -> the config key it stands for where the name alone says another
#: or none (the power study's engine is power.engine), or None where the parameter is no config key
#: at all although a key has its name (each with the reason)
LIBRARY_EXCEPTIONS = {
    ("earnest.stats.power", "power_study", "engine"): "power.engine",
    ("earnest.stats.power", "power_point", "engine"): "power.engine",
    ("earnest.stats.power", "bootstrap_table", "engine"): "power.engine",
    ("earnest.wording", "effect_title", "covariate"): None,          # a caption's word, "" = none
    ("earnest.stats.engines.base", "engine_for", "item_effects"): None,  # whether the model has item effects
    # the cross-lingual model is fitted by the laplace engine whatever stats.engine says (docs/languages.md)
    ("earnest.stats.crosslingual", "bootstrap", "engine"): None,
    ("earnest.stats.crosslingual", "full_fit", "engine"): None,
    # the tables' and figures' model lists (the models of the run), not statform.models
    **{("earnest.gsm.paper_tables", f, "models"): None for f in (
        "bootstrap_stats_table", "glmm2_grid_table", "reasoning_only_table", "variant_effect_table",
        "write_stats_tables")},
    ("earnest.gsm.plots", "figure_error_classes", "models"): None,
    # the degenerate-estimate bound (log-odds), not statform.limit (samples read)
    ("earnest.stats.summary", "diverged_order_statistics", "limit"): None,
    ("earnest.stats.diagnostics", "diverged_statement", "limit"): None,
    # the paper models' config fields (resources/models/paper_configs.yaml), not statform.release.path
    ("earnest.backends.memplan", "paper_configs", "path"): None,
    # the schema file read (config/schema.yaml), not statform.release.path
    **{("earnest.schema", f, "path"): None for f in ("load_schema", "schema_node", "schema_default", "check_option")},
    # '' = not given: install_release copies a local file or fetches what its caller (the rule) names
    **{("earnest.statform.release", "install_release", p): None for p in ("repo", "revision", "file")},
    # print()'s file argument of the sandbox worker, not gsm_symbolic.hub.file
    ("earnest.sandbox.worker", "sandbox_print", "file"): None,
    # StatFormBench's pairwise comparison: the engine that fits it (lme4), not stats.engine's choice
    ("earnest.statform.glmm", "pairwise_glmm", "engine"): None,
    # one simulated data set's seed (tests, benchmarks, the power study's own draws), no config key
    ("earnest.stats.crosslingual", "simulate", "seed"): None,
    ("earnest.stats.simulate", "simulate_glmm_input", "seed"): None,
    ("earnest.stats.simulate", "simulate_number_matched", "seed"): None,
    ("earnest.stats.compare", "simulate_paired", "seed"): None,
    ("earnest.stats.power", "gamma_template_information", "seed"): None,
    ("earnest.stats.power", "simulate_design", "seed"): None,           # power_point derives it from power.seed
    # a few-shot strategy's own seed (its spec's), not statform.seed
    ("earnest.statform.prompts", "build_requests", "seed"): None,
    # the label of the prior a finished shard was fitted with ('' = none), not stats.prior itself
    ("earnest.stats.run", "_shard_is_current", "prior"): None,
}


def _schema_defaults() -> dict:
    """Every dotted key of config/schema.yaml with a default (``*`` for a mapping's entries) -> it."""
    out = {}

    def walk(node, path):
        if not isinstance(node, dict):
            return
        if "default" in node and path:
            out[".".join(path)] = node["default"]
        for k, v in (node.get("properties") or {}).items():
            walk(v, path + [k])
        if isinstance(node.get("additionalProperties"), dict):
            walk(node["additionalProperties"], path + ["*"])

    walk(load_schema(), [])
    return out


def _schema_key_of(module: str, param: str, defaults: dict) -> tuple[str | None, str]:
    """(the config key ``param`` of a function in ``module`` stands for, or None; a problem, or '')."""
    keys = [k for k in defaults if k.split(".")[-1] == param]
    if len(keys) <= 1:
        return (keys[0] if keys else None), ""
    # several keys of this name: the one whose section (its dotted prefix, '_' as '.') the module is in
    parts = module.split(".")
    match = [k for k in keys if k.count(".") and ".".join(parts).find(k.rsplit(".", 1)[0].replace("_", ".")) >= 0
             and k.rsplit(".", 1)[0].replace("_", ".").split(".")[0] in parts]
    if match:
        return max(match, key=lambda k: len(k.rsplit(".", 1)[0])), ""
    return None, (f"{module}: parameter {param!r} has the name of {', '.join(keys)}; say which it stands for "
                  "(or none) in LIBRARY_EXCEPTIONS")


def _library_functions():
    """(module name, function name, parameter, default AST, line) for every parameter with a default
    in src/earnest, functions and methods alike."""
    src = REPO / "src"
    for path in sorted((src / "earnest").rglob("*.py")):
        module = ".".join(path.relative_to(src).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            a = node.args
            positional = a.posonlyargs + a.args
            pairs = list(zip(positional[len(positional) - len(a.defaults):], a.defaults))
            pairs += [(arg, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
            for arg, default in pairs:
                yield module, node.name, arg.arg, default, f"{path.relative_to(REPO)}:{node.lineno}"


def _literal(node) -> bool:
    """A default written as a value of its own: a constant, or a tuple/list/set/dict of them."""
    return isinstance(node, ast.Constant) or (isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict))
                                               and all(_literal(e) for e in ast.iter_child_nodes(node)
                                                       if not isinstance(e, ast.expr_context)))


def _same(value, default) -> bool:
    if isinstance(value, (tuple, list)) and isinstance(default, list):
        return list(value) == default
    return value == default


def _library_default_problems(functions, checked: list | None = None) -> list[str]:
    """What is wrong with the defaults of ``functions`` (:func:`_library_functions`' tuples);
    ``checked`` collects (module, function, parameter, key) of every default compared."""
    import importlib

    defaults = _schema_defaults()
    problems = []
    for module, func, param, default, where in functions:
        if (module, func, param) in LIBRARY_EXCEPTIONS:
            key, problem = LIBRARY_EXCEPTIONS[(module, func, param)], ""
        elif param in LIBRARY_PARAMS:
            key, problem = LIBRARY_PARAMS[param], ""
        else:
            key, problem = _schema_key_of(module, param, defaults)
        if (isinstance(default, ast.Constant) and default.value is None) or (
                isinstance(default, (ast.Tuple, ast.List, ast.Set, ast.Dict)) and not ast.unparse(default).strip("()[]{}")):
            continue                                  # None or an empty collection: "none", as the schema's null / []
        if problem:
            problems.append(f"{where} {func}({param}=...): {problem}")
            continue
        if key is None:
            continue
        if key not in defaults:
            problems.append(f"{where} {func}({param}): {key} has no default in config/schema.yaml; require it or "
                            "default to None")
            continue
        if checked is not None:
            checked.append((module, func, param, key))
        if _literal(default):
            problems.append(f"{where} {func}({param}={ast.unparse(default)}): a literal default; take {key} from "
                            "config/schema.yaml (a named constant read with schema_default) or require it")
            continue
        obj = importlib.import_module(module)
        value = eval(compile(ast.Expression(default), where, "eval"), vars(obj))  # the named constant's value
        value = getattr(value, "name", value)                                  # an engine object: its name
        if not _same(value, defaults[key]):
            problems.append(f"{where} {func}({param}={ast.unparse(default)} = {value!r}): config/schema.yaml's "
                            f"{key} is {defaults[key]!r}")
    return problems


def test_library_signatures_take_their_defaults_from_the_schema():
    checked = []
    problems = _library_default_problems(_library_functions(), checked)
    assert not problems, "\n".join(problems)
    # the scan compares more than the 16 names it once listed, among them the power study's seed
    names = {param for _, _, param, _ in checked}
    assert len(names) > 16 and {"seed", "alpha", "gamma_sd", "collinearity_threshold", "effects"} <= names
    assert ("earnest.stats.power", "power_study", "seed", "power.seed") in checked


def test_the_library_scan_finds_a_literal_and_a_wrong_constant():
    tree = ast.parse("def f(x, alpha=0.05, engine=None, n_boot=ALPHA): pass")
    fn = tree.body[0]
    found = _library_default_problems(
        [("earnest.stats.summary", "f", arg.arg, d, "t.py:1") for arg, d in zip(fn.args.args[1:], fn.args.defaults)])
    assert len(found) == 2 and "alpha=0.05" in found[0] and "statform.resamples is 1000" in found[1]


def test_the_scan_maps_a_name_to_its_key_by_module_and_finds_a_wrong_constant():
    # seed in earnest.stats.power is power.seed (1): a constant of another value is found, as the
    # power study's seed=0 was; in earnest.statform.analysis it is statform.seed
    tree = ast.parse("def f(seed=GAMMA_INFO_SEED, effects=('variant',), collinearity_threshold=0.5, "
                     "gamma_sd=GAMMA_SD): pass")
    fn = tree.body[0]
    rows = [("earnest.stats.power", "f", arg.arg, d, "t.py:1") for arg, d in zip(fn.args.args, fn.args.defaults)]
    checked = []
    found = _library_default_problems(rows, checked)
    assert [k for *_, k in checked] == ["power.seed", "power.effects", "stats.collinearity_threshold",
                                        "power.gamma_sd"]
    assert len(found) == 3
    assert "seed=GAMMA_INFO_SEED = 20261130): config/schema.yaml's power.seed is 1" in found[0]
    assert "effects=('variant',)): a literal default" in found[1]
    assert "collinearity_threshold=0.5): a literal default" in found[2]
    defaults = _schema_defaults()
    assert _schema_key_of("earnest.statform.analysis", "seed", defaults) == ("statform.seed", "")
    assert _schema_key_of("earnest.statform.build.stages", "seed", defaults) == ("statform_build.seed", "")
    key, problem = _schema_key_of("earnest.gsm.ex4", "seed", defaults)
    assert key is None and "say which it stands for" in problem
