"""The hostile corpus through the scoring path: a scored table of innocent answers must not change
when hostile answers are scored beside them (issue 20).

Run as a script (``python hostile_scoring.py CONFIG``, CONFIG a key of sandbox_attacks.CONFIGS), so
that attacks on "the caller" aim at this process, the one that scores, as a scoring job would be:
it scores the innocent answers alone, then the same answers interleaved with the corpus's attacks
(each made one self-contained ``def solution():``, as a model writes it, with gold answer 1: an
attack that gets through is scored *correct*), and the reference-mode Python-layer escapes with the
reference's static policy on. It prints one JSON object: whether the innocent rows are identical,
the hostile rows scored correct, their error classes, and the effects seen from outside.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import pandas as pd  # noqa: E402

import sandbox_attacks as sa  # noqa: E402
from earnest.gsm.scoring import score_table  # noqa: E402
from earnest.sandbox import Sandbox  # noqa: E402


#: How an answer reaches the real builtins without the static policy's help (issue 20's escapes),
#: per fidelity mode: earnest mode's namespace holds ``statistics`` (a class pattern reads any
#: attribute), the reference's holds ``typing``; the reference's forbidden-string check is on.
ESCAPE = {
    "earnest": ("import statistics\n"
                "class Meta(type(int)):\n"   # the one-argument type() is the real one
                "    def __instancecheck__(cls, obj):\n"
                "        return True\n"
                "class Any(metaclass=Meta):\n"
                "    __match_args__ = ('__globals__',)\n"
                "match statistics.mean:\n"
                "    case Any(g):\n"
                "        b = g['__builtins__']\n"),
    "reference": "b = typing.get_origin.__globals__['__builtins__']\n",
}


def hostile_answer(source: str, fidelity: str) -> str:
    """A corpus attack as the body of ``solution`` a model writes after the prompt's
    ``def solution():`` line: an escape to the real builtins, then the attack's module run with
    them (hex-encoded, as an attacker hides ``open(...)`` from a forbidden-string check)."""
    return textwrap.indent(
        ESCAPE[fidelity] + sa._AS_DICT.strip() + "\n"
        f"src = B['bytes'].fromhex('{source.encode().hex()}').decode()\n"
        "ex = B['exec']\ng = {'__builtins__': B}\nex(src, g)\nreturn g['solution']()\n", "    ")


def table(entries: list[tuple[str, str, str]], prompt: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(items, generations) for (item_id, gold, response) entries."""
    items = pd.DataFrame([dict(item_id=i, dataset="gsm_variants", template_id=int(i[1:4]),
                               instance=int(i.rsplit("v", 1)[1]), question=f"question {i}", answer=gold,
                               gamma=1.0) for i, gold, _ in entries])
    gens = pd.DataFrame([dict(item_id=i, model="hostile", prompt=prompt, dataset="gsm_variants", response=r,
                              prompt_tokens=10, new_tokens=10, stop_reason="eos", seconds=0.1)
                         for i, _, r in entries])
    return items, gens


TOKENS: list[str] = []


def score(entries, disable: tuple, fidelity: str) -> pd.DataFrame:
    items, gens = table(entries, "simple_code")
    with Sandbox(workers=2, limits=sa.LIMITS, disable=disable) as box:
        TOKENS.append(box.token)
        return score_table(gens, items, "code", sandbox=box, fidelity=fidelity).set_index("item_id")


def strays() -> list[int]:
    return [p for token in TOKENS for p in sa.survivors(token) if p != os.getpid()]


def main(config: str) -> dict:
    disable = sa.CONFIGS[config][0]
    with Sandbox(workers=1, limits=sa.LIMITS, disable=disable) as probe:
        must_stop = sa.must_stop_for(config, probe.capabilities(start=True))
    targets = sa.Targets()
    out: dict = {}
    try:
        ctx = targets.ctx()
        # as run_config: an attack this configuration is not meant to stop runs only where it harms
        # no one but itself
        corpus = [a for a in sa.attacks(ctx) if a[1] in must_stop or a[1] in ("self", "ipc_call")]
        # earnest mode with the static policy off; reference mode as the reference runs (its
        # forbidden-string check on: it refuses the attacks that call open(...) on one line)
        for fidelity, off in (("earnest", tuple(disable) + ("static",)), ("reference", tuple(disable))):
            innocent, mixed, names = [], [], {}
            for i, (name, kind, source) in enumerate(corpus):
                good, value = sa.INNOCENT[i % len(sa.INNOCENT)]
                entry = (f"t{i:03d}-v01", str(int(value)), good)
                hostile = (f"t{i:03d}-v02", "1", hostile_answer(source, fidelity))
                innocent.append(entry)
                mixed += [entry, hostile]
                names[hostile[0]] = (name, kind)
            alone = score(innocent, off, fidelity)
            beside = score(mixed, off, fidelity)
            ids = [e[0] for e in innocent]
            hostile_rows = beside.loc[list(names)]
            out[fidelity] = {
                "innocent_rows": len(ids),
                "innocent_correct": int(alone.loc[ids, "correct"].sum()),
                "innocent_identical": bool(alone.loc[ids].equals(beside.loc[ids])),
                "hostile_correct": sorted(names[i] for i in hostile_rows.index[hostile_rows["correct"]]),
                "hostile_classes": {names[i][0]: c for i, c in hostile_rows["error_class"].items()},
                "layers": str(beside["sandbox"].iloc[0]),
            }
        left = strays()
        deadline = time.monotonic() + 5
        while left and time.monotonic() < deadline:
            time.sleep(0.1)
            left = strays()
        out["must_stop"] = sorted(must_stop)
        out["effects"] = targets.effects()
        out["survivors"] = left
        targets.reset()
        return out
    finally:
        targets.close()


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])), flush=True)
