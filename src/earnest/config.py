"""The workflow configuration: schema validation with defaults, and the checks the schema cannot
express (names that must exist, files that must be readable, combinations of keys).

Everything here runs before any job, so a bad config stops the run with an error that names the
config key or the file and line, and nothing already computed is touched. Defaults live in one
place, the schema (``config/schema.yaml``): :func:`validate_schema` writes them into the config.

The workflow calls, in this order::

    validate_schema(config, schema_path)                    # types, ranges, defaults
    formats = load_formats(resolve_path(config["prompts_dir"], base_dir))
    checked = check_config(config, formats, base_dir=base_dir)

Add a new check to :func:`check_config` (one ``_check_*`` function per config section), with a
unit test in ``tests/test_config.py``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import yaml

from earnest import yamlfile
from earnest.jsonl import read_utf8
from earnest.gsm.prompts import FORMATS_FILE, PromptFormat, PromptFormatError, load_formats, validate_format_names

__all__ = ["ConfigError", "Checked", "validate_schema", "check_config", "resolve_path", "load_yaml_strict",
           "check_config_files", "config_locations", "locate", "SAFE_NAME"]


class ConfigError(ValueError):
    """The configuration is invalid; the message starts with the config key or file it concerns.

    ``problems`` holds every problem found (one line each, ``file:line: key: message`` where the key's
    place in a config file is known); the message lists them all."""

    def __init__(self, message: str, problems: list[str] | None = None):
        self.problems = list(problems) if problems else [message]
        super().__init__(message)

    @classmethod
    def collect(cls, problems: list[str]) -> "ConfigError":
        if len(problems) == 1:
            return cls(problems[0])
        return cls(f"{len(problems)} problems:\n" + "\n".join(f"  {p}" for p in problems), problems)


#: model, prompt format and strategy names become folder names (results/generations/<model>/...):
#: a letter or digit first, then letters, digits, '.', '_', '-' (no '/', no '..', no spaces)
SAFE_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"


@dataclass(frozen=True)
class Checked:
    """What :func:`check_config` worked out while checking (so the workflow does not redo it)."""

    #: GSM-Symbolic template ids the run uses (sorted)
    templates: list[int] = field(default_factory=list)
    #: StatFormBench construction: textbook entries by id, case projects by name ({report, data}),
    #: case folders left out with the reason (empty unless statform_build is enabled)
    build_entries: dict = field(default_factory=dict)
    build_cases: dict = field(default_factory=dict)
    build_excluded: list = field(default_factory=list)


def resolve_path(p: str | Path, base_dir: str | Path | None = None) -> Path:
    """A config path: absolute, or relative to the working directory when it exists there, else
    relative to ``base_dir`` (the workflow's folder)."""
    path = Path(p).expanduser()
    if path.is_absolute() or path.exists() or base_dir is None:
        return path
    return Path(base_dir) / path


# ---------------------------------------------------------------- config files
def load_yaml_strict(path: str | Path):
    """A YAML file's content; ConfigError naming ``path:line`` for text that is not UTF-8, invalid
    YAML or a duplicate key (:func:`earnest.yamlfile.load_yaml_strict`)."""
    return yamlfile.load_yaml_strict(path, error=ConfigError)


def check_config_files(paths) -> None:
    """Read every config file as :func:`load_yaml_strict` does (Snakemake's own reading keeps the
    last of two equal keys without a word); raises ConfigError naming file and line."""
    problems = []
    for path in paths:
        try:
            load_yaml_strict(path)
        except ConfigError as exc:
            problems += exc.problems
    if problems:
        raise ConfigError.collect(problems)


def config_locations(paths) -> dict[str, str]:
    """Where each key of the merged config was written: ``{"stats.resamples": "my.yaml:12"}``, for
    every mapping key in ``paths`` (the config files in the order Snakemake merges them, a later file
    overriding an earlier one). Files that cannot be read are skipped (:func:`check_config_files`
    reports them)."""
    where: dict[str, str] = {}

    def walk(node, prefix, path):
        if isinstance(node, yaml.MappingNode):
            for key_node, value in node.value:
                key = f"{prefix}.{key_node.value}" if prefix else str(key_node.value)
                where[key] = f"{path}:{key_node.start_mark.line + 1}"
                walk(value, key, path)
        elif isinstance(node, yaml.SequenceNode):
            for i, value in enumerate(node.value):
                key = f"{prefix}.{i}"
                where[key] = f"{path}:{value.start_mark.line + 1}"
                walk(value, key, path)

    for path in paths:
        try:
            loader = yamlfile.StrictLoader(read_utf8(Path(path), error=ConfigError))
            try:
                node = loader.get_single_node()
            finally:
                loader.dispose()
        except (ConfigError, yaml.YAMLError, OSError):
            continue
        if node is not None:
            walk(node, "", path)
    return where


_LEADING_KEY = re.compile(r"^(?:config key ')?([A-Za-z_][^\s:']*)")


def locate(problem: str, locations: Mapping[str, str] | None) -> str:
    """``problem`` (a message starting with a config key) prefixed with the file and line the key, or
    its nearest enclosing key, was written on; unchanged where no config file holds it."""
    if not locations:
        return problem
    m = _LEADING_KEY.match(problem)
    if not m:
        return problem
    key = m.group(1)
    while key:
        if key in locations:
            return f"{locations[key]}: {problem}"
        key = key.rpartition(".")[0]
    return problem


# ---------------------------------------------------------------- schema
def _key(path) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


def _schema_problems(err) -> list[str]:
    """One line per problem of a jsonschema error; an unknown key is named, with the closest known one."""
    import difflib

    where = _key(err.absolute_path)
    if err.validator == "additionalProperties" and err.validator_value is False and isinstance(err.instance, dict):
        known = list(err.schema.get("properties", {}))
        out = []
        for name in sorted(set(err.instance) - set(known), key=str):
            close = difflib.get_close_matches(str(name), known, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(known)}"
            key = f"{where}.{name}" if err.absolute_path else str(name)
            out.append(f"{key}: unknown key {name!r} ({hint})")
        if out:
            return out
    if err.validator in ("oneOf", "anyOf") and err.context:
        # the alternatives' own errors: those inside the value (a list item) belong to the
        # alternative of the value's shape; else each alternative says what it wants
        inside = [e for e in err.context if e.relative_path]
        if inside:
            return [p for e in inside for p in _schema_problems(e)]
        wants = "; ".join(dict.fromkeys(e.message for e in err.context))
        return [f"{where}: {err.message} ({wants})"]
    types = err.validator_value if isinstance(err.validator_value, list) else [err.validator_value]
    maximum = err.schema.get("maximum") if isinstance(err.schema, Mapping) else None
    if err.validator == "type" and isinstance(err.instance, str) and _YAML11_FLOAT_TEXT.fullmatch(err.instance.strip()):
        # YAML 1.1 (PyYAML, Snakemake) reads 1e300 or 1e-3 as text: its floats need a '.' and a signed exponent
        number = float(err.instance)
        how = (f"write it as a float with a '.' and a signed exponent ({_as_yaml_float(err.instance)})"
               if "number" in types else _as_integer(number, maximum))
        return [f"{where}: {err.message}; YAML reads {err.instance!r} as text: {how}"]
    if err.validator == "type" and "integer" in types and isinstance(err.instance, float) and err.instance.is_integer():
        # 12.0 or 1.0e+12 where a count is meant (JSON Schema's own "integer" would take them)
        return [f"{where}: {err.message}; {_as_integer(err.instance, maximum)}"]
    fix = _schema_fix(err, types)
    return [f"{where}: {err.message}; {fix}" if fix else f"{where}: {err.message}"]


#: how to write a value of each JSON Schema type in YAML
_HOW_TO_WRITE = {"integer": "a whole number, e.g. 12", "number": "a number, e.g. 0.05",
                 "string": "text (quoted if it looks like a number or holds ': ')",
                 "boolean": "true or false", "null": "null",
                 "object": "a mapping: 'key: value' lines indented under the key",
                 "array": "a list, e.g. [a, b] or '- a' lines indented under the key"}


def _schema_fix(err, types) -> str:
    """What to write instead, for the schema errors whose own message says only what is wrong."""
    if err.validator == "type":
        return "write " + " or ".join(_HOW_TO_WRITE.get(t, t) for t in types)
    if err.validator in ("minimum", "exclusiveMinimum"):
        return f"write a value {'above' if err.validator == 'exclusiveMinimum' else 'of at least'} {err.validator_value}"
    if err.validator in ("maximum", "exclusiveMaximum"):
        return f"write a value {'below' if err.validator == 'exclusiveMaximum' else 'of at most'} {err.validator_value}"
    if err.validator in ("minItems", "minProperties"):
        what = "item" if err.validator == "minItems" else "entry"
        return f"give at least {err.validator_value} {what}{'s' if err.validator_value != 1 else ''}, or leave the key out for its default"
    if err.validator == "enum":
        return "write one of these"
    if err.validator == "uniqueItems":
        return "name each once"
    return ""


def _as_integer(number: float, maximum=None) -> str:
    """How to write ``number`` where an integer (at most ``maximum``) is wanted."""
    if not (number.is_integer() and abs(number) < 1e18):
        return "it is not an integer"
    if maximum is not None and number > maximum:
        return f"write an integer, at most {maximum}"
    return f"write it as an integer ({int(number)})"


_YAML11_FLOAT_TEXT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")


def _as_yaml_float(text: str) -> str:
    mantissa, _, exp = text.strip().lower().partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return f"{mantissa}e{exp if exp[0] in '+-' else '+' + exp}"


def _non_finite(node, path=()):
    """Paths of every NaN or infinite number in a config (YAML's .nan / .inf)."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _non_finite(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _non_finite(v, path + (i,))
    elif isinstance(node, float) and not math.isfinite(node):
        yield path, node


def validate_schema(config: dict, schema: str | Path | Mapping,
                    locations: Mapping[str, str] | None = None) -> dict:
    """Check ``config`` against the JSON schema (a path or a loaded mapping) and fill in every
    default it declares, in place; also returns ``config``. Raises :class:`ConfigError` naming the
    key (``stats.resamples: 'many' is not of type 'integer'``), for every problem found; with
    ``locations`` (:func:`config_locations`) each problem starts with the config file and line.
    A NaN or infinite number (``.nan``, ``.inf``) is refused everywhere: no setting means it."""
    import jsonschema

    from earnest.schema import validator_class

    if not isinstance(schema, Mapping):
        schema = yaml.safe_load(Path(schema).read_text())
    base = validator_class(schema)   # "integer" refuses 12.0

    def set_defaults(validator, properties, instance, sub_schema):
        if isinstance(instance, dict):
            for name, prop in properties.items():
                if isinstance(prop, Mapping) and "default" in prop and name not in instance:
                    # a fresh copy: a default object must not be shared between configs
                    instance[name] = yaml.safe_load(yaml.safe_dump(prop["default"]))
        yield from base.VALIDATORS["properties"](validator, properties, instance, sub_schema)

    validator_cls = jsonschema.validators.extend(base, {"properties": set_defaults})
    if not isinstance(config, dict):
        raise ConfigError(f"the config must be a mapping of keys, not {type(config).__name__}")
    bad_numbers = dict(_non_finite(config))
    problems = [f"{_key(path)}: {value} is not a number a setting can take (NaN and infinity are refused)"
                for path, value in bad_numbers.items()]
    errors = sorted(validator_cls(schema).iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    mistyped = {tuple(e.absolute_path) for e in errors if e.validator == "type"}
    for err in errors:
        path = tuple(err.absolute_path)
        if path in bad_numbers or (path in mistyped and err.validator != "type"):   # said already
            continue
        problems += [p for p in _schema_problems(err) if p not in problems]
    if problems:
        raise ConfigError.collect([locate(p, locations) for p in problems])
    return config


def sandbox_python(setting, mode: str) -> str:
    """The interpreter that runs model code in fidelity mode ``mode``, from config ``sandbox.python``:
    one string for every mode, or a mapping with a string per mode (``{reference: python3.12}``; a mode
    it leaves out gets ""). "" = the scoring job's own interpreter, whose conda environment is the
    mode's (:func:`earnest.fidelity.score_env`)."""
    from earnest.fidelity import check_mode

    check_mode(mode)
    if isinstance(setting, Mapping):
        setting = setting.get(mode) or ""
    return str(setting or "")


# ---------------------------------------------------------------- semantic checks
def _check_prompts(config: dict, formats: Mapping[str, PromptFormat]) -> None:
    exp = config["experiments"]
    try:
        validate_format_names([exp["ex1_prompt"]], formats, key="experiments.ex1_prompt")
        validate_format_names(exp.get("ex2_prompts", []), formats, key="experiments.ex2_prompts")
    except PromptFormatError as exc:
        raise ConfigError(str(exc)) from None


def _check_names(config: dict, formats: Mapping[str, PromptFormat]) -> None:
    """Model, prompt format and strategy names are folder names under results/ (:data:`SAFE_NAME`)."""
    named = [f"models.{n}" for n in config["models"]] + [f"{FORMATS_FILE}: prompt format {n}" for n in formats]
    named += [f"statform.strategies.{n}" for n in config.get("statform", {}).get("strategies", {})]
    names = list(config["models"]) + list(formats) + list(config.get("statform", {}).get("strategies", {}))
    bad = [f"{where}: the name {name!r} cannot be used: it becomes a folder under results/, so it must start "
           "with a letter or digit and hold only letters, digits, '.', '_' and '-'"
           for where, name in zip(named, names) if not isinstance(name, str) or not re.fullmatch(SAFE_NAME, name)]
    if bad:
        raise ConfigError.collect(bad)


def _check_model(config: dict, name: str, m: dict) -> None:
    from earnest.backends import BACKENDS
    from earnest.backends.decoding import Decoding, check_adapter, check_model_args

    backend = m["backend"]
    if backend not in BACKENDS:
        raise ConfigError(f"models.{name}.backend: unknown backend {backend!r} "
                          f"(known: {', '.join(sorted(BACKENDS))})")
    try:   # decoding (every backend), and what only a transformers model loads
        Decoding.from_cfg(name, m)
        if backend == "transformers":
            check_model_args(name, m)
            check_adapter(name, m)
        else:
            for key in ("model_args", "trust_remote_code", "adapter"):
                if m.get(key) is not None:
                    raise ValueError(f"models.{name}.{key}: only a transformers model loads weights here (this "
                                     f"entry's backend is {backend!r}, whose server loads them); remove {key}, or "
                                     "give it to the server's own command")
    except (ValueError, FileNotFoundError) as exc:
        raise ConfigError(str(exc)) from None
    if backend == "openai":
        from earnest.backends.openai_http import check_base_url, check_request_params, decoding_of

        where = f"models.{name}"
        url = m.get("base_url")
        # with a serve block the job starts the server, whose address base_url then is: none needed
        if not m.get("serve") and (not isinstance(url, str) or not url.startswith(("http://", "https://"))):
            shown = "(credentials hidden)" if isinstance(url, str) and "@" in url else url
            raise ConfigError(f"{where}.base_url: the openai backend needs the server's http(s) API root, "
                              f"got {shown!r}")
        if m.get("serve") and url is not None:
            raise ConfigError(f"{where}: has both serve (the job starts its server, whose address becomes the "
                              f"base_url) and base_url {url if isinstance(url, str) and '@' not in url else '(hidden)'!r}, "
                              "which would be replaced without a word; remove one of them")
        try:   # the backend's own checks: the server's command, credentials in the URL, fields earnest sets
            if m.get("serve"):
                from earnest.backends.serve import check_serve

                check_serve(where, m["serve"])
            if url is not None:
                check_base_url(where, url)
            check_request_params(where, m.get("request_params"))
            decoding_of(where, m)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    elif m.get("serve") is not None:
        raise ConfigError(f"models.{name}.serve: only an openai backend entry starts a server (backend: openai); "
                          f"this entry's backend is {backend!r}, which would ignore it: remove serve, or set "
                          "backend: openai")
    if backend == "transformers":
        sources = [k for k in ("gguf", "path", "hub") if m.get(k)]
        if len(sources) != 1:
            raise ConfigError(f"models.{name}: give exactly one of gguf, path or hub (got {sources or 'none'})")
        if config["paper_mode"] and m.get("hub") and not m.get("revision"):
            raise ConfigError(f"models.{name}.revision: paper_mode needs every hub model pinned to a commit id")
        from earnest.backends.hf import model_device, model_source

        problems = []
        try:
            model_device(m, name)   # as the backend reads it: a typo (gpu) would be routed and fail in torch
        except ValueError as exc:
            problems.append(str(exc))
        if m.get("gguf") or m.get("path"):   # the files the jobs will load, checked as they check them
            try:
                model_source(name, m)
            except FileNotFoundError as exc:
                msg = str(exc) if str(exc).startswith("models.") else f"models.{name}.{exc}"
                if m.get("path") and not Path(m["path"]).expanduser().is_absolute():
                    msg += f" (a relative path is read from the working directory, {Path.cwd()})"
                problems.append(msg)
        if problems:
            raise ConfigError.collect(problems)


def _check_models(config: dict, base_dir) -> None:
    models = config["models"]
    problems = []
    for name, m in models.items():   # every model's problem, not only the first model's
        try:
            _check_model(config, name, m)
        except ConfigError as exc:
            problems.extend(exc.problems)
    ports: dict = {}
    for name, m in models.items():   # two servers of one config on one fixed port: the second would
        serve = m.get("serve") if isinstance(m, dict) else None   # find the first's (or fail to bind)
        port = serve.get("port") if isinstance(serve, dict) else None
        if isinstance(port, int) and not isinstance(port, bool):
            ports.setdefault(port, []).append(name)
    for port, names in ports.items():
        if len(names) > 1:
            problems.append(f"models.{names[1]}.serve.port: port {port} is also models.{names[0]}.serve.port; the "
                            "generation jobs of both models may run at once on one node, and one server would "
                            "find the other's port taken: give each its own port, or port: auto")
    for name in config["experiments"].get("ex2_models") or []:
        if name not in models:
            problems.append(f"experiments.ex2_models: {name!r} is not a configured model "
                            f"(models: {', '.join(models)})")
    if problems:
        raise ConfigError.collect(problems)


def prompt_texts(config: Mapping, base_dir):
    """For the GPU memory plan: ``(format, language) -> (text before the question, text after it)`` of the
    config's prompt formats (earnest.backends.memplan.plan_config)."""
    from earnest.gsm.prompts import QUESTION_PLACEHOLDER, language_format

    prompts_dir = resolve_path(config["prompts_dir"], base_dir)

    def text(name: str, language: str) -> tuple[str, str]:
        fidelity = config.get("fidelity", "earnest") if language == "eng" else "earnest"
        head, _, tail = language_format(language, name, prompts_dir, fidelity=fidelity).template.partition(
            QUESTION_PLACEHOLDER)
        return head, tail

    return text


def _check_gpu_plan(config: dict, base_dir) -> None:
    """Every GPU generation job's memory plan on the card its model declares (earnest.backends.memplan):
    a job that would not fit, or whose prompts pass a sliding window, is refused before any job runs."""
    from earnest.backends.memplan import PlanError, plan_problems

    try:
        problems = plan_problems(config, prompt_texts(config, base_dir))
    except PlanError as exc:
        problems = [str(exc)]
    if problems:
        raise ConfigError.collect(problems)


def _gsm_templates(config: dict, base_dir) -> list[int]:
    from earnest.gsm.datasets import RELEASE_TEMPLATES, DatasetError, read_release_jsonl, release_path, release_shortfall

    gsm = config["gsm_symbolic"]
    records = None
    if gsm["source"] == "jsonl":
        if not gsm.get("jsonl"):
            raise ConfigError("gsm_symbolic.jsonl: source is jsonl but no file is given")
        try:  # read it now so a malformed line stops the run before any job starts
            records = read_release_jsonl(resolve_path(gsm["jsonl"], base_dir))
        except DatasetError as exc:
            raise ConfigError(str(exc)) from None
        available = sorted({r["id"] for r in records})
        if not available:
            raise ConfigError(f"gsm_symbolic.jsonl: {gsm['jsonl']} holds no records")
        where = gsm["jsonl"]
    elif gsm["source"] == "hub":
        hub = gsm.get("hub") or {}
        rev = hub.get("revision") or ""
        if config.get("paper_mode") and not re.fullmatch(r"[0-9a-f]{40}", rev):
            raise ConfigError(f"gsm_symbolic.hub.revision: paper_mode needs the release pinned to a commit id, not {rev!r}")
        fetched = resolve_path(release_path(hub["repo"], rev, hub["file"]), base_dir)
        if fetched.exists():  # fetched already: check it as a jsonl source
            try:
                records = read_release_jsonl(fetched)
            except DatasetError as exc:
                raise ConfigError(str(exc)) from None
            available, where = sorted({r["id"] for r in records}), str(fetched)
        else:  # the release's template ids; the job that reads the file checks them again
            available = list(RELEASE_TEMPLATES)
    else:
        available = list(range(100))
    chosen = gsm.get("templates")
    templates = sorted(available if chosen in (None, "all") else chosen)
    unknown = sorted(set(templates) - set(available))
    if unknown:
        raise ConfigError(f"gsm_symbolic.templates: ids {unknown} do not exist "
                          f"(available: {available[0]}..{available[-1]})")
    if len(templates) < 2:
        raise ConfigError(f"gsm_symbolic.templates: {templates} is a single template; the GLMMs' random intercept "
                          "per template and the bootstrap over templates need at least 2")
    if records is not None:   # a release read now: every template must have the variants asked for
        short = release_shortfall(records, templates, gsm["variants"])
        if short:
            raise ConfigError(short.replace("the release", f"the release {where}", 1))
    return templates


def _check_sandbox(config: dict) -> None:
    """sandbox.python, the interpreter that runs model code (one for both modes, or one per mode),
    starts and is a Python interpreter (as the scoring jobs start it:
    :func:`earnest.sandbox.pool.resolve_python`), checked now rather than when the first code answer is scored."""
    setting = (config.get("sandbox") or {}).get("python") or ""
    from earnest.fidelity import MODES
    from earnest.sandbox.pool import SandboxUnavailable, resolve_python

    per_mode = isinstance(setting, Mapping)
    for mode in (MODES if per_mode else (None,)):
        python = sandbox_python(setting, mode) if per_mode else str(setting)
        if not python:
            continue
        key = f"sandbox.python.{mode}" if per_mode else "sandbox.python"
        try:
            resolve_python(python)
        except SandboxUnavailable as exc:
            text = str(exc)
            msg = text.replace("sandbox.python", key, 1) if text.startswith("sandbox.python") else f"{key}: {text}"
            if "/" in python and not Path(python).expanduser().is_absolute():
                msg += f" (a relative path is read from the working directory, {Path.cwd()})"
            raise ConfigError(msg) from None


def _check_languages(config: dict, base_dir, templates: list[int]) -> None:
    """gsm_symbolic.languages: each a language of the templates package; one other than English
    needs the package source, earnest's instantiator (the same numbers in every language), the
    earnest fidelity mode, a built prompt of experiments.ex1_prompt and every selected template."""
    from earnest.gsm.datasets import DatasetError, check_languages, language_templates
    from earnest.gsm.prompts import built_languages

    from earnest.gsm.context_fit import MODES
    from earnest.gsm.locales import LOCALES, LocaleError, check_code

    gsm = config["gsm_symbolic"]
    languages = gsm.get("languages") or ["eng"]
    others = [x for x in languages if x != "eng"]
    problems = []
    english_rules = list(gsm.get("english_rules") or [])
    modes = gsm.get("prompt_mode", "native")
    for code in english_rules + (list(modes) if isinstance(modes, dict) else []):
        try:
            check_code(code, "gsm_symbolic.english_rules" if code in english_rules else "gsm_symbolic.prompt_mode")
        except LocaleError as exc:
            problems.append(str(exc))
    for code in english_rules:
        if code in LOCALES:
            problems.append(f"gsm_symbolic.english_rules: {code!r} has a locale row of its own "
                            "(earnest.gsm.locales.LOCALES); English rules are only for a language without one")
    if isinstance(modes, dict):
        stray = [x for x in modes if x not in languages]
        if stray:
            problems.append(f"gsm_symbolic.prompt_mode: {', '.join(stray)} not in gsm_symbolic.languages "
                            f"({', '.join(languages)})")
        if modes.get("eng", "native") != "native":
            problems.append(f"gsm_symbolic.prompt_mode: English runs the English study's prompt (native), not "
                            f"{modes['eng']!r}")
    elif modes not in MODES:
        problems.append(f"gsm_symbolic.prompt_mode: {modes!r} is not one of {', '.join(MODES)}")
    if not others:
        if problems:
            raise ConfigError.collect(problems)
        return
    try:
        check_languages(languages)
    except DatasetError as exc:
        raise ConfigError(str(exc)) from None
    for lang in others:
        if lang not in LOCALES and lang not in english_rules:
            problems.append(f"gsm_symbolic.languages: {lang!r} has no extractor locale (earnest.gsm.locales.LOCALES: "
                            f"{', '.join(LOCALES)}): its answer cue and number style are unknown (\"6,5\" would be "
                            f"read as 5); add its row, or name it in gsm_symbolic.english_rules to read it with "
                            "English rules")
    if gsm["source"] != "package":
        problems.append(f"gsm_symbolic.languages: {', '.join(others)} need source package (the official release "
                        f"{gsm['source']} is English only)")
    if gsm.get("instantiator", "package") != "earnest":
        problems.append("gsm_symbolic.languages: languages other than eng need instantiator earnest (instance k of "
                        "template t then carries the same numbers in every language)")
    if config.get("fidelity") == "reference":
        problems.append("gsm_symbolic.languages: fidelity reference reproduces the authors' English-only code; "
                        "other languages run in fidelity earnest")
    built = built_languages(resolve_path(config["prompts_dir"], base_dir))
    ex1 = config["experiments"]["ex1_prompt"]
    for lang in others:
        if lang not in built or ex1 not in built[lang]["formats"]:
            problems.append(f"gsm_symbolic.languages: no {ex1!r} prompt is built for language {lang!r} (built: "
                            + ", ".join(f"{k} ({', '.join(v['formats'])})" for k, v in built.items())
                            + "; docs/languages.md says how to add one)")
            continue
        try:
            active = language_templates(lang)
        except DatasetError as exc:
            problems.append(str(exc))
            continue
        missing = sorted(set(templates) - set(active))
        if missing:
            problems.append(f"gsm_symbolic.templates: language {lang!r} has no active translation of template(s) "
                            f"{missing[:10]}{' ...' if len(missing) > 10 else ''} ({len(active)} of 100 translated); "
                            "the cross-lingual model needs the same templates in every language")
    if problems:
        raise ConfigError.collect(problems)


def _check_stats(config: dict) -> None:
    stats = config["stats"]
    if stats["shards"] > stats["resamples"]:
        raise ConfigError(f"stats.shards: {stats['shards']} shards for {stats['resamples']} resamples would plan "
                          "shards without a resample; use at most stats.resamples shards")


def _check_compare(config: dict) -> None:
    cmp = config["compare"]
    if cmp["agq"] > 1 and not cmp["item_effects"]:
        raise ConfigError(f"compare.agq: {cmp['agq']} quadrature points integrate over the item intercepts, which "
                          "compare.item_effects: false leaves out; use agq: 1 or item_effects: true")


def _check_power(config: dict) -> None:
    """Every design of the power grid (power.templates x power.variants) is one to simulate, checked
    now as the power study checks it when its job starts (hours of other jobs later)."""
    from earnest.stats.power import design_problem

    pw = config["power"]
    if not pw["enabled"]:
        return
    problems = [f"power.templates: {nt} with power.variants {nv}: {problem}"
                for nt in pw["templates"] for nv in pw["variants"] if (problem := design_problem(nt, nv))]
    if problems:
        raise ConfigError.collect(problems)


def _check_statform(config: dict, base_dir) -> None:
    sf = config["statform"]
    if not sf["enabled"]:
        return
    for name in sf["models"]:
        if name not in config["models"]:
            raise ConfigError(f"statform.models: {name!r} is not a configured model "
                              f"(models: {', '.join(config['models'])})")
        decoding = config["models"][name].get("decoding") or {}
        samples, temperature = decoding.get("samples", 1), decoding.get("temperature", 0)
        # StatFormBench's tables hold one answer per question (samples at temperature 0: refused as such)
        if isinstance(samples, int) and samples > 1 and isinstance(temperature, (int, float)) and temperature > 0:
            raise ConfigError(f"models.{name}.decoding.samples: {samples} samples, but StatFormBench (statform.models) "
                              "asks each question once; give StatFormBench its own model entry without samples")
    for key in ("dataset", "fewshot_pool"):
        if key == "dataset" and sf.get("source") == "official":
            continue
        if key == "dataset" and sf.get(key) == BUILT_BENCHMARK:
            if not config["statform_build"]["enabled"]:
                raise ConfigError(f"statform.dataset: {BUILT_BENCHMARK} is made by statform_build, which is not enabled")
            continue
        if not sf.get(key) or not resolve_path(sf[key], base_dir).exists():
            raise ConfigError(f"statform.{key}: file not found: {sf.get(key)!r}")
    release = sf.get("release") or {}
    if sf.get("source") == "official" and release.get("path") and not resolve_path(release["path"], base_dir).is_file():
        raise ConfigError(f"statform.release.path: file not found: {release['path']!r}")
    if not sf["strategies"]:
        raise ConfigError("statform.strategies: no prompting strategy, so nothing would run; name at least one "
                          "(e.g. zero_shot: {kind: zero_shot})")
    _check_statform_strategies(sf, base_dir)
    main = sf["main_strategy"]
    if main not in sf["strategies"]:
        raise ConfigError(f"statform.main_strategy: {main!r} is not one of statform.strategies "
                          f"({', '.join(sf['strategies'])})")


def _check_statform_strategies(sf: dict, base_dir) -> None:
    """Before any job: a few-shot k the pool cannot give, or a definitions strategy with a taxonomy
    that has no definitions, fails here, not hours into the run."""
    from earnest.statform.data import DataError
    from earnest.statform.release import load_any
    from earnest.statform.prompts import definitions_text, parse_strategy
    from earnest.statform.taxonomy import TaxonomyError, load_taxonomy

    specs = {}
    for name, spec in sf["strategies"].items():
        try:
            specs[name] = parse_strategy(name, spec)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    tax_path = sf.get("taxonomy")
    if any(s["kind"] == "few_shot" for s in specs.values()):
        pool_path = resolve_path(sf["fewshot_pool"], base_dir)
        try:
            tax = load_taxonomy(resolve_path(tax_path, base_dir)) if tax_path else None
            pool = load_any(pool_path, taxonomy=tax)
        except (DataError, TaxonomyError) as exc:
            raise ConfigError(f"statform.fewshot_pool: {exc}") from None
        for name, spec in specs.items():
            if spec["kind"] == "few_shot" and spec["k"] > len(pool):
                raise ConfigError(f"statform.strategies.{name}.k: {spec['k']} examples per prompt, but the few-shot "
                                  f"pool {sf['fewshot_pool']} holds {len(pool)} samples")
    if any(s["kind"] == "definitions" for s in specs.values()):
        try:
            if not tax_path:
                raise ValueError("no taxonomy file is given (statform.taxonomy), so there are no definitions")
            definitions_text(load_taxonomy(resolve_path(tax_path, base_dir)))
        except (ValueError, TaxonomyError) as exc:
            name = next(n for n, s in specs.items() if s["kind"] == "definitions")
            raise ConfigError(f"statform.strategies.{name}: {exc}") from None


# the benchmark rules/statform_build.smk writes; statform.dataset may name it
BUILT_BENCHMARK = "results/statform_build/statformbench.jsonl"
BUILD_STAGES = ("split", "induce", "filter", "label", "variables", "rewrite")


def _check_statform_build(config: dict, base_dir) -> tuple[dict, dict, list]:
    """Read the construction pipeline's entries and case folder now (a bad line stops the run)."""
    sb = config["statform_build"]
    if not sb["enabled"]:
        return {}, {}, []
    from earnest.statform.build.entries import EntryError, read_entries, scan_cases

    if not sb.get("entries") and not sb.get("cases"):
        raise ConfigError("statform_build: give entries (a JSONL file) or cases (a folder), or both")
    entries, cases, excluded = {}, {}, []
    try:
        if sb.get("entries"):
            entries = {e["entry_id"]: e for e in read_entries(resolve_path(sb["entries"], base_dir))}
        if sb.get("cases"):
            cases, excluded = scan_cases(resolve_path(sb["cases"], base_dir))
    except EntryError as exc:
        raise ConfigError(f"statform_build: {exc}") from None
    clash = sorted(set(entries) & set(cases))
    if clash:
        raise ConfigError(f"statform_build: entry ids and case project names must differ; both have {clash[:5]}")
    if not entries and not cases:
        raise ConfigError("statform_build: no entries and no usable case project (excluded: "
                          f"{[e['project'] + ': ' + e['reason'] for e in excluded][:5]})")
    if not sb.get("model"):
        raise ConfigError("statform_build.model: name the model (under models:) the LLM stages use")
    named = [("statform_build.model", sb["model"])] + [(f"statform_build.stage_models.{s}", m)
                                                        for s, m in (sb.get("stage_models") or {}).items()]
    for key, name in named:
        if name not in config["models"]:
            raise ConfigError(f"{key}: {name!r} is not a configured model (models: {', '.join(config['models'])})")
    for key in ("taxonomy", "prompts_dir"):
        if not resolve_path(sb[key], base_dir).exists():
            raise ConfigError(f"statform_build.{key}: not found: {sb[key]!r}")
    for d in sb["review"]["decisions"]:
        if not resolve_path(d, base_dir).exists():
            raise ConfigError(f"statform_build.review.decisions: not found: {d!r}")
    return entries, cases, excluded


def check_config(config: dict, formats: Mapping[str, PromptFormat], *,
                 base_dir: str | Path | None = None, locations: Mapping[str, str] | None = None) -> Checked:
    """Check a schema-validated config (:func:`validate_schema`) against the prompt formats
    (``formats.yaml``, :func:`earnest.gsm.prompts.load_formats`), the installed backends and the files it
    names; relative paths are resolved with :func:`resolve_path` against ``base_dir``.

    Raises :class:`ConfigError` naming the key (``experiments.ex2_prompts: unknown prompt format
    'haiku'``) or file and line, with every section's problem (not only the first); with
    ``locations`` (:func:`config_locations`) each starts with the config file and line of its key.
    Returns what it worked out (:class:`Checked`).
    """
    problems: list[str] = []

    def run(check, *args, default=None):
        try:
            return check(*args)
        except (ConfigError, PromptFormatError) as exc:   # every section is checked; all problems are shown
            problems.extend(getattr(exc, "problems", None) or [str(exc)])
            return default

    run(_check_names, config, formats)
    run(_check_prompts, config, formats)
    run(_check_models, config, base_dir)
    if not problems:
        run(_check_gpu_plan, config, base_dir)
    templates = run(_gsm_templates, config, base_dir, default=[])
    run(_check_sandbox, config)
    run(_check_languages, config, base_dir, templates)
    run(_check_stats, config)
    run(_check_compare, config)
    run(_check_power, config)
    run(_check_statform, config, base_dir)
    entries, cases, excluded = run(_check_statform_build, config, base_dir, default=({}, {}, []))
    if problems:
        raise ConfigError.collect([locate(p, locations) for p in problems])
    return Checked(templates=templates, build_entries=entries, build_cases=cases, build_excluded=excluded)


def merge_config_files(paths) -> dict:
    """The config Snakemake builds from ``paths`` (each file read as :func:`load_yaml_strict`, a
    later file's mapping merged into the earlier ones key by key, as Snakemake's ``update_config``)."""
    merged: dict = {}

    def update(into: dict, new: Mapping) -> None:
        for key, value in new.items():
            if isinstance(value, Mapping) and isinstance(into.get(key), dict):
                update(into[key], value)
            else:
                into[key] = value

    for path in paths:
        content = load_yaml_strict(path)
        if content is None:
            continue
        if not isinstance(content, Mapping):
            raise ConfigError(f"{path}: a config file is a mapping of keys, not a {type(content).__name__}")
        update(merged, content)
    return merged


def check_workflow_config(config: dict, paths, base_dir: str | Path,
                          locations: Mapping[str, str] | None = None) -> tuple[Checked, dict[str, PromptFormat]]:
    """Every check the workflow makes before its first job, in its order: the files themselves
    (UTF-8, YAML, duplicate keys), the schema (defaults filled into ``config``), the prompt formats,
    then :func:`check_config`. ``locations``: :func:`config_locations` of ``paths`` when the caller
    has it already. Returns (what it worked out, the prompt formats); raises ConfigError /
    PromptFormatError naming file, line and key."""
    base = Path(base_dir)
    check_config_files(paths)
    where = config_locations(paths) if locations is None else locations
    validate_schema(config, base / "config" / "schema.yaml", locations=where)
    formats = load_formats(resolve_path(config["prompts_dir"], base), fidelity=config["fidelity"])
    return check_config(config, formats, base_dir=base, locations=where), formats


def _workflow_dir(given: Path | None) -> Path:
    """The workflow directory ``earnest check-config`` checks against: ``--workflow`` when given;
    else the current directory when it is one (a Snakefile and config/schema.yaml), else the
    checkout this earnest is imported from (:data:`earnest.schema.SCHEMA_PATH`). ConfigError when
    neither holds config/schema.yaml, naming what was looked at."""
    from earnest.schema import SCHEMA_PATH

    if given is not None:
        base = given.expanduser().resolve()
        if not (base / "config" / "schema.yaml").is_file():
            raise ConfigError(f"--workflow {given}: no config/schema.yaml in {base}; give the earnest workflow "
                              "directory (the one with the Snakefile)")
        return base
    cwd = Path.cwd()
    if (cwd / "Snakefile").is_file() and (cwd / "config" / "schema.yaml").is_file():
        return cwd
    if SCHEMA_PATH.is_file():
        return SCHEMA_PATH.parents[1]
    raise ConfigError(f"no workflow directory: neither the current directory ({cwd}) nor the checkout earnest is "
                      f"imported from ({SCHEMA_PATH.parents[1]}) holds config/schema.yaml; give --workflow DIR "
                      "(the directory with the Snakefile), or install earnest from its checkout (pip install -e .)")


def _cmd_check_config(args) -> int:
    import sys

    try:
        base = _workflow_dir(args.workflow)
        # as the Snakefile: the embedded default unless --configfile names complete configs of their own
        paths = list(args.configfile) or [base / "config" / "config.yaml"]
        config = merge_config_files(paths)
        check_workflow_config(config, paths, base)
    except (ConfigError, PromptFormatError) as exc:
        print(f"earnest: config error: {exc}", file=sys.stderr)
        return 1
    print(f"earnest: config ok ({', '.join(str(p) for p in paths)}; workflow {base})")
    return 0


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "check-config", help="check config files as the workflow does, before Snakemake reads them",
        description="Check config files as the workflow does before its first job (UTF-8, YAML, duplicate keys, "
                    "schema, models, prompts, datasets, sandbox.python), each problem named by file, line and "
                    "key. Snakemake reads a --configfile itself before the workflow's checks run, so a file that "
                    "is not UTF-8 ends there in a traceback; this command names the file, line and byte instead.")
    p.add_argument("configfile", nargs="*", type=Path,
                   help="config files in the order given to --configfile (none: the workflow's config/config.yaml)")
    p.add_argument("--workflow", type=Path, default=None,
                   help="the workflow directory (default: the current directory if it is one, else the checkout "
                        "this earnest is imported from)")
    p.set_defaults(func=_cmd_check_config)
