"""Prompts that fit the model, and MGSM's prompt modes (issue 51).

**Modes** (:func:`mode_format`, config ``gsm_symbolic.prompt_mode``, MGSM's settings of Shi et al.
2022 and lm-eval's mgsm tasks): ``native`` is the language's own 8-shot chain-of-thought prompt
(resources/prompts/languages/); ``en_cot`` the English exemplars (resources/prompts/gsm.txt) with
the question in the language; ``direct`` the language's exemplars with each answer cut to its final
sentence (the language's "The final answer is N", languages.yaml ``cue``) and the final line to the
answer label alone: no chain of thought. A mode changes the prompt's bytes, never its name (the
format stays ``gsm``, so every language's rows meet in the cross-lingual model); the generations'
``prompt_sha256`` and the cross-lingual table's "Prompt mode" column say which was used.

**The context** (:func:`fit_prompts`): a translated 8-shot prompt can be many times the English one
(the Telugu one is ~7,200 SmolLM2 tokens). Before a generation job runs, each prompt's tokens (the
model's own tokenizer, as the backend encodes it) plus ``max_new_tokens`` are checked against the
model's context (its config's ``max_position_embeddings``, or a model entry's ``context``). Config
``generation.context_policy``: ``refuse`` (the job fails naming the item and the numbers) or
``fewer_shots`` (such a prompt drops its last exemplars until it fits; each answer's shot count is
recorded, :data:`CONTEXT_COLUMNS`; refused where even no exemplar fits).
"""

from __future__ import annotations

from earnest import fidelity as F

import re
from dataclasses import replace

from earnest.gsm.prompts import PromptFormat, PromptFormatError, built_languages, language_format

MODES = ("native", "en_cot", "direct")
#: One row per item of a generation job that checked the context (``<dataset>.context.tsv``).
CONTEXT_COLUMNS = ["item_id", "prompt_tokens", "max_new_tokens", "context", "shots"]
POLICIES = ("refuse", "fewer_shots")


class ContextError(ValueError):
    """A prompt does not fit the model's context (the message has the numbers)."""


def prompt_mode(modes, language: str) -> str:
    """The mode of ``language`` in config ``gsm_symbolic.prompt_mode`` (one value, or a mapping whose
    missing languages are ``native``)."""
    mode = modes.get(language, "native") if isinstance(modes, dict) else (modes or "native")
    if mode not in MODES:
        raise PromptFormatError(f"gsm_symbolic.prompt_mode: {mode!r} for {language!r} is not one of {', '.join(MODES)}")
    return mode


def _blocks(template: str) -> list[str]:
    """Instruction, exemplars, final question: the blocks of an 8-shot prompt (blank-line separated)."""
    return template.split("\n\n")


def shots_of(fmt: PromptFormat) -> int:
    """The number of exemplars of a few-shot prompt."""
    return max(0, len(_blocks(fmt.template)) - 2)


def with_shots(fmt: PromptFormat, k: int) -> PromptFormat:
    """``fmt`` with its first ``k`` exemplars only (the instruction and the final question kept)."""
    blocks = _blocks(fmt.template)
    n = len(blocks) - 2
    if not 0 <= k <= n:
        raise ValueError(f"{fmt.name}: {k} shots asked, the prompt has {n}")
    return replace(fmt, template="\n\n".join([blocks[0], *blocks[1:1 + k], blocks[-1]]))


def _label(line: str) -> str:
    """The answer label a line starts with ("R :", "A:", "答：")."""
    m = re.match(r"^(.*?[:：])", line)
    if not m:
        raise PromptFormatError(f"no answer label in {line[:40]!r}")
    return m.group(1)


def mode_format(language: str, mode: str = "native", resources_dir=None, *, fidelity: str = F.DEFAULT,
                name: str = "gsm") -> PromptFormat:
    """The ``name`` prompt of ``language`` in ``mode`` (see the module docstring)."""
    if mode not in MODES:
        raise PromptFormatError(f"prompt mode {mode!r}: one of {', '.join(MODES)}")
    native = language_format(language, name, resources_dir, fidelity=fidelity)
    if mode == "native":
        return native
    english = language_format("eng", name, resources_dir, fidelity=fidelity)
    if mode == "en_cot":
        stop = tuple(dict.fromkeys(english.stop + native.stop))
        return replace(english, stop=stop, language=language,
                       description=f"{english.description} (English exemplars, {language} question: en_cot)")
    cue = built_languages(resources_dir)[language]["cue"]
    blocks = _blocks(native.template)
    out = [blocks[0]]
    for block in blocks[1:-1]:
        q, a = block.split("\n", 1)
        if cue not in a:
            raise PromptFormatError(f"{native.path}: an exemplar's answer lacks the cue {cue!r}: {a[:60]!r}")
        label = _label(a)
        sep = " " if label.endswith(":") else ""
        out.append(f"{q}\n{label}{sep}{a[a.index(cue):]}")
    q, a = blocks[-1].split("\n", 1)
    out.append(f"{q}\n{_label(a)}")
    return replace(native, template="\n\n".join(out),
                   description=f"{native.description} (no chain of thought: direct)")


def context_length(backend, cfg: dict | None = None) -> int | None:
    """The model's context in tokens: a model entry's ``context``, else its config's
    ``max_position_embeddings`` (or ``n_positions``, ``max_sequence_length``); None when unknown."""
    if cfg and cfg.get("context"):
        return int(cfg["context"])
    config = getattr(getattr(backend, "model", None), "config", None)
    for key in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def fit_prompts(items, fmt: PromptFormat, count, max_new_tokens: int, context: int | None, *,
                policy: str = "refuse", where: str = ""):
    """Each item's prompt format and a table of :data:`CONTEXT_COLUMNS`. ``count(fmt, question)``
    gives the tokens the model sees; ``context`` None skips the check (the shots stay). Raises
    :class:`ContextError` with the numbers (the item, its tokens, max_new_tokens, the context) under
    ``refuse``, or where no shot count fits under ``fewer_shots``."""
    if policy not in POLICIES:
        raise ValueError(f"generation.context_policy: {policy!r} is not one of {', '.join(POLICIES)}")
    full = shots_of(fmt)
    formats, rows = {}, []
    for r in items.itertuples():
        use, tokens = fmt, None
        if context is not None:
            k = full
            while True:
                use = fmt if k == full else with_shots(fmt, k)
                tokens = count(use, r.question)
                if tokens + max_new_tokens <= context:
                    break
                if policy == "refuse" or k == 0:
                    what = "" if policy == "refuse" else " even with no exemplar"
                    raise ContextError(
                        f"{where}item {r.item_id}: the prompt has {tokens} tokens{what} ({k} shots) + max_new_tokens "
                        f"{max_new_tokens} = {tokens + max_new_tokens} > the model's context {context}; lower "
                        "generation.max_new_tokens, or set generation.context_policy: fewer_shots")
                k -= 1
        formats[r.item_id] = use
        rows.append(dict(item_id=r.item_id, prompt_tokens=tokens, max_new_tokens=max_new_tokens, context=context,
                         shots=shots_of(use)))
    return formats, rows


def check_context(items, fmt: PromptFormat, backend, cfg: dict | None, max_new_tokens: int, *,
                  policy: str = "refuse", where: str = ""):
    """:func:`fit_prompts` with the backend's own tokenizer (``backend.encode``, what the model sees)
    and context (:func:`context_length`); a backend that cannot count (an API server) or a model of
    unknown context is not checked (the rows say so with an empty context)."""
    from earnest.backends.base import GenerationRequest

    context = context_length(backend, cfg)
    encode = getattr(backend, "encode", None)
    if encode is None:
        context = None

    def count(f: PromptFormat, question: str) -> int:
        return len(encode(GenerationRequest(key="context", prompt=f.render(question), stop=f.stop, fidelity=f.fidelity)))
    return fit_prompts(items, fmt, count, max_new_tokens, context, policy=policy, where=where)
