"""Hugging Face transformers backend: greedy decoding over fixed slots that share a prefix cache.

Every few-shot prompt repeats the same ~800-token prefix. We run the model over the longest token
prefix shared by all prompts of a job once and feed only each question's own tokens behind it, the
prefix read in place by every row. The job's requests go through slots of a decoding cache whose size
is fixed by the batch and the longest request (``earnest.backends.slots``), as many as the job's
memory plan gives (``earnest.backends.memplan``, the arithmetic ``earnest plan-gpu`` checks before any
job): an answer that ends (EOS, one of the request's stop strings, the token cap) frees its slot for
the next request at once, so a runaway answer costs only itself and the cache never grows with the
job. On CUDA each decoding step is a replayed CUDA graph.

The trades, one module each: loading (``loading``: files, dtype, device, GGUF conversion), the stop
rule of each fidelity mode (``stoprule``), the scheduling of slots, refills and steps (``schedule``),
the cache and the step (``slots``), attention over a shared prefix (``attention``), LongRoPE per row
(``rope``); this module holds the backend that joins them (encoding, the prefix, the prefill, a job).

Identical answers: in float32 every answer is the one a per-question ``generate`` gives (tests:
test_decoding.py, test_parity.py, every paper architecture, both fidelity modes). In bfloat16 (or
float16) a batch rounds its matrix products differently from one question alone, so near-ties can go
the other way and answers can differ (benchmarks/README.md measures how often and what it does to
accuracy).
"""

from __future__ import annotations

import logging
import time
from typing import Sequence

from earnest.fidelity import REFERENCE

from . import attention, memplan, slots
from .decoding import Decoding, check_adapter, check_model_args, request_seed, sample_tokens
from .rope import LongRopePerRow
from .schedule import SlotScheduler
from .base import Backend, GenerationRequest, GenerationResult
from .loading import (  # noqa: F401 -- the names earnest and the workflow import from here
    AUTO_BATCH, DEFAULT_BATCH_SIZE, DEFAULT_DEVICE, DEFAULT_DTYPE, DEVICES, convert_gguf, load_tokenizer,
    model_device, model_dir_problem, model_dtype, model_source, resolve_gguf, torch_dtype)
from .stoprule import (  # noqa: F401
    REFERENCE_MAX_LENGTH, REFERENCE_STOP_WINDOW, StopRule, reference_clean_up)

log = logging.getLogger(__name__)

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

#: ``batch_size: auto`` on a CPU (no card to size it by)
AUTO_CPU_BATCH = 8
#: device memory a running job leaves free besides its plan (the allocator's slack; the CUDA context is
#: not in the free memory it measures)
RUNTIME_RESERVE_BYTES = 1 << 30


class DecodeMemoryError(MemoryError):
    """A job's decoding slots do not fit the device (the message names model, memory asked and free)."""


class TransformersBackend(StopRule, Backend):
    """A causal LM from transformers, decoded greedily (or by sampling: ``decoding``).

    Config keys (a model entry): gguf | path | hub (+ revision, cache_dir, offline), dtype,
    device, chat_template (wrap raw prompts in the model's chat template; default false),
    batch_size (slots decoded together, or ``auto``: as many as the GPU's free memory holds),
    threads, attention (``ATTENTION_MODES``; default standard), cuda_graphs (default true: on a
    CUDA device each decoding step is replayed as a CUDA graph; ignored on a CPU), decoding
    (``earnest.backends.decoding.Decoding``: temperature, top_p, top_k, seed, samples; default greedy),
    model_args (``from_pretrained`` arguments of ``earnest.backends.decoding.SAFE_MODEL_ARGS``),
    trust_remote_code (run the checkpoint's own code: only when the entry says true), adapter (a PEFT
    adapter directory, merged into the weights once loaded).
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
        self.decoding = Decoding.from_cfg(model_name, cfg)
        self.model_args = check_model_args(model_name, cfg)
        self.adapter = check_adapter(model_name, cfg)
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
        trust = {"trust_remote_code": True} if self.model_args.get("trust_remote_code") else {}
        self.tokenizer = AutoTokenizer.from_pretrained(source, **kwargs, **trust)
        model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype, **kwargs, **self.model_args)
        if self.adapter is not None:
            # merged into the weights: earnest's decoder then runs a plain model (its attention and cache)
            from peft import PeftModel

            model = PeftModel.from_pretrained(model, self.adapter["path"], revision=self.adapter["revision"]
                                              ).merge_and_unload()
        self.model = model.to(self.device)
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

        # model_args and adapter only where given: a greedy entry without them is described as before
        loaded = {k: v for k, v in (("model_args", self.model_args), ("adapter", self.adapter)) if v}
        return {"backend": "transformers", **self.decoding.describe(),
                "dtype": str(self.model.dtype).removeprefix("torch."),
                "device": self.device.type, "attention": self.attention, "chat_template": self.chat_template,
                "batch_size": self.batch_size, "batch": self.last_decode.get("batch"),
                "cuda_graphs": self.cuda_graphs and self.device.type == "cuda",
                "transformers": transformers.__version__, "torch": torch.__version__, **loaded}

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
        """Answers for ``requests`` in order (greedy, or drawn as ``decoding`` says, each request with its own
        seed: :func:`earnest.backends.decoding.request_seed`); ``on_result(result)`` is called as each finishes."""
        if not requests:
            return []
        self._requests = requests   # each row's stop strings and fidelity (see _new_state)
        self._seeds = [request_seed(self.decoding.seed, r.key, r.sample) for r in requests]
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
                                  additive_mask=self._additive_mask, graphs=graphs, sampler=self._sampler())
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

    def _sampler(self):
        """The step's token rule: None (greedy, the argmax) or the draw of ``decoding``."""
        if not self.decoding.sampling:
            return None
        return lambda logits, seeds, positions: sample_tokens(logits, seeds, positions, self.decoding)

    def _prefill(self, cache, step, chosen: list[int], owns: list[list[int]], prefix: tuple[int, ...],
                 long: bool = False, reqs: list[int] | None = None) -> list[int]:
        """Run the requests' own tokens against the prefix (left-padded, together) and write their
        keys/values into the slots ``chosen``; returns each request's first generated token. The prefix's
        cache is read in place by every row (``slots.PrefillCache``), never copied per row; ``long``:
        the prefix computed with LongRoPE's long factors (``earnest.backends.rope``); ``reqs``: the requests
        (indices) the slots take, whose seeds a sampled first token uses."""
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
        idx = torch.tensor(chosen, device=dev)
        lengths = torch.tensor([len(o) for o in owns], device=dev)
        if self.decoding.sampling:
            seeds = torch.tensor([self._seeds[i] for i in reqs], dtype=torch.long, device=dev)
            step.seed[idx] = seeds
            first = sample_tokens(logits, seeds, P + lengths, self.decoding)   # the token at position P + own
        else:
            first = logits.argmax(-1)
        for li in range(len(pc.k)):
            for j, (s, own) in enumerate(zip(chosen, owns)):
                n = len(own)
                cache.write_slot(s, li, pc.k[li][j, :, Lc - n:], pc.v[li][j, :, Lc - n:], n)
        del pc
        step.tok[idx, 0] = first
        step.pos[idx, 0] = P + lengths
        cache.write_pos[idx] = cache.base + lengths
        return first.tolist()

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
