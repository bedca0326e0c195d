"""The one interface every model backend implements, and the names its results use.

A backend is a subclass of :class:`Backend`; :func:`earnest.backends.load_backend` refuses
anything else, and ``tests/test_backend_contract.py`` runs every registered backend through the
same checks (order, ``on_result``, stop strings, stop-reason names).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Callable, Sequence

# Why an answer ended: the one set of names every backend uses (column ``stop_reason``).
EOS = "eos"                        # the model ended its answer (EOS token; an API's "stop" without a stop string)
STOP_STRING = "stop_string"        # one of the request's stop strings appeared (e.g. the next "Q:")
MAX_NEW_TOKENS = "max_new_tokens"  # the token cap was hit (an API's "length")
CONTENT_FILTER = "content_filter"  # an API withheld the rest of the answer
STOP_REASONS = (EOS, STOP_STRING, MAX_NEW_TOKENS, CONTENT_FILTER)
# A request that got no answer at all (transport failure after every retry): "error:<kind>".
# Such a result is not a model answer: it is never checkpointed or scored, and the job fails so that
# a rerun asks again.
ERROR_PREFIX = "error:"


def is_error(stop_reason: str) -> bool:
    """Whether ``stop_reason`` marks a request that got no answer (a transport error, not the model's)."""
    return str(stop_reason).startswith(ERROR_PREFIX)


def check_stop_reason(stop_reason: str, where: str) -> str:
    """``stop_reason`` if it is one of :data:`STOP_REASONS` or ``error:<kind>``, else ValueError."""
    if stop_reason in STOP_REASONS or (is_error(stop_reason) and len(stop_reason) > len(ERROR_PREFIX)):
        return stop_reason
    raise ValueError(f"{where}: unknown stop reason {stop_reason!r} (known: {', '.join(STOP_REASONS)}, error:<kind>)")


@dataclass
class GenerationRequest:
    """One thing to ask a model.

    Exactly one of ``prompt`` (raw text, sent as is) or ``messages`` (chat turns, each
    ``{"role": ..., "content": ...}``) is set. ``key`` is the caller's id (e.g. the item id).
    ``stop``: strings that end the answer (from the prompt format); the answer is cut before the
    first one and its stop reason is ``stop_string``. Every backend honours them.
    ``fidelity`` (``earnest.fidelity``): how a local backend decodes. ``earnest``: as above.
    ``reference``: as the authors' Hugging Face wrapper (resources/FIDELITY.md, point 2): the
    stop strings are looked for in the last 10 tokens of prompt + answer and the answer KEEPS the
    stop string (the reference's extractor cuts it), the tokenizer's EOS token alone ends it, the
    prompt is truncated to 2048 tokens. Backends without such a path treat both modes alike.
    ``sample``: which of a question's samples this is (a model entry's ``decoding.samples``; 0 for the
    first or only one): with sampling, each sample draws its own numbers (``earnest.backends.decoding``).
    """

    key: str
    prompt: str | None = None
    messages: list[dict] | None = None
    stop: tuple[str, ...] = ()
    fidelity: str = "earnest"
    sample: int = 0

    def __post_init__(self) -> None:
        from earnest.fidelity import check_mode

        if (self.prompt is None) == (self.messages is None):
            raise ValueError(f"request {self.key!r}: give exactly one of prompt or messages")
        if isinstance(self.stop, str) or not all(isinstance(s, str) and s for s in self.stop):
            raise ValueError(f"request {self.key!r}: stop must be a sequence of non-empty strings, got {self.stop!r}")
        self.stop = tuple(self.stop)
        check_mode(self.fidelity, f"request {self.key!r}: fidelity")
        if isinstance(self.sample, bool) or not isinstance(self.sample, int) or self.sample < 0:
            raise ValueError(f"request {self.key!r}: sample must be an integer >= 0, got {self.sample!r}")


@dataclass
class GenerationResult:
    """What a model answered to one request.

    ``stop_reason`` is one of :data:`STOP_REASONS`, or ``error:<kind>`` when the request got no
    answer (see :func:`is_error`). Unknown token counts are -1.
    """

    key: str
    response: str
    prompt_tokens: int
    new_tokens: int
    stop_reason: str
    seconds: float
    extra: dict = field(default_factory=dict)


def cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """``text`` up to the earliest of the ``stop`` strings, and whether one was found."""
    cut = min((i for i in (text.find(s) for s in stop) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


def valid_text(text: str) -> tuple[str, int]:
    """``text`` with every lone UTF-16 surrogate (JSON's ``\\ud800`` escape decodes to one; no
    UTF-8 file can hold it) replaced by U+FFFD, and how many were replaced."""
    try:
        text.encode("utf-8")
        return text, 0
    except UnicodeEncodeError:
        pass
    out, n = [], 0
    for ch in text:
        if "\ud800" <= ch <= "\udfff":
            out.append("\ufffd")
            n += 1
        else:
            out.append(ch)
    return "".join(out), n


OnResult = Callable[[GenerationResult], None]


class Backend(abc.ABC):
    """A model that turns requests into results; greedy decoding unless configured otherwise.

    Every backend takes its config entry as ``(model_name, model_cfg)`` and implements
    :meth:`generate`; :meth:`close` frees what it holds.
    """

    name: str

    @abc.abstractmethod
    def generate(self, requests: Sequence[GenerationRequest], max_new_tokens: int,
                 on_result: OnResult | None = None) -> list[GenerationResult]:
        """Answer every request; return the results in the requests' order.

        ``on_result(result)`` is called once per request as soon as its result is known (in any
        order, from the calling thread or not, never twice at once), so callers can checkpoint
        while the rest runs. Each request's ``stop`` strings end its answer. Must not raise for one
        bad request when others can go on: a request that gets no answer yields an ``error:<kind>``
        result.
        """

    def describe(self) -> dict:
        """How this backend answers, as the generations table records it (``decoding`` column):
        at least ``backend``; each backend adds its decoding settings."""
        return {"backend": type(self).__name__}

    def close(self) -> None:
        """Free what the backend holds (weights, sessions)."""
