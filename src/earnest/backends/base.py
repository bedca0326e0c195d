"""The one interface every model backend implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence


@dataclass
class GenerationRequest:
    """One thing to ask a model.

    Exactly one of ``prompt`` (raw text, sent as is) or ``messages`` (chat turns, each
    ``{"role": ..., "content": ...}``) is set. ``key`` is the caller's id (e.g. the item id).
    """

    key: str
    prompt: str | None = None
    messages: list[dict] | None = None

    def __post_init__(self) -> None:
        if (self.prompt is None) == (self.messages is None):
            raise ValueError(f"request {self.key!r}: give exactly one of prompt or messages")


@dataclass
class GenerationResult:
    """What a model answered to one request.

    stop_reason: "eos" (end-of-sequence token), "next_question" (the model began a new "Q:"),
    "stop_string" (another configured stop string), "max_new_tokens" (the cap was hit),
    "length" / "error:<kind>" for API backends.
    """

    key: str
    response: str
    prompt_tokens: int
    new_tokens: int
    stop_reason: str
    seconds: float
    extra: dict = field(default_factory=dict)


class Backend(Protocol):
    """A model that turns requests into results; greedy decoding unless configured otherwise."""

    name: str

    def generate(self, requests: Sequence[GenerationRequest], max_new_tokens: int) -> list[GenerationResult]:
        """Answer every request, in order. Must not raise for one bad request when others can go on."""
        ...

    def close(self) -> None:
        """Free what the backend holds (weights, sessions)."""
        ...
