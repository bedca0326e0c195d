"""The stop rule of the transformers backend's answers, per fidelity mode, applied token by token.

earnest mode: the generation config's EOS tokens end an answer (not kept); after each token the
request's stop strings are looked for in the decoded last tokens of the answer, and when the answer
ends it is made exact against its whole decoded text (``_settle``); the text is cut before the stop
string. reference mode, as the authors' ``HFModelWrapper.ask`` (resources/FIDELITY.md, point 2): only
the tokenizer's EOS ends the answer; after every token the last ``REFERENCE_STOP_WINDOW`` tokens of
prompt + answer are decoded and the answer ends when a stop string occurs there; the answer is decoded
with ``skip_special_tokens`` and transformers 4's clean-up of tokenization spaces, and keeps the stop
string. The stop strings of all rows of a step are looked for with one batched decode.
"""

from __future__ import annotations

import logging
import time

from earnest.fidelity import REFERENCE

from .base import EOS, MAX_NEW_TOKENS, STOP_STRING, GenerationResult, cut_at_stop

log = logging.getLogger("earnest.backends.hf")

# The reference's HF wrapper: BenchmarkConfig.max_length (prompt truncation) and the number of
# trailing tokens its stopping criterion decodes.
REFERENCE_MAX_LENGTH = 2048
REFERENCE_STOP_WINDOW = 10

# transformers 4.x (the reference used 4.57.1) applied this clean-up to every decode of a
# tokenizer loaded with clean_up_tokenization_spaces=True, as the reference's was; transformers 5
# skips it for BPE tokenizers, so reference decoding applies it itself.
_CLEAN_UP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
             (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))


def reference_clean_up(text: str) -> str:
    """transformers 4.x ``clean_up_tokenization``: drop the space before punctuation and contractions."""
    for old, new in _CLEAN_UP:
        text = text.replace(old, new)
    return text


class StopRule:
    """The stop rule as methods of the backend (a mixin): it reads ``tokenizer``, ``eos_ids``,
    ``reference_eos_ids``, ``_requests`` and ``_requests_rows`` of the object it is mixed into."""

    def _reference_decode(self, ids: list[int]) -> str:
        """Decode as the reference's tokenizer (clean_up_tokenization_spaces=True, transformers 4.x) did."""
        text = self.tokenizer.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)
        return reference_clean_up(text)

    def _new_state(self, i: int) -> dict:
        req = self._requests[i]
        stop = req.stop
        # earnest mode looks for its stop strings in the decoded last tokens of the answer: enough
        # tokens for the longest stop string even at one byte per token, plus a margin
        window = max((len(s.encode("utf-8")) for s in stop), default=0) + 3
        return {"tokens": [], "t0": time.time(), "stop": stop, "reference": req.fidelity == REFERENCE,
                "window": window, "i": i}

    def _feed(self, items: list[tuple[int, dict, int]], max_new_tokens: int) -> list[tuple[int, str]]:
        """Take one generated token per (slot, state, token); the (slot, stop reason) of the answers that ended.

        The rule of each mode, as a whole-answer check would apply it: the EOS token ends the
        answer (not kept); otherwise the token is kept, then the stop strings are looked for, then
        the token cap. The stop strings of all rows are looked for with one batched decode:
        reference mode in the last ``REFERENCE_STOP_WINDOW`` tokens of prompt + answer (the
        authors' rule), earnest mode in the last tokens of the answer (``_new_state``'s window;
        ``_settle`` makes the result exact where a window would not be).
        """
        ended: list[tuple[int, str]] = []
        ref_rows, ref_windows, own_rows, own_windows = [], [], [], []
        for s, st, tok in items:
            if st["reference"]:
                if tok in self.reference_eos_ids:
                    ended.append((s, EOS))
                    continue
                st["tokens"].append(tok)
                if st["stop"]:
                    row = self._requests_rows[st["i"]]
                    tail = (row[-REFERENCE_STOP_WINDOW:] + st["tokens"][-REFERENCE_STOP_WINDOW:])[-REFERENCE_STOP_WINDOW:]
                    ref_rows.append((s, st))
                    ref_windows.append(tail)
                    continue
            else:
                if tok in self.eos_ids:
                    ended.append((s, EOS))
                    continue
                st["tokens"].append(tok)
                if st["stop"]:
                    own_rows.append((s, st))
                    own_windows.append(st["tokens"][-st["window"]:])
                    continue
            if len(st["tokens"]) >= max_new_tokens:
                ended.append((s, MAX_NEW_TOKENS))
        texts = []
        if ref_windows:
            texts += [reference_clean_up(t) for t in self.tokenizer.batch_decode(
                ref_windows, skip_special_tokens=True, clean_up_tokenization_spaces=False)]
        if own_windows:
            texts += self.tokenizer.batch_decode(own_windows, skip_special_tokens=True)
        for (s, st), text in zip(ref_rows + own_rows, texts):
            if any(x in text for x in st["stop"]):
                ended.append((s, STOP_STRING))
            elif len(st["tokens"]) >= max_new_tokens:
                ended.append((s, MAX_NEW_TOKENS))
        return ended

    def _decode_answer(self, tokens: list[int]) -> str:
        return self.tokenizer.decode(tokens, skip_special_tokens=True)

    def _settle(self, st: dict, stop: str) -> tuple[str, str]:
        """Earnest mode: make the answer end exactly where a check of the whole decoded answer after
        every token would have ended it (a window can miss a stop string spread over many tokens
        that decode to nothing, or see one the whole text splits otherwise). Greedy decoding made
        the same tokens up to that point, so cutting the tokens there gives that answer. Returns
        (stop reason, the answer's whole decoded text)."""
        tokens, strings = st["tokens"], st["stop"]
        text = self._decode_answer(tokens)
        n = len(tokens)
        if not strings or n == 0:
            return stop, text
        found = any(x in text for x in strings)
        if stop == STOP_STRING:
            if not found:
                log.warning("request %s: a stop string seen in the last tokens is not in the whole decoded "
                            "answer; the answer ends there all the same", self._requests[st["i"]].key)
                return stop, text
            if n == 1 or not any(x in self._decode_answer(tokens[:n - 1]) for x in strings):
                return stop, text
        elif not found:
            return stop, text
        lo, hi = 1, n                        # the first length whose decoded text holds a stop string
        while lo < hi:
            mid = (lo + hi) // 2
            if any(x in self._decode_answer(tokens[:mid]) for x in strings):
                hi = mid
            else:
                lo = mid + 1
        del tokens[lo:]
        return STOP_STRING, self._decode_answer(tokens)

    def _result(self, row: list[int], st: dict, stop: str) -> GenerationResult:
        if st["reference"]:
            text = self._reference_decode(st["tokens"])
        else:
            stop, text = self._settle(st, stop)
            if stop == STOP_STRING:
                text = cut_at_stop(text, st["stop"])[0]
        return GenerationResult(key="", response=text, prompt_tokens=len(row), new_tokens=len(st["tokens"]),
                                stop_reason=stop, seconds=time.time() - st["t0"])
