"""Hugging Face transformers backend: greedy decoding over fixed slots that share a prefix cache.

Every few-shot prompt repeats the same ~800-token prefix. We run the model over the longest token
prefix shared by all prompts of a job once and feed only each question's own tokens behind it. The
job's requests go through ``batch_size`` slots of a decoding cache whose size is fixed by the batch
and the longest request (``earnest.backends.slots``): an answer that ends (EOS, one of the
request's stop strings, the token cap) frees its slot for the next request at once (on a GPU once
an eighth of the slots are free, so that prefills come in groups), so a runaway answer costs only
itself and the cache never grows with the job. On CUDA each decoding step is a replayed CUDA graph.
Stop strings are looked for once per step for all rows with one batched decode of each row's last
tokens, never by decoding whole answers.

Requests with ``fidelity="reference"`` are decoded as the authors' ``HFModelWrapper.ask`` decodes
(the-mysh/gsm-symbolic-benchmarking @ d063998; resources/FIDELITY.md, point 2): the prompt is
tokenized with truncation to ``REFERENCE_MAX_LENGTH`` tokens; only the tokenizer's EOS token ends
the answer; after every token the last ``REFERENCE_STOP_WINDOW`` tokens of prompt + answer are
decoded and the answer ends when a stop string occurs in that text; the answer is decoded with
``skip_special_tokens`` and ``clean_up_tokenization_spaces`` and keeps the stop string (the
reference's extractor cuts it). The speed paths (shared-prefix cache, batching) are the same.
"""

from __future__ import annotations

import copy
import importlib.util
import logging
import os
import re
import time
from pathlib import Path
from typing import Sequence

from earnest.fidelity import REFERENCE
from earnest.schema import schema_default

from . import attention, memplan, slots
from .rope import LongRopePerRow
from .schedule import SlotScheduler
from .base import EOS, MAX_NEW_TOKENS, STOP_STRING, Backend, GenerationRequest, GenerationResult, cut_at_stop

log = logging.getLogger(__name__)

# The reference's HF wrapper: BenchmarkConfig.max_length (prompt truncation) and the number of
# trailing tokens its stopping criterion decodes.
REFERENCE_MAX_LENGTH = 2048
REFERENCE_STOP_WINDOW = 10

# How the decoding batch attends to the few-shot prefix every prompt of a job shares (a model
# entry's ``attention``). standard: each row keeps its own copy of the prefix's keys and values
# and transformers' SDPA attends over all of them. shared_prefix: the prefix's keys and values are
# kept once and, at every decoding step, attended once for the whole batch (one matrix product per
# key/value head), the rows' own columns separately, and the two softmax parts merged exactly
# (log-sum-exp). The same attention in exact arithmetic; the float rounding differs (~1e-7 in
# float32), so a near-tie between two tokens can rarely go the other way. It reads B times less
# memory per step: benchmarks/generation.py measures the speed and the answers' agreement.
STANDARD_ATTENTION = "standard"
SHARED_PREFIX_ATTENTION = "shared_prefix"
ATTENTION_MODES = (STANDARD_ATTENTION, SHARED_PREFIX_ATTENTION)

# transformers 4.x (the reference used 4.57.1) applied this clean-up to every decode of a
# tokenizer loaded with clean_up_tokenization_spaces=True, as the reference's was; transformers 5
# skips it for BPE tokenizers, so reference decoding applies it itself.
_CLEAN_UP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
             (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))


def reference_clean_up(text: str) -> str:
    """transformers 4.x ``clean_up_tokenization``: drop the space before punctuation and contractions."""
    for old, new in _CLEAN_UP:
        text = text.replace(old, new)
    return text

#: a transformers model's dtype, device and batch size where its config entry names none (the batch
#: size config/schema.yaml's models.*.batch_size)
DEFAULT_BATCH_SIZE = schema_default("models.*.batch_size")
AUTO_BATCH = "auto"
DEFAULT_DTYPE = "float32"
DEFAULT_DEVICE = "cpu"

_DTYPES = {"float32": "float32", "fp32": "float32", "bfloat16": "bfloat16", "bf16": "bfloat16",
           "float16": "float16", "fp16": "float16", "auto": "auto"}


def model_dtype(cfg: dict) -> str:
    """The dtype a model entry asks for (config ``models.<name>.dtype``), :data:`DEFAULT_DTYPE` if none."""
    return cfg.get("dtype") or DEFAULT_DTYPE


#: the devices a transformers model runs on (``models.<name>.device``): torch's names of a CPU, a CUDA
#: GPU (cuda = the first visible one, cuda:N the N-th) and Apple's GPU, and auto (cuda when a GPU is
#: visible, else cpu)
DEVICES = ("cpu", "cuda", "cuda:N", "mps", "auto")
_DEVICE_RE = re.compile(r"(cpu|cuda|cuda:\d+|mps|auto)")


def model_device(cfg: dict, model_name: str | None = None) -> str:
    """The device a model entry asks for (``models.<name>.device``: one of :data:`DEVICES`),
    :data:`DEFAULT_DEVICE` if none. ValueError naming the field for any other value (a typo such
    as ``gpu`` would otherwise pass until torch refuses it inside the generation job)."""
    value = cfg.get("device") or DEFAULT_DEVICE
    if isinstance(value, str) and _DEVICE_RE.fullmatch(value):
        return value
    hint = ""
    if isinstance(value, str):
        low = value.strip().lower()
        guess = re.sub(r"^(gpu|cuda)\s*:?\s*(\d+)$", r"cuda:\2", low)
        guess = {"gpu": "cuda", "nvidia": "cuda", "cuda0": "cuda:0", "metal": "mps", "cpu0": "cpu"}.get(guess, guess)
        if _DEVICE_RE.fullmatch(guess):
            hint = f" (did you mean {guess}?)"
    raise ValueError(f"models.{model_name or '<model>'}.device: {value!r} is not a device the transformers backend "
                     f"runs on: {', '.join(DEVICES)} (N = the GPU's index){hint}")


def torch_dtype(value, where: str):
    """The ``dtype`` argument of ``from_pretrained`` for a config value: a torch dtype, or "auto"."""
    import torch

    name = _DTYPES.get(str(value))
    if name is None:
        raise ValueError(f"{where}: unknown dtype {value!r}")
    return name if name == "auto" else getattr(torch, name)


def resolve_gguf(spec: str) -> Path:
    """A GGUF file path; ``pkg:<python package>/<file>`` points inside an installed package."""
    if spec.startswith("pkg:"):
        package, _, fname = spec[4:].partition("/")
        found = importlib.util.find_spec(package)  # does not import the package
        if found is None or not found.submodule_search_locations:
            raise FileNotFoundError(f"gguf: Python package {package!r} is not installed (spec {spec!r})")
        path = Path(list(found.submodule_search_locations)[0]) / fname
    else:
        path = Path(spec).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"gguf: file not found: {path}")
    return path


# what from_pretrained reads from a checkpoint directory: its config, its weights (one file, or
# shards with their index) and its tokenizer (the first of these it finds)
_WEIGHTS = ("*.safetensors", "pytorch_model*.bin", "*.safetensors.index.json", "pytorch_model*.bin.index.json")
_TOKENIZER = ("tokenizer.json", "tokenizer.model", "vocab.json", "vocab.txt", "spiece.model", "sentencepiece*.model",
              "*.tiktoken", "tokenizer.tiktoken")


def model_dir_problem(path: Path) -> str | None:
    """Why ``path`` is not a directory ``from_pretrained`` loads a model and its tokenizer from (as
    the backend loads a ``path`` entry: AutoTokenizer and AutoModelForCausalLM on the directory), as
    the end of a sentence that starts with the path; None when it has a config.json, weights and
    tokenizer files."""
    def has(patterns):
        return any(next(path.glob(p), None) is not None for p in patterns)

    if not (path / "config.json").is_file():
        gguf = sorted(path.glob("*.gguf"))
        if gguf:
            return (f"holds a GGUF file ({gguf[0].name}) but no config.json: a GGUF model is given with "
                    f"gguf: {gguf[0]} (converted once into a checkpoint by the workflow), not path")
        return ("is not a model checkpoint directory: it has no config.json (give the folder that "
                "save_pretrained or a hub download wrote, or hub: <id>)")
    if not has(_WEIGHTS):
        return "has a config.json but no weights (model.safetensors, model-*-of-*.safetensors or pytorch_model*.bin)"
    if not has(_TOKENIZER):
        return ("has a model but no tokenizer files (tokenizer.json, tokenizer.model, vocab.json, ...; "
                "save the tokenizer into the folder with tokenizer.save_pretrained)")
    return None


def model_source(model_name: str, cfg: dict) -> tuple[str, dict]:
    """What ``from_pretrained`` gets for a model config entry: (name_or_path, keyword arguments).

    Exactly one of ``gguf``, ``path`` or ``hub`` names the weights. Hub models load from
    ``cache_dir`` when set (fetched there beforehand by the workflow's fetch rule) and never touch
    the network when ``offline`` is true or HF_HUB_OFFLINE is set.
    """
    given = [k for k in ("gguf", "path", "hub") if cfg.get(k)]
    if len(given) != 1:
        raise ValueError(f"models.{model_name}: give exactly one of gguf, path or hub (got {given or 'none'})")
    if cfg.get("gguf"):
        path = resolve_gguf(cfg["gguf"])
        return str(path.parent), {"gguf_file": path.name}
    if cfg.get("path"):
        path = Path(cfg["path"]).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(f"models.{model_name}.path: directory not found: {path}")
        problem = model_dir_problem(path)
        if problem:
            raise FileNotFoundError(f"models.{model_name}.path: {path} {problem}")
        return str(path), {}
    kwargs: dict = {"revision": cfg.get("revision")}
    if cfg.get("cache_dir"):
        kwargs["cache_dir"] = cfg["cache_dir"]
    if cfg.get("offline") or os.environ.get("HF_HUB_OFFLINE") == "1":
        kwargs["local_files_only"] = True
    return cfg["hub"], kwargs


def load_tokenizer(model_name: str, cfg: dict):
    """The model's tokenizer alone (what ``earnest.gsm.covariates.number_tokens`` counts with): a
    function from text to token ids, without special tokens."""
    from transformers import AutoTokenizer

    if cfg.get("backend", "transformers") != "transformers":
        raise ValueError(f"models.{model_name}: backend {cfg.get('backend')!r} has no local tokenizer to count "
                         "number tokens with (stats.covariate: number_tokens needs a transformers model)")
    source, kwargs = model_source(model_name, cfg)
    tok = AutoTokenizer.from_pretrained(source, **kwargs)
    return lambda text: tok(text, add_special_tokens=False)["input_ids"]


# Strings the conversion check tokenizes with both tokenizers: digits, units, code, chat markers.
_TOKENIZER_PROBES = (
    "Q: Tom has 1,250 apples and gives away 3/4 of them. How many are left?\nA: The final answer is 312.5.",
    "def solution():\n    total = 12 * 7  # $84\n    return total\n",
    "<|im_start|>user\nHello, 2+2=?<|im_end|>\n",
)


def convert_gguf(spec: str, out_dir: str | Path, dtype: str = DEFAULT_DTYPE) -> dict:
    """Dequantize a GGUF model once into a plain transformers checkpoint directory.

    transformers reads a GGUF file by dequantizing every tensor and rebuilding the tokenizer from
    the file's vocabulary, which takes longer than generating a few dozen answers with a small
    model. The workflow converts each GGUF model once; generation jobs then load ``out_dir`` as a
    ``path`` model. The saved weights, config, generation config and tokenizer are checked against
    the GGUF load (identical tensors, identical token ids, same chat template) before returning;
    a mismatch raises instead of leaving a checkpoint that would generate differently. ``dtype``
    is the model's configured dtype: the weights are dequantized to it and saved in it (a 7B model
    in float32 would take 28 GB). Returns what was checked (tensors, probes, seconds).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = resolve_gguf(spec)
    out = Path(out_dir)
    load_dtype = torch_dtype(dtype, "convert_gguf")
    t0 = time.time()
    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    quantized = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=load_dtype)
    config = copy.deepcopy(quantized.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=quantized.dtype)
    state = quantized.state_dict()
    model.load_state_dict(state)
    model.generation_config = copy.deepcopy(quantized.generation_config)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    seconds = time.time() - t0

    saved_tok = AutoTokenizer.from_pretrained(str(out))
    saved = AutoModelForCausalLM.from_pretrained(str(out), dtype=quantized.dtype)
    saved_state = saved.state_dict()
    if saved_state.keys() != state.keys():
        raise RuntimeError(f"convert_gguf: {out} has tensors {sorted(set(saved_state) ^ set(state))} "
                           f"that differ from {path}")
    for name, tensor in state.items():
        if not torch.equal(saved_state[name], tensor):
            raise RuntimeError(f"convert_gguf: tensor {name} in {out} differs from {path}")
    for probe in _TOKENIZER_PROBES:
        if saved_tok(probe)["input_ids"] != tokenizer(probe)["input_ids"]:
            raise RuntimeError(f"convert_gguf: the saved tokenizer in {out} tokenizes {probe[:40]!r} differently")
    if saved_tok.chat_template != tokenizer.chat_template or saved_tok.eos_token_id != tokenizer.eos_token_id:
        raise RuntimeError(f"convert_gguf: the saved tokenizer in {out} lost the chat template or EOS token")
    if saved.generation_config.eos_token_id != quantized.generation_config.eos_token_id:
        raise RuntimeError(f"convert_gguf: the generation config in {out} has another EOS token")
    return {"gguf": str(path), "tensors": len(state), "probes": len(_TOKENIZER_PROBES), "seconds": round(seconds, 1)}


#: ``batch_size: auto`` on a CPU (no card to size it by)
AUTO_CPU_BATCH = 8
#: device memory a running job leaves free besides its plan (the allocator's slack; the CUDA context is
#: not in the free memory it measures)
RUNTIME_RESERVE_BYTES = 1 << 30


class DecodeMemoryError(MemoryError):
    """A job's decoding slots do not fit the device (the message names model, memory asked and free)."""


class TransformersBackend(Backend):
    """A causal LM from transformers, decoded greedily.

    Config keys (a model entry): gguf | path | hub (+ revision, cache_dir, offline), dtype,
    device, chat_template (wrap raw prompts in the model's chat template; default false),
    batch_size (slots decoded together, or ``auto``: as many as the GPU's free memory holds),
    threads, attention (``ATTENTION_MODES``; default standard), cuda_graphs (default true: on a
    CUDA device each decoding step is replayed as a CUDA graph; ignored on a CPU).
    """

    def __init__(self, model_name: str, cfg: dict):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.name = model_name
        self.cfg = cfg
        self.torch = torch
        if cfg.get("threads"):
            torch.set_num_threads(int(cfg["threads"]))
        source, kwargs = model_source(model_name, cfg)
        dtype = torch_dtype(model_dtype(cfg), f"models.{model_name}.dtype")
        device = model_device(cfg, model_name)
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        self.batch_size = cfg.get("batch_size", DEFAULT_BATCH_SIZE)
        if self.batch_size != AUTO_BATCH and (isinstance(self.batch_size, bool) or
                                              not (isinstance(self.batch_size, int) and self.batch_size >= 1)):
            raise ValueError(f"models.{model_name}.batch_size: {self.batch_size!r} is neither a positive integer "
                             f"nor {AUTO_BATCH!r}")
        self.cuda_graphs = bool(cfg.get("cuda_graphs", True))
        t0 = time.time()
        self.tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
        self.model = AutoModelForCausalLM.from_pretrained(
            source, dtype=dtype, **kwargs
        ).to(self.device)
        self.model.eval()
        # transformers 5.x renamed past_key_values to cache; older releases (e.g. on a cluster) know only the old name
        import inspect

        params = inspect.signature(self.model.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"
        # only the last position's logits are used: without this a ~1,500-token few-shot prefix
        # also computes 1,500 rows of the output layer (~90 GFLOP for a 49k vocabulary)
        self._keep_kw = {"logits_to_keep": 1} if "logits_to_keep" in params else {}
        log.info("loaded %s from %s in %.1f s", model_name, source, time.time() - t0)
        self.chat_template = bool(cfg.get("chat_template", False))
        self.attention = cfg.get("attention", STANDARD_ATTENTION)
        if self.attention not in ATTENTION_MODES:
            raise ValueError(f"models.{model_name}.attention: {self.attention!r} is not one of {', '.join(ATTENTION_MODES)}")
        # earnest's attention reads the shared prefix in place (prefills; shared_prefix decoding steps) and
        # hands every other call to the model's own implementation (sdpa; eager for Gemma 2's soft-capping)
        own = attention.use_earnest_attention(self.model)
        # sdpa and earnest's attention take a boolean mask; eager adds a float one
        self._additive_mask = own not in ("sdpa", "flash_attention_2", "flash_attention_3")
        if self.attention == SHARED_PREFIX_ATTENTION:
            self._additive_mask = False
        self.eos_ids = self._eos_ids()
        # the reference passes eos_token_id=tokenizer.eos_token_id to generate(), which replaces
        # the generation config's EOS list (e.g. Llama-3-Instruct's <|eot_id|>)
        tok_eos = self.tokenizer.eos_token_id
        self.reference_eos_ids = [tok_eos] if tok_eos is not None else self.eos_ids
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.eos_ids[0]
        self._prefix: dict = {}      # (prefix ids, long factors) -> every layer's (keys, values) of the prefix
        # Phi-3's LongRoPE: factors chosen per row (earnest.backends.rope)
        self._rope = LongRopePerRow.attach(self.model)
        self._layout = None          # (layers, (kv heads, key dim, value dim), sliding window or None)
        #: what the last ``generate`` call decoded with: batch, columns per slot, cache bytes, graphs
        self.last_decode: dict = {}
        # refills in groups and the tail on halving row counts: the CUDA-graph policy (None: with graphs);
        # tests set it on a CPU to check that the policy changes no answer
        self._grouped: bool | None = None
        # the next step launched before the current one's tokens are checked (None: with graphs)
        self._pipelined: bool | None = None

    # ------------------------------------------------------------------ helpers

    def _eos_ids(self) -> list[int]:
        ids = set()
        for src in (self.model.generation_config.eos_token_id, self.tokenizer.eos_token_id):
            if src is None:
                continue
            ids.update(src if isinstance(src, (list, tuple)) else [src])
        if not ids:
            raise ValueError(f"models.{self.name}: the tokenizer defines no EOS token")
        return sorted(ids)

    def describe(self) -> dict:
        """How this backend decodes (recorded with every answer in the generations table)."""
        import transformers

        torch = self.torch

        return {"backend": "transformers", "decoding": "greedy", "dtype": str(self.model.dtype).removeprefix("torch."),
                "device": self.device.type, "attention": self.attention, "chat_template": self.chat_template,
                "batch_size": self.batch_size, "batch": self.last_decode.get("batch"),
                "cuda_graphs": self.cuda_graphs and self.device.type == "cuda",
                "transformers": transformers.__version__, "torch": torch.__version__}

    def encode(self, request: GenerationRequest) -> list[int]:
        """Token ids the model sees for one request (raw prompt, or chat-wrapped).

        A raw prompt of a ``reference`` request is truncated to ``REFERENCE_MAX_LENGTH`` tokens
        (on the tokenizer's truncation side) as the reference's ``tokeniser(..., truncation=True,
        max_length=2048)`` does; a warning says so when it happens.
        """
        if request.messages is not None or self.chat_template:
            messages = request.messages or [{"role": "user", "content": request.prompt}]
            text = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            return self.tokenizer(text, add_special_tokens=False)["input_ids"]
        ids = self.tokenizer(request.prompt, add_special_tokens=True)["input_ids"]
        if request.fidelity == REFERENCE and len(ids) > REFERENCE_MAX_LENGTH:
            log.warning("request %s: the prompt has %d tokens; truncated to %d as the reference does",
                        request.key, len(ids), REFERENCE_MAX_LENGTH)
            ids = self.tokenizer(request.prompt, add_special_tokens=True, truncation=True,
                                 max_length=REFERENCE_MAX_LENGTH)["input_ids"]
        return ids

    def _forward(self, cache, **kwargs):
        """One model call with ``cache``; returns (logits of the last position, the updated cache)."""
        out = self.model(**{self._cache_kw: cache}, use_cache=True, **self._keep_kw, **kwargs)
        new_cache = getattr(out, "cache", None)
        return out.logits[:, -1, :], new_cache if new_cache is not None else out.past_key_values

    def _prefix_layers(self, prefix: tuple[int, ...], long: bool = False) -> list:
        """(keys, values) of every layer of the shared prefix, each ``(1, heads, P, dim)``, computed once per
        prefix (and per LongRoPE factor set: ``long`` computes it alone with the long factors)."""
        key = (prefix, long)
        if key not in self._prefix:
            torch = self.torch
            ids = torch.tensor([prefix], device=self.device)
            if any(k[0] != prefix for k in self._prefix):      # another job's prefix: freed
                self._prefix.clear()
            if self._rope is not None:
                self._rope.force_long = long
            try:
                with torch.inference_mode():
                    _, cache = self._forward(None, input_ids=ids)
            finally:
                if self._rope is not None:
                    self._rope.force_long = False
            self._prefix[key] = [(layer.keys, layer.values) for layer in cache.layers]
        return self._prefix[key]

    def _kv_layout(self):
        """(layers, (kv heads, key dim, value dim), sliding window or None), read off a one-token forward."""
        if self._layout is None:
            torch = self.torch
            with torch.inference_mode():
                _, cache = self._forward(None, input_ids=torch.tensor([[self.pad_id]], device=self.device))
            layers = getattr(cache, "layers", None)
            if not layers or any(getattr(layer, "keys", None) is None for layer in layers):
                raise ValueError(f"models.{self.name}: {type(self.model).__name__} keeps no per-layer keys and values "
                                 "earnest's decoder can hold (e.g. linear-attention layers)")
            k, v = layers[0].keys, layers[0].values
            shapes = {(layer.keys.shape[1], layer.keys.shape[-1], layer.values.shape[-1]) for layer in layers}
            if len(shapes) != 1:
                raise ValueError(f"models.{self.name}: layers with different key/value shapes {sorted(shapes)}")
            windows = [w for w in (getattr(layer, "sliding_window", None) for layer in layers) if w]
            self._layout = (len(layers), (k.shape[1], k.shape[-1], v.shape[-1]), min(windows) if windows else None)
        return self._layout

    # ------------------------------------------------------------------ generation

    def generate(self, requests: Sequence[GenerationRequest], max_new_tokens: int,
                 on_result=None) -> list[GenerationResult]:
        """Greedy answers for ``requests`` in order; ``on_result(result)`` is called as each finishes."""
        if not requests:
            return []
        self._requests = requests   # each row's stop strings and fidelity (see _new_state)
        encoded = [self.encode(r) for r in requests]
        self._requests_rows = encoded
        prefix = shared_token_prefix(encoded)
        # keep at least one own token per row so every row has logits of its own to start from
        prefix = tuple(prefix[: max(0, min(len(e) for e in encoded) - 1)])
        results: dict[int, GenerationResult] = {}

        def done(i: int, res: GenerationResult) -> None:
            res.key = requests[i].key
            results[i] = res
            if on_result is not None:
                on_result(res)

        # longest prompts first: a refill prefills requests of similar length together (little padding);
        # every answer is computed as it would be alone, so the order changes no answer
        order = sorted(range(len(encoded)), key=lambda i: (-len(encoded[i]), i))
        self._decode(encoded, order, prefix, int(max_new_tokens), done)
        return [results[i] for i in range(len(requests))]

    def plan_batch(self, n_requests: int, prefix_tokens: int, own_tokens: int, max_new_tokens: int,
                   shared: bool) -> memplan.Plan:
        """The memory plan of a job (``earnest.backends.memplan``, the arithmetic ``earnest plan-gpu`` uses,
        here with the exact prompt lengths): its ``slots`` are ``batch_size`` (at most one per request), or
        for ``auto`` as many as the GPU's free memory holds; ``prefill_rows`` the requests prefilled
        together. On a GPU a job whose slots cannot fit raises :class:`DecodeMemoryError` before anything
        is decoded, naming the numbers."""
        shape = memplan.ModelShape.from_config(self.model.config.to_dict(), f"models.{self.name}")
        itemsize = self.model.dtype.itemsize
        wanted = None if self.batch_size == AUTO_BATCH else int(self.batch_size)
        kw = dict(itemsize=itemsize, prefix_tokens=prefix_tokens, own_tokens=own_tokens,
                  max_new_tokens=max_new_tokens, shared_prefix=shared, n_requests=n_requests)
        if self.device.type != "cuda":
            batch = max(1, min(wanted or AUTO_CPU_BATCH, n_requests))
            return memplan.plan_job(shape, card_bytes=1 << 62, reserve=0, batch=batch, **kw)
        torch = self.torch
        torch.cuda.empty_cache()         # memory this process freed counts as free
        free, _ = torch.cuda.mem_get_info(self.device)
        held = sum(t.numel() * t.element_size() for t in (*self.model.parameters(), *self.model.buffers()))
        # the weights are on the card already: the card the plan sees is what is free plus what they hold
        plan = memplan.plan_job(shape, card_bytes=free + held, reserve=RUNTIME_RESERVE_BYTES, batch=wanted, **kw)
        if plan.slots < 1:
            asked = f"batch_size {wanted}" if wanted else "one decoding slot"
            raise DecodeMemoryError(
                f"models.{self.name}: {asked} needs {(plan.peak(wanted or 1) - plan.weights) / 2**20:.0f} MiB beside "
                f"the weights ({plan.describe()}); {self.device} has {free / 2**20:.0f} MiB free after the weights"
                + ("" if wanted is None else " (batch_size: auto takes what fits)"))
        return plan

    def _decode(self, rows: list[list[int]], order: list[int], prefix: tuple[int, ...], max_new_tokens: int,
                done) -> None:
        """Continuous batching over slots of a fixed size (``earnest.backends.slots``), scheduled by
        ``earnest.backends.schedule.SlotScheduler``; the slots and the prefill rows are the job's memory
        plan (:meth:`plan_batch`)."""
        torch = self.torch
        P = len(prefix)
        L = max(len(rows[i]) - P for i in order)
        shared = self.attention == SHARED_PREFIX_ATTENTION and P > 0
        layers, kv_shape, window = self._kv_layout()
        longest = P + L + max_new_tokens
        if window is not None and longest > window:
            raise ValueError(f"models.{self.name}: prompts of up to {P + L} tokens plus max_new_tokens "
                             f"{max_new_tokens} exceed the model's sliding attention window of {window} tokens; "
                             "earnest's decoder attends over whole sequences only")
        rope = self._rope if self._rope is not None and longest > self._rope.original else None
        if rope is not None and shared:
            raise ValueError(f"models.{self.name}.attention: shared_prefix cannot hold LongRoPE rows past "
                             f"original_max_position_embeddings ({rope.original}; this job reaches {longest} "
                             "tokens): their prefix is computed with the long factors; use attention: standard")
        plan = self.plan_batch(len(order), P, L, max_new_tokens, shared)
        graphs = self.cuda_graphs and self.device.type == "cuda"
        with torch.inference_mode():
            cache = slots.slot_cache_class()(self._prefix_layers(prefix) if P else [], layers, plan.slots,
                                             L + max_new_tokens, shared, kv_shape, self.model.dtype, self.device)
            step = slots.SlotStep(self.model, cache, cache_kw=self._cache_kw, keep_kw=self._keep_kw,
                                  additive_mask=self._additive_mask, graphs=graphs)
            # refills in groups, the tail on fewer rows and the next step launched before the current one's
            # tokens are checked: the CUDA-graph policies (tests force them on a CPU); not with LongRoPE crossings
            grouped = graphs if self._grouped is None else self._grouped
            pipelined = (graphs if self._pipelined is None else self._pipelined) and rope is None
            sched = SlotScheduler(self, cache, step, rows, order, prefix, max_new_tokens, done,
                                  prefill_rows=plan.prefill_rows, grouped=grouped, pipelined=pipelined, rope=rope)
            self.last_decode = {"batch": plan.slots, "columns": cache.columns, "cache_bytes": cache.nbytes(),
                                "shared_prefix": shared, "graphs": step.graph_note, "requests": len(order),
                                "plan_bytes": plan.peak(plan.slots), "prefill_rows": plan.prefill_rows,
                                "prefills": 0, "steps": 0}
            sched.run()
            self.last_decode.update(prefills=sched.prefills, steps=sched.launched, graphs=step.graph_note)

    def _prefill(self, cache, step, chosen: list[int], owns: list[list[int]], prefix: tuple[int, ...],
                 long: bool = False) -> list[int]:
        """Run the requests' own tokens against the prefix (left-padded, together) and write their
        keys/values into the slots ``chosen``; returns each request's first generated token. The prefix's
        cache is read in place by every row (``slots.PrefillCache``), never copied per row; ``long``:
        the prefix computed with LongRoPE's long factors (``earnest.backends.rope``)."""
        torch = self.torch
        dev = self.device
        P, k = len(prefix), len(chosen)
        Lc = max(len(o) for o in owns)
        ids = torch.full((k, Lc), self.pad_id, dtype=torch.long, device=dev)
        pad = torch.tensor([Lc - len(o) for o in owns], device=dev)
        for j, own in enumerate(owns):
            ids[j, Lc - len(own):] = torch.tensor(own, device=dev)
        q = torch.arange(Lc, device=dev)
        # each own token attends to the row's earlier own tokens (and a padding query to itself); the prefix
        # is attended in full by every row
        mask = ((q[None, :] <= q[:, None])[None] & (q[None, None, :] >= pad[:, None, None])) | torch.eye(
            Lc, dtype=torch.bool, device=dev)[None]
        positions = (P + q[None, :] - pad[:, None]).clamp(min=P)
        pc = slots.prefill_cache_class()(self._prefix_layers(prefix, long) if P else [], len(cache.k))
        logits, _ = self._forward(pc, input_ids=ids, attention_mask=mask[:, None], position_ids=positions)
        first = logits.argmax(-1)
        for li in range(len(pc.k)):
            for j, (s, own) in enumerate(zip(chosen, owns)):
                n = len(own)
                cache.write_slot(s, li, pc.k[li][j, :, Lc - n:], pc.v[li][j, :, Lc - n:], n)
        del pc
        idx = torch.tensor(chosen, device=dev)
        lengths = torch.tensor([len(o) for o in owns], device=dev)
        step.tok[idx, 0] = first
        step.pos[idx, 0] = P + lengths
        cache.write_pos[idx] = cache.base + lengths
        return first.tolist()

    def _reference_decode(self, ids: list[int]) -> str:
        """Decode as the reference's tokenizer (clean_up_tokenization_spaces=True, transformers 4.x) did."""
        text = self.tokenizer.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)
        return reference_clean_up(text)

    def _new_state(self, i: int) -> dict:
        req = self._requests[i]
        stop = req.stop
        # earnest mode looks for its stop strings in the decoded last tokens of the answer: enough
        # tokens for the longest stop string even at one byte per token, plus a margin
        window = max((len(s.encode("utf-8")) for s in stop), default=0) + 3
        return {"tokens": [], "t0": time.time(), "stop": stop, "reference": req.fidelity == REFERENCE,
                "window": window, "i": i}

    def _feed(self, items: list[tuple[int, dict, int]], max_new_tokens: int) -> list[tuple[int, str]]:
        """Take one generated token per (slot, state, token); the (slot, stop reason) of the answers that ended.

        The rule of each mode, as a whole-answer check would apply it: the EOS token ends the
        answer (not kept); otherwise the token is kept, then the stop strings are looked for, then
        the token cap. The stop strings of all rows are looked for with one batched decode:
        reference mode in the last ``REFERENCE_STOP_WINDOW`` tokens of prompt + answer (the
        authors' rule), earnest mode in the last tokens of the answer (``_new_state``'s window;
        ``_settle`` makes the result exact where a window would not be).
        """
        ended: list[tuple[int, str]] = []
        ref_rows, ref_windows, own_rows, own_windows = [], [], [], []
        for s, st, tok in items:
            if st["reference"]:
                if tok in self.reference_eos_ids:
                    ended.append((s, EOS))
                    continue
                st["tokens"].append(tok)
                if st["stop"]:
                    row = self._requests_rows[st["i"]]
                    tail = (row[-REFERENCE_STOP_WINDOW:] + st["tokens"][-REFERENCE_STOP_WINDOW:])[-REFERENCE_STOP_WINDOW:]
                    ref_rows.append((s, st))
                    ref_windows.append(tail)
                    continue
            else:
                if tok in self.eos_ids:
                    ended.append((s, EOS))
                    continue
                st["tokens"].append(tok)
                if st["stop"]:
                    own_rows.append((s, st))
                    own_windows.append(st["tokens"][-st["window"]:])
                    continue
            if len(st["tokens"]) >= max_new_tokens:
                ended.append((s, MAX_NEW_TOKENS))
        texts = []
        if ref_windows:
            texts += [reference_clean_up(t) for t in self.tokenizer.batch_decode(
                ref_windows, skip_special_tokens=True, clean_up_tokenization_spaces=False)]
        if own_windows:
            texts += self.tokenizer.batch_decode(own_windows, skip_special_tokens=True)
        for (s, st), text in zip(ref_rows + own_rows, texts):
            if any(x in text for x in st["stop"]):
                ended.append((s, STOP_STRING))
            elif len(st["tokens"]) >= max_new_tokens:
                ended.append((s, MAX_NEW_TOKENS))
        return ended

    def _decode_answer(self, tokens: list[int]) -> str:
        return self.tokenizer.decode(tokens, skip_special_tokens=True)

    def _settle(self, st: dict, stop: str) -> tuple[str, str]:
        """Earnest mode: make the answer end exactly where a check of the whole decoded answer after
        every token would have ended it (a window can miss a stop string spread over many tokens
        that decode to nothing, or see one the whole text splits otherwise). Greedy decoding made
        the same tokens up to that point, so cutting the tokens there gives that answer. Returns
        (stop reason, the answer's whole decoded text)."""
        tokens, strings = st["tokens"], st["stop"]
        text = self._decode_answer(tokens)
        n = len(tokens)
        if not strings or n == 0:
            return stop, text
        found = any(x in text for x in strings)
        if stop == STOP_STRING:
            if not found:
                log.warning("request %s: a stop string seen in the last tokens is not in the whole decoded "
                            "answer; the answer ends there all the same", self._requests[st["i"]].key)
                return stop, text
            if n == 1 or not any(x in self._decode_answer(tokens[:n - 1]) for x in strings):
                return stop, text
        elif not found:
            return stop, text
        lo, hi = 1, n                        # the first length whose decoded text holds a stop string
        while lo < hi:
            mid = (lo + hi) // 2
            if any(x in self._decode_answer(tokens[:mid]) for x in strings):
                hi = mid
            else:
                lo = mid + 1
        del tokens[lo:]
        return STOP_STRING, self._decode_answer(tokens)

    def _result(self, row: list[int], st: dict, stop: str) -> GenerationResult:
        if st["reference"]:
            text = self._reference_decode(st["tokens"])
        else:
            stop, text = self._settle(st, stop)
            if stop == STOP_STRING:
                text = cut_at_stop(text, st["stop"])[0]
        return GenerationResult(key="", response=text, prompt_tokens=len(row), new_tokens=len(st["tokens"]),
                                stop_reason=stop, seconds=time.time() - st["t0"])

    def close(self) -> None:
        self._prefix = {}
        del self.model


def shared_token_prefix(seqs: Sequence[Sequence[int]]) -> list[int]:
    """The longest list of token ids every sequence starts with."""
    if not seqs:
        return []
    first = seqs[0]
    n = min(len(s) for s in seqs)
    for s in seqs[1:]:
        i = 0
        while i < n and s[i] == first[i]:
            i += 1
        n = i
    return list(first[:n])
