"""The construction pipeline's prompt files (``resources/statform/build_prompts/``).

Each prompt is a text file; ``{{name}}`` marks a placeholder the code fills (the paper's own
``{background, data, question}`` lines are text, not placeholders). What each file reproduces from
the paper's Appendix C and what we reconstructed is in that folder's README.
"""

from __future__ import annotations

import re
from pathlib import Path

PROMPT_NAMES = ("split", "quality_filter", "category", "variables", "rewrite", "rewrite_check", "rewrite_correct",
                "induce", "induce_check", "induce_revise", "preview", "retry")
# placeholders each prompt must hold (and no others)
PLACEHOLDERS = {"category": {"taxonomy"}, "rewrite": {"taxonomy"}, "rewrite_correct": {"feedback"},
                "induce": {"max_questions"}, "induce_revise": {"feedback"}, "preview": {"n_rows"}, "retry": {"error"}}
_PLACEHOLDER = re.compile(r"\{\{([a-z_]+)\}\}")


def default_prompt_dir() -> Path:
    return Path(__file__).resolve().parents[4] / "resources" / "statform" / "build_prompts"


class PromptSet:
    """Every build prompt read from one folder and checked for its placeholders."""

    def __init__(self, folder: str | Path | None = None):
        self.folder = Path(folder) if folder else default_prompt_dir()
        self.texts: dict[str, str] = {}
        for name in PROMPT_NAMES:
            path = self.folder / f"{name}.txt"
            if not path.is_file():
                raise FileNotFoundError(f"{path}: prompt file missing (a build prompt folder needs {', '.join(PROMPT_NAMES)})")
            text = path.read_text(encoding="utf-8").rstrip("\n")
            found = set(_PLACEHOLDER.findall(text))
            want = PLACEHOLDERS.get(name, set())
            if found != want:
                raise ValueError(f"{path}: placeholders {sorted(found)} but the code fills {sorted(want)}")
            self.texts[name] = text

    def render(self, name: str, **values) -> str:
        text = self.texts[name]
        for key, value in values.items():
            text = text.replace("{{" + key + "}}", str(value))
        left = _PLACEHOLDER.findall(text)
        if left:
            raise ValueError(f"{self.folder / name}.txt: placeholders {left} were not filled")
        return text

    def raw(self, name: str) -> str:
        """A prompt whose placeholders are filled later (retry, corrections)."""
        return self.texts[name]
