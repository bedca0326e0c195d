import json, sys
sys.path.insert(0, "/tmp/ref/src"); sys.path.insert(0, "/tmp/refwork")
import logging; logging.disable(logging.CRITICAL)
from gsm_benchmarker.benchmark.answer_extractor import AnswerExtractor
from text_cases import C
ext = AnswerExtractor(code=False)
out = []
for c in C:
    gold, _ = ext.extract_answer(f"Some working.\n#### {c['answer']}")   # as GSMSymbolicDataset computes numerical_result
    value, kind = ext.extract_answer(c["response"])
    correct = value is not None and abs(value - gold) < 1e-5               # ModelEvaluator.evaluate_dataset
    if value is not None and value != value: value = "nan"
    elif value in (float("inf"), float("-inf")): value = "inf" if value > 0 else "-inf"
    out.append({**c, "reference_value": value, "reference_pattern": kind.name, "reference_correct": bool(correct)})
with open(sys.argv[1], "w") as f:
    for r in out: f.write(json.dumps(r, ensure_ascii=False) + "\n")
print(len(out))
