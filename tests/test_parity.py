"""The batched decoder against a plain per-question ``generate`` on tiny random models of every architecture
config/paper.yaml holds (Llama 3, Gemma, Gemma 2, Phi-2, Phi-3, Mistral v0.1 and v0.3; their real
transformers config classes), float32, both fidelity modes, both attention layouts, with refills. Phi-3's
LongRoPE is checked across its boundary: a tiny Phi-3 whose original_max_position_embeddings lies among
the prompts' lengths, so that some prompts are past it, some cross it while answering and some never."""

from __future__ import annotations

import pytest
import torch

from earnest.backends import GenerationRequest, load_backend

from test_decoding import _check_equal, _requests

MAX_NEW = 12
SHARED = "Answer each question with one number.\nQ: What is 2 + 2?\nA: 4\nQ: What is 3 + 5?\nA: 8\n"
QUESTIONS = ["1 + 1?", "How many trees are there if 15 trees stand and 6 more are planted today?",
             "3 cars?", "Tom has 12 apples and gives away 5 of them. Then he buys 7 more apples. How many?",
             "7 - 2?", "There are 3 cars in the parking lot and 2 more arrive. How many cars are in the lot?",
             "10 / 2?", "Sam reads 4 pages a day for 9 days and then 11 pages on the tenth day. Total?",
             "6 * 7?", "A shop sells 25 pens on Monday and twice as many on Tuesday. How many pens in total?"]
PROMPTS = [f"{SHARED}Q: {q}\nA:" for q in QUESTIONS]
SMALL = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             max_position_embeddings=4096)


def _configs(tok, original: int) -> dict:
    from transformers import Gemma2Config, GemmaConfig, LlamaConfig, MistralConfig, Phi3Config, PhiConfig

    ids = dict(vocab_size=len(tok), bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
               pad_token_id=tok.pad_token_id)
    half = SMALL["hidden_size"] // SMALL["num_attention_heads"] // 2
    return {
        "llama3": LlamaConfig(**SMALL, **ids, rope_theta=500000.0),
        "gemma": GemmaConfig(**{**SMALL, "num_key_value_heads": 1}, **ids, head_dim=8),
        "gemma2": Gemma2Config(**SMALL, **ids, head_dim=8, sliding_window=4096, attn_logit_softcapping=5.0,
                               final_logit_softcapping=3.0, query_pre_attn_scalar=8),
        "phi2": PhiConfig(**{**SMALL, "num_key_value_heads": 4}, **ids, partial_rotary_factor=0.5),
        "phi3": Phi3Config(**SMALL, **ids, original_max_position_embeddings=original,
                           rope_scaling={"type": "longrope", "long_factor": [3.0 + i for i in range(half)],
                                         "short_factor": [1.0 + 0.1 * i for i in range(half)]}),
        "mistral01": MistralConfig(**SMALL, **ids, sliding_window=4096),
        "mistral03": MistralConfig(**SMALL, **ids, sliding_window=None),
    }


@pytest.fixture(scope="module")
def family_dirs(tiny_model_dir, tmp_path_factory):
    """A saved tiny model of every family, with the tests' tokenizer; Phi-3's original maximum between
    the prompts' lengths (the 3 longest prompts are past it, others cross it within MAX_NEW tokens)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    lengths = sorted(len(tok(p)["input_ids"]) for p in PROMPTS)
    original = lengths[-4]
    assert lengths[-3] > original and any(original - MAX_NEW < n <= original for n in lengths[:-3])
    assert any(n + MAX_NEW <= original for n in lengths)
    out = {}
    for name, cfg in _configs(tok, original).items():
        torch.manual_seed(1)
        model = AutoModelForCausalLM.from_config(cfg)
        with torch.no_grad():          # larger weights than the init's: answers that differ from prompt to prompt
            for p in model.parameters():
                if p.dim() > 1:
                    p.normal_(0, 0.3)
        d = tmp_path_factory.mktemp(name)
        model.generation_config.eos_token_id = tok.eos_token_id
        model.generation_config.pad_token_id = tok.pad_token_id
        model.save_pretrained(d)
        tok.save_pretrained(d)
        out[name] = (d, original)
    return out


def _backend(path, **kw):
    return load_backend("tiny", {"backend": "transformers", "path": str(path), "batch_size": 4, **kw})


@pytest.mark.parametrize("attention", ["standard", "shared_prefix"])
@pytest.mark.parametrize("family", ["llama3", "gemma", "gemma2", "phi2", "phi3", "mistral01", "mistral03"])
def test_every_paper_architecture_answers_as_per_question_generate(family_dirs, family, attention):
    """Both fidelity modes at batch 4 (refills: 10 requests) and batch 1: every answer is what a plain
    per-question ``generate`` gives. Phi-3 with shared_prefix across its LongRoPE boundary is refused
    (the long-factor rows cannot share the prefix), naming attention: standard."""
    path, original = family_dirs[family]
    be = _backend(path, attention=attention)
    for fidelity in ("earnest", "reference"):
        reqs = _requests(be, PROMPTS, fidelity, MAX_NEW) if not (family == "phi3" and attention == "shared_prefix") \
            else [GenerationRequest(key=str(i), prompt=p, stop=("\nQ:",), fidelity=fidelity) for i, p in enumerate(PROMPTS)]
        if family == "phi3" and attention == "shared_prefix":
            with pytest.raises(ValueError, match=r"shared_prefix cannot hold LongRoPE rows .* use attention: standard"):
                be.generate(reqs, MAX_NEW)
            return
        out = be.generate(reqs, MAX_NEW)
        _check_equal(be, reqs, out, MAX_NEW)
        assert be.last_decode["prefills"] > 1
        be.batch_size = 1
        again = be.generate(reqs, MAX_NEW)
        assert [r.response for r in again] == [r.response for r in out]
        be.batch_size = 4


def test_the_longrope_boundary_changes_answers(family_dirs):
    """Answers that run on across Phi-3's boundary (a row recomputed with the long factors mid-answer, as
    ``generate`` does) are ``generate``'s; and the parity is not vacuous: with every row given the short
    factors (the boundary moved past every sequence), the answers past or across it differ."""
    path, original = family_dirs["phi3"]
    be = _backend(path)
    reqs = [GenerationRequest(key=str(i), prompt=p, stop=("\nQ:",)) for i, p in enumerate(PROMPTS)]
    right = be.generate(reqs, MAX_NEW)
    _check_equal(be, reqs, right, MAX_NEW)
    crossed = [r for r, q in zip(right, reqs) if len(be.encode(q)) <= original < len(be.encode(q)) + r.new_tokens]
    assert crossed                       # some answers went on past the boundary
    be._rope.original = 10 ** 6
    be._prefix = {}
    wrong = be.generate(reqs, MAX_NEW)
    lengths = [len(be.encode(r)) for r in reqs]
    changed = [n for n, a, b in zip(lengths, right, wrong) if a.response != b.response]
    assert changed and all(n + MAX_NEW > original for n in changed)
