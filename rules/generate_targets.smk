# Generation (rules/generate.smk): the files a generation job reads besides its items and model.
from earnest.gsm.prompts import formats_file

# every file a prompt is made of: its template (for this fidelity mode) and formats.yaml (stops, style)
FORMATS_YAML = str(formats_file(_repo_path(config["prompts_dir"])))


def prompt_files(wc):
    return [str(FORMATS[wc.prompt].path), FORMATS_YAML]


def gguf_file(wildcards):
    return str(resolve_gguf(MODELS[wildcards.model]["gguf"]))
