"""Model backends behind one interface (:class:`earnest.backends.base.Backend`), chosen by name.

``load_backend(name, model_cfg)`` builds the backend a model's config entry names under
``backend:``. Each backend module registers itself in ``BACKENDS``.
"""

from __future__ import annotations

import importlib

from .base import STOP_REASONS, Backend, GenerationRequest, GenerationResult, is_error

# backend name in the config -> "module:factory"; the factory takes (model_name, model_cfg)
BACKENDS = {
    "transformers": "earnest.backends.hf:TransformersBackend",
    "openai": "earnest.backends.openai_http:OpenAIBackend",
}


def load_backend(model_name: str, model_cfg: dict) -> Backend:
    """Instantiate the backend named by ``model_cfg['backend']`` for ``model_name``."""
    kind = model_cfg.get("backend", "transformers")
    if kind not in BACKENDS:
        raise ValueError(
            f"models.{model_name}.backend: unknown backend {kind!r}; known: {', '.join(sorted(BACKENDS))}"
        )
    module_name, factory = BACKENDS[kind].split(":")
    cls = getattr(importlib.import_module(module_name), factory)
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise TypeError(f"backend {kind!r}: {BACKENDS[kind]} does not implement earnest.backends.base.Backend")
    return cls(model_name, model_cfg)


__all__ = ["Backend", "GenerationRequest", "GenerationResult", "STOP_REASONS", "is_error", "BACKENDS",
           "load_backend"]
