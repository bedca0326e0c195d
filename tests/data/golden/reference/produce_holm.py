"""Holm-corrected P values as the reference's analyser computes them, NaN P values included.

Runs the reference's own `correct_p_values` (results_analyser/utils.py: statsmodels `multipletests(...,
method='holm')`, which Tables 2, 6, 8, 10 and 12 use; Tables 14-15 call `multipletests` the same way
per row). Run with the reference exported to /tmp/ref and a venv with statsmodels and pandas:
    /tmp/venv/bin/python produce_holm.py holm.json
"""
import importlib.util, json, math, sys
import pandas as pd
import statsmodels

spec = importlib.util.spec_from_file_location("ref_utils", "/tmp/ref/src/gsm_benchmarker/results_analyser/utils.py")
ref = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ref)           # pandas and statsmodels only; the package's __init__ is not needed
nan = float("nan")
families = [
    [0.01, 0.02, 0.03, nan],                       # the case
    [nan, 0.03, 0.01, 0.02],                       # the missing P first
    [0.004, nan, 0.2, nan, 0.01],                  # two missing
    [nan, nan],                                    # none
    [nan],
    [0.03],
    [0.01, 0.04, 0.03, 0.005],                     # none missing
    [0.02, 0.02, nan, 0.5],                        # ties
    [0.6, nan, 0.7],                               # capped at 1
    [0.0, nan, 0.0, 0.012],                        # bootstrap P of 0
    [0.001, 0.0005, 0.2, 0.049, nan, 0.013, 0.9, 0.03, 0.0, 0.27, 0.011, 0.4, nan],   # 13 models
]
out = []
for p in families:
    s = pd.Series(p, index=[f"m{i}" for i in range(len(p))])
    c = ref.correct_p_values(s)
    out.append({"p": [None if math.isnan(x) else x for x in p],
                "reference_holm": [None if math.isnan(x) else float(x) for x in c.to_numpy()]})
with open(sys.argv[1], "w") as f:                 # one family per line
    f.write('{"statsmodels": "%s", "families": [\n' % statsmodels.__version__)
    f.write(",\n".join(json.dumps(r) for r in out) + "\n]}\n")
print(len(out), "families, statsmodels", statsmodels.__version__)
