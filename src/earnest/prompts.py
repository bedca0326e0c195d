"""Prompt formats: few-shot templates read from resource files and filled with one question.

A format is a text file whose bytes are the prompt, with the literal line content
``<Question here>`` (as printed in the paper's Appendix C listings) standing for the question,
plus an entry in ``formats.yaml`` naming the file, its answer style (``text`` or ``code``) and
a description. Files are read byte-exactly: whitespace and line structure matter for few-shot
prompting, so nothing is stripped or re-encoded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

import yaml

QUESTION_PLACEHOLDER = "<Question here>"
STYLES = ("text", "code")
FORMATS_FILE = "formats.yaml"
_ENTRY_KEYS = {"file", "style", "description", "paper_name", "listing"}

#: resources/prompts of the source tree (valid when the package is used from src/, as the workflow does).
DEFAULT_PROMPTS_DIR = Path(__file__).resolve().parents[2] / "resources" / "prompts"


class PromptFormatError(ValueError):
    """A prompt format is unknown, or its formats.yaml entry or template file is unusable."""


@dataclass(frozen=True)
class PromptFormat:
    """One prompt format.

    ``template`` is the file's text with the placeholder line content ``<Question here>`` left in;
    ``prefix`` and ``suffix`` are the text before and after it.
    """

    name: str
    style: str
    template: str
    description: str = ""
    paper_name: str = ""
    path: Path | None = None

    def __post_init__(self) -> None:
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
    def prefix(self) -> str:
        """Text before the question."""
        return self.template.split(QUESTION_PLACEHOLDER, 1)[0]

    @property
    def suffix(self) -> str:
        """Text after the question (for the paper's formats: the answer cue, e.g. "\\nA:\\n")."""
        return self.template.split(QUESTION_PLACEHOLDER, 1)[1]

    def render(self, question: str) -> str:
        """The full prompt for ``question``: the template with the placeholder replaced.

        Leading and trailing whitespace of the question is removed (the template supplies the
        separators); everything else in the question is inserted unchanged.
        """
        if not isinstance(question, str):
            raise TypeError(f"prompt format {self.name!r}: question must be str, got {type(question).__name__}")
        text = question.strip()
        if not text:
            raise ValueError(f"prompt format {self.name!r}: question is empty")
        return self.prefix + text + self.suffix


def shared_prefix(fmt: PromptFormat) -> str:
    """The text every rendered prompt of ``fmt`` starts with, for KV-cache reuse.

    This is the text before the question, less trailing spaces and tabs: BPE/SentencePiece
    tokenizers attach a leading space to the following word ("Q:" + " There"), so cutting before
    the space keeps the prefix's tokens a prefix of every full prompt's tokens. Guaranteed:
    ``fmt.render(q).startswith(shared_prefix(fmt))`` for every question ``q``.
    """
    return fmt.prefix.rstrip(" \t")


def _formats_file(resources_dir: str | Path | None) -> Path:
    """formats.yaml in ``resources_dir``, or in its ``prompts/`` subfolder."""
    base = Path(resources_dir) if resources_dir is not None else DEFAULT_PROMPTS_DIR
    for candidate in (base / FORMATS_FILE, base / "prompts" / FORMATS_FILE):
        if candidate.is_file():
            return candidate
    raise PromptFormatError(f"no {FORMATS_FILE} in {base} or {base / 'prompts'}")


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


def load_formats(resources_dir: str | Path | None = None) -> dict[str, PromptFormat]:
    """Every format listed in ``formats.yaml``, by name, in file order.

    ``resources_dir`` is the folder holding formats.yaml (e.g. ``resources/prompts``) or its
    parent (``resources``); None means this source tree's ``resources/prompts``.
    Raises PromptFormatError naming formats.yaml and the offending key for a malformed entry,
    an unknown style, a missing or unreadable template file, or a template without exactly one
    ``<Question here>``.
    """
    spec_path = _formats_file(resources_dir)
    try:
        spec = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise PromptFormatError(f"{spec_path}: not valid YAML ({err})") from None
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
        for key in ("file", "style"):
            if not isinstance(entry.get(key), str) or not entry[key]:
                raise PromptFormatError(f"{where}: key {name}.{key} is missing or not a string")
        if entry["style"] not in STYLES:
            raise PromptFormatError(
                f"{where}: key {name}.style must be one of {', '.join(STYLES)}, got {entry['style']!r}"
            )
        path = spec_path.parent / entry["file"]
        template = _read_template(path, f"{where} (key {name}.file)")
        try:
            formats[name] = PromptFormat(
                name=name,
                style=entry["style"],
                template=template,
                description=str(entry.get("description", "")).strip(),
                paper_name=str(entry.get("paper_name", "")),
                path=path,
            )
        except PromptFormatError as err:
            raise PromptFormatError(f"{spec_path}: {err}") from None
    return formats


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
