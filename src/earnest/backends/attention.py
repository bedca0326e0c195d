"""earnest's attention: the shared few-shot prefix read in place, merged exactly with each row's own columns.

:func:`shared_prefix_attention` is registered with transformers and set as every model's attention
implementation (:func:`use_earnest_attention`). Keys that carry a shared prefix (``SHARED_PREFIX_ATTR``:
a prefill's :class:`earnest.backends.slots.PrefillCache`, a shared-prefix slot cache's decoding step)
are attended here: every row's queries against the one copy of the prefix, each row's against its own
columns, the two softmax parts merged (log-sum-exp). Every other call goes to the model's own
implementation (sdpa; eager for Gemma 2's soft-capping), so a standard decoding step computes what it
computed before.
"""

from __future__ import annotations

import functools

SHARED_PREFIX_ATTR = "_earnest_shared_prefix"   # attribute of the key tensor a shared-prefix cache returns


#: the model's own attention implementation, kept on its config when earnest's is set (``use_earnest_attention``)
FALLBACK_ATTR = "_earnest_fallback_attention"


def _fallback(module, query, key, value, attention_mask, **kwargs):
    """The model's own attention (sdpa, eager, ...) for keys that carry no shared prefix. Eager attention
    gets an additive mask (a boolean one converted; none: causal), as its models build for it."""
    import sys

    import torch
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    name = getattr(module.config, FALLBACK_ATTR, "sdpa")
    if name == "eager":
        fn = getattr(sys.modules[type(module).__module__], "eager_attention_forward")
        S, T = query.shape[2], key.shape[2]
        if attention_mask is None and S > 1:
            cols = torch.arange(T, device=query.device)
            attention_mask = (cols[None, :] <= torch.arange(S, device=query.device)[:, None] + (T - S))[None, None]
        if attention_mask is not None and attention_mask.dtype == torch.bool:
            attention_mask = torch.zeros(attention_mask.shape, dtype=query.dtype, device=query.device).masked_fill(
                ~attention_mask, torch.finfo(query.dtype).min)
        if attention_mask is not None:
            attention_mask = attention_mask[..., :T]
    else:
        fn = ALL_ATTENTION_FUNCTIONS[name]
    return fn(module, query, key, value, attention_mask, **kwargs)


def shared_prefix_attention(module, query, key, value, attention_mask, dropout: float = 0.0,
                            scaling: float | None = None, softcap: float | None = None, **kwargs):
    """Attention over a shared prefix read in place plus each row's own columns; the model's own
    attention for keys that carry no prefix.

    ``key`` carries the prefix's keys/values (one copy, ``SHARED_PREFIX_ATTR``): a decoding step over a
    shared-prefix slot cache (one query per row), or a prefill (``S`` queries per row, a
    :class:`PrefillCache`). Every row's queries attend to the prefix together (one matrix product per
    key/value head), each row's to its own columns under ``attention_mask`` (boolean, True = attend, or
    additive; ``(rows, 1, S, T)``), and the two softmax parts are merged exactly (log-sum-exp), in
    float32 for half-precision models. ``softcap`` (Gemma 2) caps the scores as its eager attention
    does. No step of it reads a value back to the host, so it can be captured in a CUDA graph.
    """
    import torch

    shared = getattr(key, SHARED_PREFIX_ATTR, None)
    if shared is None:
        if softcap is not None:
            kwargs["softcap"] = softcap
        return _fallback(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs)
    pk, pv = shared
    B, H, S, d = query.shape
    kvh = pk.shape[1]
    g = H // kvh
    scale = scaling if scaling is not None else d ** -0.5
    work = torch.float32 if query.dtype in (torch.float16, torch.bfloat16) else query.dtype

    def capped(scores):
        return scores if softcap is None else torch.tanh(scores / softcap) * softcap

    q = query.reshape(B, kvh, g * S, d).to(work)
    # the prefix: every row's queries of one key/value head against the one copy of the prefix
    qp = q.permute(1, 0, 2, 3).reshape(kvh, B * g * S, d)
    sp = capped(torch.matmul(qp, pk[0].to(work).transpose(-1, -2)) * scale)    # (kvh, B*g*S, P)
    mp = sp.amax(-1, keepdim=True)
    ep = torch.exp(sp - mp)
    lp, op = ep.sum(-1, keepdim=True), torch.matmul(ep, pv[0].to(work))        # (kvh, B*g*S, 1|d)
    mp, lp, op = (t.reshape(kvh, B, g * S, -1).permute(1, 0, 2, 3) for t in (mp, lp, op))
    # each row's own columns (its prompt tokens, its answer so far; the rest masked)
    ss = capped(torch.matmul(q, key.to(work).transpose(-1, -2)) * scale)        # (B, kvh, g*S, T)
    if attention_mask is not None:
        T = ss.shape[-1]
        mask = attention_mask[..., :T]
        if S > 1:
            mask = mask[:, :, None].expand(mask.shape[0], mask.shape[1], g, S, T).reshape(mask.shape[0], -1, g * S, T)
        ss = ss.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else ss + mask.to(work)
    ms = ss.amax(-1, keepdim=True)
    es = torch.exp(ss - ms)
    ls, os_ = es.sum(-1, keepdim=True), torch.matmul(es, value.to(work))
    m = torch.maximum(mp, ms)
    a, b = torch.exp(mp - m), torch.exp(ms - m)
    out = (a * op + b * os_) / (a * lp + b * ls)                               # (B, kvh, g*S, d)
    out = out.reshape(B, kvh, g, S, d).permute(0, 3, 1, 2, 4).reshape(B, S, H, d)
    return out.to(query.dtype).contiguous(), None


@functools.lru_cache(maxsize=1)
def register_shared_prefix_attention() -> str:
    """Register :func:`shared_prefix_attention` (and SDPA's mask) with transformers; its name."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    name = "earnest_shared_prefix"
    AttentionInterface.register(name, shared_prefix_attention)
    AttentionMaskInterface.register(name, sdpa_mask)
    return name


def use_earnest_attention(model) -> str:
    """Give ``model`` earnest's attention (:func:`shared_prefix_attention`), which hands keys without a
    shared prefix to the model's own implementation; returns that implementation's name."""
    own = model.config._attn_implementation
    name = register_shared_prefix_attention()
    if own != name:
        model.set_attn_implementation(name)
        for cfg in {id(c): c for c in (model.config, getattr(model.config, "text_config", None)) if c}.values():
            setattr(cfg, FALLBACK_ATTR, own)
        for mod in model.modules():
            cfg = getattr(mod, "config", None)
            if cfg is not None and not hasattr(cfg, FALLBACK_ATTR):
                setattr(cfg, FALLBACK_ATTR, own)
    return getattr(model.config, FALLBACK_ATTR, own)
