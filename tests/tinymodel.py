"""Build a tiny randomly initialised Llama-style chat model as a regular checkpoint directory.

Used by the tests (and the Slurm test's config) so that the real transformers code path runs with
no network and in seconds. Run as a script: ``python tests/tinymodel.py OUT_DIR``.
"""

from __future__ import annotations

import sys
from pathlib import Path

CORPUS = [
    "Q: There are 15 trees in the grove. How many trees did the grove workers plant today?",
    "A: Let's think step by step. There are 15 trees originally. 21 - 15 = 6. The final answer is 6.",
    "def solution():\n    trees_now = 15\n    return trees_now\n",
    "Given: Number of cars: 3. To find: total. Solution: 3 + 2 = 5. The final answer is 5.",
    '{"category": "Regression\\\\Linear", "variables": [{"id": "x", "role": "predictor"}]}',
    "0123456789 + - * / = $ % , . : ; ( ) [ ] { } \" ' # < > ! ?",
]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_tiny_model(out_dir: str | Path, seed: int = 0) -> Path:
    """Write tokenizer + random weights to ``out_dir`` (created); returns the directory."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS * 20, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|im_end|>",
                                   bos_token="<|im_start|>")
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=len(fast), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                      bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id,
                      pad_token_id=fast.pad_token_id, tie_word_embeddings=True)
    model = LlamaForCausalLM(cfg)
    model.generation_config.eos_token_id = fast.eos_token_id
    model.generation_config.pad_token_id = fast.pad_token_id
    model.save_pretrained(out)
    return out


if __name__ == "__main__":
    print(build_tiny_model(sys.argv[1]))
