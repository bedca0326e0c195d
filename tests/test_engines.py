"""The GLMM engines behind one interface (earnest.stats.engines): looked up by name, nothing else
compares engine names, and ``earnest glmm`` and the workflow's scripts run the same steps
(earnest.stats.run) into the same summary columns and values."""

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from earnest.stats import engines as E
from earnest.stats.simulate import simulate_glmm_input
from helpers import GLMM_SHARD_RULES

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "workflow" / "scripts"
REGISTRY = ROOT / "src" / "earnest" / "stats" / "engines"   # the interface and the engines

_NAME = r"""["'](?:lme4|laplace)["']"""
#: an engine name compared (==, !=, in, is), chosen in a conditional (x if c else "lme4",
#: "lme4" if c else x), or listed as the engines (("lme4", "laplace"))
ENGINE_DECISION = re.compile(
    rf"(?:==|!=|\bin\b|\bis\b)\s*[(\[{{]?\s*{_NAME}"
    rf"|{_NAME}\s*(?:==|!=|\bif\b|\bin\b)"
    rf"|\belse\s+{_NAME}"
    rf"|[(\[{{]\s*{_NAME}\s*,\s*{_NAME}\s*[)\]}}]")


def code_files():
    yield from (ROOT / "src").rglob("*.py")
    yield from (ROOT / "workflow").rglob("*.py")
    yield from (ROOT / "rules").glob("*.smk")
    yield ROOT / "Snakefile"


def test_the_pattern_finds_what_it_should():
    for line in ('if engine == "laplace":', "if args.engine != 'lme4'", 'x = "lme4" if a else b',
                 'e = STATS["engine"] if r else "lme4"', 'ENGINES = ("lme4", "laplace")',
                 'if engine in ("laplace",):'):
        assert ENGINE_DECISION.search(line), line
    for line in ('p.add_argument("--engine", default="lme4")', 'engine=str(p.get("engine", "lme4"))',
                 'name = "laplace"'):
        assert not ENGINE_DECISION.search(line), line


def test_no_engine_name_decision_outside_the_registry():
    found = [f"{path.relative_to(ROOT)}:{i}: {line.strip()}"
             for path in code_files() if REGISTRY not in path.parents
             for i, line in enumerate(path.read_text().splitlines(), 1) if ENGINE_DECISION.search(line)]
    assert not found, "engine names compared outside earnest.stats.engines:\n" + "\n".join(found)


def test_engines_are_looked_up_by_name():
    assert set(E.engine_names()) == {"lme4", "laplace"}
    with pytest.raises(ValueError, match=r"unknown GLMM engine 'glmmTMB'; choose one of lme4, laplace"):
        E.get_engine("glmmTMB")
    lme4, lap = E.get_engine("lme4"), E.get_engine("laplace")
    assert lme4.rows == ("answers", "aggregated") and lap.rows == ("aggregated",)
    assert lap.has_cross_check and not lme4.has_cross_check
    assert lme4.fits_item_effects and not lap.fits_item_effects
    assert lme4.uses_cluster_labels and not lap.uses_cluster_labels
    assert lap.fallback == "lme4" and lme4.fallback is None
    # what the workflow runs where the configured engine cannot (sensitivity's per-answer rows,
    # compare's item effects)
    laplace, lme4 = E.get_engine("laplace"), E.get_engine("lme4")
    assert E.engine_for("laplace", rows="aggregated") is laplace
    assert E.engine_for("laplace", rows="answers") is lme4
    assert E.engine_for("laplace", item_effects=True) is lme4
    assert E.engine_for("lme4", rows="answers", item_effects=True) is lme4
    assert E.engine_for("laplace", item_effects=False) is laplace
    assert E.engine_for(laplace, rows="answers") is lme4          # an engine object is taken as it is
    assert isinstance(E.engine_for("lme4"), E.Engine)
    with pytest.raises(ValueError, match="fits aggregated rows only"):
        E.resolve_rows("answers", "earnest", engine="laplace")
    with pytest.raises(ValueError, match="unknown GLMM engine"):
        E.resolve_rows(None, "earnest", engine="nope")


@pytest.mark.parametrize("engine", ["lme4", "laplace"])
def test_a_shard_without_rows_or_without_a_check_has_an_empty_check(engine):
    # no rows (an analysis excluded every item): every resample an error, an empty check with the
    # check's columns, and no complaint about a check that could not be made
    from earnest.stats import glmm as G
    from earnest.stats.run import bootstrap_shard

    empty = G.validate_glmm_input(simulate_glmm_input(6, 2, seed=1), 1).iloc[:0]
    done = bootstrap_shard(empty, 1, 3, 5, rows="aggregated", fidelity="earnest", engine=engine,
                           check_resamples=2)
    assert len(done.check) == 0 and tuple(done.check.columns) == E.CHECK_COLUMNS
    assert len(done.table) == 3 * 2 and (done.table["error"] == G.NO_ROWS).all() and (done.table["engine"] == engine).all()
    assert done.no_check == "" and done.verdict is None and done.table.attrs["rows"] == "aggregated"


SNAKEFILE = """
rule all:
    input: "summary.parquet"

""" + GLMM_SHARD_RULES


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["laplace", "lme4"])
def test_earnest_glmm_and_the_workflow_scripts_give_the_same_summary(tmp_path, engine):
    from earnest.cli import main
    from earnest.stats.summaries import build_summaries

    data = simulate_glmm_input(14, 4, seed=4, gamma_effect=-0.3)
    data.to_csv(tmp_path / "input.csv", index=False)
    # earnest glmm: shards, summaries (with Holm and verdicts) and tables in one process
    assert main(["glmm", str(tmp_path / "input.csv"), "--glmm", "2", "--resamples", "4", "--seed", "3",
                 "--shards", "2", "--cores", "1", "--engine", engine, "--check-resamples", "1",
                 "--out", str(tmp_path / "cli")]) == 0
    cli = pd.read_csv(tmp_path / "cli" / "summary_glmm2.csv")
    # the workflow: one job per shard (bootstrap_shard.py), one for the summary (glmm_summary.py)
    wf = tmp_path / "wf"
    wf.mkdir()
    data.to_parquet(wf / "glmm_input.parquet")
    (wf / "Snakefile").write_text(SNAKEFILE.format(s=SCRIPTS, engine=engine))
    run = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "--quiet"], cwd=wf,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    # the same shards, resample by resample
    for i in range(2):
        a = pd.read_parquet(tmp_path / "cli" / "shards" / "glmm2" / "sim" / "gsm" / f"shard-{i}.parquet")
        b = pd.read_parquet(wf / "shards" / f"shard-{i}.parquet")
        pd.testing.assert_frame_equal(a, b)
    # the same summary columns and values (through the same build_summaries, and a CSV round trip)
    build_summaries(pd.read_parquet(wf / "summary.parquet")).to_csv(wf / "summary.csv", index=False)
    flow = pd.read_csv(wf / "summary.csv")
    assert set(cli.columns) == set(flow.columns), set(cli.columns) ^ set(flow.columns)
    checked = [c for c in cli.columns if c.startswith("engine_check_")]
    if engine == "laplace":
        assert "engine_check_resamples" in checked and (cli["engine_check_resamples"] == 2).all()
    else:
        assert not checked                      # lme4 needs no check against itself
    assert (cli["covariate"] == "gamma").all() and (cli["engine"] == engine).all()
    pd.testing.assert_frame_equal(cli, flow[list(cli.columns)])


def test_the_engine_is_looked_up_once_and_passed_down_as_an_object(tmp_path, monkeypatch):
    """run_glmm, compare_family and power_study look the engine's name up once, where it comes in;
    every shard, summary, pair and simulated data set below gets the Engine object (issue 42)."""
    from earnest.stats import compare as C
    from earnest.stats import power as P
    from earnest.stats import glmm as G
    from earnest.stats.engines import base
    from earnest.stats.run import run_glmm

    real, names = base.get_engine, []

    def counting(name):
        if not isinstance(name, base.Engine):
            names.append(name)
        return real(name)

    for module in (base, E):
        monkeypatch.setattr(module, "get_engine", counting)
    data = G.validate_glmm_input(pd.concat([simulate_glmm_input(8, 3, seed=s, model=f"m{s}") for s in (1, 2)]), 1)
    run_glmm(data, 1, 4, 7, tmp_path / "shards", n_shards=2, cores=1, engine="laplace", check_resamples=0,
             log=lambda m: None)
    assert names == ["laplace"]
    names.clear()
    sim = C.simulate_paired(8, 3, log_or=-0.5, seed=1)                 # models a and b; c answers as a
    pairs = C.validate_compare_input(pd.concat([sim, sim[sim["model"] == "a"].assign(model="c")]))
    out = C.compare_family(pairs, "models", "p", n_resamples=3, seed=1, item_effects=False, engine="laplace")
    assert len(out) == 3 and names == ["laplace"]
    names.clear()
    sc = P.Scenario("s", 0.6, 0.5)
    P.power_study([sc], [8], [3], [0.5, 1.0], n_sims=2, n_resamples=3, engine="laplace")
    assert names == ["laplace"]
