"""Sampling, model arguments, adapters and system prompts (earnest.backends.decoding): a model entry's
``decoding`` (reproducible by seed whatever the batch, one row per sample, the samples averaged as
epochs in the GLMM input), ``model_args`` and ``trust_remote_code`` refused unless safe and explicit, a
PEFT adapter merged into the weights, and a system prompt in the chat prompt, the trace and the cache key."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from earnest.backends import GenerationRequest, load_backend
from earnest.backends.cache import model_identity, request_key
from earnest.backends.decoding import Decoding, check_model_args
from earnest.generation import SAMPLE, generate_dataset, prompt_sha256, request_text
from earnest.gsm.glmm_input import glmm_input_from_scored
from earnest.gsm.prompts import PromptFormat
from earnest.stats.glmm import EPOCHS, GLMMInputError

from openai_server import FakeOpenAI
from test_generation import QUESTIONS, _items

SAMPLED = {"temperature": 1.0, "seed": 1}
FMT = PromptFormat(name="qa", style="text", template="Q: <Question here>\nA:", stop=("\nQ:",))


def _tiny(tiny_model_dir, **kw):
    return load_backend("tiny", {"backend": "transformers", "path": str(tiny_model_dir), **kw})


def _ask(be, n=4, tokens=12):
    reqs = [GenerationRequest(key=f"q{i}", prompt=f"Q: {QUESTIONS[i % len(QUESTIONS)]}\nA:") for i in range(n)]
    return [r.response for r in be.generate(reqs, tokens)]


def test_sampling_is_reproducible_by_seed_whatever_the_batch_and_differs_across_seeds(tiny_model_dir):
    from dataclasses import replace

    greedy = _ask(_tiny(tiny_model_dir, batch_size=4))
    be = _tiny(tiny_model_dir, batch_size=4, decoding=SAMPLED)
    first = _ask(be)
    assert first == _ask(be)                                                          # the same seed: the same answers
    assert first == _ask(_tiny(tiny_model_dir, batch_size=1, decoding=SAMPLED))      # whatever the batch
    other = _ask(_tiny(tiny_model_dir, batch_size=4, decoding={**SAMPLED, "seed": 2}))
    assert other != first and first != greedy
    # the likeliest token alone (top_k 1, or a top_p no second token reaches) is greedy decoding
    assert Decoding.from_cfg("m", {"decoding": {**SAMPLED, "top_k": 1}}) == replace(be.decoding, top_k=1)
    be.decoding = replace(be.decoding, top_k=1)
    assert _ask(be) == greedy
    be.decoding = replace(be.decoding, top_k=0, top_p=1e-6)
    assert _ask(be) == greedy


def test_samples_give_one_row_each_and_the_glmm_input_averages_them_as_epochs(tiny_model_dir, tmp_path):
    be = _tiny(tiny_model_dir, decoding={**SAMPLED, "samples": 3})
    items = _items(2)
    out = tmp_path / "gen.parquet"
    table = generate_dataset(items, FMT, be, model="tiny", dataset="gsm_base", output=out, max_new_tokens=8,
                             samples=3)
    assert list(table[["item_id", SAMPLE]].itertuples(index=False, name=None)) == [
        (i, s) for i in items["item_id"] for s in range(3)]
    assert table.columns[1] == SAMPLE and len(set(table["response"])) > 2     # the samples differ
    assert json.loads(table["decoding"][0])["decoding"] == "sample"
    again = generate_dataset(items, FMT, be, model="tiny", dataset="gsm_base", output=tmp_path / "again.parquet",
                             max_new_tokens=8, samples=3)
    assert again["response"].tolist() == table["response"].tolist()
    # scored samples: one GLMM row per question, correct the share of its samples, epochs their number
    scored = pd.DataFrame({"model": "tiny", "prompt": "qa", "item_id": ["a", "a", "a", "b", "b", "b"] * 2,
                           "sample": [0, 1, 2] * 4, "dataset": ["gsm_base"] * 6 + ["gsm_variants"] * 6,
                           "template_id": [1, 1, 1, 2, 2, 2] * 2, "gamma": 1.0,
                           "correct": [1, 0, 1, 0, 0, 0, 1, 1, 1, 0, 1, 0]})
    glmm = glmm_input_from_scored(scored)
    assert glmm[["variant", "template", "correct", EPOCHS]].values.tolist() == [
        [0, 1, 2 / 3, 3], [0, 2, 0, 3], [1, 1, 1, 3], [1, 2, 1 / 3, 3]]
    with pytest.raises(GLMMInputError, match=r"unbalanced samples: .*item 'b' has 2 answers"):
        glmm_input_from_scored(scored.drop(index=5))


@pytest.mark.parametrize("decoding, match", [
    ({"samples": 3}, r"decoding\.samples: has no effect with temperature 0"),
    ({"tempreature": 1}, r"decoding\.tempreature: unknown key \(did you mean temperature\?\)"),
    ({"temperature": 1, "top_p": 0}, r"decoding\.top_p: a number above 0"),
    ({"temperature": 1, "samples": 0}, r"decoding\.samples: an integer from 1 to 1000"),
])
def test_bad_decoding_is_refused_naming_the_field(decoding, match):
    with pytest.raises(ValueError, match=rf"^models\.m\.{match}"):
        Decoding.from_cfg("m", {"decoding": decoding})


def test_model_args_refusals_and_trust_remote_code_only_when_the_entry_says_so(tiny_model_dir):
    with pytest.raises(ValueError, match=r"^models\.m\.model_args\.quantization_config: not among the arguments"):
        check_model_args("m", {"model_args": {"quantization_config": {}}})
    with pytest.raises(ValueError, match=r"^models\.m\.model_args\.trust_remote_code: .*models\.m\.trust_remote_code: "
                                         r"true"):
        check_model_args("m", {"model_args": {"trust_remote_code": True}})
    with pytest.raises(ValueError, match=r"^models\.m\.model_args\.revision: .*set it as models\.m\.revision"):
        check_model_args("m", {"model_args": {"revision": "abc"}})
    with pytest.raises(ValueError, match=r"^models\.m\.trust_remote_code: true or false"):
        check_model_args("m", {"trust_remote_code": "yes"})
    with pytest.raises(ValueError, match=r"^models\.m\.model_args\.code_revision: only with models\.m\."
                                         r"trust_remote_code"):
        check_model_args("m", {"model_args": {"code_revision": "abc"}})
    assert check_model_args("m", {}) == {}
    assert check_model_args("m", {"trust_remote_code": True}) == {"trust_remote_code": True}
    # refused before any weights load; a safe argument reaches from_pretrained and the record
    with pytest.raises(ValueError, match=r"model_args\.device_map: .*models\.tiny\.device"):
        _tiny(tiny_model_dir, model_args={"device_map": "auto"})
    be = _tiny(tiny_model_dir, model_args={"use_safetensors": True})
    assert be.describe()["model_args"] == {"use_safetensors": True}


def test_a_peft_adapter_is_applied(tiny_model_dir, tmp_path):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    lora = get_peft_model(base, LoraConfig(r=4, lora_alpha=64, target_modules=["q_proj", "v_proj", "down_proj"],
                                           init_lora_weights=False))
    lora.save_pretrained(tmp_path / "adapter")
    plain = _ask(_tiny(tiny_model_dir))
    be = _tiny(tiny_model_dir, adapter=str(tmp_path / "adapter"))
    assert be.describe()["adapter"]["path"] == str(tmp_path / "adapter")
    assert _ask(be) != plain
    with pytest.raises(FileNotFoundError, match=r"^models\.tiny\.adapter\.path: .* holds no adapter_config\.json"):
        _tiny(tiny_model_dir, adapter={"path": str(tmp_path)})


def test_a_system_prompt_is_in_the_chat_prompt_the_trace_and_the_cache_key(tiny_model_dir):
    be = _tiny(tiny_model_dir)
    with_sys = GenerationRequest(key="a", **request_text("Q: 1 + 1?\nA:", "You are terse."))
    plain = GenerationRequest(key="a", **request_text("Q: 1 + 1?\nA:", None))
    text = be.tokenizer.decode(be.encode(with_sys))
    assert text.startswith("<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nQ: 1 + 1?")
    assert prompt_sha256(with_sys) != prompt_sha256(plain)
    ident = model_identity("tiny", {"path": "p"})
    assert request_key(ident, with_sys, 8) != request_key(ident, plain, 8)
    # a model entry's system prompt changes its identity (so its generations are asked again), and takes the
    # place of a prompt format's
    assert model_identity("tiny", {"path": "p", "system_prompt": "x"}) != ident
    from earnest.generation import system_prompt_of

    fmt = PromptFormat(name="qa", style="text", template="<Question here>", system_prompt="format's")
    assert (system_prompt_of(fmt, None), system_prompt_of(fmt, "model's"), system_prompt_of(FMT, None)) == (
        "format's", "model's", None)


def test_served_models_get_the_decoding_and_a_seed_per_question_and_sample(tmp_path):
    with FakeOpenAI() as srv:
        cfg = {"backend": "openai", "base_url": srv.url, "model": "tiny", "max_retries": 0,
               "decoding": {"temperature": 0.7, "top_p": 0.9, "top_k": 5, "seed": 3}}
        be = load_backend("m", cfg)
        reqs = [GenerationRequest(key="q", messages=[{"role": "user", "content": "a"}], sample=s) for s in (0, 1, 0)]
        be.generate(reqs, 8)
        bodies = sorted((b["body"] for b in srv.received), key=lambda b: b["seed"])
        assert {(b["temperature"], b["top_p"], b["top_k"]) for b in bodies} == {(0.7, 0.9, 5)}
        assert len({b["seed"] for b in bodies}) == 2          # sample 0 twice: the same seed; sample 1 its own
        assert load_backend("m", {**cfg, "decoding": None}).describe()["temperature"] == 0.0
    with pytest.raises(ValueError, match=r"^models\.m\.request_params\.seed: set by models\.m\.decoding"):
        load_backend("m", {**cfg, "request_params": {"seed": 1}})
    with pytest.raises(ValueError, match=r"^models\.m\.temperature: given twice"):
        load_backend("m", {**cfg, "temperature": 0.5})


def test_compare_pairs_sample_s_of_one_condition_with_sample_s_of_the_other():
    from earnest.stats.compare import compare_input_from_scored

    scored = pd.DataFrame({"model": ["a"] * 4 + ["b"] * 2, "prompt": "gsm", "template_id": 1,
                           "item_id": ["x", "x", "y", "y", "x", "y"], "sample": [0, 1, 0, 1, None, None],
                           "correct": [1, 0, 1, 1, 0, 1]})
    data = compare_input_from_scored(scored)
    assert data["item"].tolist() == ["x#sample0", "x#sample1", "y#sample0", "y#sample1", "x#sample0", "y#sample0"]
