"""How a model's answers are drawn (a model entry's ``decoding:``) and what ``from_pretrained`` may be
given (its ``model_args:``), for every backend alike.

``decoding: {temperature, top_p, top_k, seed, samples}``: temperature 0 (the default) is greedy decoding,
the paper's setting; above 0 each token is drawn from the model's distribution at that temperature,
restricted to the ``top_k`` likeliest tokens and then to the smallest set whose probability reaches
``top_p`` (the order transformers' ``generate`` applies them in). ``samples: n`` asks each question n
times (one answer per sample; the generations table's ``sample`` column); the statistics average a
question's samples as they average epochs (``earnest.stats.glmm.EPOCHS``).

Reproducible by seed, whatever the batch: the random numbers of a token are a hash of (the request's
seed, the token's position, the vocabulary index) computed on the device (:func:`sample_tokens`), and a
request's seed is a hash of (``seed``, the request's key, its sample) (:func:`request_seed`). So an answer
depends on neither the batch size nor the order requests are decoded in nor on which slot holds it,
and the same config gives the same answers on a rerun. The OpenAI-compatible backend sends the same
request seed as the body's ``seed`` (servers such as vLLM honour it; whether an API does is the API's).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass

from earnest.schema import schema_default

#: the keys of ``decoding:`` (config/schema.yaml holds their defaults and ranges)
DECODING_KEYS = ("temperature", "top_p", "top_k", "seed", "samples")
_DEFAULT = {k: schema_default(f"models.*.decoding.{k}") for k in DECODING_KEYS}
#: the largest ``samples``: answers per question (each a full generation)
MAX_SAMPLES = 1000

_MASK32 = 0xFFFFFFFF


@dataclass(frozen=True)
class Decoding:
    """A model entry's ``decoding`` block, checked (:meth:`from_cfg`)."""

    temperature: float = float(_DEFAULT["temperature"])
    top_p: float = float(_DEFAULT["top_p"])
    top_k: int = int(_DEFAULT["top_k"])            # 0: no top-k cut
    seed: int = int(_DEFAULT["seed"])
    samples: int = int(_DEFAULT["samples"])

    @property
    def sampling(self) -> bool:
        """Whether tokens are drawn (temperature > 0) rather than taken greedily."""
        return self.temperature > 0

    @classmethod
    def from_cfg(cls, model_name: str, cfg: dict) -> "Decoding":
        """The ``decoding`` of ``models.<model_name>`` (absent: greedy, one sample), or ValueError naming
        the field and the fix."""
        where = f"models.{model_name}.decoding"
        block = cfg.get("decoding")
        if block is None:
            return cls()
        if not isinstance(block, dict):
            raise ValueError(f"{where}: a mapping of {', '.join(DECODING_KEYS)} is required, got {block!r}")
        unknown = sorted(set(block) - set(DECODING_KEYS), key=str)
        if unknown:
            import difflib

            near = difflib.get_close_matches(str(unknown[0]), DECODING_KEYS, n=1)
            raise ValueError(f"{where}.{unknown[0]}: unknown key{f' (did you mean {near[0]}?)' if near else ''}; "
                             f"known: {', '.join(DECODING_KEYS)}")

        def number(key, lo, hi, *, integer=False, lo_open=False):
            v = block.get(key, _DEFAULT[key])
            ok = not isinstance(v, bool) and (isinstance(v, int) if integer else isinstance(v, (int, float)))
            if not ok or not math.isfinite(v) or v < lo or (lo_open and v == lo) or v > hi:
                kind = "an integer" if integer else "a number"
                rng = f"above {lo} and at most {hi}" if lo_open else f"from {lo} to {hi}"
                raise ValueError(f"{where}.{key}: {kind} {rng} is required, got {v!r}")
            return v

        d = cls(temperature=float(number("temperature", 0.0, 100.0)),
                top_p=float(number("top_p", 0.0, 1.0, lo_open=True)),
                top_k=int(number("top_k", 0, 10_000_000, integer=True)),
                seed=int(number("seed", 0, 2**63 - 1, integer=True)),
                samples=int(number("samples", 1, MAX_SAMPLES, integer=True)))
        if not d.sampling:   # a setting of sampling that greedy decoding would ignore
            drawn = [k for k in ("top_p", "top_k", "seed", "samples") if getattr(d, k) != _DEFAULT[k]]
            if drawn:
                raise ValueError(f"{where}.{drawn[0]}: has no effect with temperature 0 (greedy decoding: every "
                                 f"sample the same answer); set {where}.temperature above 0 to draw tokens, or "
                                 f"remove {drawn[0]}")
        return d

    def describe(self) -> dict:
        """What the generations table records (``decoding`` column): greedy, or the sampling settings."""
        if not self.sampling:
            return {"decoding": "greedy"}
        return {"decoding": "sample", **{k: v for k, v in asdict(self).items()}}


def request_seed(seed: int, key: str, sample: int) -> int:
    """The seed of one request (a 31-bit integer): a hash of the run's ``seed``, the request's key and its
    sample number, so each question and sample draws its own numbers and no batch changes them."""
    blob = f"{int(seed)}\x00{key}\x00{int(sample)}".encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.sha256(blob).digest()[:4], "big") & 0x7FFFFFFF


def _mul32(x, m: int):
    # x * m mod 2**32 for int64 tensors holding values below 2**32, without int64 overflow
    return (x * (m & 0xFFFF) + (((x * (m >> 16)) & 0xFFFF) << 16)) & _MASK32


def _mix32(x):
    # a 32-bit integer hash (xor-shift-multiply), elementwise
    x = x ^ (x >> 16)
    x = _mul32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = _mul32(x, 0x846CA68B)
    return x ^ (x >> 16)


def uniforms(seeds, positions, vocab: int):
    """``(rows, vocab)`` numbers in (0, 1): a hash of (row seed, position, vocabulary index), the same on any
    device and in any batch. ``seeds``, ``positions``: int64 tensors of shape ``(rows,)``."""
    import torch

    row = _mix32((seeds & _MASK32) ^ _mul32(positions & _MASK32, 0x9E3779B1))
    v = torch.arange(vocab, device=seeds.device, dtype=torch.int64)
    h = _mix32(row[:, None] ^ _mul32(v + 1, 0x85EBCA77)[None, :])
    h = _mix32(h ^ (row[:, None] >> 7))
    return (h.to(torch.float64) + 0.5) / 4294967296.0


def sample_tokens(logits, seeds, positions, decoding: Decoding):
    """The next token of each row: greedy (argmax) for temperature 0, else drawn from
    softmax(logits / temperature) restricted by top_k and top_p, by the Gumbel-max rule with the
    counter-based numbers of :func:`uniforms` (``positions``: the drawn token's position in its row)."""
    import torch

    if not decoding.sampling:
        return logits.argmax(-1)
    scores = logits.float() / decoding.temperature
    vocab = scores.shape[-1]
    if 0 < decoding.top_k < vocab:
        kth = torch.topk(scores, decoding.top_k, dim=-1).values[:, -1:]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    if decoding.top_p < 1.0:
        ordered, idx = torch.sort(scores, dim=-1, descending=True)
        probs = ordered.softmax(-1)
        # drop a token when the likelier ones already reach top_p (the likeliest is always kept)
        drop = (probs.cumsum(-1) - probs) >= decoding.top_p
        scores = scores.masked_fill(drop.scatter(-1, idx, drop), float("-inf"))
    gumbel = -torch.log(-torch.log(uniforms(seeds, positions, vocab)))
    return (scores.double() + gumbel).argmax(-1)


# ---------------------------------------------------------------------------------------------- model_args

#: ``model_args`` keys passed to ``from_pretrained`` as given: they choose among the checkpoint's own files
#: or how they are read, and run no code of the checkpoint's
SAFE_MODEL_ARGS = {
    "subfolder": "the checkpoint's folder inside the repository or directory",
    "variant": "the weights file variant (model.<variant>.safetensors)",
    "use_safetensors": "read only safetensors files (true) or only PyTorch's (false)",
    "low_cpu_mem_usage": "load the weights without a second copy in memory",
    "attn_implementation": "transformers' attention kernel for the calls earnest's decoder leaves to the model",
    "code_revision": "the commit of the checkpoint's own code (with trust_remote_code: true)",
}
#: keys a model entry sets elsewhere: refused in ``model_args`` with the key that sets them
SET_ELSEWHERE = {
    "trust_remote_code": "models.<name>.trust_remote_code: true (the entry's own key, so that running the "
                         "checkpoint's code is a decision the entry states)",
    "revision": "models.<name>.revision", "dtype": "models.<name>.dtype", "torch_dtype": "models.<name>.dtype",
    "cache_dir": "models.<name>.cache_dir or fetch.cache_dir", "local_files_only": "models.<name>.offline",
    "gguf_file": "models.<name>.gguf", "device_map": "models.<name>.device",
    "token": "the environment (HF_TOKEN), never the config", "adapter": "models.<name>.adapter",
}


def check_model_args(model_name: str, cfg: dict) -> dict:
    """The ``from_pretrained`` keyword arguments of a model entry's ``model_args`` and
    ``trust_remote_code``, or ValueError naming the field: a key not in :data:`SAFE_MODEL_ARGS` is
    refused (those of :data:`SET_ELSEWHERE` with the key that sets them), and ``trust_remote_code``
    only comes from the entry's own ``trust_remote_code: true``."""
    where = f"models.{model_name}"
    args = cfg.get("model_args")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ValueError(f"{where}.model_args: a mapping of from_pretrained arguments is required, got {args!r}")
    out = {}
    for key, value in args.items():
        if key in SET_ELSEWHERE:
            raise ValueError(f"{where}.model_args.{key}: not a model_args key; set it as "
                             f"{SET_ELSEWHERE[key].replace('<name>', model_name)}")
        if key not in SAFE_MODEL_ARGS:
            raise ValueError(f"{where}.model_args.{key}: not among the arguments earnest passes to from_pretrained "
                             f"({', '.join(sorted(SAFE_MODEL_ARGS))}); an argument outside this list could run "
                             "code or change what the model computes without the entry saying so")
        if key in ("use_safetensors", "low_cpu_mem_usage") and not isinstance(value, bool):
            raise ValueError(f"{where}.model_args.{key}: true or false is required, got {value!r}")
        if key not in ("use_safetensors", "low_cpu_mem_usage") and not isinstance(value, str):
            raise ValueError(f"{where}.model_args.{key}: text is required, got {value!r}")
        out[key] = value
    trust = cfg.get("trust_remote_code", False)
    if not isinstance(trust, bool):
        raise ValueError(f"{where}.trust_remote_code: true or false is required, got {trust!r}")
    if "code_revision" in out and not trust:
        raise ValueError(f"{where}.model_args.code_revision: only with {where}.trust_remote_code: true")
    if trust:
        out["trust_remote_code"] = True
    return out


def check_adapter(model_name: str, cfg: dict) -> dict | None:
    """A model entry's ``adapter`` (a PEFT adapter: ``{path, revision}``; a bare string is the path), or
    None; ValueError naming the field for anything else or a path that is no adapter directory."""
    from pathlib import Path

    where = f"models.{model_name}.adapter"
    a = cfg.get("adapter")
    if a is None:
        return None
    if isinstance(a, str):
        a = {"path": a}
    if not isinstance(a, dict) or not isinstance(a.get("path"), str) or not a["path"]:
        raise ValueError(f"{where}: a PEFT adapter directory (path: DIR, optional revision: COMMIT) is required, "
                         f"got {a!r}")
    unknown = sorted(set(a) - {"path", "revision"})
    if unknown:
        raise ValueError(f"{where}.{unknown[0]}: unknown key (known: path, revision)")
    if a.get("revision") is not None and not isinstance(a["revision"], str):
        raise ValueError(f"{where}.revision: text (a commit id) is required, got {a['revision']!r}")
    path = Path(a["path"]).expanduser()
    if not (path / "adapter_config.json").is_file():
        raise FileNotFoundError(f"{where}.path: {path} holds no adapter_config.json (a PEFT adapter directory, as "
                                "PeftModel.save_pretrained writes it)")
    return {"path": str(path), "revision": a.get("revision")}


def check_system_prompt(where: str, value) -> str | None:
    """A ``system_prompt`` (text, or None), or ValueError naming ``where``."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}.system_prompt: non-empty text is required, got {value!r}")
    return value
