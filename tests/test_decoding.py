"""The transformers backend's decoder (earnest.backends.hf, earnest.backends.slots): a cache sized by
the batch, answers equal to a plain per-question ``generate`` in both fidelity modes, the trace
columns of the generations table, batch sizing."""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import pytest
import torch

from earnest.backends import GenerationRequest, load_backend
from earnest.backends.base import EOS, MAX_NEW_TOKENS, STOP_STRING
from earnest.generation import TRACE_COLUMNS, checkpoint_dir, generate_dataset, write_parquet_atomic
from earnest.gsm.prompts import load_formats

from test_generation import EMBEDDED_GGUF, QUESTIONS, _items, _reference_ask

MODES = ("earnest", "reference")


def _tiny(tiny_model_dir, **kw):
    return load_backend("tiny", {"backend": "transformers", "path": str(tiny_model_dir), **kw})


def _plain_earnest(be, prompt: str, stop: tuple[str, ...], max_new_tokens: int):
    """One question alone through ``model.generate`` with earnest mode's rule written out: the
    generation config's EOS tokens end the answer, and after every token the whole decoded answer
    is searched for the stop strings. Returns (text cut before the stop string, new tokens, reason)."""
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
        new, reason = new[:-1], EOS
    else:
        reason = None
    text = tok.decode(new, skip_special_tokens=True)
    cut = min((i for i in (text.find(s) for s in stop) if i >= 0), default=-1)
    if cut >= 0:
        return text[:cut], len(new), STOP_STRING
    return text, len(new), reason or MAX_NEW_TOKENS


def _requests(be, prompts: list[str], fidelity: str, max_new_tokens: int) -> list[GenerationRequest]:
    """Requests whose stop strings the model reaches at different steps (taken from a free run), so
    that answers end at different times and slots are refilled mid-flight."""
    free = be.generate([GenerationRequest(key=str(i), prompt=p) for i, p in enumerate(prompts)], max_new_tokens)
    reqs = []
    for i, (p, r) in enumerate(zip(prompts, free)):
        text = r.response
        end = 2 + (i * 5) % max(1, len(text) - 1)
        # the shortest text ending at `end` that occurs nowhere before: the answer reaches it there
        stop = next((text[end - k:end] for k in range(1, end + 1) if text[end - k:end] not in text[:end - 1]), "")
        reqs.append(GenerationRequest(key=str(i), prompt=p, stop=(stop,) if stop.strip() else ("\nQ:",),
                                      fidelity=fidelity))
    return reqs


def _check_equal(be, reqs, results, max_new_tokens):
    for req, res in zip(reqs, results):
        if req.fidelity == "reference":
            assert res.response == _reference_ask(be.tokenizer, be.model, req.prompt, req.stop, max_new_tokens), req.key
        else:
            assert (res.response, res.new_tokens, res.stop_reason) == _plain_earnest(be, req.prompt, req.stop,
                                                                                    max_new_tokens), req.key


@pytest.mark.parametrize("fidelity", MODES)
@pytest.mark.parametrize("jobs", [1, 7, 48])
def test_tiny_model_answers_equal_per_question_generate(tiny_model_dir, fidelity, jobs):
    """Jobs of 1, 7 and 48 requests at batch sizes 1, 4 and 16, in both fidelity modes: every answer
    is the one a plain per-question ``generate`` gives (text, and in earnest mode its token count and
    stop reason); with the GPU's refill and pipelining policies too. 48 is three times the largest
    batch: slots refilled many times at every batch size, in groups (``B // 8`` at 16) and the tail
    on halving row counts (200 before: the same paths, four times the cost)."""
    fmt = load_formats(fidelity=fidelity)["gsm"]
    prompts = [fmt.render(QUESTIONS[i % len(QUESTIONS)] + f" ({i})") for i in range(jobs)]
    be = _tiny(tiny_model_dir, batch_size=4)
    reqs = _requests(be, prompts, fidelity, 16)
    for batch in (4, 1, 16):
        be.batch_size = batch
        out = be.generate(reqs, 16)
        assert [r.key for r in out] == [r.key for r in reqs]
        if batch == 4:
            _check_equal(be, reqs, out, 16)
            first = out
        else:
            assert [(r.response, r.new_tokens, r.stop_reason) for r in out] == \
                [(r.response, r.new_tokens, r.stop_reason) for r in first]
    # the GPU's policies on the CPU: refills in groups and the tail on halving row counts; the next
    # step launched before the current one's tokens are checked
    be.batch_size = 16
    for be._grouped, be._pipelined in ((True, False), (False, True), (True, True)):
        again = be.generate(reqs, 16)
        assert [(r.response, r.new_tokens, r.stop_reason) for r in again] == \
            [(r.response, r.new_tokens, r.stop_reason) for r in first]
    if jobs == 48:
        assert be.last_decode["prefills"] > 1              # slots were refilled
        if fidelity == "earnest":                          # answers ended at different steps
            assert len({r.new_tokens for r in first}) >= 3


@pytest.fixture(scope="module")
def smollm2():
    """The embedded model, loaded once for both fidelity modes (a request carries its mode)."""
    return load_backend("smollm2", {"backend": "transformers", "gguf": EMBEDDED_GGUF, "threads": 2, "batch_size": 4})


@pytest.mark.slow
@pytest.mark.parametrize("fidelity", MODES)
def test_embedded_model_answers_equal_per_question_generate(smollm2, fidelity):
    """The embedded model (SmolLM2-135M) with the 8-shot prompt: jobs of 1 and 7 requests at batch
    sizes 1, 4 and 16 give the per-question answers; a job of 64 short prompts (slots refilled many
    times at both batch sizes; the tiny model's jobs of 48 above) at 4 and 16 too."""
    be = smollm2
    be.batch_size = 4
    fmt = load_formats(fidelity=fidelity)["gsm"]
    for jobs, render, max_new in ((7, fmt.render, 12), (64, lambda q: f"Answer briefly.\nQ: {q}\nA:", 6)):
        prompts = [render(QUESTIONS[i % len(QUESTIONS)] + f" ({i})") for i in range(jobs)]
        reqs = _requests(be, prompts, fidelity, max_new)
        for batch in (4, 1, 16) if jobs < 64 else (4, 16):
            be.batch_size = batch
            out = be.generate(reqs, max_new)
            if batch == 4:
                _check_equal(be, reqs, out, max_new)
                first = out
                single = be.generate(reqs[:1], max_new)       # a job of one request
                assert single[0].response == out[0].response
            else:
                assert [(r.response, r.new_tokens) for r in out] == [(r.response, r.new_tokens) for r in first]
        if jobs == 64:
            assert be.last_decode["prefills"] > 1              # slots were refilled


def test_the_cache_is_sized_by_the_batch_not_the_job(tiny_model_dir):
    """A job of 10 and one of 500 requests at batch 4: the same columns per slot (prefix + longest own
    prompt + max_new_tokens) and the same cache bytes; the slots were reused ~125 times."""
    fmt = load_formats()["gsm"]
    seen = {}
    for attention in ("standard", "shared_prefix"):
        be = _tiny(tiny_model_dir, batch_size=4, attention=attention)
        for n in (10, 500):
            reqs = [GenerationRequest(key=str(i), prompt=fmt.render(QUESTIONS[i % len(QUESTIONS)]),
                                      stop=("\nQ:",)) for i in range(n)]
            out = be.generate(reqs, 8)
            assert len(out) == n
            seen[attention, n] = dict(be.last_decode)
        small, big = seen[attention, 10], seen[attention, 500]
        assert (small["batch"], small["columns"], small["cache_bytes"]) == (big["batch"], big["columns"],
                                                                           big["cache_bytes"])
        own = max(len(be.encode(r)) for r in reqs) - len(next(iter(be._prefix))[0])
        assert big["columns"] == (0 if attention == "shared_prefix" else len(next(iter(be._prefix))[0])) + own + 8
        assert big["prefills"] >= 500 // 4 // 2
    # one copy of the prefix instead of one per row
    assert seen["shared_prefix", 500]["cache_bytes"] < seen["standard", 500]["cache_bytes"]


def test_earnest_mode_ends_where_the_whole_answer_shows_the_stop_string(tiny_model_dir):
    """A stop string spread over more tokens than the decoding window (tokens that decode to nothing
    in between) is found when the answer ends, and the answer is cut back to where a whole-answer
    check would have ended it."""
    be = _tiny(tiny_model_dir)
    tok = be.tokenizer
    a, b = tok.convert_tokens_to_ids("Q"), tok.convert_tokens_to_ids(":")
    special = tok.convert_tokens_to_ids("<|im_start|>")
    be._requests = [GenerationRequest(key="k", prompt="x", stop=("Q:",))]
    st = be._new_state(0)
    tokens = [a] + [special] * (st["window"] + 2) + [b]
    ended = []
    for t in tokens + [a, a]:
        ended = be._feed([(0, st, t)], max_new_tokens=len(tokens) + 2)
        if ended:
            break
    assert ended == [(0, MAX_NEW_TOKENS)]                   # the window missed it
    res = be._result([1, 2], st, MAX_NEW_TOKENS)
    assert (res.stop_reason, res.new_tokens, res.response) == (STOP_STRING, len(tokens), "")


def test_generations_table_traces_every_answer(tiny_model_dir, tmp_path):
    """prompt_sha256 is the SHA-256 of the exact prompt bytes; fidelity and the decoding settings are
    recorded; answers checkpointed before the trace columns existed get their request's trace."""
    fmt = load_formats(fidelity="reference")["gsm"]
    items = _items(6)
    out = tmp_path / "gen.parquet"
    ckpt = checkpoint_dir(out)
    old = pd.DataFrame([dict(item_id=items.item_id[0], model="tiny", prompt="gsm", dataset="gsm_base", response="x",
                             prompt_tokens=3, new_tokens=1, stop_reason="eos", seconds=0.5)])
    write_parquet_atomic(old, ckpt / "part-00000000000000000001-1-000000.parquet")
    table = generate_dataset(items, fmt, _tiny(tiny_model_dir, batch_size=2), model="tiny", dataset="gsm_base",
                             output=out, max_new_tokens=6)
    assert set(TRACE_COLUMNS) <= set(table.columns) and table[TRACE_COLUMNS].notna().all().all()
    for row, q in zip(table.itertuples(), items.question):
        assert row.prompt_sha256 == hashlib.sha256(fmt.render(q).encode("utf-8")).hexdigest()
        assert row.fidelity == "reference"
        decoding = json.loads(row.decoding)
        assert decoding["backend"] == "transformers" and decoding["decoding"] == "greedy"
        assert decoding["max_new_tokens"] == 6 and decoding["stop"] == list(fmt.stop)
        assert decoding["batch_size"] == 2 and decoding["attention"] == "standard"
    assert table.response[0] == "x"          # the old checkpointed answer is kept, not asked again


def test_batch_size_auto_and_bad_values(tiny_model_dir):
    be = _tiny(tiny_model_dir, batch_size="auto")
    out = be.generate([GenerationRequest(key=str(i), prompt=f"Q: {i}") for i in range(3)], 4)
    assert len(out) == 3 and be.last_decode["batch"] == 3 and be.last_decode["graphs"] == "off"
    with pytest.raises(ValueError, match=r"models\.tiny\.batch_size: 0 is neither a positive integer nor 'auto'"):
        _tiny(tiny_model_dir, batch_size=0)
