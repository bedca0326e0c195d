"""LongRoPE (Phi-3) chosen per row, as a per-question ``generate`` chooses it.

transformers' LongRoPE picks the short or the long rescaling factors from the largest position of the
whole call (``max(position_ids) + 1 > original_max_position_embeddings``), so in a batch every row gets
the longest row's factors. Phi-3's ``generate`` for one question, besides, recomputes the whole cache
with the long factors at the step where the sequence first passes the original maximum
(``Phi3ForCausalLM.prepare_inputs_for_generation``). So, per question: a sequence of at most
``original`` tokens is computed with the short factors throughout; past it, everything (prompt, answer
so far, each later token) with the long ones.

:class:`LongRopePerRow` replaces the forward of the model's rotary embedding with one that picks the
factors row by row from that row's own largest position (``force_long`` computes a shared prefix
alone with the long factors, for the rows that need it); the decoder
(``earnest.backends.schedule``) recomputes a row's cache with the long factors at the step where it
crosses, as ``generate`` does.
"""

from __future__ import annotations


class LongRopePerRow:
    """Per-row LongRoPE on every rotary embedding of ``model`` whose rope type is longrope."""

    def __init__(self, modules, original: int):
        self.modules = modules
        self.original = original
        self.force_long = False
        self._long: dict = {}
        for mod in modules:
            mod.forward = self._forward_of(mod)

    @classmethod
    def attach(cls, model) -> "LongRopePerRow | None":
        """The per-row rule on ``model``, or None where no rotary embedding of it is LongRoPE."""
        mods = [m for m in model.modules() if getattr(m, "rope_type", None) == "longrope" and hasattr(m, "inv_freq")]
        if not mods:
            return None
        cfg = mods[0].config
        params = getattr(cfg, "rope_parameters", None) or {}
        original = params.get("original_max_position_embeddings") or getattr(cfg, "original_max_position_embeddings")
        return cls(mods, int(original))

    def _long_inv_freq(self, mod, device):
        key = (id(mod), str(device))
        if key not in self._long:
            from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

            inv, _ = ROPE_INIT_FUNCTIONS["longrope"](mod.config, device, seq_len=self.original + 1)
            self._long[key] = inv.to(device)
        return self._long[key]

    def _forward_of(self, mod):
        import torch

        def forward(x, position_ids):
            short = mod.original_inv_freq.to(device=x.device, dtype=torch.float)
            long = self._long_inv_freq(mod, x.device).to(dtype=torch.float)
            if self.force_long:
                inv = long.expand(position_ids.shape[0], -1)
            else:
                row_long = position_ids.amax(-1) + 1 > self.original                  # (rows,)
                inv = torch.where(row_long[:, None], long[None], short[None])          # (rows, dim/2)
            freqs = position_ids[..., None].float() * inv[:, None, :]
            emb = torch.cat((freqs, freqs), dim=-1)
            cos = emb.cos() * mod.attention_scaling
            sin = emb.sin() * mod.attention_scaling
            return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)

        return forward
