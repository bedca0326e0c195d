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
    ("lm-eval-task", "prompts_dir"): "prompts_dir",
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
    ("lm-eval-task", "out"), ("lm-eval-task", "release"),
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
#: a library parameter of this name stands for this config key (issue 42.4): it has no default, a
#: default of None (the library then takes the schema's or decides as the workflow does), or a
#: named constant whose value is the schema's default; never a literal of its own
LIBRARY_PARAMS = {
    "alpha": "stats.alpha",
    "engine": "stats.engine",
    "check_resamples": "stats.check_resamples",
    "n_shards": "stats.shards",
    "covariate": "stats.covariate",
    "checkpoint_every": "generation.checkpoint_every",
    "n_boot": "statform.resamples",
    "agq": "compare.agq",
    "item_effects": "compare.item_effects",
    "window": "ex4.window",
    "balance": "ex4.balance",
    "instantiator": "gsm_symbolic.instantiator",
    "max_questions": "statform_build.max_questions",
    "max_rounds": "statform_build.max_rounds",
    "report_chars": "statform_build.report_chars",
    "gamma_sd": "power.gamma_sd",
}
#: (module, function, parameter) -> the config key it stands for where the name alone says another
#: (the power study's engine is power.engine), or None where the parameter is no config key at all
LIBRARY_EXCEPTIONS = {
    ("earnest.stats.power", "power_study", "engine"): "power.engine",
    ("earnest.stats.power", "power_point", "engine"): "power.engine",
    ("earnest.stats.power", "bootstrap_table", "engine"): "power.engine",
    ("earnest.wording", "effect_title", "covariate"): None,          # a caption's word, "" = none
    ("earnest.stats.engines.base", "engine_for", "item_effects"): None,  # whether the model has item effects
    # the cross-lingual model is fitted by the laplace engine whatever stats.engine says (docs/languages.md)
    ("earnest.stats.crosslingual", "bootstrap", "engine"): None,
    ("earnest.stats.crosslingual", "full_fit", "engine"): None,
}


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


def _library_default_problems(functions) -> list[str]:
    problems = []
    for module, func, param, default, where in functions:
        key = LIBRARY_EXCEPTIONS.get((module, func, param), LIBRARY_PARAMS.get(param))
        if key is None or (isinstance(default, ast.Constant) and default.value is None):
            continue
        if isinstance(default, ast.Constant):
            problems.append(f"{where} {func}({param}={default.value!r}): a literal default; take {key} from "
                            "config/schema.yaml (a named constant read with schema_default) or require it")
            continue
        import importlib
        obj = importlib.import_module(module)
        value = eval(compile(ast.Expression(default), where, "eval"), vars(obj))  # the named constant's value
        value = getattr(value, "name", value)                                  # an engine object: its name
        if value != schema_default(key):
            problems.append(f"{where} {func}({param}={ast.unparse(default)} = {value!r}): config/schema.yaml's "
                            f"{key} is {schema_default(key)!r}")
    return problems


def test_library_signatures_take_their_defaults_from_the_schema():
    problems = _library_default_problems(_library_functions())
    assert not problems, "\n".join(problems)


def test_the_library_scan_finds_a_literal_and_a_wrong_constant():
    tree = ast.parse("def f(x, alpha=0.05, engine=None, n_boot=ALPHA): pass")
    fn = tree.body[0]
    found = _library_default_problems(
        [("earnest.stats.summary", "f", arg.arg, d, "t.py:1") for arg, d in zip(fn.args.args[1:], fn.args.defaults)])
    assert len(found) == 2 and "alpha=0.05" in found[0] and "statform.resamples is 1000" in found[1]
