"""Prompt formats: fidelity to the paper's Appendix C, rendering, and clear errors."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import json

import pytest
import yaml

from earnest.gsm.prompts import (
    DEFAULT_PROMPTS_DIR,
    QUESTION_PLACEHOLDER,
    PromptFormat,
    PromptFormatError,
    get_format,
    load_formats,
    shared_prefix,
    validate_format_names,
)

ROOT = Path(__file__).resolve().parents[1]
PROMPTS = ROOT / "resources" / "prompts"
GOLDEN = ROOT / "tests" / "data" / "golden"
NAMES = ["gsm", "simple_nl", "structured_nl", "simple_code", "structured_code"]
# The question the paper quotes for its Listing 7 (a GSM-Symbolic variant).
QUESTION = (
    "Liam hires a luxury car from 3 PM to 9 PM. He gets 1 hours free. The first paid hour is $13 "
    "and each hour after that is twice the cost. How much did he pay?"
)
# Answers of the eight GSM8K shots, in prompt order.
SHOT_ANSWERS = [6, 5, 39, 8, 9, 29, 33, 8]


@pytest.fixture(scope="module")
def formats():
    return load_formats(PROMPTS)


def test_the_five_paper_formats_load_with_their_styles(formats):
    assert list(formats) == NAMES
    assert {n: f.style for n, f in formats.items()} == {
        "gsm": "text", "simple_nl": "text", "structured_nl": "text", "simple_code": "code", "structured_code": "code",
    }
    assert formats["simple_nl"].paper_name.startswith("Ex2.A")
    assert all(f.description for f in formats.values())


def test_parent_resources_dir_is_accepted():
    assert list(load_formats(ROOT / "resources")) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_render_equals_golden_file(formats, name):
    golden = (GOLDEN / f"{name}.render.txt").read_bytes().decode("utf-8")
    assert formats[name].render(QUESTION) == golden


@pytest.mark.parametrize("name", NAMES)
def test_render_has_the_hand_checked_lines(formats, name):
    expected = yaml.safe_load((GOLDEN / "expected_lines.yaml").read_text(encoding="utf-8"))[name]
    text = formats[name].render(QUESTION)
    lines = text.splitlines()
    assert len(lines) == expected["line_count"]
    assert text.endswith(expected["ends_with"])
    for number, line in expected["lines"].items():
        assert lines[number - 1] == line, f"{name} line {number}"


def _as_extracted(line: str) -> str:
    """What the paper's HTML-to-text extraction makes of one of our lines.

    It dropped indentation, the spaces around , . : $ # = + - *, and turned ' into a typographic
    apostrophe (see resources/prompts/README.md).
    """
    line = line.replace("'", "\u2019").strip()
    return re.sub(r"\s*([,.:$#=+\-*])\s*", r"\1", line)


@pytest.mark.parametrize("name", NAMES)
def test_every_line_matches_the_paper_listing(name):
    listing = (GOLDEN / "paper_listings" / f"{name}.txt").read_text(encoding="utf-8").splitlines()
    ours = (PROMPTS / f"{name}.txt").read_text(encoding="utf-8").splitlines()
    assert len(ours) == len(listing)
    for number, (printed, line) in enumerate(zip(listing, ours), start=1):
        m = re.match(r"(\d+) ?(.*)$", printed)
        assert m and int(m.group(1)) == number, f"listing {name} is not numbered 1..N at {printed!r}"
        assert _as_extracted(line) == m.group(2), f"{name}.txt line {number}"


@pytest.mark.parametrize("name", NAMES)
def test_files_are_plain_ascii_without_trailing_whitespace(name):
    raw = (PROMPTS / f"{name}.txt").read_bytes()
    raw.decode("ascii")
    for number, line in enumerate(raw.decode().split("\n"), start=1):
        assert line == line.rstrip(), f"{name}.txt line {number} has trailing whitespace"
        assert "\t" not in line
        assert "  " not in line.lstrip() or "  # " in line, f"{name}.txt line {number}: double space"


def test_final_newline_only_where_the_answer_starts_on_a_new_line(formats):
    assert not formats["gsm"].template.endswith("\n")
    for name in NAMES[1:]:
        assert formats[name].template.endswith("\n") and not formats[name].template.endswith("\n\n")


def test_nl_arithmetic_in_shots_is_spaced_and_correct():
    # gsm: 12 calculations in its shots (two "... is N"); each NL prompt: 13 (two-step solutions).
    for name, expected_count in (("gsm", 12), ("simple_nl", 13), ("structured_nl", 13)):
        checked = 0
        text = (PROMPTS / f"{name}.txt").read_text()
        # An operator glued to a digit would break the documented spacing rule.
        assert not re.search(r"\d[+*=-]|[+*=-]\d", text), name
        for expr, result in re.findall(r"(\d+(?: [-+*x] \d+)+) (?:=|is) (\d+)", text):
            assert eval(expr.replace(" x ", " * ")) == int(result), f"{name}: {expr} = {result}"
            checked += 1
        assert checked == expected_count, name


def _shots(code_prompt: str) -> list[str]:
    """The solution() sources of the shots (everything from 'def' to the function's end)."""
    return re.findall(r"^def solution\(\):\n(?:(?:    .*)?\n)+", code_prompt, flags=re.M)


@pytest.mark.parametrize("name", ["simple_code", "structured_code"])
def test_code_shots_are_valid_python_returning_the_shot_answers(name):
    text = (PROMPTS / f"{name}.txt").read_text()
    shots = _shots(text)
    assert len(shots) == 8
    for source, answer in zip(shots, SHOT_ANSWERS):
        namespace: dict = {}
        exec(compile(source, f"{name}.txt", "exec"), namespace)
        assert namespace["solution"]() == answer
        # Standard formatting: 4-space indent, spaces around "=" and binary operators.
        for line in source.splitlines()[1:]:
            code = line.split("#", 1)[0]
            if code.strip():
                assert re.match(r"    \S", line), line
                assert not re.search(r"\S[=+*/-]|[=+*/-]\S", code.strip().replace("return ", "")), line
        ast.parse(source)


def test_code_prompt_ends_with_the_function_header_the_model_continues(formats):
    for name in ("simple_code", "structured_code"):
        assert formats[name].render(QUESTION).endswith(f"Q: {QUESTION}\n\nA:\ndef solution():\n")


@pytest.mark.parametrize("name", NAMES)
def test_shared_prefix_starts_every_prompt_and_ends_before_the_question(formats, name):
    fmt = formats[name]
    prefix = shared_prefix(fmt)
    assert prefix.endswith("\nQ:")
    for question in (QUESTION, "How many?", "  Padded question?  \n"):
        rendered = fmt.render(question)
        assert rendered.startswith(prefix)
        assert rendered[len(prefix):].startswith(" " + question.strip())
    assert QUESTION_PLACEHOLDER not in fmt.render(QUESTION)


def test_render_strips_the_question_and_rejects_empty_ones(formats):
    fmt = formats["gsm"]
    assert fmt.render("\n  What is 2 + 2?  \n") == fmt.render("What is 2 + 2?")
    with pytest.raises(ValueError, match="empty"):
        fmt.render("   ")
    with pytest.raises(TypeError):
        fmt.render(None)


def test_unknown_format_error_names_the_config_key_and_the_known_formats(formats):
    with pytest.raises(PromptFormatError, match=r"config key 'prompts'.*'simple-nl'.*formats\.yaml.*simple_nl"):
        validate_format_names(["gsm", "simple-nl"], formats)
    with pytest.raises(PromptFormatError, match="config key 'experiments.ex2.prompts'"):
        validate_format_names(["nope"], formats, key="experiments.ex2.prompts")
    with pytest.raises(PromptFormatError, match="expected a list"):
        validate_format_names("gsm", formats)
    assert validate_format_names(("gsm", "simple_code"), formats) == ["gsm", "simple_code"]
    assert get_format(formats, "structured_nl").name == "structured_nl"
    with pytest.raises(PromptFormatError, match="config key 'prompt'"):
        get_format(formats, "GSM")


def _write_spec(tmp_path: Path, entries: dict, files: dict[str, str | bytes]) -> Path:
    (tmp_path / "formats.yaml").write_text(yaml.safe_dump(entries))
    for fname, content in files.items():
        data = content.encode() if isinstance(content, str) else content
        (tmp_path / fname).write_bytes(data)
    return tmp_path


def test_adding_a_format_is_a_file_and_an_entry(tmp_path):
    d = _write_spec(tmp_path, {"zero_shot": {"file": "z.txt", "style": "text", "description": "no shots"}},
                    {"z.txt": "Solve.\n\nQ: <Question here>\nA:"})
    fmt = load_formats(d)["zero_shot"]
    assert fmt.render("1 + 1?") == "Solve.\n\nQ: 1 + 1?\nA:"
    assert shared_prefix(fmt) == "Solve.\n\nQ:"


@pytest.mark.parametrize(
    "entries, files, message",
    [
        ({"x": {"file": "missing.txt", "style": "text"}}, {}, r"formats\.yaml: format 'x' \(key x\.file\).*does not exist"),
        ({"x": {"file": "x.txt", "style": "prose"}}, {"x.txt": "Q: <Question here>"}, r"key x\.style must be one of"),
        ({"x": {"style": "text"}}, {}, r"key x\.file is missing"),
        ({"x": {"file": "x.txt", "style": "text", "shots": 8}}, {"x.txt": "Q: <Question here>"}, "unknown key.*shots"),
        ({"x": {"file": "x.txt", "style": "text"}}, {"x.txt": "Q: no placeholder"}, r"formats\.yaml.*exactly once, found 0"),
        ({"x": {"file": "x.txt", "style": "text"}}, {"x.txt": "Q: <Question here>\r\nA:"}, "carriage returns"),
        ({"x": {"file": "x.txt", "style": "text"}}, {"x.txt": b"Q: <Question here>\xff"}, "not UTF-8"),
        ({"x": "x.txt"}, {}, "entry must be a mapping"),
    ],
)
def test_bad_formats_yaml_or_template_gives_a_clear_error(tmp_path, entries, files, message):
    d = _write_spec(tmp_path, entries, files)
    with pytest.raises(PromptFormatError, match=message):
        load_formats(d)


def test_missing_formats_yaml_is_reported(tmp_path):
    with pytest.raises(PromptFormatError, match="no formats.yaml"):
        load_formats(tmp_path)


def test_prompt_format_checks_its_own_template():
    with pytest.raises(PromptFormatError, match="exactly once, found 2"):
        PromptFormat(name="twice", style="text", template="<Question here> <Question here>")


# ---------------------------------------------------------------- fidelity modes

REFERENCE_GOLDEN = GOLDEN / "reference" / "prompts"


def test_reference_renders_are_the_bytes_the_reference_code_produces():
    """resources/prompts/reference/*.txt rendered in reference mode equal the prompts the authors'
    code (PromptConfig + ModelEvaluator.create_prompt, run outside the project) produced."""
    cases = json.loads((REFERENCE_GOLDEN / "prompts.json").read_text(encoding="utf-8"))
    formats = load_formats(fidelity="reference")
    assert sorted({c["format"] for c in cases}) == sorted(NAMES)
    assert all(sum(c["format"] == n for c in cases) >= 3 for n in NAMES)
    for case in cases:
        expected = (REFERENCE_GOLDEN / case["file"]).read_bytes()
        assert formats[case["format"]].render(case["question"]).encode("utf-8") == expected, case["file"]


def test_an_empty_question_renders_as_the_reference_code_renders_it(capfdbinary):
    """Issue 54.5: an empty or whitespace-only question is rendered in reference mode as the authors'
    code renders it (their template's str.format around it: recorded in prompts/empty.json), by the
    library and by `earnest prompt`; earnest mode refuses it, naming the other mode."""
    from earnest.cli import main

    cases = json.loads((REFERENCE_GOLDEN / "empty.json").read_text(encoding="utf-8"))
    formats = load_formats(fidelity="reference")
    assert sorted({c["format"] for c in cases}) == sorted(NAMES) and {c["question"] for c in cases} == {"", " \n"}
    for case in cases:
        expected = (REFERENCE_GOLDEN / case["file"]).read_bytes()
        assert formats[case["format"]].render(case["question"]).encode("utf-8") == expected, case["file"]
    capfdbinary.readouterr()
    for case in cases[:2]:
        assert main(["prompt", case["format"], case["question"], "--fidelity", "reference"]) == 0
        assert capfdbinary.readouterr().out == (REFERENCE_GOLDEN / case["file"]).read_bytes()
    assert main(["prompt", "gsm", "", "--fidelity", "earnest"]) == 2
    assert b"question is empty (fidelity reference renders" in capfdbinary.readouterr().err


def test_reference_prompts_differ_from_earnest_where_the_reference_code_does():
    ref, ear = load_formats(fidelity="reference"), load_formats(fidelity="earnest")
    q = "How many?"
    assert ref["gsm"].render(q).endswith("A: Let's think step by step. ")
    assert ear["gsm"].render(q).endswith("A: Let's think step by step.")
    assert ref["simple_nl"].render(q).endswith("Q: How many?\nA: ")        # solutions start on the next line
    assert ref["simple_code"].render(q).endswith("A:\ndef solution():")     # no newline after the header
    assert "\n    \n" in ref["structured_nl"].template                      # a whitespace-only line in a shot
    assert "Jason had originally and lollipops he has now" in ref["simple_code"].template
    # the question is inserted as given in reference mode, stripped in earnest mode
    assert ref["gsm"].render(" How many?\n").endswith("Q:  How many?\n\nA: Let's think step by step. ")
    assert ear["gsm"].render(" How many?\n") == ear["gsm"].render("How many?")
    assert all(f.stop == ("\nQ:", " Q:") and f.fidelity == "reference" for f in ref.values())
    assert all(f.stop == ("\nQ:",) and f.fidelity == "earnest" for f in ear.values())
    for f in ref.values():
        assert f.render(q).startswith(shared_prefix(f))


def test_per_mode_entries_and_their_errors(tmp_path):
    d = _write_spec(tmp_path, {"x": {"file": {"earnest": "e.txt", "reference": "r.txt"}, "style": "text",
                                     "stop": {"reference": ["\nQ:", " Q:"], "earnest": []}},
                               "y": {"file": "y.txt", "style": "text", "stop": ["###"]}},
                    {"e.txt": "E <Question here>", "r.txt": "R <Question here>", "y.txt": "Y <Question here>"})
    assert load_formats(d)["x"].render("q") == "E q" and load_formats(d)["x"].stop == ()
    assert load_formats(d, fidelity="reference")["x"].render("q") == "R q"
    assert load_formats(d, fidelity="reference")["x"].stop == ("\nQ:", " Q:")
    assert load_formats(d, fidelity="reference")["y"].stop == load_formats(d)["y"].stop == ("###",)
    with pytest.raises(ValueError, match="not a fidelity mode"):
        load_formats(d, fidelity="exact")
    bad = _write_spec(tmp_path, {"x": {"file": {"earnest": "e.txt"}, "style": "text"}}, {})
    with pytest.raises(PromptFormatError, match="key file gives no value for fidelity 'reference'"):
        load_formats(bad, fidelity="reference")
    bad = _write_spec(tmp_path, {"x": {"file": {"earnest": "e.txt", "exact": "r.txt"}, "style": "text"}}, {})
    with pytest.raises(PromptFormatError, match="unknown fidelity mode"):
        load_formats(bad)
    bad = _write_spec(tmp_path, {"x": {"file": "e.txt", "style": "text", "stop": "\nQ:"}}, {})
    with pytest.raises(PromptFormatError, match=r"key x\.stop: must be a list"):
        load_formats(bad)


@pytest.mark.parametrize("text, message", [
    # yaml.safe_load kept the second 'x' without a word; the workflow then prompted with it
    (b"x: {file: a.txt, style: text}\nx: {file: b.txt, style: text}\n",
     r"formats\.yaml:2: key 'x' is given twice in the same mapping \(first on line 1\)"),
    # a byte that is not UTF-8 was a UnicodeDecodeError traceback (in the workflow, before its checks)
    (b"x: {file: a.txt, style: text}  # \xff\n", r"formats\.yaml:1: not UTF-8 text \(byte 0xff at column 34\)"),
    (b"x: [1", r"formats\.yaml:1: invalid YAML"),
])
def test_formats_yaml_is_read_as_strictly_as_the_config(tmp_path, text, message):
    (tmp_path / "formats.yaml").write_bytes(text)
    (tmp_path / "a.txt").write_text("Q: <Question here>")
    (tmp_path / "b.txt").write_text("Question: <Question here>")
    with pytest.raises(PromptFormatError, match=message):
        load_formats(tmp_path)


@pytest.mark.parametrize("stdin, argument, message", [
    # not UTF-8 on stdin, or in the argument: UnicodeEncodeError traceback on writing the prompt
    (b"caf\xe9?", "-", "earnest prompt: <stdin>:1: not UTF-8 text (byte 0xe9 at column 4)"),
    (b"", b"caf\xe9?", "earnest prompt: QUESTION: not UTF-8 text (a byte 0xe9 at character 4)"),
])
def test_prompt_command_names_a_question_that_is_not_utf8(stdin, argument, message):
    import os
    import subprocess
    import sys
    arg = os.fsdecode(argument) if isinstance(argument, bytes) else argument
    r = subprocess.run([sys.executable, "-m", "earnest.cli", "prompt", "gsm", arg], input=stdin, capture_output=True)
    err = r.stderr.decode("utf-8", "replace")
    assert r.returncode == 2 and message in err and "Traceback" not in err, err
    assert r.stdout == b""


def test_prompt_command_shows_the_prompts_of_the_workflow_it_runs_in(tmp_path):
    """Issue 43.2: `earnest prompt` run in a second checkout (a workflow directory with its own
    resources/prompts) shows that checkout's prompt, which its jobs render, and says so; elsewhere it
    shows the installed earnest's; --prompts-dir still chooses."""
    import os
    import shutil
    import subprocess
    import sys

    from helpers import child_env

    other = tmp_path / "second-checkout"
    shutil.copytree(DEFAULT_PROMPTS_DIR, other / "resources" / "prompts")
    (other / "Snakefile").write_text("# another checkout's workflow\n")
    gsm = other / "resources" / "prompts" / "gsm.txt"
    gsm.write_bytes(b"CHANGED " + gsm.read_bytes())
    (other / "sub").mkdir()

    def prompt(cwd, *extra):
        r = subprocess.run([sys.executable, "-m", "earnest.cli", "prompt", "gsm", "How many?", *extra],
                           cwd=cwd, capture_output=True, env=child_env())
        assert r.returncode == 0, r.stderr
        return r.stdout.decode(), r.stderr.decode()

    here, note = prompt(other / "sub")
    assert here.startswith("CHANGED ") and str(other / "resources" / "prompts") in note
    installed, quiet = prompt(tmp_path)
    assert here == "CHANGED " + installed and quiet == ""
    chosen, _ = prompt(other, "--prompts-dir", os.fspath(DEFAULT_PROMPTS_DIR))
    assert chosen == installed
