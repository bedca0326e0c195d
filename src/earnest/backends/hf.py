"""Hugging Face transformers backend: greedy decoding with a shared-prefix KV cache and batching.

Where the time goes on a CPU: every few-shot prompt repeats the same ~800-token prefix. We run
the model over the longest token prefix shared by all prompts of a job once, then copy that
cache into every batch and feed only each question's own tokens. Rows that stop (EOS, or the
model starting the next "Q:") leave the batch at once, so a runaway answer costs only itself.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import logging
import os
import re
import time
from pathlib import Path
from typing import Sequence

from .base import GenerationRequest, GenerationResult

log = logging.getLogger(__name__)

# The model has begun the next few-shot question: "Q:" at the start of a line.
NEXT_QUESTION = re.compile(r"(?:^|\n)[ \t]*Q:")

_DTYPES = {"float32": "float32", "fp32": "float32", "bfloat16": "bfloat16", "bf16": "bfloat16",
           "float16": "float16", "fp16": "float16", "auto": "auto"}


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


class TransformersBackend:
    """A causal LM from transformers, decoded greedily.

    Config keys (a model entry): gguf | path | hub (+ revision, cache_dir, offline), dtype,
    device, chat_template (wrap raw prompts in the model's chat template; default false),
    batch_size, threads.
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
        dtype = _DTYPES.get(str(cfg.get("dtype", "float32")))
        if dtype is None:
            raise ValueError(f"models.{model_name}.dtype: unknown dtype {cfg.get('dtype')!r}")
        device = cfg.get("device", "cpu")
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        t0 = time.time()
        self.tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
        self.model = AutoModelForCausalLM.from_pretrained(
            source, dtype=dtype if dtype == "auto" else getattr(torch, dtype), **kwargs
        ).to(self.device)
        self.model.eval()
        log.info("loaded %s from %s in %.1f s", model_name, source, time.time() - t0)
        self.chat_template = bool(cfg.get("chat_template", False))
        self.batch_size = int(cfg.get("batch_size", 8))
        self.eos_ids = self._eos_ids()
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.eos_ids[0]
        self._prefix: tuple[tuple[int, ...], object, object] | None = None  # (ids, cache, last logits)

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
        """Token ids the model sees for one request (raw prompt, or chat-wrapped)."""
        if request.messages is not None or self.chat_template:
            messages = request.messages or [{"role": "user", "content": request.prompt}]
            text = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            return self.tokenizer(text, add_special_tokens=False)["input_ids"]
        return self.tokenizer(request.prompt, add_special_tokens=True)["input_ids"]

    def _prefix_cache(self, prefix: tuple[int, ...]):
        """KV cache and next-token logits after the shared prefix (computed once per prefix)."""
        if self._prefix is None or self._prefix[0] != prefix:
            torch = self.torch
            ids = torch.tensor([prefix], device=self.device)
            with torch.inference_mode():
                out = self.model(input_ids=ids, use_cache=True)
            self._prefix = (prefix, out.past_key_values, out.logits[:, -1, :])
        return self._prefix[1], self._prefix[2]

    # ------------------------------------------------------------------ generation

    def generate(self, requests: Sequence[GenerationRequest], max_new_tokens: int,
                 on_result=None) -> list[GenerationResult]:
        """Greedy answers for ``requests`` in order; ``on_result(result)`` is called as each finishes."""
        encoded = [self.encode(r) for r in requests]
        prefix = shared_token_prefix(encoded)
        # keep at least one own token per row so every row has logits of its own to start from
        prefix = prefix[: max(0, min(len(e) for e in encoded) - 1)] if encoded else prefix
        results: dict[int, GenerationResult] = {}
        order = sorted(range(len(requests)), key=lambda i: len(encoded[i]))
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            for res_i, res in zip(idx, self._generate_batch([encoded[i] for i in idx], tuple(prefix), max_new_tokens)):
                res.key = requests[res_i].key
                results[res_i] = res
                if on_result is not None:
                    on_result(res)
        return [results[i] for i in range(len(requests))]

    def _generate_batch(self, rows: list[list[int]], prefix: tuple[int, ...], max_new_tokens: int) -> list[GenerationResult]:
        torch = self.torch
        t0 = time.time()
        P = len(prefix)
        suffixes = [r[P:] for r in rows]
        B, L = len(rows), max(len(s) for s in suffixes)
        # layout per row: [shared prefix][left padding][own tokens]; padding is masked out and
        # positions continue from the prefix, so each row computes what it would alone
        input_ids = torch.full((B, L), self.pad_id, dtype=torch.long, device=self.device)
        mask = torch.zeros((B, P + L), dtype=torch.long, device=self.device)
        mask[:, :P] = 1
        for b, s in enumerate(suffixes):
            input_ids[b, L - len(s):] = torch.tensor(s, device=self.device)
            mask[b, P + L - len(s):] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, P:]
        with torch.inference_mode():
            cache = None
            if P:
                prefix_cache, _ = self._prefix_cache(prefix)
                cache = copy.deepcopy(prefix_cache)
                if B > 1:
                    cache.batch_repeat_interleave(B)
            out = self.model(input_ids=input_ids, attention_mask=mask, position_ids=positions,
                             past_key_values=cache, use_cache=True)
            cache = _preallocate(out.past_key_values, max_new_tokens)
            logits = out.logits[:, -1, :]
            active = list(range(B))               # row numbers still decoding, in cache order
            generated: list[list[int]] = [[] for _ in range(B)]
            texts = [""] * B
            stop = [""] * B
            last_pos = positions[:, -1].clone()
            for step in range(max_new_tokens):
                next_tok = logits.argmax(-1)
                keep = []
                for j, b in enumerate(active):
                    tok = int(next_tok[j])
                    if tok in self.eos_ids:
                        stop[b] = "eos"
                        continue
                    generated[b].append(tok)
                    texts[b] = self.tokenizer.decode(generated[b], skip_special_tokens=True)
                    if NEXT_QUESTION.search(texts[b]):
                        stop[b] = "next_question"
                        continue
                    if len(generated[b]) >= max_new_tokens:
                        stop[b] = "max_new_tokens"
                        continue
                    keep.append(j)
                if not keep:
                    break
                if len(keep) < len(active):
                    sel = torch.tensor(keep, device=self.device)
                    cache.batch_select_indices(sel)
                    mask = mask[sel]
                    last_pos = last_pos[sel]
                    next_tok = next_tok[sel]
                    active = [active[j] for j in keep]
                mask = torch.cat([mask, torch.ones((len(active), 1), dtype=mask.dtype, device=self.device)], dim=1)
                last_pos = last_pos + 1
                out = self.model(input_ids=next_tok[:, None], attention_mask=mask, position_ids=last_pos[:, None],
                                 past_key_values=cache, use_cache=True)
                cache = out.past_key_values
                logits = out.logits[:, -1, :]
        seconds = (time.time() - t0) / B
        results = []
        for b in range(B):
            text = texts[b]
            if stop[b] == "next_question":
                text = text[: NEXT_QUESTION.search(text).start()]
            results.append(GenerationResult(key="", response=text, prompt_tokens=len(rows[b]),
                                            new_tokens=len(generated[b]), stop_reason=stop[b] or "max_new_tokens",
                                            seconds=seconds))
        return results

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
