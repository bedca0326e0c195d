"""Loading a transformers model: which files (hub, checkpoint directory, GGUF), its dtype and device,
its tokenizer alone, and a GGUF file converted once into a checkpoint (checked tensor by tensor)."""

from __future__ import annotations

import copy
import importlib.util
import os
import re
import time
from pathlib import Path

from earnest.schema import schema_default

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
