"""A decoding cache sized by the batch, and the decoding step that runs over it (eager or as a CUDA graph).

The transformers backend (``earnest.backends.hf``) keeps a job's requests in ``B`` slots. Every
slot has a fixed number of key/value columns: the few-shot prefix all prompts of the job share,
then room for the longest own prompt tokens of the job plus ``max_new_tokens``. A request's own
tokens are written at the start of its slot's own columns, each generated token at the next
column; when its answer ends, the next request overwrites the slot. So the cache's size and a
step's cost depend on the batch and the longest request, never on how many requests a job has.

Layouts (``shared``): standard keeps the prefix's columns in every row (``[prefix | own | answer]``,
attended by the model's own attention implementation through a 4-D mask); shared_prefix keeps the
prefix once (``(1, heads, P, dim)``) and the rows' own columns apart, and
:func:`earnest.backends.attention.shared_prefix_attention` attends to the prefix once for the whole
batch and merges the two softmax parts exactly (log-sum-exp). A request enters its slot through a
prefill (:class:`PrefillCache`) that reads the prefix in place: no row holds a copy of it while its
own tokens are computed.

A step reads and writes only static buffers (the tokens to feed, their positions, the column each
row writes, the mask), so the same step can be captured as a CUDA graph and replayed: one launch
instead of ~1,000 per step. Rows that no longer hold a request still run (their results are
ignored); at the end of a job the live rows are moved to the front and the step runs on fewer rows.
"""

from __future__ import annotations

import functools
import logging

log = logging.getLogger(__name__)

from .attention import SHARED_PREFIX_ATTR
#: a captured step attends over the live columns rounded up to a multiple of this (one graph per
#: row count and span), so early steps of long-answer jobs do not read the unused end of every slot
SPAN_BUCKET = 256


def _cache_base():
    from transformers.cache_utils import Cache

    return Cache


@functools.lru_cache(maxsize=1)
def slot_cache_class():
    """The :class:`SlotCache` class (built lazily so that importing earnest does not import transformers)."""

    class SlotCache(_cache_base()):
        """Key/value buffers of ``batch`` slots × ``columns`` for every layer; see the module doc.

        ``write_pos`` (long, one per slot) is the column each row's next token is written to;
        ``rows`` is how many leading slots a step runs on; ``span`` is how many leading columns a
        step attends over (all of them in a captured graph, the live ones in eager mode).
        """

        def __init__(self, prefix_layers, n_layers: int, batch: int, own_columns: int, shared: bool,
                     kv_shape, dtype, device):
            super().__init__(layers=[])
            import torch

            heads, kdim, vdim = kv_shape
            self.shared = bool(shared and prefix_layers)
            P = prefix_layers[0][0].shape[2] if prefix_layers else 0
            self.prefix_len = P
            self.base = 0 if self.shared else P            # first own column of a slot
            self.columns = self.base + own_columns
            self.batch = batch
            self.rows = batch
            self.span = self.columns
            self.k, self.v, self.pk, self.pv = [], [], [], []
            for layer in range(n_layers):
                k = torch.zeros((batch, heads, self.columns, kdim), dtype=dtype, device=device)
                v = torch.zeros((batch, heads, self.columns, vdim), dtype=dtype, device=device)
                if prefix_layers:
                    pk, pv = prefix_layers[layer]
                    if self.shared:
                        self.pk.append(pk.contiguous())
                        self.pv.append(pv.contiguous())
                    else:
                        k[:, :, :P] = pk
                        v[:, :, :P] = pv
                self.k.append(k)
                self.v.append(v)
            self.write_pos = torch.zeros(batch, dtype=torch.long, device=device)

        @staticmethod
        def bytes_per_slot(n_layers: int, kv_shape, columns: int, itemsize: int) -> int:
            heads, kdim, vdim = kv_shape
            return n_layers * heads * (kdim + vdim) * columns * itemsize

        def nbytes(self) -> int:
            return sum(t.numel() * t.element_size() for t in (*self.k, *self.v, *self.pk, *self.pv))

        def update(self, key_states, value_states, layer_idx, *args, **kwargs):
            b, h, n, d = key_states.shape
            if n != 1:
                raise RuntimeError("a slot cache takes one token per row and step; prompts are prefilled apart")
            k, v = self.k[layer_idx][:b], self.v[layer_idx][:b]
            at = self.write_pos[:b].view(b, 1, 1, 1)
            k.scatter_(2, at.expand(b, h, 1, d), key_states)
            v.scatter_(2, at.expand(b, h, 1, value_states.shape[-1]), value_states)
            keys, values = k[:, :, : self.span], v[:, :, : self.span]
            if self.shared:
                setattr(keys, SHARED_PREFIX_ATTR, (self.pk[layer_idx], self.pv[layer_idx]))
            return keys, values

        def get_seq_length(self, layer_idx: int = 0) -> int:
            return self.prefix_len + self.span - self.base

        def write_slot(self, slot: int, layer: int, keys, values, length: int) -> None:
            """Write one request's own prompt tokens (heads, length, dim) at the start of ``slot``'s own columns."""
            self.k[layer][slot, :, self.base:self.base + length] = keys
            self.v[layer][slot, :, self.base:self.base + length] = values

        def write_prefix(self, slot: int, layer: int, keys, values) -> None:
            """Standard layout: put another prefix's keys/values ``(1, heads, P, dim)`` into ``slot``'s first
            columns (LongRoPE rows past original_max_position_embeddings hold the long-factor prefix)."""
            self.k[layer][slot, :, :self.prefix_len] = keys[0]
            self.v[layer][slot, :, :self.prefix_len] = values[0]

        def gather_rows(self, src) -> None:
            """Move the rows ``src`` (a long tensor) to the front: row j gets row src[j]."""
            n = src.shape[0]
            for buf in (*self.k, *self.v):
                buf[:n] = buf.index_select(0, src)
            self.write_pos[:n] = self.write_pos.index_select(0, src)

    return SlotCache


@functools.lru_cache(maxsize=1)
def prefill_cache_class():
    """The :class:`PrefillCache` class (built lazily, as :func:`slot_cache_class`)."""

    class PrefillCache(_cache_base()):
        """The cache of one prefill call: the requests' own tokens run against the shared prefix, which is
        read in place (one copy, ``(1, heads, P, dim)`` per layer, never repeated per row). Every layer's
        new keys/values are kept (``k``, ``v``: ``(rows, heads, own tokens, dim)``) for the caller to
        write into the slots; attention over prefix + own tokens is :func:`shared_prefix_attention`'s."""

        def __init__(self, prefix_layers, n_layers: int):
            super().__init__(layers=[])
            self.prefix = list(prefix_layers or [])
            self.prefix_len = self.prefix[0][0].shape[2] if self.prefix else 0
            self.k = [None] * n_layers
            self.v = [None] * n_layers

        def update(self, key_states, value_states, layer_idx, *args, **kwargs):
            if self.k[layer_idx] is not None:
                raise RuntimeError("a prefill cache takes one forward call")
            self.k[layer_idx], self.v[layer_idx] = key_states, value_states
            if not self.prefix:
                return key_states, value_states
            keys = key_states[...]                # a view to carry the prefix on (not the stored tensor)
            setattr(keys, SHARED_PREFIX_ATTR, self.prefix[layer_idx])
            return keys, value_states

        def get_seq_length(self, layer_idx: int = 0) -> int:
            return self.prefix_len

    return PrefillCache


class SlotStep:
    """One decoding step (greedy, or drawn by ``sampler``) over the first ``rows`` slots of a :class:`SlotCache`.

    Static buffers: ``tok`` (the token each row feeds), ``pos`` (its position), the cache's
    ``write_pos``; a step feeds them, takes the argmax of the last logits into ``out``, and moves
    every row one token on (``tok = out``, ``pos += 1``, ``write_pos += 1``). With ``graphs`` (CUDA
    only) each row count's step is captured once as a CUDA graph and replayed; the first replay of
    each is checked against the same step run eagerly, and a capture that fails or disagrees turns
    graphs off with a warning, so the answers never depend on it.
    """

    def __init__(self, model, cache, *, cache_kw: str, keep_kw: dict, additive_mask: bool, graphs: bool,
                 sampler=None):
        import torch

        self.torch = torch
        self.model, self.cache = model, cache
        self.cache_kw, self.keep_kw = cache_kw, keep_kw
        self.additive = additive_mask
        dev = cache.write_pos.device
        B = cache.batch
        self.tok = torch.zeros((B, 1), dtype=torch.long, device=dev)
        self.pos = torch.zeros((B, 1), dtype=torch.long, device=dev)
        self.out = torch.zeros(B, dtype=torch.long, device=dev)
        # sampling (earnest.backends.decoding): each row's request seed; ``sampler(logits, seeds,
        # positions)`` picks the tokens (None: greedy, the argmax)
        self.seed = torch.zeros(B, dtype=torch.long, device=dev)
        self.sampler = sampler
        self.cols = torch.arange(cache.columns, device=dev)
        self.graphs_on = bool(graphs) and dev.type == "cuda"
        self._graphs: dict[tuple[int, int], object] = {}
        self._pool = None           # one memory pool for all of a job's graphs (never replayed at once)
        self.graph_note = "off" if not self.graphs_on else "on"

    def gather_rows(self, src) -> None:
        """Move the rows ``src`` (a long tensor) to the front, in the cache and in the step's buffers."""
        n = src.shape[0]
        self.cache.gather_rows(src)
        for buf in (self.tok, self.pos, self.seed):
            buf[:n] = buf.index_select(0, src)

    def _mask(self, rows: int, span: int):
        torch = self.torch
        allowed = (self.cols[:span][None, :] <= self.cache.write_pos[:rows, None])[:, None, None, :]
        if not self.additive:
            return allowed
        dtype = self.cache.k[0].dtype
        return torch.zeros(allowed.shape, dtype=dtype, device=allowed.device).masked_fill(
            ~allowed, torch.finfo(dtype).min)

    def _body(self, rows: int, span: int):
        c = self.cache
        c.rows, c.span = rows, span
        out = self.model(input_ids=self.tok[:rows], position_ids=self.pos[:rows],
                         attention_mask=self._mask(rows, span), use_cache=True,
                         **{self.cache_kw: c}, **self.keep_kw)
        logits = out.logits[:, -1, :]
        # the token drawn is at position pos + 1 of its row
        nxt = logits.argmax(-1) if self.sampler is None else self.sampler(logits, self.seed[:rows],
                                                                         self.pos[:rows, 0] + 1)
        self.out[:rows].copy_(nxt)
        self.tok[:rows, 0].copy_(nxt)
        self.pos[:rows].add_(1)
        # a row past its last column (a dead slot still stepping) keeps rewriting its last column
        c.write_pos[:rows].add_(1).clamp_(max=c.columns - 1)

    def run(self, rows: int, span: int):
        """One step over the first ``rows`` slots, attending over at least the first ``span``
        columns (a captured step: ``span`` rounded up to ``SPAN_BUCKET``). Returns ``out[:rows]``
        (a device tensor)."""
        torch = self.torch
        with torch.inference_mode():
            if self.graphs_on:
                span = min(self.cache.columns, -(-span // SPAN_BUCKET) * SPAN_BUCKET)
                graph = self._graphs.get((rows, span))
                if graph is not None:
                    graph.replay()
                    return self.out[:rows]
                if self._capture(rows, span):      # its check's replay was this step
                    return self.out[:rows]
            self._body(rows, span)
        return self.out[:rows]

    def _capture(self, rows: int, span: int):
        """Capture the step over ``rows`` slots and ``span`` columns as a CUDA graph, checked against
        an eager step on the same inputs. True: the check's replay has moved every row one token on,
        which is the step being asked for. False (graphs off) where capture fails or disagrees: the
        rows are as they were."""
        torch = self.torch
        c = self.cache
        saved = [t[:rows].clone() for t in (self.tok, self.pos, c.write_pos)]

        def restore():
            for t, s in zip((self.tok, self.pos, c.write_pos), saved):
                t[:rows].copy_(s)

        try:
            self._body(rows, span)                 # eager reference (writes the same column the graph writes)
            expected = self.out[:rows].clone()
            restore()
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):            # warm-up on a side stream, as capture requires
                for _ in range(2):
                    self._body(rows, span)
                    restore()
            torch.cuda.current_stream().wait_stream(stream)
            graph = torch.cuda.CUDAGraph()
            if self._pool is None:
                self._pool = torch.cuda.graph_pool_handle()
            with torch.cuda.graph(graph, pool=self._pool):
                self._body(rows, span)
            restore()
            graph.replay()
            torch.cuda.synchronize()
            if not torch.equal(self.out[:rows], expected):
                raise RuntimeError("the captured step's tokens differ from the eager step's")
        except Exception as exc:  # noqa: BLE001 -- any failure: decode eagerly, answers unchanged
            log.warning("CUDA graphs off for this job (%s: %s); decoding eagerly", type(exc).__name__, exc)
            torch.cuda.synchronize()
            restore()
            self.graphs_on = False
            self.graph_note = f"off ({type(exc).__name__})"
            self._graphs.clear()
            return False
        self._graphs[rows, span] = graph
        return True


def graph_sizes(batch: int) -> list[int]:
    """Row counts a job's step runs on in graph mode (one graph each): the batch and its halvings
    down to 8 rows; the tail of a job moves its live rows to the front and runs the smallest that holds them."""
    sizes, b = [batch], batch
    while b // 2 >= 8:
        b //= 2
        sizes.append(b)
    return sorted(sizes)
