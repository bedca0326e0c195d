"""The GPU memory plan (earnest.backends.memplan): its arithmetic against real transformers models (built on
the meta device: no memory) and the parameter counts the models' makers state, the paper config's plan
on its declared cards, and the refusals a config gets before any job runs."""

from __future__ import annotations

import copy

import pytest
import torch
import yaml

from earnest.backends import memplan
from earnest.config import ConfigError, check_workflow_config, merge_config_files
from earnest.schema import SCHEMA_PATH

ROOT = SCHEMA_PATH.parents[1]
PAPER = ROOT / "config" / "paper.yaml"


def _meta_params(cfg) -> int:
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    return sum(p.numel() for p in model.parameters())


def _hf_config(entry: dict):
    """A real transformers config object from a paper_configs.yaml entry."""
    from transformers import AutoConfig

    fields = {k: v for k, v in entry.items() if k not in ("model_type", "stated_params", "torch_dtype",
                                                          "original_max_position_embeddings", "rope_scaling")}
    if entry["model_type"] == "phi3":
        fields["original_max_position_embeddings"] = entry["original_max_position_embeddings"]
    return AutoConfig.for_model(entry["model_type"], **fields)


def test_paper_models_parameter_counts_match_what_their_makers_state():
    """Every paper model's count from its config is within 0.5% of the stated one (billions)."""
    for hub, entry in memplan.paper_configs().items():
        got = memplan.ModelShape.from_config(entry, hub).params() / 1e9
        assert abs(got - entry["stated_params"]) / entry["stated_params"] < 0.005, (hub, got)


@pytest.mark.parametrize("hub", ["meta-llama/Meta-Llama-3-8B", "google/gemma-7b", "microsoft/phi-2",
                                 "google/gemma-2-9b", "microsoft/Phi-3-mini-128k-instruct", "mistralai/Mistral-7B-v0.1"])
def test_weights_equal_the_real_model_built_from_the_config(hub):
    """Three families and more at full size: the plan's parameter count is exactly the number of
    parameters transformers builds from the same config (on the meta device: no memory)."""
    entry = memplan.paper_configs()[hub]
    assert memplan.ModelShape.from_config(entry, hub).params() == _meta_params(_hf_config(entry))


TINY = {
    "llama": dict(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2),
    "gemma": dict(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=1, head_dim=32),
    "gemma2": dict(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, head_dim=16, sliding_window=64),
    "phi": dict(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4),
    "phi3": dict(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, pad_token_id=0),
    "qwen2": dict(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2),
    "mistral": dict(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, sliding_window=None),
}


@pytest.mark.parametrize("family", sorted(TINY))
def test_weights_and_key_value_bytes_of_a_real_model(family):
    """A small real model of each family: the plan's weights are its parameters' bytes, and its key/value
    bytes per token are what transformers' own cache holds after a forward."""
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.for_model(family, **TINY[family])
    model = AutoModelForCausalLM.from_config(cfg).eval()
    shape = memplan.ModelShape.from_config(cfg.to_dict(), family)
    assert shape.params() == sum(p.numel() for p in model.parameters())
    n = 7
    with torch.no_grad():
        out = model(input_ids=torch.arange(1, n + 1)[None], use_cache=True)
    cache = getattr(out, "cache", None) or out.past_key_values
    held = sum(layer.keys.numel() * 4 + layer.values.numel() * 4 for layer in cache.layers)
    assert held == n * shape.kv_bytes_per_token(4)


def _shape(hub="meta-llama/Meta-Llama-3-8B"):
    return memplan.ModelShape.from_config(memplan.paper_configs()[hub], hub)


def test_auto_takes_the_most_slots_that_fit():
    """batch_size auto: the plan's slots fit the card with the reserve and one more slot would not; a
    given batch that does not fit gets 0 slots; at most one slot per request."""
    shape = _shape()
    card = 40000 * memplan.MIB
    kw = dict(itemsize=2, prefix_tokens=800, own_tokens=200, max_new_tokens=1024, shared_prefix=False)
    plan = memplan.plan_job(shape, card_bytes=card, **kw)
    assert plan.slots >= 8
    assert plan.peak() + plan.reserve <= card < plan.peak(plan.slots + 1) + plan.reserve
    assert plan.per_slot_kv == (800 + 200 + 1024) * 32 * 8 * 2 * 128 * 2        # 128 KiB per token (GQA)
    assert memplan.plan_job(shape, card_bytes=card, n_requests=5, **kw).slots == 5
    assert memplan.plan_job(shape, card_bytes=card, batch=plan.slots, **kw).slots == plan.slots
    assert memplan.plan_job(shape, card_bytes=card, batch=plan.slots + 1, **kw).slots == 0
    # the shared-prefix layout keeps the prefix once: more slots
    assert memplan.plan_job(shape, card_bytes=card, **{**kw, "shared_prefix": True}).slots > plan.slots
    # a card smaller than the weights: refused, and a card that fits is named
    small = memplan.plan_job(shape, card_bytes=16000 * memplan.MIB, **kw)
    assert small.slots == 0 and small.smallest_card() == "24 GB (A10, L4)"


def test_eager_attention_and_upcasts_are_counted():
    """Gemma 2 (eager, soft-capping): a step's workspace holds keys and values repeated to every query
    head; shared_prefix: the float32 upcast of the row's columns."""
    g2 = _shape("google/gemma-2-9b")
    kw = dict(itemsize=2, prefix_tokens=800, own_tokens=200, max_new_tokens=1024, card_bytes=80 << 30)
    plan = memplan.plan_job(g2, shared_prefix=False, **kw)
    cols = 800 + 200 + 1024
    assert plan.per_slot_step >= 2 * 16 * cols * 256 * 2                     # repeat_kv's copies
    llama = memplan.plan_job(_shape(), shared_prefix=True, **kw)
    assert llama.per_slot_step >= 2 * 8 * (200 + 1024) * 128 * 4           # float32 keys and values of the row


def test_paper_config_fits_its_declared_cards():
    """config/paper.yaml: no job refused on the card each model declares, and every model gets at least
    8 slots with the GSM prompt (Ex1)."""
    config = merge_config_files([PAPER])
    check_workflow_config(config, [PAPER], ROOT)            # the workflow's checks, the plan's included
    from earnest.config import prompt_texts

    plans, notes = memplan.plan_config(config, prompt_texts(config, ROOT))
    assert not notes and not [p.problem for p in plans if p.refused]
    gsm = {p.model: p.plan.slots for p in plans if p.prompt == "gsm"}
    assert len(gsm) == 20 and min(gsm.values()) >= 8, gsm


def _paper_with(**model_changes):
    config = yaml.safe_load(PAPER.read_text())
    for name, change in model_changes.items():
        config["models"][name].update(change)
    return config


def test_a_job_that_does_not_fit_is_refused_before_any_job(tmp_path):
    """gemma-7b on a 16 GB card: the config check names the model, the memory asked, the card and the
    smallest card that fits; Mistral v0.1 with sequences past its 4,096-token sliding window is refused."""
    config = _paper_with(**{"gemma-7b": {"resources": {"gpu": 1, "gpu_mem_mb": 16000}}})
    config["generation"]["max_new_tokens"] = 1024
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError) as err:
        check_workflow_config(merge_config_files([path]), [path], ROOT)
    msg = str(err.value)
    assert "models.gemma-7b: one slot with prompt format gsm (eng) needs" in msg
    assert "declared card (16000 MiB (resources.gpu_mem_mb)) has 15.6 GiB; smallest card that fits: 24 GB" in msg
    config = _paper_with()
    config["generation"]["max_new_tokens"] = 3500
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError, match=r"models\.Mistral-7B-v0\.1: prompt format gsm \(eng\) is up to ~\d+ "
                                          r"tokens; .* past the model's sliding window of 4096"):
        check_workflow_config(merge_config_files([path]), [path], ROOT)


def test_plan_gpu_command(capsys):
    """earnest plan-gpu prints one row per job with the H100 and H200 columns, exit status 0 for the paper."""
    from earnest.cli import main

    assert main(["plan-gpu", "--configfile", str(PAPER), "--workflow", str(ROOT), "--cards"]) == 0
    out = capsys.readouterr().out
    assert "| Meta-Llama-3-8B | gsm | eng | 40000 MiB (resources.gpu_mem_mb) |" in out
    assert "slots H100 80GB" in out and "slots H200 141GB" in out


def test_one_transformers_pin_for_every_environment():
    """requirements.txt and every conda environment that installs transformers pin the same release."""
    import re

    pins = {}
    for path in [ROOT / "requirements.txt", *sorted((ROOT / "envs").glob("*.yaml"))]:
        for line in path.read_text(encoding="utf-8").splitlines():
            m = re.match(r"\s*-?\s*transformers(\[[^\]]*\])?\s*([=<>!~]=?[^\s#]*)?", line)
            if m and not line.lstrip().startswith("#"):
                pins[path.name] = m.group(2)
    assert "requirements.txt" in pins and "generate.yaml" in pins, pins
    assert len(set(pins.values())) == 1 and next(iter(pins.values())).startswith("=="), pins
