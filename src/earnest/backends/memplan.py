"""The GPU memory plan of a generation job, from the model's config alone (no weights, no torch).

A job decodes its requests through ``B`` slots (``earnest.backends.slots``). What it holds on the
device, and what this module counts, term by term:

- **weights**: the parameter count worked out from the config (embeddings, attention, MLP, norms,
  biases, an untied output layer) × the dtype's bytes;
- **prefix**: the key/value cache of the few-shot prefix every prompt of the job shares (computed
  once, held for the whole job);
- **per slot**: the slot's key/value columns (standard attention: prefix + longest own prompt +
  max_new_tokens; shared_prefix: own prompt + max_new_tokens), and what one decoding step needs per
  row (the logits row and its float32 copy; the attention workspace: eager attention's keys and values
  repeated to every query head and its float32 softmax, or the float32 upcast of the row's columns
  in earnest's shared-prefix attention);
- **prefill**: the largest transient of the job: either computing the prefix (its activations and, for
  eager attention, its P×P scores) or prefilling ``PREFILL_ROWS`` requests' own tokens against the
  prefix read in place (their new keys/values, activations, float32 scores against prefix and own
  tokens, the logits);
- **reserve**: :data:`CARD_RESERVE_BYTES` for the CUDA context and the allocator's slack, counted
  against a card's nominal size only (a running job measures free memory instead).

Peak = weights + prefix + max(prefix computation, B × slot + max(prefill, B × step workspace)).

The same arithmetic decides ``batch_size: auto`` at a job's start (with the tokenizer's exact prompt
lengths and the device's free memory) and ``earnest plan-gpu`` / the workflow's check before any job
(with prompt lengths estimated from their bytes: :func:`estimate_tokens`).

Model configs: a model's own ``config.json`` where one can be read without downloading (a ``path``
model; a hub model in ``fetch.cache_dir`` at its revision); else, for the paper's models,
``resources/models/paper_configs.yaml`` (written from public knowledge of these architectures, not
downloaded; see its header).
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Mapping

PAPER_CONFIGS = Path(__file__).resolve().parents[3] / "resources" / "models" / "paper_configs.yaml"

GIB = 1 << 30
#: a card's nominal memory the plan does not give to the job: CUDA context (~0.5 GiB) and allocator slack
CARD_RESERVE_BYTES = 2 * GIB
#: requests prefilled together when slots are refilled (bounds the prefill's temporary memory)
PREFILL_ROWS = 32
#: the most slots ``batch_size: auto`` gives
AUTO_MAX_BATCH = 512
MIB = 1 << 20
#: cards the planner names when one is too small: (name, total memory in MiB as nvidia-smi reports it)
CARDS = (("16 GB (V100-16GB)", 16384), ("24 GB (A10, L4)", 23028), ("32 GB (V100-32GB)", 32768),
         ("40 GB (A100-40GB)", 40960), ("48 GB (A40, L40S)", 46068), ("80 GB (H100)", 81559),
         ("80 GB (A100-80GB)", 81920), ("94 GB (H100 NVL)", 95830), ("141 GB (H200)", 143771),
         ("192 GB (B200)", 183359))
H100 = ("H100 80GB", 81559 * MIB)
H200 = ("H200 141GB", 143771 * MIB)
#: prompt length estimated from bytes: one token per ``ASCII_BYTES_PER_TOKEN`` ASCII bytes (SmolLM2's
#: tokenizer gives ~3.7 bytes per token on the structured_code prompt; English BPE tokenizers 3.5-4.5,
#: fewer where digits are single tokens: 3 is meant as a margin, not measured on the paper models'
#: tokenizers, which were not at hand) and one token per byte of anything else (a byte-fallback
#: tokenizer never gives more)
ASCII_BYTES_PER_TOKEN = 3.0
#: the longest question a GSM-Symbolic job's prompt carries, in bytes: twice the longest English
#: original of the 100 templates (593 bytes); variants keep a template's words with other numbers
QUESTION_BYTES = 1200

_DTYPE_BYTES = {"float32": 4, "fp32": 4, "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2}
_GATED = {"llama", "mistral", "gemma", "gemma2", "phi3", "qwen2", "qwen3", "mixtral", "smollm3", "olmo", "olmo2",
          "granite", "cohere"}
_EAGER_ONLY = {"gemma2"}            # attention soft-capping: transformers runs these models' attention eagerly


class PlanError(ValueError):
    """A model whose config cannot be planned (a field missing, a layout earnest does not decode)."""


@dataclasses.dataclass(frozen=True)
class ModelShape:
    """What the plan reads from a model's config."""

    model_type: str
    vocab: int
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    tied: bool
    gated_mlp: bool
    biases: bool                    # phi-2: every linear layer, the layer norms and the output layer
    qkv_bias: bool                  # Qwen2, or attention_bias: true (Llama-style configs)
    norms_per_layer: int
    sliding_window: int | None
    longrope_original: int | None  # LongRoPE's original_max_position_embeddings
    softcap: float | None          # attention logit soft-capping (Gemma 2)
    config_dtype: str

    @classmethod
    def from_config(cls, cfg: Mapping, where: str = "config") -> "ModelShape":
        """From a config.json mapping (or ``PretrainedConfig.to_dict()``); PlanError naming a missing field."""
        def need(key):
            if cfg.get(key) is None:
                raise PlanError(f"{where}: no {key} in the model's config")
            return cfg[key]

        mt = str(need("model_type"))
        hidden, heads = int(need("hidden_size")), int(need("num_attention_heads"))
        kv = cfg.get("num_key_value_heads") or heads
        head_dim = cfg.get("head_dim") or hidden // heads
        rope = cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}
        rope_type = rope.get("rope_type") or rope.get("type") if isinstance(rope, Mapping) else None
        longrope = None
        if rope_type in ("longrope", "su"):
            longrope = int(rope.get("original_max_position_embeddings") or need("original_max_position_embeddings"))
        layer_types = cfg.get("layer_types") or []
        window = cfg.get("sliding_window")
        if window and mt in ("qwen2", "qwen3") and not cfg.get("use_sliding_window"):
            window = None
        if layer_types and "sliding_attention" not in layer_types:
            window = None
        return cls(model_type=mt, vocab=int(need("vocab_size")), hidden=hidden, layers=int(need("num_hidden_layers")),
                   heads=heads, kv_heads=int(kv), head_dim=int(head_dim), intermediate=int(need("intermediate_size")),
                   tied=bool(cfg.get("tie_word_embeddings", mt in ("gemma", "gemma2"))),
                   gated_mlp=mt in _GATED, biases=mt == "phi",
                   qkv_bias=mt == "qwen2" or bool(cfg.get("attention_bias")),
                   norms_per_layer={"gemma2": 4, "phi": 1}.get(mt, 2), sliding_window=int(window) if window else None,
                   longrope_original=longrope, softcap=cfg.get("attn_logit_softcapping"),
                   config_dtype=str(cfg.get("torch_dtype") or cfg.get("dtype") or "float32"))

    # -------------------------------------------------------------- arithmetic
    def params(self) -> int:
        """Parameters of the model (what ``sum(p.numel() for p in model.parameters())`` gives)."""
        h, q, kv = self.hidden, self.heads * self.head_dim, self.kv_heads * self.head_dim
        attn = h * q + 2 * h * kv + q * h
        mlp = (3 if self.gated_mlp else 2) * h * self.intermediate
        norms = self.norms_per_layer * h
        if self.qkv_bias and not self.biases:
            attn += q + 2 * kv + (h if self.model_type != "qwen2" else 0)
        if self.biases:              # q, k, v, dense, fc1, fc2 biases; LayerNorm weight and bias
            attn += q + 2 * kv + h
            mlp += self.intermediate + h
            norms *= 2
        final_norm = h * (2 if self.biases else 1)
        head = 0 if self.tied else self.vocab * h + (self.vocab if self.biases else 0)
        return self.vocab * h + self.layers * (attn + mlp + norms) + final_norm + head

    def kv_bytes_per_token(self, itemsize: int) -> int:
        return self.layers * self.kv_heads * 2 * self.head_dim * itemsize

    @property
    def eager(self) -> bool:
        return self.model_type in _EAGER_ONLY or bool(self.softcap)


def dtype_bytes(dtype: str | None, shape: ModelShape | None = None) -> int:
    """Bytes per element of a model entry's dtype (``auto``: the config's own dtype)."""
    name = str(dtype or "float32").removeprefix("torch.")
    if name == "auto":
        name = shape.config_dtype if shape is not None else "float32"
    if name not in _DTYPE_BYTES:
        raise PlanError(f"dtype {dtype!r}: not one the plan knows ({', '.join(_DTYPE_BYTES)})")
    return _DTYPE_BYTES[name]


@dataclasses.dataclass
class Plan:
    """A job's memory, term by term (bytes), and the slots it gets on ``card_bytes``."""

    weights: int
    prefix: int
    prefix_compute: int
    per_slot_kv: int
    per_slot_step: int
    step_fixed: int
    prefill: int
    prefill_rows: int
    reserve: int
    card_bytes: int
    slots: int                     # 0: refused
    slot_columns: int
    prefix_tokens: int
    own_tokens: int
    max_new_tokens: int
    notes: list[str] = dataclasses.field(default_factory=list)

    def peak(self, batch: int | None = None) -> int:
        """Device bytes at the job's peak with ``batch`` slots (default: the planned slots), reserve excluded."""
        b = self.slots if batch is None else batch
        decode = b * self.per_slot_kv + max(self.prefill, b * self.per_slot_step + self.step_fixed)
        return self.weights + self.prefix + max(self.prefix_compute, decode)

    def smallest_card(self, batch: int = 1) -> str | None:
        """The smallest card of :data:`CARDS` on which ``batch`` slots fit."""
        need = self.peak(batch) + self.reserve
        return next((name for name, mib in CARDS if mib * MIB >= need), None)

    def describe(self) -> str:
        g = lambda n: f"{n / GIB:.1f} GiB"     # noqa: E731
        return (f"weights {g(self.weights)}, prefix cache {g(self.prefix)}, per slot {self.per_slot_kv / (1 << 20):.0f} MiB "
                f"of key/value columns ({self.slot_columns}) + {self.per_slot_step / (1 << 20):.0f} MiB of step workspace, "
                f"prefill of {self.prefill_rows} rows {g(self.prefill)}, reserve {g(self.reserve)}")


def plan_job(shape: ModelShape, *, itemsize: int, prefix_tokens: int, own_tokens: int, max_new_tokens: int,
             shared_prefix: bool, card_bytes: int, n_requests: int = 10 ** 9, batch: int | None = None,
             reserve: int = CARD_RESERVE_BYTES, prefill_rows: int = PREFILL_ROWS) -> Plan:
    """The plan of one job: ``own_tokens`` is the longest prompt's tokens after the shared prefix.
    ``batch`` None (``auto``): as many slots as fit ``card_bytes`` (at most :data:`AUTO_MAX_BATCH` and
    one per request); a number: that many (0 slots in the plan if they do not fit)."""
    s, f32 = itemsize, 4
    P, own, new = prefix_tokens, own_tokens, max_new_tokens
    H, kvh, d, h, I, V = shape.heads, shape.kv_heads, shape.head_dim, shape.hidden, shape.intermediate, shape.vocab
    shared = shared_prefix and P > 0
    kv_tok = shape.kv_bytes_per_token(s)
    columns = (0 if shared else P) + own + new
    weights = shape.params() * s
    prefix = kv_tok * P
    # computing the prefix alone: one layer's activations at a time, its scores where attention is eager
    act_tok = (4 * h + 3 * I + (H + 2 * kvh) * d) * s
    prefix_compute = P * act_tok + (H * P * P * (s + f32) if shape.eager else 0) + V * (s + f32)
    # one decoding step, per row: the logits (and a float32 copy), the MLP's activations, the attention workspace
    step = V * (2 * s + f32) + act_tok
    step_fixed = 0
    if shared:          # float32 upcast of the row's own columns, scores against prefix and own columns
        step += (2 * kvh * (own + new) * d + 2 * H * (P + own + new)) * f32
        step_fixed = 2 * kvh * P * d * f32                       # the prefix's keys and values in float32
    elif shape.eager:   # repeat_kv's copies of keys and values for every head, scores and their float32 softmax
        step += (2 * H * columns * d if kvh < H else 0) * s + H * columns * (s + f32)
    else:
        step += H * columns * (s + f32)
    # a prefill of k rows against the prefix read in place: their keys/values (held until written into
    # the slots), one layer's activations, float32 queries, scores against prefix and own tokens, output.
    # k: PREFILL_ROWS, fewer where their workspace would take more than an eighth of the room for slots
    room = card_bytes - reserve - weights - prefix
    per_row = (own * kv_tok + own * act_tok + own * (2 * H * d + 2 * kvh * d) * f32
               + 2 * H * own * (P + own) * f32 + V * (s + f32))
    fixed = 2 * kvh * P * d * f32
    k = max(1, min(prefill_rows, n_requests, batch or prefill_rows))
    if k > 1 and k * per_row > room // 8:
        k = max(1, int((room // 8) // per_row))
    prefill = k * per_row + fixed
    plan = Plan(weights=weights, prefix=prefix, prefix_compute=prefix_compute, per_slot_kv=kv_tok * columns,
                per_slot_step=step, step_fixed=step_fixed, prefill=prefill, prefill_rows=k, reserve=reserve,
                card_bytes=card_bytes, slots=0, slot_columns=columns, prefix_tokens=P, own_tokens=own,
                max_new_tokens=new)
    if batch is not None:
        b = max(1, min(int(batch), n_requests))
        plan.slots = b if plan.peak(b) + reserve <= card_bytes else 0
        return plan
    if room <= 0 or plan.peak(1) + reserve > card_bytes:
        return plan
    # the largest b with b*kv + max(prefill, b*step + fixed) <= room (and the prefix computation fits)
    by_prefill = (room - prefill) // plan.per_slot_kv
    by_step = (room - step_fixed) // (plan.per_slot_kv + step)
    plan.slots = int(max(0, min(by_prefill, by_step, AUTO_MAX_BATCH, n_requests)))
    return plan


# ------------------------------------------------------------------ prompts and configs
def estimate_tokens(text: str) -> int:
    """At most how many tokens ``text`` is for any of the paper models' tokenizers (see
    :data:`ASCII_BYTES_PER_TOKEN`): an over-estimate for English, exact-or-over for other scripts."""
    raw = text.encode("utf-8")
    ascii_bytes = sum(1 for b in raw if b < 128)
    return math.ceil(ascii_bytes / ASCII_BYTES_PER_TOKEN) + (len(raw) - ascii_bytes) + 2   # + BOS and a margin


def paper_configs(path: Path = PAPER_CONFIGS) -> dict:
    import yaml

    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)["models"]


def _cached_hub_config(hub: str, revision: str | None, cache_dir: str | None) -> dict | None:
    """config.json of ``hub`` at ``revision`` from a Hugging Face cache folder, if it is there (never downloads)."""
    if not cache_dir:
        return None
    root = Path(cache_dir).expanduser() / ("models--" + hub.replace("/", "--")) / "snapshots"
    if not root.is_dir():
        return None
    snaps = [root / revision] if revision else sorted(root.iterdir())
    for snap in snaps:
        f = snap / "config.json"
        if f.is_file():
            return json.loads(f.read_text(encoding="utf-8"))
    return None


def model_config(name: str, entry: Mapping, cache_dir: str | None = None) -> tuple[dict | None, str]:
    """(the config.json mapping of a model entry, where it came from), or (None, why none) where no
    config can be read without loading weights or downloading."""
    if entry.get("path"):
        f = Path(entry["path"]).expanduser() / "config.json"
        if f.is_file():
            return json.loads(f.read_text(encoding="utf-8")), str(f)
        return None, f"models.{name}.path: no config.json at {f}"
    if entry.get("hub"):
        found = _cached_hub_config(entry["hub"], entry.get("revision"), entry.get("cache_dir") or cache_dir)
        if found is not None:
            return found, f"the hub cache ({entry['hub']})"
        known = paper_configs()
        if entry["hub"] in known:
            return dict(known[entry["hub"]]), f"{PAPER_CONFIGS.name} ({entry['hub']}, written from public knowledge)"
        return None, f"models.{name}.hub: {entry['hub']} is neither in the hub cache nor in {PAPER_CONFIGS.name}"
    return None, f"models.{name}: a GGUF model's config is read when its job converts it"


def card_bytes(entry: Mapping) -> int | None:
    """The card a model entry declares (``resources.gpu_mem_mb``, read as MiB, the unit nvidia-smi reports a
    card's memory in and Slurm's M means), in bytes; None where it declares none."""
    mb = (entry.get("resources") or {}).get("gpu_mem_mb")
    return int(mb) * (1 << 20) if mb else None


@dataclasses.dataclass
class JobPlan:
    model: str
    prompt: str
    language: str
    card: str
    plan: Plan | None
    problem: str | None             # a refusal, in words naming the numbers and the smallest card that fits

    @property
    def refused(self) -> bool:
        return self.problem is not None


def plan_model_prompt(name: str, entry: Mapping, shape: ModelShape, prompt_name: str, head: str, tail: str,
                      max_new_tokens: int, card: int, card_name: str, language: str = "eng",
                      question_bytes: int = QUESTION_BYTES) -> JobPlan:
    """The plan of a model × prompt format on one card, with the prompt's length estimated from its bytes:
    ``head`` and ``tail`` are the format's text before and after the question."""
    prefix = estimate_tokens(head) - 2
    own = estimate_tokens(tail) + math.ceil(question_bytes / ASCII_BYTES_PER_TOKEN) + (
        question_bytes if language != "eng" else 0)
    itemsize = dtype_bytes(entry.get("dtype"), shape)
    shared = entry.get("attention", "standard") == "shared_prefix"
    wanted = entry.get("batch_size", "auto")
    batch = None if wanted in (None, "auto") else int(wanted)
    plan = plan_job(shape, itemsize=itemsize, prefix_tokens=prefix, own_tokens=own, max_new_tokens=max_new_tokens,
                    shared_prefix=shared, card_bytes=card, batch=batch)
    where = f"models.{name}"
    problem = None
    total = prefix + own + max_new_tokens
    if shape.sliding_window and total > shape.sliding_window:
        problem = (f"{where}: prompt format {prompt_name} ({language}) is up to ~{prefix + own} tokens; with "
                   f"max_new_tokens {max_new_tokens} a sequence reaches {total} tokens, past the model's sliding "
                   f"window of {shape.sliding_window}: earnest's decoder attends over whole sequences only "
                   "(use a model without a sliding window, or fewer new tokens)")
    elif plan.slots < 1:
        small = plan.smallest_card(batch or 1)
        asked = f"batch_size {batch}" if batch else "one slot"
        problem = (f"{where}: {asked} with prompt format {prompt_name} ({language}) needs "
                   f"{(plan.peak(batch or 1) + plan.reserve) / GIB:.1f} GiB ({plan.describe()}); the declared "
                   f"card ({card_name}) has {card / GIB:.1f} GiB; smallest card that fits: {small or 'none listed'}"
                   " (resources.gpu_mem_mb)")
    return JobPlan(name, prompt_name, language, card_name, plan, problem)


# ------------------------------------------------------------------ a whole config
def _on_gpu(entry: Mapping) -> bool:
    device = str(entry.get("device") or "cpu")
    return entry.get("backend", "transformers") == "transformers" and (
        device.startswith("cuda") or (device == "auto" and (entry.get("resources") or {}).get("gpu")))


def config_jobs(config: Mapping) -> list[tuple[str, str, str]]:
    """(model, prompt format, language) of every generation job a config plans for a GPU model (every
    dataset of a model × prompt × language shares one plan: their prompts differ only in the question,
    which the plan counts at :data:`QUESTION_BYTES`)."""
    exp = config["experiments"]
    ex2 = exp.get("ex2_models")
    langs = list((config.get("gsm_symbolic") or {}).get("languages") or ["eng"])
    jobs = []
    for name, entry in config["models"].items():
        if not _on_gpu(entry) or not entry.get("gsm_symbolic", True):
            continue
        for lang in langs:
            jobs.append((name, exp["ex1_prompt"], lang))
        if ex2 is None or name in ex2:
            jobs += [(name, p, "eng") for p in exp["ex2_prompts"] if p != exp["ex1_prompt"]]
    return jobs


def plan_config(config: Mapping, prompt_text, cards: list[tuple[str, int]] | None = None,
                cache_dir: str | None = None) -> tuple[list[JobPlan], list[str]]:
    """Plans of every GPU job of a (schema-validated) config on the card each model declares
    (``resources.gpu_mem_mb``), or on each of ``cards`` ((name, bytes)); and notes on the models that
    could not be planned (no config at hand, no card declared). ``prompt_text(format, language)``: the
    format's text before and after the question (``earnest.config.prompt_texts``)."""
    out, notes = [], []
    shapes: dict[str, ModelShape | None] = {}
    new = int(config["generation"]["max_new_tokens"])
    cache_dir = cache_dir or (config.get("fetch") or {}).get("cache_dir")
    for name, prompt, lang in config_jobs(config):
        entry = config["models"][name]
        if name not in shapes:
            cfg, source = model_config(name, entry, cache_dir)
            try:
                shapes[name] = ModelShape.from_config(cfg, source) if cfg is not None else None
            except PlanError as exc:
                shapes[name], source = None, str(exc)
            if shapes[name] is None:
                notes.append(f"models.{name}: not planned ({source}); its job checks the card when it starts")
        shape = shapes[name]
        if shape is None:
            continue
        targets = cards
        if targets is None:
            declared = card_bytes(entry)
            if declared is None:
                if not any(n.startswith(f"models.{name}: no card") for n in notes):
                    notes.append(f"models.{name}: no card declared (resources.gpu_mem_mb); its job plans on the "
                                 "card it gets when it starts")
                continue
            targets = [(f"{declared // MIB} MiB (resources.gpu_mem_mb)", declared)]
        head, tail = prompt_text(prompt, lang)
        for card_name, card in targets:
            jp = plan_model_prompt(name, entry, shape, prompt, head, tail, new, card, card_name, language=lang)
            if jp.problem is None and shape.longrope_original and entry.get("attention") == "shared_prefix":
                total = jp.plan.prefix_tokens + jp.plan.own_tokens + new
                if total > shape.longrope_original:
                    jp.problem = (f"models.{name}.attention: shared_prefix with LongRoPE: prompt format {prompt} "
                                  f"({lang}) reaches ~{total} tokens, past original_max_position_embeddings "
                                  f"{shape.longrope_original}, where a row's keys are recomputed with the long "
                                  "factors and cannot share the prefix; use attention: standard")
            out.append(jp)
    return out, notes


def plan_problems(config: Mapping, prompt_text) -> list[str]:
    """The refusals of :func:`plan_config` on the declared cards (what the workflow checks before any job)."""
    plans, _ = plan_config(config, prompt_text)
    seen, problems = set(), []
    for jp in plans:
        if jp.problem and jp.problem not in seen:
            seen.add(jp.problem)
            problems.append(jp.problem)
    return problems
