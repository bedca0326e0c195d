"""Prompt formats: few-shot templates read from resource files and filled with one question.

A format is a text file whose bytes are the prompt, with the literal text ``<Question here>``
(as printed in the paper's Appendix C listings) standing for the question, plus an entry in
``formats.yaml`` naming the file, its answer style (``text`` or ``code``), its stop strings and a
description. Files are read byte-exactly: whitespace and line structure matter for few-shot
prompting, so nothing is stripped or re-encoded.

Each fidelity mode (``earnest.fidelity``) may have its own file and stop strings:
``reference`` = the bytes the authors' released code sends (resources/prompts/reference/),
``earnest`` = the paper's Appendix C listings as reconstructed in resources/prompts/README.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from earnest.fidelity import DEFAULT, MODES, REFERENCE, check_mode
from earnest.yamlfile import load_yaml_strict

QUESTION_PLACEHOLDER = "<Question here>"
STYLES = ("text", "code")
FORMATS_FILE = "formats.yaml"
_ENTRY_KEYS = {"file", "style", "description", "paper_name", "listing", "stop", "reference_source", "system_prompt"}

#: resources/prompts of the source tree (valid when the package is used from src/, as the workflow does).
DEFAULT_PROMPTS_DIR = Path(__file__).resolve().parents[3] / "resources" / "prompts"


class PromptFormatError(ValueError):
    """A prompt format is unknown, or its formats.yaml entry or template file is unusable."""


@dataclass(frozen=True)
class PromptFormat:
    """One prompt format.

    ``template`` is the file's text with the placeholder ``<Question here>`` left in;
    ``prefix`` and ``suffix`` are the text before and after it. ``fidelity`` is the mode the
    format was loaded for (it decides how the question is inserted, see :meth:`render`);
    ``stop`` are the strings at which generation ends (sent with every request).
    """

    name: str
    style: str
    template: str
    description: str = ""
    paper_name: str = ""
    path: Path | None = None
    fidelity: str = DEFAULT
    stop: tuple[str, ...] = ()
    language: str = "eng"
    #: a system message sent before the prompt (the request becomes chat turns: a chat model's template
    #: wraps it, an OpenAI-compatible server gets /chat/completions); None: the raw prompt alone
    system_prompt: str | None = None

    def __post_init__(self) -> None:
        check_mode(self.fidelity, f"prompt format {self.name!r}: fidelity")
        sp = self.system_prompt
        if sp is not None and (not isinstance(sp, str) or not sp.strip()):
            raise PromptFormatError(f"prompt format {self.name!r}: system_prompt must be non-empty text, "
                                    f"got {self.system_prompt!r}")
        if isinstance(self.stop, str) or not all(isinstance(s, str) and s for s in self.stop):
            raise PromptFormatError(f"prompt format {self.name!r}: stop must be a list of non-empty strings, "
                                    f"got {self.stop!r}")
        object.__setattr__(self, "stop", tuple(self.stop))
        if self.style not in STYLES:
            raise PromptFormatError(
                f"prompt format {self.name!r}: style must be one of {', '.join(STYLES)}, got {self.style!r}"
            )
        count = self.template.count(QUESTION_PLACEHOLDER)
        if count != 1:
            where = f" ({self.path})" if self.path else ""
            raise PromptFormatError(
                f"prompt format {self.name!r}{where}: template must contain {QUESTION_PLACEHOLDER!r} "
                f"exactly once, found {count}"
            )

    @property
    def label(self) -> str:
        """The format's display name: its ``paper_name`` in formats.yaml, else its name (the summaries'
        ``prompt_label``, every table, figure and caption)."""
        return self.paper_name or self.name

    @property
    def prefix(self) -> str:
        """Text before the question."""
        return self.template.split(QUESTION_PLACEHOLDER, 1)[0]

    @property
    def suffix(self) -> str:
        """Text after the question (for the paper's formats: the answer cue, e.g. "\\nA:\\n")."""
        return self.template.split(QUESTION_PLACEHOLDER, 1)[1]

    def render(self, question: str) -> str:
        """The full prompt for ``question``: the template with the placeholder replaced.

        ``earnest``: leading and trailing whitespace of the question is removed (the template
        supplies the separators). ``reference``: the question is inserted exactly as given, as the
        reference's ``str.format`` insertion does, an empty or whitespace-only one included (the
        template around nothing, as the authors' code renders it). Everything else in the question is
        inserted unchanged in both modes. An empty or whitespace-only question is an error in
        ``earnest`` mode (a prompt without a question asks nothing).
        """
        if not isinstance(question, str):
            raise TypeError(f"prompt format {self.name!r}: question must be str, got {type(question).__name__}")
        if self.fidelity != REFERENCE and not question.strip():
            raise ValueError(f"prompt format {self.name!r}: question is empty (fidelity reference renders the "
                             "template around it, as the authors' code does)")
        text = question if self.fidelity == REFERENCE else question.strip()
        return self.prefix + text + self.suffix


def shared_prefix(fmt: PromptFormat) -> str:
    """The text every rendered prompt of ``fmt`` starts with, for KV-cache reuse.

    This is the text before the question, less trailing spaces and tabs: BPE/SentencePiece
    tokenizers attach a leading space to the following word ("Q:" + " There"), so cutting before
    the space keeps the prefix's tokens a prefix of every full prompt's tokens. Guaranteed:
    ``fmt.render(q).startswith(shared_prefix(fmt))`` for every question ``q``.
    """
    return fmt.prefix.rstrip(" \t")


def formats_file(resources_dir: str | Path | None) -> Path:
    """formats.yaml in ``resources_dir``, or in its ``prompts/`` subfolder."""
    base = Path(resources_dir) if resources_dir is not None else DEFAULT_PROMPTS_DIR
    for candidate in (base / FORMATS_FILE, base / "prompts" / FORMATS_FILE):
        if candidate.is_file():
            return candidate
    raise PromptFormatError(f"no {FORMATS_FILE} in {base} or {base / 'prompts'}: prompts_dir (--prompts-dir) names a "
                            f"folder holding {FORMATS_FILE}, e.g. the shipped resources/prompts (its default)")


def _read_template(path: Path, where: str) -> str:
    if not path.is_file():
        raise PromptFormatError(f"{where}: template file {path} does not exist")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise PromptFormatError(f"{where}: template file {path} is not UTF-8 ({err})") from None
    # A CRLF checkout or an editor's byte-order mark would silently change the prompt.
    if "\r" in text:
        raise PromptFormatError(f"{where}: template file {path} contains carriage returns (CRLF line endings?)")
    if text.startswith("\ufeff"):
        raise PromptFormatError(f"{where}: template file {path} starts with a byte-order mark")
    return text


def _per_mode(entry: dict, key: str, fidelity: str, where: str):
    """``entry[key]`` for ``fidelity``: the value itself, or its ``{mode: value}`` mapping's entry."""
    value = entry.get(key)
    if isinstance(value, dict):
        unknown = [m for m in value if m not in MODES]
        if unknown:
            raise PromptFormatError(f"{where}: key {key} has unknown fidelity mode(s) {unknown} "
                                    f"(modes: {', '.join(MODES)})")
        if fidelity not in value:
            raise PromptFormatError(f"{where}: key {key} gives no value for fidelity {fidelity!r}")
        return value[fidelity]
    return value


def _stop_strings(value, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(s, str) and s for s in value):
        raise PromptFormatError(f"{where}: must be a list of non-empty strings, got {value!r}")
    return tuple(value)


def load_formats(resources_dir: str | Path | None = None, *, fidelity: str = DEFAULT) -> dict[str, PromptFormat]:
    """Every format listed in ``formats.yaml``, by name, in file order, as ``fidelity`` renders it.

    ``resources_dir`` is the folder holding formats.yaml (e.g. ``resources/prompts``) or its
    parent (``resources``); None means this source tree's ``resources/prompts``. An entry's
    ``file`` and ``stop`` are either one value for every mode or a mapping ``{mode: value}``.
    Raises PromptFormatError naming formats.yaml and the offending key for a malformed entry,
    an unknown style or mode, a missing or unreadable template file, or a template without
    exactly one ``<Question here>``; ValueError for an unknown ``fidelity``.
    """
    check_mode(fidelity)
    spec_path = formats_file(resources_dir)
    # as the config files: not UTF-8, invalid YAML or a format given twice named by file and line
    spec = load_yaml_strict(spec_path, error=PromptFormatError)
    if not isinstance(spec, dict) or not spec:
        raise PromptFormatError(f"{spec_path}: expected a mapping of format name -> entry")
    formats: dict[str, PromptFormat] = {}
    for name, entry in spec.items():
        where = f"{spec_path}: format {name!r}"
        if not isinstance(name, str) or not name:
            raise PromptFormatError(f"{spec_path}: format names must be non-empty strings, got {name!r}")
        if not isinstance(entry, dict):
            raise PromptFormatError(f"{where}: entry must be a mapping with keys file, style, ...")
        unknown = set(entry) - _ENTRY_KEYS
        if unknown:
            raise PromptFormatError(
                f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))} "
                f"(allowed: {', '.join(sorted(_ENTRY_KEYS))})"
            )
        fname = _per_mode(entry, "file", fidelity, where)
        for key, value in (("file", fname), ("style", entry.get("style"))):
            if not isinstance(value, str) or not value:
                raise PromptFormatError(f"{where}: key {name}.{key} is missing or not a string")
        if entry["style"] not in STYLES:
            raise PromptFormatError(
                f"{where}: key {name}.style must be one of {', '.join(STYLES)}, got {entry['style']!r}"
            )
        stop = _stop_strings(_per_mode(entry, "stop", fidelity, where), f"{where}: key {name}.stop")
        path = spec_path.parent / fname
        template = _read_template(path, f"{where} (key {name}.file)")
        try:
            formats[name] = PromptFormat(
                name=name,
                style=entry["style"],
                template=template,
                description=str(entry.get("description", "")).strip(),
                paper_name=str(entry.get("paper_name", "")),
                path=path,
                fidelity=fidelity,
                stop=stop,
                system_prompt=entry.get("system_prompt"),
            )
        except PromptFormatError as err:
            raise PromptFormatError(f"{spec_path}: {err}") from None
    return formats


# --------------------------------------------------------------------------------------------
# other languages (resources/prompts/languages/; docs/languages.md)
# --------------------------------------------------------------------------------------------

LANGUAGES_DIR = "languages"
LANGUAGES_FILE = "languages.yaml"
_LANGUAGE_KEYS = {"name", "cue", "digits", "formats"}


def languages_file(resources_dir: str | Path | None = None) -> Path:
    """languages/languages.yaml next to formats.yaml."""
    return formats_file(resources_dir).parent / LANGUAGES_DIR / LANGUAGES_FILE


def built_languages(resources_dir: str | Path | None = None) -> dict[str, dict]:
    """The languages with built prompts (``eng`` first, then languages.yaml's entries), each with its
    ``name``, ``cue`` and the names of its built ``formats``."""
    out = {"eng": {"name": "English", "cue": "The final answer is",
                   "formats": list(load_formats(resources_dir))}}
    path = languages_file(resources_dir)
    if not path.is_file():
        return out
    spec = load_yaml_strict(path, error=PromptFormatError) or {}
    if not isinstance(spec, dict):
        raise PromptFormatError(f"{path}: expected a mapping of language code -> entry")
    for code, entry in spec.items():
        where = f"{path}: language {code!r}"
        if code == "eng":
            raise PromptFormatError(f"{where}: English is formats.yaml itself; do not list it here")
        if not isinstance(entry, dict) or not isinstance(entry.get("formats"), dict) or not entry["formats"]:
            raise PromptFormatError(f"{where}: needs a mapping 'formats' of format name -> {{file, stop}}")
        unknown = set(entry) - _LANGUAGE_KEYS
        if unknown:
            raise PromptFormatError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))} "
                                    f"(allowed: {', '.join(sorted(_LANGUAGE_KEYS))})")
        out[str(code)] = {"name": str(entry.get("name", code)), "cue": str(entry.get("cue", "")),
                          "formats": list(entry["formats"]), "_entry": entry, "_path": path}
    return out


def language_format(language: str, name: str = "gsm", resources_dir: str | Path | None = None, *,
                    fidelity: str = DEFAULT) -> PromptFormat:
    """Prompt format ``name`` in ``language``: English is :func:`load_formats`'s, unchanged; another
    language is its file under resources/prompts/languages/ with its own stop strings.

    Raises PromptFormatError naming the language (and the languages and formats that are built)
    when no prompt of that language and format exists: never an English fallback. Other languages
    exist in the ``earnest`` fidelity mode only (the ``reference`` mode reproduces the authors'
    English-only code)."""
    check_mode(fidelity)
    if language == "eng":
        return get_format(load_formats(resources_dir, fidelity=fidelity), name)
    built = built_languages(resources_dir)
    if language not in built:
        raise PromptFormatError(
            f"no prompt is built for language {language!r}: prompts exist for {', '.join(built)} "
            f"({languages_file(resources_dir)}; docs/languages.md says how to add one)")
    info = built[language]
    if name not in info["formats"]:
        raise PromptFormatError(f"language {language!r} ({info['name']}) has no {name!r} prompt: built "
                                f"{', '.join(info['formats'])} ({info['_path']})")
    if fidelity == REFERENCE:
        raise PromptFormatError(f"language {language!r}: fidelity 'reference' reproduces the authors' English-only "
                                "prompts; other languages run in fidelity 'earnest'")
    entry = info["_entry"]["formats"][name]
    where = f"{info['_path']}: language {language!r}, format {name!r}"
    if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
        raise PromptFormatError(f"{where}: needs 'file' (and 'stop')")
    english = get_format(load_formats(resources_dir, fidelity=fidelity), name)
    path = info["_path"].parent / entry["file"]
    template = _read_template(path, where)
    try:
        return PromptFormat(name=name, style=english.style, template=template,
                            description=f"{english.description} ({info['name']} translation)",
                            paper_name=english.paper_name, path=path, fidelity=fidelity,
                            stop=_stop_strings(entry.get("stop"), f"{where}: stop"), language=language)
    except PromptFormatError as err:
        raise PromptFormatError(f"{where}: {err}") from None


def validate_format_names(
    names: Iterable[str], formats: Mapping[str, PromptFormat], key: str = "prompts"
) -> list[str]:
    """``names`` as a list, after checking each is a known format.

    ``key`` is the config key the names came from; it is named in the error, with the known
    formats, so a typo in the config is found before any model runs.
    """
    if isinstance(names, str):
        raise PromptFormatError(f"config key {key!r}: expected a list of prompt format names, got the string {names!r}")
    names = list(names)
    unknown = [n for n in names if n not in formats]
    if unknown:
        raise PromptFormatError(
            f"config key {key!r}: unknown prompt format(s) {', '.join(map(repr, unknown))}; "
            f"known formats (from {FORMATS_FILE}): {', '.join(formats)}"
        )
    return names


def get_format(formats: Mapping[str, PromptFormat], name: str, key: str = "prompt") -> PromptFormat:
    """The format called ``name``; the error names ``key`` and the known formats."""
    return formats[validate_format_names([name], formats, key)[0]]


# --------------------------------------------------------------------------------------------
# earnest prompt
# --------------------------------------------------------------------------------------------

def workflow_prompts_dir(start: str | Path | None = None) -> Path | None:
    """The prompts of the earnest workflow directory ``start`` (default: the current one) lies in:
    the nearest folder, ``start`` or above, with a ``Snakefile`` and ``resources/prompts/formats.yaml``;
    None outside any. What its workflow's jobs render (they import that checkout's library), so that
    ``earnest prompt`` run there shows its prompts, not those of whichever earnest is installed."""
    here = Path(start if start is not None else Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "resources" / "prompts"
        if (folder / "Snakefile").is_file() and (candidate / FORMATS_FILE).is_file():
            return candidate
    return None


def _cmd_prompt(args) -> int:
    import sys

    try:
        if args.prompts_dir is None:
            here = workflow_prompts_dir()
            if here is not None and here.resolve() != DEFAULT_PROMPTS_DIR.resolve():
                print(f"earnest prompt: the formats of the workflow here ({here}), not of the installed "
                      f"earnest ({DEFAULT_PROMPTS_DIR}); --prompts-dir chooses", file=sys.stderr)
                args.prompts_dir = str(here)
        formats = load_formats(args.prompts_dir, fidelity=args.fidelity)
        fmt = get_format(formats, args.format, key="FORMAT")
        if args.question == "-":   # read as bytes: a byte that is not UTF-8 named, not a traceback on writing
            from earnest.jsonl import decode_utf8
            stream = getattr(sys.stdin, "buffer", None)   # a text stream without bytes (embedding hosts)
            raw = stream.read() if stream is not None else sys.stdin.read().encode("utf-8", "surrogateescape")
            question = decode_utf8(raw, "<stdin>", error=PromptFormatError)
        else:
            question = args.question
            try:   # the shell passes bytes that are not UTF-8 as lone surrogates (surrogateescape)
                question.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise PromptFormatError(f"QUESTION: not UTF-8 text (a byte 0x{ord(question[exc.start]) & 0xFF:02x} "
                                        f"at character {exc.start + 1}); give UTF-8 text") from None
        text = fmt.render(question)
    except (PromptFormatError, ValueError) as exc:
        print(f"earnest prompt: {exc}", file=sys.stderr)
        return 2
    sys.stdout.flush()
    sys.stdout.buffer.write(text.encode("utf-8"))   # exactly the prompt: no newline added
    sys.stdout.buffer.flush()
    return 0


def add_parser(subparsers) -> None:
    """Register ``earnest prompt FORMAT QUESTION [--fidelity MODE] [--prompts-dir DIR]``."""
    p = subparsers.add_parser(
        "prompt",
        help="print the exact prompt a model receives for one question",
        description=("Write to stdout exactly the bytes the model receives for QUESTION under prompt "
                     "format FORMAT in fidelity mode MODE (no newline is added; pipe through "
                     "`od -c` or `cat -A` to see trailing spaces)."),
    )
    p.add_argument("format", help="prompt format name (formats.yaml), e.g. gsm")
    p.add_argument("question", help="the question text; '-' reads it from stdin")
    p.add_argument("--fidelity", choices=MODES, default=DEFAULT,
                   help="reference: the authors' code's bytes; earnest (default): the paper's listings")
    p.add_argument("--prompts-dir", default=None,
                   help="folder with formats.yaml (default: the resources/prompts of the earnest workflow "
                        "directory you are in, else of the installed earnest)")
    p.set_defaults(func=_cmd_prompt)


def prompt_noun(label: str) -> str:
    """A prompt label as a noun phrase for captions and titles: "GSM prompt (Ex1)" stays as it is,
    "simple code" becomes "simple code prompt" (the word is never doubled)."""
    return label if "prompt" in label.lower() else f"{label} prompt"
