"""LLM calls of the construction pipeline: JSON answers, validated, with bounded retries.

Every call goes through a backend (normally :class:`earnest.backends.cache.CachedBackend`, so a
rerun pays nothing). :func:`run_json_tasks` sends a batch of tasks at once; each answer must hold a
JSON object that the task's validator accepts. An answer that does not is retried, at most
``max_retries`` times, by continuing the conversation: the model's answer as an assistant turn,
then a user turn (``retry.txt``) that names what was wrong. Greedy decoding would repeat the same
answer to the same request, so the retry is a different request (and a different cache entry).
After the last retry the task is a failure that keeps every answer and every error. A request that
got no answer at all (``error:<kind>`` from the backend) is a transport error, not a failure of
the model: the caller re-raises it after the batch, so the job fails and a rerun asks again while
everything answered is already in the cache.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from earnest.backends.base import GenerationRequest
from earnest.statform.parsing import fenced_blocks, json_objects_in


class InvalidAnswer(ValueError):
    """A validator's verdict on a decoded answer: the message is shown to the model on retry."""


class TransportError(RuntimeError):
    """Some requests of a stage got no answer from the backend (after its own retries)."""


def json_objects(text: str) -> list[Any]:
    """Every top-level JSON object in ``text``, left to right: those of the first code fence that
    holds any, else those anywhere in the text (the scanning is
    :func:`earnest.statform.parsing.json_objects_in`)."""
    for chunk in fenced_blocks(text) + [text]:
        out = json_objects_in(chunk)
        if out:
            return out
    return []


@dataclass
class JsonTask:
    """One question to the model: ``key`` (unique in its batch), chat ``messages``, and ``validate``,
    which takes a decoded JSON object and returns the value to keep or raises :class:`InvalidAnswer`."""

    key: str
    messages: list[dict]
    validate: Callable[[dict], Any]


@dataclass
class Outcome:
    """What became of a task: ``value`` when ``ok``; every attempt's answer and error either way."""

    key: str
    ok: bool = False
    value: Any = None
    attempts: list[dict] = field(default_factory=list)
    transport_error: str | None = None

    @property
    def error(self) -> str:
        if self.transport_error:
            return self.transport_error
        return self.attempts[-1]["error"] if self.attempts else ""

    def record(self) -> dict:
        """The outcome as stored in a sample's ``failures`` / ``log`` fields."""
        return {"ok": self.ok, "error": self.error, "attempts": self.attempts}


def _judge(response: str, validate: Callable[[dict], Any]) -> tuple[bool, Any, str]:
    objects = json_objects(response or "")
    if not objects:
        return False, None, "the answer holds no JSON object" if (response or "").strip() else "the answer is empty"
    last_error = ""
    for obj in reversed(objects):
        try:
            return True, validate(obj), ""
        except InvalidAnswer as exc:
            last_error = str(exc)
    return False, None, last_error


def run_json_tasks(backend, tasks: Sequence[JsonTask], max_new_tokens: int, max_retries: int,
                   retry_template: str) -> dict[str, Outcome]:
    """Ask every task, retrying invalid answers (see module doc); returns outcomes by task key.

    ``retry_template`` holds ``{{error}}``, replaced by what was wrong with the previous answer.
    """
    keys = [t.key for t in tasks]
    if len(set(keys)) != len(keys):
        raise ValueError("run_json_tasks: task keys must be unique")
    outcomes = {t.key: Outcome(t.key) for t in tasks}
    pending = [(t, list(t.messages)) for t in tasks]
    for attempt in range(max_retries + 1):
        if not pending:
            break
        requests = [GenerationRequest(key=t.key, messages=msgs) for t, msgs in pending]
        results = backend.generate(requests, int(max_new_tokens))
        nxt = []
        for (task, msgs), res in zip(pending, results):
            oc = outcomes[task.key]
            if str(res.stop_reason).startswith("error:"):
                oc.transport_error = f"{res.stop_reason}: {res.extra.get('error', '')}".strip()
                continue
            ok, value, error = _judge(res.response, task.validate)
            oc.attempts.append({"response": res.response, "stop_reason": res.stop_reason, "error": error})
            if ok:
                oc.ok, oc.value = True, value
            elif attempt < max_retries:
                nxt.append((task, msgs + [{"role": "assistant", "content": res.response},
                                          {"role": "user", "content": retry_template.replace("{{error}}", error)}]))
        pending = nxt
    return outcomes


def raise_transport_errors(outcomes: dict[str, Outcome], stage: str, where: str) -> None:
    """Raise :class:`TransportError` naming every task of ``outcomes`` that got no answer."""
    bad = {k: o.transport_error for k, o in outcomes.items() if o.transport_error}
    if bad:
        listed = "; ".join(f"{k}: {v}" for k, v in sorted(bad.items()))
        raise TransportError(f"{where}: stage {stage}: {len(bad)} request(s) got no answer from the backend "
                             f"({listed}); answered requests are cached, rerun to ask the others again")
