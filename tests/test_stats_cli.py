"""``earnest glmm`` end to end on a small input: shards, resume, summaries, tables, input errors."""

import pandas as pd
import pytest

from earnest.cli import main
from earnest.stats.simulate import simulate_glmm_input


@pytest.fixture()
def glmm_csv(tmp_path):
    df = pd.concat([simulate_glmm_input(25, 6, seed=1, model="m1"),
                    simulate_glmm_input(25, 6, seed=2, model="org/m2", variant_effect=0.0)])
    path = tmp_path / "in.csv"
    df.to_csv(path, index=False)
    return path


@pytest.mark.slow
def test_glmm_cli_writes_shards_summary_and_tables(glmm_csv, tmp_path, capsys):
    out = tmp_path / "out"
    args = ["glmm", str(glmm_csv), "--glmm", "2", "--resamples", "4", "--seed", "9", "--out", str(out),
            "--shards", "2", "--cores", "1"]
    assert main(args) == 0
    shard = out / "shards" / "glmm2" / "org__m2" / "gsm" / "shard-1.parquet"
    assert pd.read_parquet(shard)["resample"].unique().tolist() == [2, 3]
    summary = pd.read_csv(out / "summary_glmm2.csv")
    assert sorted(summary["model"].unique()) == ["m1", "org/m2"]
    assert set(summary["term"]) == {"variant", "gamma_c"}
    assert (summary["n_resamples"] == 4).all() and summary["wald_p"].notna().all()
    for stem in ("glmm2_gamma_c", "glmm2_variant", "separation_gsm", "wald_mismatch"):
        assert (out / "tables" / f"{stem}.md").exists()
    capsys.readouterr()
    assert main(args) == 0                                   # rerun: finished shards are reused
    assert "already done" in capsys.readouterr().err
    assert pd.read_csv(out / "summary_glmm2.csv").equals(summary)


def test_glmm_cli_bad_input(tmp_path, capsys):
    df = simulate_glmm_input(3, 2, seed=1)
    missing = tmp_path / "missing.csv"
    df.drop(columns="template").to_csv(missing, index=False)
    assert main(["glmm", str(missing), "--glmm", "1", "--resamples", "2", "--seed", "1", "--out", str(tmp_path)]) == 2
    assert f"{missing}: missing column 'template'" in capsys.readouterr().err
    bad = tmp_path / "bad.parquet"
    df.assign(correct=df["correct"] + 1).to_parquet(bad)
    assert main(["glmm", str(bad), "--glmm", "1", "--resamples", "2", "--seed", "1", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "column 'correct' must be 0/1" in err


def test_one_template_or_one_variant_level_is_refused_up_front(tmp_path, capsys):
    """Such data used to run every resample (NaN estimates, or lme4 refusing every fit) before
    failing; now `earnest glmm` refuses it before any fit and says why."""
    one = tmp_path / "one.csv"
    simulate_glmm_input(1, 8, seed=3).to_csv(one, index=False)
    assert main(["glmm", str(one), "--glmm", "1", "--resamples", "2", "--seed", "1", "--out", str(tmp_path / "o")]) == 2
    assert "every row is template 0; the GLMMs' random intercept per template" in capsys.readouterr().err
    variants_only = tmp_path / "variants.csv"
    df = simulate_glmm_input(4, 3, seed=3)
    df[df["variant"] == 1].to_csv(variants_only, index=False)
    assert main(["glmm", str(variants_only), "--glmm", "1", "--resamples", "2", "--seed", "1",
                 "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "column 'variant' is 1 in every row" in err and str(variants_only) in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("content, message", [
    (b"", "empty file; expected a header line"),
    (b"model,prompt,template,variant,correct\n", "no data rows (columns: model, prompt, template, variant, correct)"),
    (b"model,prompt,template,variant,correct\nm,gsm,0,0,1\nm,gsm,1,1,0,7\n", ":3: 6 fields, but the header (line 1) has 5"),
    (b"model,prompt,template,variant,correct\nm,gsm,0,0,1\nm\xe9,gsm,1,1,0\n", ":3: not UTF-8 text (byte 0xe9 at column 2)"),
])
def test_glmm_cli_unreadable_csv_is_named(tmp_path, capsys, content, message):
    path = tmp_path / "in.csv"
    path.write_bytes(content)
    assert main(["glmm", str(path), "--glmm", "1", "--resamples", "2", "--seed", "1", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"earnest glmm: {path}" in err and message in err and "Traceback" not in err


def _glmm_rows(cells: dict) -> pd.DataFrame:
    """A valid GLMM 2 input of 4 templates x 3 variants with ``cells`` ({(row, column): value}) set;
    the values reach the CSV as given."""
    df = simulate_glmm_input(4, 3, seed=3).astype(object)
    for (row, col), value in cells.items():
        df.loc[row, col] = value
    return df


@pytest.mark.parametrize("glmm, cells, message", [
    # 1e308 summed to inf in the centring: every row lost, then "cannot draw from 0 templates"
    (2, {(0, "gamma"): 1e308, (1, "gamma"): 1e308}, "column 'gamma' holds 1e+308 in data row 1; gamma, a sum of log10"),
    (2, {(5, "gamma"): -1e308}, "column 'gamma' holds -1e+308 in data row 6"),
    # ids beyond int64 were read as floats (or wrapped) and merged; beyond R's integers lme4 overflowed
    (1, {(0, "template"): "18446744073709551616", (4, "template"): "18446744073709551617"},
     "column 'template' holds 18446744073709551616 in data row 1; ids must lie within +-2147483647"),
    (1, {(0, "template"): 2**63}, "column 'template' holds 9223372036854775808 in data row 1"),
    (1, {(3, "template"): -2**31}, "column 'template' holds -2147483648 in data row 4"),
    # an empty model or prompt cell: groupby dropped the row without a word
    (1, {(2, "model"): None}, "column 'model' is empty in data row 3"),
    (1, {(7, "prompt"): "  "}, "column 'prompt' is empty in data row 8"),
])
def test_glmm_cli_refuses_cells_that_were_silently_wrong(tmp_path, capsys, glmm, cells, message):
    path = tmp_path / "in.csv"
    _glmm_rows(cells).to_csv(path, index=False)
    out = tmp_path / "o"
    assert main(["glmm", str(path), "--glmm", str(glmm), "--resamples", "2", "--seed", "1", "--out", str(out),
                 "--engine", "laplace", "--check-resamples", "0"]) == 2
    err = capsys.readouterr().err
    assert f"earnest glmm: {path}: {message}" in err and "Traceback" not in err, err
    assert not out.exists()


def test_glmm_cli_refuses_a_column_named_twice(tmp_path, capsys):
    """pandas renames a second 'correct' to 'correct.1' and the first one silently counts; a
    Parquet file or a frame with two equal names is refused the same way."""
    df = simulate_glmm_input(4, 3, seed=3)
    path = tmp_path / "in.csv"
    text = df.to_csv(index=False)
    header, rest = text.split("\n", 1)
    path.write_text(header.replace("gamma", "correct") + "\n" + rest)
    assert main(["glmm", str(path), "--glmm", "1", "--resamples", "2", "--seed", "1", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"earnest glmm: {path}:1: column 'correct' appears twice (columns 5 and 6)" in err
    import pyarrow as pa
    import pyarrow.parquet as pq
    table = pa.Table.from_pandas(df, preserve_index=False)
    parquet = tmp_path / "in.parquet"
    pq.write_table(table.append_column("correct", table.column("correct")), parquet)
    assert main(["glmm", str(parquet), "--glmm", "1", "--resamples", "2", "--seed", "1", "--out", str(tmp_path / "o")]) == 2
    assert f"earnest glmm: {parquet}: column 'correct' appears twice (columns 5 and 7)" in capsys.readouterr().err
    from earnest.stats import glmm as G
    twice = pd.concat([df, df[["variant"]]], axis=1)
    with pytest.raises(G.GLMMInputError, match=r"x\.parquet: column 'variant' appears twice \(columns 4 and 7\)"):
        G.validate_glmm_input(twice, 1, source="x.parquet")


@pytest.mark.slow
def test_failed_fits_are_recorded_not_fatal():
    # one template only: lme4 refuses every fit ("grouping factors must have > 1 sampled level");
    # the engine keeps the error text per resample and the shard still finishes
    from earnest.stats import glmm as G

    df = G.validate_glmm_input(simulate_glmm_input(1, 8, seed=3), 1)
    from earnest.stats.engines import run_shard

    shard = run_shard(df, 1, 2, 1)
    assert shard["error"].str.contains("grouping factors").all() and not shard["converged"].any()


@pytest.mark.parametrize("command, option, value, message", [
    # a negative seed ended in numpy's traceback ("expected non-negative integer") after the input was read
    ("glmm", "--seed", "-1", "--seed: -1 is less than the minimum of 0 (as config key stats.seed)"),
    # 10**9 resamples: numpy's MemoryError traceback planning the shards
    ("glmm", "--resamples", "1000000000", "--resamples: 1000000000 is greater than the maximum of 1000000"),
    ("glmm", "--check-resamples", "-2", "--check-resamples: -2 is less than the minimum of 0"),  # was accepted
    ("glmm", "--cores", "0", "--cores: 0 is less than the minimum of 1"),                        # was accepted
    ("compare", "--seed", "-3", "--seed: -3 is less than the minimum of 0 (as config key compare.seed)"),
    ("compare", "--cores", "-1", "--cores: -1 is less than the minimum of 1"),
    ("power", "--seed", "-1", "--seed: -1 is less than the minimum of 0 (as config key power.seed)"),
    ("power", "--sims", "100000000000", "--sims: 100000000000 is greater than the maximum of 100000"),  # ran for ever
    ("power", "--templates", "30 30", "--templates: [30, 30] has non-unique elements"),   # the same grid twice
    ("power", "--odds-ratios", "inf", "--odds-ratios: inf is not a value it can take"),
    ("power", "--odds-ratios", "1e300", "--odds-ratios: 1e+300 is greater than the maximum of 1000000.0"),
    ("power", "--odds-ratios", "0", "--odds-ratios: 0.0 is less than the minimum of 1e-06"),
    ("power", "--cores", "0", "--cores: 0 is less than the minimum of 1"),
    ("power", "--gamma-sd", "0", "--gamma-sd: 0.0 is less than or equal to the minimum of 0 (as config key power.gamma_sd)"),
])
def test_options_take_the_range_of_their_config_key(tmp_path, capsys, glmm_csv, command, option, value, message):
    """An option that stands for a config key is checked against that key's schema, before any input is
    read or any fit starts; the error names the option."""
    out = tmp_path / "o"
    args = {"glmm": ["glmm", str(glmm_csv), "--glmm", "1", "--resamples", "2", "--seed", "1", "--engine", "laplace"],
            "compare": ["compare", str(glmm_csv), "--by", "models", "--resamples", "2", "--seed", "1"],
            "power": ["power", "--baseline-acc", "0.5", "--ranef-var", "0.5", "--sims", "1", "--resamples", "2"]}[command]
    assert main(args + [option, *value.split(), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"earnest {command}: {message}" in err and "Traceback" not in err, err
    assert not out.exists()


def test_power_names_a_variance_no_accuracy_can_have(tmp_path, capsys):
    """--ranef-var 1e300: scipy's "f(a) and f(b) must have different signs" named nothing."""
    assert main(["power", "--baseline-acc", "0.5", "--ranef-var", "1e300", "--sims", "1", "--resamples", "2",
                 "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "template-intercept variance 1e+300 with baseline accuracy 0.5: no intercept" in err, err


@pytest.mark.parametrize("names, message", [
    # 'a b' and 'a_b' share the shard folder a_b: the second model reused the first's shards ("already
    # done") and the summary gave both models the first one's estimates
    ({"model": ["a b", "a_b"]}, "column 'model' holds 'a b' (data row 1) and 'a_b' (data row 7), which share the "
                                "folder and file name 'a_b'"),
    ({"model": ["org/m", "org__m"]}, "column 'model' holds 'org/m' (data row 1) and 'org__m' (data row 7)"),
    # '..' wrote its shards two folders up, beside another model's
    ({"prompt": ["..", "gsm"]}, "column 'prompt' holds '..' in data row 1; it names folders of the results"),
])
def test_glmm_cli_refuses_names_that_share_a_folder(tmp_path, capsys, names, message):
    (col, (first, second)), = names.items()
    df = pd.concat([simulate_glmm_input(3, 1, seed=1).assign(**{col: first}),
                    simulate_glmm_input(3, 1, seed=2).assign(**{col: second})])
    path = tmp_path / "in.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "o"
    assert main(["glmm", str(path), "--glmm", "1", "--resamples", "2", "--seed", "1", "--out", str(out),
                 "--engine", "laplace", "--check-resamples", "0"]) == 2
    err = capsys.readouterr().err
    assert f"earnest glmm: {path}: {message}" in err, err
    assert not out.exists()


@pytest.mark.parametrize("command", ["glmm", "compare", "power"])
def test_out_that_is_a_file_is_refused_before_any_work(tmp_path, capsys, glmm_csv, command):
    """`earnest glmm --out FILE` ended in a traceback from mkdir; power found out only after its whole
    study had run, so the results were lost. Each command now names the option and the file before
    reading its input; the file is left as it was."""
    args = {"glmm": ["glmm", str(glmm_csv), "--glmm", "1", "--resamples", "2", "--seed", "1", "--engine", "laplace"],
            "compare": ["compare", str(glmm_csv), "--by", "models", "--resamples", "2", "--seed", "1"],
            "power": ["power", "--baseline-acc", "0.5", "--ranef-var", "0.5", "--sims", "1", "--resamples", "2"]}[command]
    taken = tmp_path / "results.txt"
    taken.write_text("keep me\n")
    for out, message in ((taken, f"--out {taken}: is a file, not a directory"),
                         (taken / "sub", f"--out {taken / 'sub'}: cannot be made: {taken} is a file, not a directory")):
        assert main(args + ["--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert f"earnest {command}: {message}" in err and "Traceback" not in err, err
    assert taken.read_text() == "keep me\n"


def test_templates_without_both_datasets_are_warned_and_captioned(tmp_path, capsys):
    """Issue 43.1: a run cut short (lm_eval --limit 4: GSM-Base of some templates, GSM-Variants of
    others) still fits, but the warning and every table's caption name the unpaired templates."""
    from earnest.stats.glmm import unpaired_templates

    df = simulate_glmm_input(12, 4, seed=3)
    df = df[~((df.template == 10) & (df.variant == 1)) & ~((df.template == 11) & (df.variant == 0))]
    assert unpaired_templates(df) == [{"model": "sim", "prompt": "gsm", "base_only": [10], "variants_only": [11],
                                       "paired": 10}]
    assert unpaired_templates(simulate_glmm_input(12, 4, seed=3)) == []
    path = tmp_path / "in.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "out"
    assert main(["glmm", str(path), "--glmm", "1", "--resamples", "4", "--seed", "1", "--out", str(out),
                 "--engine", "laplace"]) == 0
    err = capsys.readouterr().err
    assert "WARNING: Templates not paired" in err and "1 with GSM-Base but no GSM-Variants (10)" in err
    md = (out / "tables" / "glmm1_variant_gsm.md").read_text()
    assert "Templates not paired" in md and "(11)" in md
