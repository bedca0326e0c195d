"""Run the reference's prompt code (the-mysh/gsm-symbolic-benchmarking @ d063998, exported with
`git archive d063998 | tar -x -C /tmp/ref54`, outside this repository) on an empty and a
whitespace-only question, as its evaluate_dataset inserts a question: the template from
`ModelEvaluator.create_prompt(question="{}")` (whose body is `self.prompt_config(question)`; called
here on the PromptConfig itself, which imports only the standard library), then `str.format`.
Python 3.12.1 (pyenv), no flags. Usage: python3.12 produce_prompts_empty.py /tmp/ref54/src prompts/"""
import json
import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1])
from gsm_benchmarker.input_data_management.prompt_config import PromptConfig  # noqa: E402

OUT = Path(sys.argv[2])
PRESETS = {"gsm": "default", "simple_nl": "nonformalised", "structured_nl": "formalised",
           "simple_code": "code-output-no-sep-short", "structured_code": "code-output-no-sep"}
QUESTIONS = {"empty": "", "blank": " \n"}
cases = []
for name, preset in PRESETS.items():
    template = PromptConfig.from_preset(preset)("{}")
    for tag, question in QUESTIONS.items():
        fn = f"{name}.{tag}.txt"
        (OUT / fn).write_bytes(template.format(question).encode("utf-8"))
        cases.append({"format": name, "question": question, "file": fn})
(OUT / "empty.json").write_text(json.dumps(cases, indent=1) + "\n")
print(len(cases), "renders")
