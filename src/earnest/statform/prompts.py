"""Prompting strategies for statistical problem formulation (paper, Appendix C and section 6.3).

* ``zero_shot``: the Appendix C formulation prompt with the taxonomy's names.
* ``definitions``: the same prompt, the taxonomy written with one-line definitions per category.
* ``few_shot``: the zero-shot prompt followed by k worked examples drawn (seeded, per sample)
  from a pool disjoint from the evaluated samples; each example is a user turn holding its input
  JSON and an assistant turn holding its reference formulation.

The prompt goes in a system turn and the sample's input JSON in the user turn
(``layout="system"``); ``layout="user"`` puts the prompt at the head of the first user turn, for
chat templates without a system role.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Sequence

from earnest.backends.base import GenerationRequest

from .data import Sample, check_disjoint
from .taxonomy import Taxonomy

TAXONOMY_PLACEHOLDER = "{statistical problem taxonomy}"
STRATEGY_KINDS = ("zero_shot", "definitions", "few_shot")
LAYOUTS = ("system", "user")


def default_prompt_path() -> Path:
    """``resources/statform/prompts/formulation_zero_shot.txt`` of this repository."""
    return Path(__file__).resolve().parents[3] / "resources" / "statform" / "prompts" / "formulation_zero_shot.txt"


def load_prompt_template(path: str | Path | None = None) -> str:
    """The formulation prompt text; it must contain the taxonomy placeholder exactly once."""
    path = Path(path) if path is not None else default_prompt_path()
    text = path.read_text(encoding="utf-8").rstrip("\n")
    if text.count(TAXONOMY_PLACEHOLDER) != 1:
        raise ValueError(f"{path}: the prompt must contain {TAXONOMY_PLACEHOLDER!r} exactly once")
    return text


def render_prompt(template: str, taxonomy: Taxonomy, definitions: bool = False) -> str:
    """The prompt with the taxonomy put in place of its placeholder."""
    return template.replace(TAXONOMY_PLACEHOLDER, taxonomy.render(definitions=definitions))


def render_input(sample: Sample) -> str:
    """A sample's input in the prompt's input format (JSON with background, data, question)."""
    return json.dumps(sample.input_dict(), ensure_ascii=False, indent=1)


def render_answer(sample: Sample) -> str:
    """A sample's reference formulation in the prompt's output format (fine category name, as the prompt's example)."""
    return json.dumps(sample.reference_output(), ensure_ascii=False)


def draw_examples(sample_id: str, pool: Sequence[Sample], k: int, seed: int) -> list[Sample]:
    """k examples from ``pool`` for ``sample_id``: the same for the same (seed, sample_id), whatever the run order."""
    if k < 0:
        raise ValueError("few-shot k must be >= 0")
    if k > len(pool):
        raise ValueError(f"few-shot k={k} exceeds the pool's {len(pool)} samples")
    digest = hashlib.sha256(f"{seed}\x00{sample_id}".encode()).digest()
    rng = random.Random(int.from_bytes(digest[:8], "big"))
    return rng.sample(list(pool), k)


def build_messages(sample: Sample, prompt: str, examples: Sequence[Sample] = (),
                   layout: str = "system") -> list[dict]:
    """Chat turns for one sample: prompt, optional examples, then the sample's input."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    turns: list[dict] = []
    for ex in examples:
        turns.append({"role": "user", "content": render_input(ex)})
        turns.append({"role": "assistant", "content": render_answer(ex)})
    turns.append({"role": "user", "content": render_input(sample)})
    if layout == "system":
        return [{"role": "system", "content": prompt}] + turns
    turns[0] = {"role": "user", "content": f"{prompt}\n\n{turns[0]['content']}"}
    return turns


def definitions_text(taxonomy: Taxonomy) -> str:
    """What the definitions strategy adds to the authors' prompt (reference mode; ours, the release has
    no such prompt): the taxonomy with its one-line definitions."""
    if not any(c.definition or any(f.definition for f in c.children) for c in taxonomy.categories):
        raise ValueError(f"the definitions strategy needs a taxonomy with definitions; {taxonomy.origin or 'this one'} "
                         "has none (statform.taxonomy)")
    return "\n\nDefinitions of the categories:\n" + taxonomy.render(definitions=True) + "\n"


def build_requests(samples: Sequence[Sample], taxonomy: Taxonomy, kind: str = "zero_shot", *,
                   k: int = 0, pool: Sequence[Sample] = (), seed: int = 0, layout: str = "system",
                   template: str | None = None, fidelity: str = "earnest") -> list[GenerationRequest]:
    """One :class:`GenerationRequest` (``key`` = sample id) per sample under a prompting strategy.

    ``kind`` is one of ``zero_shot``, ``definitions``, ``few_shot``; ``few_shot`` needs ``k`` >= 1
    and a ``pool`` that shares no sample id or question with ``samples``. ``fidelity`` ``reference``
    sends the authors' prompts (:func:`earnest.statform.reference.reference_messages`; ``layout`` and
    ``template`` are then not used), ``earnest`` this project's template.
    """
    from earnest import fidelity as F

    F.check_mode(fidelity, "fidelity")
    if kind not in STRATEGY_KINDS:
        raise ValueError(f"prompting strategy kind must be one of {STRATEGY_KINDS}, got {kind!r}")
    if fidelity == F.REFERENCE:
        from .reference import reference_messages

        extra = definitions_text(taxonomy) if kind == "definitions" else ""
    else:
        template = template if template is not None else load_prompt_template()
        prompt = render_prompt(template, taxonomy, definitions=(kind == "definitions"))
    if kind == "few_shot":
        if k < 1:
            raise ValueError("few_shot needs k >= 1")
        if k > len(pool):
            raise ValueError(f"few_shot k={k} exceeds the few-shot pool's {len(pool)} samples")
        check_disjoint(samples, pool)
    pools = {None: list(pool)}
    if fidelity == F.REFERENCE and kind == "few_shot":
        # their two prompts ask for two answer layouts: a case question gets case examples, a book one book examples
        from .release import release_source

        pools = {src: [p for p in pool if release_source(p) == src] for src in ("case", "book")}
        for src, members in pools.items():
            if k > len(members) and any(release_source(x) == src for x in samples):
                raise ValueError(f"few_shot k={k} exceeds the few-shot pool's {len(members)} {src} samples "
                                 "(reference prompts take examples of the sample's own source)")
    requests = []
    for s in samples:
        if kind == "few_shot" and fidelity == F.REFERENCE:
            examples = draw_examples(s.sample_id, pools[release_source(s)], k, seed)
        else:
            examples = draw_examples(s.sample_id, pool, k, seed) if kind == "few_shot" else []
        msgs = (reference_messages(s, examples, extra=extra) if fidelity == F.REFERENCE
                else build_messages(s, prompt, examples, layout))
        requests.append(GenerationRequest(key=s.sample_id, messages=msgs))
    return requests


def parse_strategy(name: str, spec: dict | None = None) -> dict:
    """A strategy entry of the config (``{kind, k, seed, layout}``) checked and completed with defaults."""
    spec = dict(spec or {})
    kind = spec.get("kind", name if name in STRATEGY_KINDS else None)
    if kind not in STRATEGY_KINDS:
        raise ValueError(f"statform.strategies.{name}.kind: must be one of {STRATEGY_KINDS}, got {kind!r}")
    out = {"kind": kind, "k": int(spec.get("k", 0)), "seed": int(spec.get("seed", 0)),
           "layout": spec.get("layout", "system")}
    if kind == "few_shot" and out["k"] < 1:
        raise ValueError(f"statform.strategies.{name}.k: few_shot needs k >= 1")
    if out["layout"] not in LAYOUTS:
        raise ValueError(f"statform.strategies.{name}.layout: must be one of {LAYOUTS}")
    return out
