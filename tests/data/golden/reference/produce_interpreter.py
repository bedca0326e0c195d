"""Record what the authors' extractor (the-mysh/gsm-symbolic-benchmarking @ d063998, exported with
`git archive d063998 | tar -x -C /tmp/ref54`, outside this repository) does with answers that crash it,
that look at the interpreter, and that carry state to the next answer. Run as they run their benchmark:
a plain `python` 3.12 (pyenv 3.12.1, no flags, no PYTHON* variable in its environment, LANG=C.UTF-8), one process per case, seeded 42 at its start
(their scripts/benchmark.py set_seed(42)); each answer goes through AnswerExtractor(code=True).extract_answer
and the correctness check of their evaluate_dataset (abs(predicted - gold) < 1e-5). Anything that escapes
(their run would catch it in evaluate_multiple_datasets and drop the evaluation set, or end) is recorded.

Usage: python3.12 produce_interpreter.py /tmp/ref54/src  > interpreter_cases.jsonl
Cases come from interpreter_cases.py (ours)."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = r'''
import json, os, random, sys
sys.path.insert(0, sys.argv[1])
random.seed(42)
from gsm_benchmarker.benchmark.answer_extractor import AnswerExtractor
out = open(sys.argv[2], "w")
responses = json.loads(sys.argv[3])
extractor = AnswerExtractor(code=True)
results = []
def report(final):
    out.write(json.dumps(results + [final]) + "\n"); out.flush()
try:
    for response in responses:
        value, pattern = extractor.extract_answer(response)
        correct = value is not None and abs(value - 1.0) < 1e-5
        results.append({"value": value if value is None or abs(value) < 1e300 else repr(value)[:20],
                        "result": pattern.name, "correct": correct})
    report({"ended": "normally"})
except BaseException as exc:
    context = exc.__context__
    report({"ended": "exception", "exception": type(exc).__name__,
            "during": type(context).__name__ if context is not None else ""})
'''


def run(python: str, src: str, responses: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "out.json")
        proc = subprocess.run([python, "-c", CHILD, src, path, json.dumps(responses)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp, timeout=60,
                              env={k: v for k, v in os.environ.items() if not k.startswith("PYTHON")})
        try:
            with open(path) as fh:
                lines = fh.read().splitlines()
        except OSError:
            lines = []
        if not lines:
            return {"steps": [], "ended": f"process ended, exit status {proc.returncode}, nothing reported"}
        steps = json.loads(lines[-1])
        final = steps.pop()
        if final["ended"] == "normally" and proc.returncode != 0:
            final = {"ended": f"exit status {proc.returncode}"}
        return {"steps": steps, **final}


def main() -> None:
    sys.path.insert(0, HERE)
    from interpreter_cases import CASES, CHANNELS

    src = sys.argv[1]
    python = sys.executable
    for case in CASES:
        print(json.dumps({"kind": "answer", **case, "python": "%d.%d.%d" % sys.version_info[:3],
                          "reference": run(python, src, [case["response"]])}))
    for ch in CHANNELS:
        alone = run(python, src, [ch["reader"]])
        after = run(python, src, [ch["writer"], ch["reader"]])
        print(json.dumps({"kind": "channel", **ch, "python": "%d.%d.%d" % sys.version_info[:3],
                          "reader_alone": alone, "writer_then_reader": after}))


if __name__ == "__main__":
    main()
