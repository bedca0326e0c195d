# Generation (rules/generate.smk): the files a generation job reads besides its items and model.

import json


# A generation job reads its own format's template file (an input: editing it reruns the job) and
# its entry in formats.yaml (stop strings, style: a parameter, so that editing or adding another
# entry reruns nothing of this format; Snakemake reruns a job whose parameters changed).
def prompt_files(wc):
    path = FORMATS[wc.prompt].path
    # a prompts_dir written absolute is kept as written; one found relative is recorded portably
    return [str(path if Path(config["prompts_dir"]).expanduser().is_absolute() else _portable(path))]


def prompt_entry(wc):
    fmt = FORMATS[wc.prompt]
    entry = {"stop": list(fmt.stop), "style": fmt.style}
    if fmt.system_prompt is not None:  # only where set: the paper's formats plan as before
        entry["system_prompt"] = fmt.system_prompt
    return json.dumps(entry, sort_keys=True)


def gguf_file(wildcards):
    return str(resolve_gguf(MODELS[wildcards.model]["gguf"]))
