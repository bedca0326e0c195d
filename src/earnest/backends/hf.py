"""Hugging Face transformers backend: greedy decoding with a shared-prefix KV cache and batching.

Where the time goes on a CPU: every few-shot prompt repeats the same ~800-token prefix. We run
the model over the longest token prefix shared by all prompts of a job once, then copy that
cache into every batch and feed only each question's own tokens. Rows that stop (EOS, or one of
the request's stop strings, e.g. the model starting the next "Q:") leave the batch at once, so a
runaway answer costs only itself.

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
import functools
import importlib.util
import logging
import os
import time
from pathlib import Path
from typing import Sequence

from earnest.fidelity import REFERENCE

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

#: a transformers model's dtype and device where its config entry names none
DEFAULT_DTYPE = "float32"
DEFAULT_DEVICE = "cpu"

_DTYPES = {"float32": "float32", "fp32": "float32", "bfloat16": "bfloat16", "bf16": "bfloat16",
           "float16": "float16", "fp16": "float16", "auto": "auto"}


def model_dtype(cfg: dict) -> str:
    """The dtype a model entry asks for (config ``models.<name>.dtype``), :data:`DEFAULT_DTYPE` if none."""
    return cfg.get("dtype") or DEFAULT_DTYPE


def model_device(cfg: dict) -> str:
    """The device a model entry asks for (``models.<name>.device``: cpu, cuda, cuda:N or auto),
    :data:`DEFAULT_DEVICE` if none."""
    return cfg.get("device") or DEFAULT_DEVICE


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


class TransformersBackend(Backend):
    """A causal LM from transformers, decoded greedily.

    Config keys (a model entry): gguf | path | hub (+ revision, cache_dir, offline), dtype,
    device, chat_template (wrap raw prompts in the model's chat template; default false),
    batch_size, threads, attention (``ATTENTION_MODES``; default standard).
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
        device = model_device(cfg)
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
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
        self.batch_size = int(cfg.get("batch_size", 8))
        self.attention = cfg.get("attention", STANDARD_ATTENTION)
        if self.attention not in ATTENTION_MODES:
            raise ValueError(f"models.{model_name}.attention: {self.attention!r} is not one of {', '.join(ATTENTION_MODES)}")
        if self.attention == SHARED_PREFIX_ATTENTION:
            if self.model.config._attn_implementation != "sdpa":
                raise ValueError(f"models.{model_name}.attention: shared_prefix needs the model's sdpa attention "
                                 f"(this model uses {self.model.config._attn_implementation!r}); use standard")
            self.model.set_attn_implementation(_register_shared_prefix_attention())
        self.eos_ids = self._eos_ids()
        # the reference passes eos_token_id=tokenizer.eos_token_id to generate(), which replaces
        # the generation config's EOS list (e.g. Llama-3-Instruct's <|eot_id|>)
        tok_eos = self.tokenizer.eos_token_id
        self.reference_eos_ids = [tok_eos] if tok_eos is not None else self.eos_ids
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.eos_ids[0]
        self._prefix: tuple[tuple[int, ...], object] | None = None  # (prefix ids, their KV cache)

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

    def _prefix_cache(self, prefix: tuple[int, ...]):
        """KV cache of the shared prefix (computed once per prefix)."""
        if self._prefix is None or self._prefix[0] != prefix:
            torch = self.torch
            ids = torch.tensor([prefix], device=self.device)
            with torch.inference_mode():
                _, cache = self._forward(None, input_ids=ids)
            self._prefix = (prefix, cache)
        return self._prefix[1]

    # ------------------------------------------------------------------ generation

    def generate(self, requests: Sequence[GenerationRequest], max_new_tokens: int,
                 on_result=None) -> list[GenerationResult]:
        """Greedy answers for ``requests`` in order; ``on_result(result)`` is called as each finishes."""
        if not requests:
            return []
        self._requests = requests   # each row's stop strings and fidelity (see _new_state)
        encoded = [self.encode(r) for r in requests]
        prefix = shared_token_prefix(encoded)
        # keep at least one own token per row so every row has logits of its own to start from
        prefix = tuple(prefix[: max(0, min(len(e) for e in encoded) - 1)])
        results: dict[int, GenerationResult] = {}

        def done(i: int, res: GenerationResult) -> None:
            res.key = requests[i].key
            results[i] = res
            if on_result is not None:
                on_result(res)

        self._decode(encoded, list(range(len(encoded))), prefix, max_new_tokens, done)
        return [results[i] for i in range(len(requests))]

    def _decode(self, rows: list[list[int]], order: list[int], prefix: tuple[int, ...], max_new_tokens: int,
                done) -> None:
        """Continuous batching over ``batch_size`` slots that share the prefix cache.

        Cache layout of every slot: [shared prefix][masked gap][own tokens][generated tokens].
        A slot whose answer ends takes the next waiting request at once: that request's own
        tokens are run against the prefix alone and written into the slot's most recent
        columns, the columns before them are masked, and positions continue from the prefix,
        so each row computes what it would alone while the batch stays full.
        """
        torch = self.torch
        P = len(prefix)
        L = max(len(rows[i]) - P for i in order)     # every later request fits behind the prefix
        queue = list(order)
        B = min(self.batch_size, len(queue))
        first, queue = queue[:B], queue[B:]
        dev = self.device
        input_ids = torch.full((B, L), self.pad_id, dtype=torch.long, device=dev)
        mask = torch.zeros((B, P + L), dtype=torch.long, device=dev)
        mask[:, :P] = 1
        for b, i in enumerate(first):
            own = rows[i][P:]
            input_ids[b, L - len(own):] = torch.tensor(own, device=dev)
            mask[b, P + L - len(own):] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, P:]
        slot_req = list(first)                        # request index held by each slot (cache order)
        state = {i: self._new_state(i) for i in first}
        with torch.inference_mode():
            cache = None
            if P:
                cache = copy.deepcopy(self._prefix_cache(prefix))
                if self.attention == SHARED_PREFIX_ATTENTION and _share_prefix(cache, B, L + max_new_tokens + 1):
                    pass                                   # prefix kept once; rows hold only their own columns
                elif B > 1:
                    cache.batch_repeat_interleave(B)
            logits, cache = self._forward(cache, input_ids=input_ids, attention_mask=mask, position_ids=positions)
            cache = _preallocate(cache, max_new_tokens + 1)
            # layers transformers keeps its own way (e.g. sliding-window attention) cannot take a
            # new row mid-flight; the waiting requests then run as the next batch
            can_refill = all(hasattr(layer, "write_slot") for layer in getattr(cache, "layers", [None]))
            next_tok = logits.argmax(-1)
            last_pos = positions[:, -1].clone()
            while slot_req:
                keep = []
                for j in range(len(slot_req)):
                    tok = int(next_tok[j])
                    while True:                           # a refilled slot may end on its first token
                        i = slot_req[j]
                        stop = self._step(state[i], rows[i], tok, max_new_tokens)
                        if stop is None:
                            keep.append(j)
                            break
                        done(i, self._result(rows[i], state.pop(i), stop))
                        if not queue or not can_refill:
                            break
                        i = queue.pop(0)
                        slot_req[j] = i
                        state[i] = self._new_state(i)
                        tok, pos = self._refill(cache, mask, j, rows[i][P:], prefix)
                        last_pos[j] = pos
                        next_tok[j] = tok
                if not keep:
                    break
                if len(keep) < len(slot_req):
                    sel = torch.tensor(keep, device=dev)
                    cache.batch_select_indices(sel)
                    mask, last_pos, next_tok = mask[sel], last_pos[sel], next_tok[sel]
                    slot_req = [slot_req[j] for j in keep]
                mask = torch.cat([mask, torch.ones((len(slot_req), 1), dtype=mask.dtype, device=dev)], dim=1)
                last_pos = last_pos + 1
                logits, cache = self._forward(cache, input_ids=next_tok[:, None], attention_mask=mask,
                                              position_ids=last_pos[:, None])
                next_tok = logits.argmax(-1)
        if queue:
            self._decode(rows, queue, prefix, max_new_tokens, done)

    def _reference_decode(self, ids: list[int]) -> str:
        """Decode as the reference's tokenizer (clean_up_tokenization_spaces=True, transformers 4.x) did."""
        text = self.tokenizer.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)
        return reference_clean_up(text)

    def _new_state(self, i: int) -> dict:
        req = self._requests[i]
        return {"tokens": [], "text": "", "t0": time.time(), "stop": req.stop, "reference": req.fidelity == REFERENCE}

    def _step(self, st: dict, row: list[int], tok: int, max_new_tokens: int) -> str | None:
        """Take one generated token; the stop reason if the answer has ended, else None."""
        if st["reference"]:
            if tok in self.reference_eos_ids:
                return EOS
            st["tokens"].append(tok)
            if st["stop"]:
                # the reference's stopping criterion: decode the sequence's last tokens, prompt included
                tail = (row + st["tokens"])[-REFERENCE_STOP_WINDOW:]
                text = self._reference_decode(tail)
                if any(s in text for s in st["stop"]):
                    return STOP_STRING
        else:
            if tok in self.eos_ids:
                return EOS
            st["tokens"].append(tok)
            if st["stop"]:
                st["text"] = self.tokenizer.decode(st["tokens"], skip_special_tokens=True)
                if any(s in st["text"] for s in st["stop"]):
                    return STOP_STRING
        if len(st["tokens"]) >= max_new_tokens:
            return MAX_NEW_TOKENS
        return None

    def _result(self, row: list[int], st: dict, stop: str) -> GenerationResult:
        if st["reference"]:
            text = self._reference_decode(st["tokens"])
        else:
            text = self.tokenizer.decode(st["tokens"], skip_special_tokens=True)
            if stop == STOP_STRING:
                text = cut_at_stop(text, st["stop"])[0]
        return GenerationResult(key="", response=text, prompt_tokens=len(row), new_tokens=len(st["tokens"]),
                                stop_reason=stop, seconds=time.time() - st["t0"])

    def _refill(self, cache, mask, slot: int, own: list[int], prefix: tuple[int, ...]):
        """Put a new request into ``slot``: returns (its first generated token, its last position)."""
        torch = self.torch
        P, S = len(prefix), len(own)
        ids = torch.tensor([own], device=self.device)
        pos = torch.arange(P, P + S, device=self.device)[None, :]
        single = None
        if P:
            single = copy.deepcopy(self._prefix_cache(prefix))
        logits, single = self._forward(single, input_ids=ids, position_ids=pos,
                                       attention_mask=torch.ones((1, P + S), dtype=torch.long, device=self.device))
        T = mask.shape[1]
        for layer, new in zip(cache.layers, single.layers):
            layer.write_slot(slot, new.keys[0, :, P:], new.values[0, :, P:], T - S)
        mask[slot, P:] = 0
        mask[slot, T - S:] = 1
        return int(logits[0].argmax()), P + S - 1

    def close(self) -> None:
        self._prefix = None
        del self.model


def _preallocate(cache, extra: int):
    """Give every plain dynamic layer of ``cache`` room for ``extra`` more tokens.

    transformers' DynamicLayer concatenates its whole key/value tensors at every decoding step,
    which on a CPU with a ~1,000-token few-shot prefix copies hundreds of MB per step and costs
    more than the model itself. A preallocated buffer written in place returns the same values.
    """
    from transformers.cache_utils import DynamicLayer

    if not hasattr(cache, "layers"):
        return cache
    for i, layer in enumerate(cache.layers):
        if type(layer) is DynamicLayer and layer.is_initialized and layer.get_seq_length() > 0:
            cache.layers[i] = _preallocated_layer_class()(layer.keys, layer.values, extra)
    return cache


@functools.lru_cache(maxsize=1)
def _preallocated_layer_class():
    from transformers.cache_utils import DynamicLayer

    class PreallocatedLayer(DynamicLayer):
        """A DynamicLayer whose keys/values are views into buffers that grow by doubling."""

        def __init__(self, keys, values, extra: int):
            super().__init__()
            b, h, t, d = keys.shape
            self._len = t
            self._k = keys.new_empty((b, h, t + extra, d))
            self._v = values.new_empty((b, h, t + extra, values.shape[-1]))
            self._k[:, :, :t] = keys
            self._v[:, :, :t] = values
            self.device = keys.device
            self.is_initialized = True
            self._views()

        def _views(self):
            self.keys = self._k[:, :, : self._len]
            self.values = self._v[:, :, : self._len]

        def update(self, key_states, value_states, *args, **kwargs):
            n = key_states.shape[-2]
            if self._len + n > self._k.shape[-2]:
                grow = max(n, self._k.shape[-2])
                self._k = self.torch_cat(self._k, grow)
                self._v = self.torch_cat(self._v, grow)
            self._k[:, :, self._len:self._len + n] = key_states
            self._v[:, :, self._len:self._len + n] = value_states
            self._len += n
            self._views()
            return self.keys, self.values

        @staticmethod
        def torch_cat(buf, grow):
            import torch

            return torch.cat([buf, buf.new_empty(buf.shape[:2] + (grow,) + buf.shape[3:])], dim=2)

        def write_slot(self, slot, keys, values, start):
            """Overwrite one batch row's columns start.. with ``keys``/``values`` (heads, n, dim)."""
            n = keys.shape[-2]
            self._k[slot, :, start:start + n] = keys
            self._v[slot, :, start:start + n] = values

        def batch_select_indices(self, indices):
            self._k = self._k[indices]
            self._v = self._v[indices]
            self._views()

        def batch_repeat_interleave(self, repeats):
            self._k = self._k.repeat_interleave(repeats, dim=0)
            self._v = self._v.repeat_interleave(repeats, dim=0)
            self._views()

        def crop(self, tokens_to_remove):
            raise NotImplementedError("a preallocated decoding cache is not cropped")

    return PreallocatedLayer


def _share_prefix(cache, batch: int, room: int) -> bool:
    """Turn a prefix cache (batch 1, plain dynamic layers) into shared-prefix layers for ``batch``
    rows with ``room`` own columns each; False (nothing changed) where a layer is of another kind."""
    from transformers.cache_utils import DynamicLayer

    layers = getattr(cache, "layers", None)
    if not layers or any(type(layer) is not DynamicLayer or not layer.is_initialized for layer in layers):
        return False
    cls = _shared_prefix_layer_class()
    cache.layers = [cls(layer.keys, layer.values, batch, room) for layer in layers]
    return True


_SHARED_PREFIX = "_earnest_shared_prefix"   # attribute of the key tensor a shared-prefix layer returns


@functools.lru_cache(maxsize=1)
def _shared_prefix_layer_class():
    class SharedPrefixLayer(_preallocated_layer_class()):
        """The prefix's keys/values once (1, heads, P, dim); each row's own columns in a
        preallocated buffer (the parent class's, starting empty).

        ``update`` returns the rows' own keys/values, the key tensor carrying the prefix as an
        attribute for ``shared_prefix_attention``; sequence length and mask sizes count both.
        """

        def __init__(self, prefix_keys, prefix_values, batch: int, room: int):
            _, h, p, d = prefix_keys.shape
            self._pk, self._pv, self._p = prefix_keys, prefix_values, p
            super().__init__(prefix_keys.new_empty((batch, h, 0, d)),
                             prefix_values.new_empty((batch, h, 0, prefix_values.shape[-1])), room)

        def _views(self):
            super()._views()
            setattr(self.keys, _SHARED_PREFIX, (self._pk, self._pv))

        def get_seq_length(self) -> int:
            return self._p + self._len

        def write_slot(self, slot, keys, values, start):
            """Overwrite one row's columns start.. (counted from the prefix's first column)."""
            super().write_slot(slot, keys, values, start - self._p)

        def crop(self, tokens_to_remove):
            raise NotImplementedError("a shared-prefix decoding cache is not cropped")

    return SharedPrefixLayer


def shared_prefix_attention(module, query, key, value, attention_mask, dropout: float = 0.0,
                            scaling: float | None = None, **kwargs):
    """SDPA for a shared-prefix cache (``SHARED_PREFIX_ATTENTION``); plain SDPA for anything else.

    One decoding step (one query per row) attends to the prefix once for all rows and to each
    row's own columns, and merges the two softmax parts; longer queries (the rows' own prompt
    tokens) see the prefix copied out and go to transformers' SDPA, as in standard attention.
    """
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    shared = getattr(key, _SHARED_PREFIX, None)
    if shared is None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      **kwargs)
    pk, pv = shared
    B, H, S, d = query.shape
    P = pk.shape[2]
    if attention_mask is None:
        allowed = None
    else:
        allowed = attention_mask if attention_mask.dtype == torch.bool else attention_mask == 0
    if S > 1 or dropout or (allowed is not None and not bool(allowed[..., :P].all())):
        full_k = torch.cat([pk.expand(B, -1, -1, -1), key], dim=2)
        full_v = torch.cat([pv.expand(B, -1, -1, -1), value], dim=2)
        return sdpa_attention_forward(module, query, full_k, full_v, attention_mask, dropout=dropout,
                                      scaling=scaling, **kwargs)
    kvh = pk.shape[1]
    g = H // kvh
    scale = scaling if scaling is not None else d ** -0.5
    work = torch.float32 if query.dtype in (torch.float16, torch.bfloat16) else query.dtype
    q = query.reshape(B, kvh, g, d).to(work)
    # the prefix: every row's queries of one key/value head against the one copy of the prefix
    qp = q.permute(1, 0, 2, 3).reshape(kvh, B * g, d)
    sp = torch.matmul(qp, pk[0].to(work).transpose(-1, -2)) * scale            # (kvh, B*g, P)
    mp = sp.amax(-1, keepdim=True)
    ep = torch.exp(sp - mp)
    lp, op = ep.sum(-1, keepdim=True), torch.matmul(ep, pv[0].to(work))        # (kvh, B*g, 1|d)
    mp, lp, op = (t.reshape(kvh, B, g, -1).permute(1, 0, 2, 3) for t in (mp, lp, op))
    # each row's own columns (its prompt tokens behind the masked gap, its answer so far)
    ss = torch.matmul(q, key.to(work).transpose(-1, -2)) * scale                # (B, kvh, g, T)
    if allowed is not None:
        ss = ss.masked_fill(~allowed[..., P:], float("-inf"))
    ms = ss.amax(-1, keepdim=True)
    es = torch.exp(ss - ms)
    ls, os_ = es.sum(-1, keepdim=True), torch.matmul(es, value.to(work))
    m = torch.maximum(mp, ms)
    a, b = torch.exp(mp - m), torch.exp(ms - m)
    out = (a * op + b * os_) / (a * lp + b * ls)                               # (B, kvh, g, d)
    return out.reshape(B, 1, H, d).to(query.dtype).contiguous(), None


@functools.lru_cache(maxsize=1)
def _register_shared_prefix_attention() -> str:
    """Register ``shared_prefix_attention`` (and SDPA's mask) with transformers; its name."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    name = "earnest_shared_prefix"
    AttentionInterface.register(name, shared_prefix_attention)
    AttentionMaskInterface.register(name, sdpa_mask)
    return name


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
