"""The Snakemake workflow on a tiny random model: end to end, incremental planning, targeted
rebuilds, the paper's full grid as a dry run, and config errors that stop the run before any job."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import child_env
from tinymodel import build_tiny_model

REPO = Path(__file__).resolve().parents[1]
TINY = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())


def snakemake(workdir: Path, config: dict, *args: str, timeout: int = 1800) -> subprocess.CompletedProcess:
    cfg = workdir / f"config-{abs(hash(json.dumps(config, sort_keys=True)))}.yaml"
    cfg.write_text(yaml.safe_dump(config))
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(workdir),
           "--configfile", str(cfg), "-c2", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=child_env())


def planned(proc: subprocess.CompletedProcess) -> dict[str, int]:
    """Job counts per rule from a dry run's 'Job stats' table."""
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    if "Nothing to be done" in out:
        return {}
    table = out.split("Job stats:", 1)[1]
    counts = {}
    for line in table.splitlines()[3:]:
        m = re.match(r"^(\w+)\s+(\d+)$", line.strip())
        if not m:
            break
        counts[m.group(1)] = int(m.group(2))
    counts.pop("total", None)
    return counts


TARGETS = ["all"]  # tables, K-S test, figures


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """One full run of the tiny config (data -> generation -> scoring -> bootstrap GLMMs -> tables)."""
    wd = tmp_path_factory.mktemp("wf")
    build_tiny_model(wd / "tiny-model")
    # the prompt files, StatFormBench taxonomy and prompt template the run reads: copies of the
    # shipped ones, so that a test can edit one
    shutil.copytree(REPO / "resources" / "prompts", wd / "prompts")
    TINY["prompts_dir"] = str(wd / "prompts")
    (wd / "statform").mkdir()
    for name, key in (("taxonomy.yaml", "taxonomy"), ("prompts/formulation_zero_shot.txt", "prompt_template")):
        shutil.copy(REPO / "resources" / "statform" / name, wd / "statform" / Path(name).name)
        TINY["statform"][key] = str(wd / "statform" / Path(name).name)
    proc = snakemake(wd, TINY, *TARGETS)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return wd


@pytest.mark.slow
def test_end_to_end_outputs(tiny_run):
    wd = tiny_run
    import pandas as pd

    for prompt in ("gsm", "simple_code"):
        for ds, n in (("gsm_base", 3), ("gsm_variants", 6)):
            gen = pd.read_parquet(wd / f"results/generations/tiny/{prompt}/{ds}.parquet")
            assert len(gen) == n and gen.item_id.is_unique
            scored = pd.read_parquet(wd / f"results/scored/tiny/{prompt}/{ds}.parquet")
            assert {"extracted", "extraction_pattern", "error_class", "correct", "gamma"} <= set(scored.columns)
    summary = pd.read_parquet(wd / "results/stats/all/glmm1/tiny/gsm/summary.parquet")
    assert summary.n_resamples.iloc[0] == TINY["stats"]["resamples"]
    table = pd.read_parquet(wd / "results/stats/summaries.parquet")
    assert {"p_holm", "significant_uncorrected", "significant_holm", "degenerate", "wald_mismatch", "prompt_label", "ex2"} <= set(table.columns)
    assert set(table.prompt) == {"gsm", "simple_code"} and table.ex2.all()
    assert set(table.prompt_label) == {"GSM prompt (Ex1)", "Ex2.C simple code prompt"}
    # StatFormBench ran end to end on the tiny model: generations, scored rows, tables and figures
    sf = pd.read_parquet(wd / "results/statform/scored/tiny/zero_shot.parquet")
    assert len(sf) == TINY["statform"]["limit"] and {"parse_status", "correct_cg", "jcv"} <= set(sf.columns)
    assert (wd / "results/statform/tables/main.md").exists()
    assert any((wd / "results/statform/figures").glob("confusion_coarse_tiny.png"))
    # every GLMM 1 result beside the MDE of its design, and the power study of the config
    mde = pd.read_csv(wd / "results/tables/power/results_mde.csv")
    assert set(mde.prompt) == set(summary.prompt) | set(mde.prompt) and len(mde) >= 1
    assert mde["mde_or"].notna().all() or mde["mde_note"].fillna("").str.len().gt(0).all()
    power = pd.read_csv(wd / "results/power/paper_design/power.csv")
    assert len(power) == len(TINY["power"]["odds_ratios"]) and (power.n_sims == TINY["power"]["sims"]).all()
    # the tiny model's two prompts compared on the same items
    pairs = pd.read_csv(wd / "results/compare/prompts/tiny/pairs.csv")
    assert len(pairs) == 1 and pairs.n_items.iloc[0] == 9 and pairs.n_resamples.iloc[0] == TINY["stats"]["resamples"]
    assert (wd / "results/compare/prompts/tiny/matrix.png").exists()
    # which Python ran the code answers, under which sandbox layers (issue 21.2)
    sandbox = pd.read_csv(wd / "results/tables/sandbox.csv")
    assert sandbox["prompt"].tolist() == ["simple_code", "simple_code"]
    assert sandbox["python"].str.match(r"3\.\d+\.\d+").all() and sandbox["sandbox"].str.contains("seccomp").all()
    assert "Finished" in (wd / "logs/generate/tiny/gsm/gsm_base.log").read_text() or \
        "progress:" in (wd / "logs/generate/tiny/gsm/gsm_base.log").read_text()
    # nothing left to do
    assert planned(snakemake(wd, TINY, "-n", *TARGETS)) == {}


@pytest.mark.slow
def test_sensitivity_from_the_same_generations(tiny_run):
    """The other fidelity mode re-scores and re-fits this run's generations under its own paths; with
    regenerate it would generate again under its own prompt bytes, and the main results stay."""
    import pandas as pd

    wd = tiny_run
    main_mode, other = TINY.get("fidelity", "earnest"), "reference"
    for prompt in ("gsm", "simple_code"):
        for ds in ("gsm_base", "gsm_variants"):
            a = pd.read_parquet(wd / f"results/scored/tiny/{prompt}/{ds}.parquet")
            b = pd.read_parquet(wd / f"results/sensitivity/{other}/scored/tiny/{prompt}/{ds}.parquet")
            assert a["item_id"].tolist() == b["item_id"].tolist() and a["response"].tolist() == b["response"].tolist()
        for glmm in (1, 2):
            s = pd.read_parquet(wd / f"results/sensitivity/{other}/stats/all/glmm{glmm}/tiny/{prompt}/summary.parquet")
            assert set(s["fidelity"]) == {other} and set(s["rows"]) == {"answers"}
            m = pd.read_parquet(wd / f"results/stats/all/glmm{glmm}/tiny/{prompt}/summary.parquet")
            assert set(m["fidelity"]) == {main_mode} and set(m["rows"]) == {"aggregated"}
    table = pd.read_csv(wd / "results/tables/sensitivity.csv")
    assert len(table) == 2 * 3 and {"p_boot_earnest", "p_boot_reference", "changed"} <= set(table.columns)
    assert "Sensitivity of the conclusions" in (wd / "results/tables/sensitivity.md").read_text()
    cfg = copy.deepcopy(TINY)
    cfg["sensitivity"]["regenerate"] = True
    jobs = planned(snakemake(wd, cfg, "-n", *TARGETS))
    assert jobs["sensitivity_generate"] == 4 and jobs["sensitivity_score"] == 4
    assert "generate" not in jobs and "score" not in jobs and "bootstrap_shard" not in jobs


def planned_jobs(out: str) -> list[dict[str, str]]:
    """Every job of a dry run's output: its rule and its input and output lines ("" where it has none)."""
    jobs = []
    for line in out.splitlines():
        line = re.sub(r"^\[[^\]]+\] ", "", line).strip()
        m = re.match(r"^(?:local)?rule (\w+):$", line)
        if m:
            jobs.append({"rule": m.group(1), "input": "", "output": ""})
        elif jobs and line.startswith(("input: ", "output: ")):
            key, value = line.split(": ", 1)
            jobs[-1][key] = jobs[-1][key] or value
    return jobs


def planned_outputs(proc: subprocess.CompletedProcess) -> list[tuple[str, str]]:
    """(rule, output file) of every job a dry run plans."""
    jobs = planned_jobs(proc.stdout + proc.stderr)
    return [(j["rule"], f.strip()) for j in jobs for f in j["output"].split(",") if f]


@pytest.mark.slow
def test_adding_a_model_plans_only_its_jobs(tiny_run):
    """Issue 55.2: a new model plans its own jobs and the cross-model tables; of the other models'
    jobs only what reads every model of a prompt: reference mode's centre of gamma (the authors' pool,
    here the sensitivity run's) and the reference GLMM 2 fits centred on it, not their GLMM inputs or
    GLMM 1 fits."""
    cfg = copy.deepcopy(TINY)
    cfg["models"]["tiny2"] = dict(cfg["models"]["tiny"])
    proc = snakemake(tiny_run, cfg, "-n", *TARGETS)
    jobs = planned(proc)
    # Ex1 only for the new model (it is not in ex2_models): GSM prompt on both datasets
    assert jobs["generate"] == 2 and jobs["score"] == 2
    assert jobs["glmm_input"] == 1 and jobs["glmm_summary"] == 2 and jobs["bootstrap_shard"] == 4
    assert jobs["stats_tables"] == 1
    assert not {"base_items", "template_variants", "variant_items", "ks_test"} & set(jobs)
    assert jobs["sensitivity_gamma_centre"] == 1 and jobs["sensitivity_glmm_input"] == 1
    others = [(r, f) for r, f in planned_outputs(proc) if "/tiny/" in f]     # the existing model's
    pool = "results/sensitivity/reference/stats/all/glmm2/tiny/gsm/"
    assert others and all(f.startswith(pool) for r, f in others), others
    assert {r for r, f in others} == {"sensitivity_bootstrap_shard", "sensitivity_glmm_summary"}
    assert ("sensitivity_gamma_centre", "results/sensitivity/reference/stats/all/centre/gsm.json") in \
        planned_outputs(proc)


@pytest.mark.slow
def test_adding_a_prompt_format_plans_only_its_jobs(tiny_run):
    cfg = copy.deepcopy(TINY)
    cfg["experiments"]["ex2_prompts"] = ["simple_code", "simple_nl"]
    jobs = planned(snakemake(tiny_run, cfg, "-n", *TARGETS))
    assert jobs["generate"] == 2 and jobs["score"] == 2
    assert not {"base_items", "template_variants", "variant_items"} & set(jobs)


@pytest.mark.slow
def test_deleting_one_generation_rebuilds_only_it_and_dependents(tiny_run):
    wd = tiny_run
    victim = wd / "results/generations/tiny/simple_code/gsm_base.parquet"
    others = [p for p in (wd / "results/generations").rglob("*.parquet") if p != victim]
    before = {p: p.stat().st_mtime_ns for p in others}
    victim.unlink()
    jobs = planned(snakemake(wd, TINY, "-n", *TARGETS))
    assert jobs["generate"] == 1 and jobs["score"] == 1
    assert "glmm_summary" in jobs and "stats_tables" in jobs
    assert not {"template_variants", "base_items"} & set(jobs)
    proc = snakemake(wd, TINY, *TARGETS)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert victim.exists()
    assert {p: p.stat().st_mtime_ns for p in others} == before


@pytest.mark.slow
def test_a_finished_run_copied_elsewhere_plans_nothing(tiny_run, tmp_path):
    """Issue 55.1: a finished run copied (or moved) to another folder, at another depth, plans no
    job: no rule records a path of the run's own folder, and the workflow it ran stays where it was."""
    copy = tmp_path / "elsewhere" / "deeper" / "run"
    shutil.copytree(tiny_run, copy, symlinks=True)     # times kept, as cp -a and rsync -a keep them
    assert planned(snakemake(copy, TINY, "-n", *TARGETS)) == {}


#: builds the DAG of a dry run and prints every job's inputs and the params Snakemake compares
_JOB_RECORDS = """
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import ConfigSettings, DAGSettings, OutputSettings, ResourceSettings
with SnakemakeApi(OutputSettings(quiet={"all"})) as api:
    wf = api.workflow(resource_settings=ResourceSettings(cores=1),
                      config_settings=ConfigSettings(configfiles=[Path(sys.argv[3])]),
                      snakefile=Path(sys.argv[1]), workdir=Path(sys.argv[2]))
    wf.dag(dag_settings=DAGSettings(targets={"all"})).execute_workflow(executor="dryrun")
    jobs = [{"rule": j.rule.name, "input": [str(f) for f in j.input], "params": [repr(v) for v in j.non_derived_params]}
            for j in wf._workflow.dag.jobs]
print("JOBS " + json.dumps(jobs))
"""


@pytest.mark.slow
def test_no_job_records_an_absolute_path_of_its_run_or_its_checkout(tmp_path, tiny_model_dir):
    """Issue 55.1: with the workflow inside the run's folder (a run in its checkout, or the catalog's
    project folder with workflow/ in it), no job's inputs or params hold an absolute path, so the
    folder copied or moved, checkout and all, plans nothing: before, the published tables, the power
    study's folder, the prompt files and StatFormBench's files were recorded absolute."""
    flow = tmp_path / "workflow"
    flow.mkdir()
    for name in ("Snakefile", "rules", "workflow", "src", "resources", "config", "envs", "report", "profiles"):
        src, dst = REPO / name, flow / name
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(src, dst)
    (tmp_path / "tiny-model").symlink_to(tiny_model_dir, target_is_directory=True)
    cfg = tmp_path / "config.yaml"
    cfg.write_text((REPO / "tests" / "configs" / "tiny.yaml").read_text())   # its paths relative, as a user writes
    proc = subprocess.run([sys.executable, "-c", _JOB_RECORDS, str(flow / "Snakefile"), str(tmp_path), str(cfg)],
                          capture_output=True, text=True, timeout=600, env=child_env())
    line = next((x for x in proc.stdout.splitlines() if x.startswith("JOBS ")), None)
    assert proc.returncode == 0 and line, (proc.stdout + proc.stderr)[-3000:]
    jobs = json.loads(line[len("JOBS "):])
    assert {"generate", "published_comparison", "power_paper_design", "statform_data", "statform_generate"} <= \
        {j["rule"] for j in jobs}
    absolute = [(j["rule"], v) for j in jobs for v in j["input"] + j["params"]
                if str(tmp_path) in v or str(tmp_path.resolve()) in v or str(REPO) in v]
    assert absolute == [], absolute
    shipped = {v for j in jobs for v in j["input"] if v.startswith("workflow/resources/")}
    assert "workflow/resources/published/table4_accuracy.csv" in shipped, sorted(shipped)


def _plan_after_editing(wd: Path, path: Path, edit) -> tuple[dict[str, int], str]:
    """The dry run's jobs after ``edit`` changed the bytes of ``path`` (restored afterwards, with its
    times, after which nothing is left to do)."""
    original, st = path.read_bytes(), path.stat()
    try:
        path.write_bytes(edit(original))
        assert path.read_bytes() != original
        proc = snakemake(wd, TINY, "-n", *TARGETS)
        return planned(proc), proc.stdout + proc.stderr
    finally:
        path.write_bytes(original)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert planned(snakemake(wd, TINY, "-n", *TARGETS)) == {}


# what a generation's dependants are in the tiny run: scoring, statistics, tables and figures of GSM-Symbolic
GSM_DEPENDANTS = {"score", "sensitivity_score", "glmm_input", "bootstrap_shard", "glmm_summary", "summaries",
                  "sensitivity_glmm_input", "sensitivity_gamma_centre", "sensitivity_bootstrap_shard",
                  "sensitivity_glmm_summary", "sensitivity_summaries", "sensitivity_table", "stats_tables", "error_class_table", "fig_errors",
                  "fig_variant_effect", "fig_prompts", "fig_number_effect", "published_comparison",
                  "power_results", "compare_family", "sandbox_table", "report_findings", "report_answers", "all"}


@pytest.mark.slow
def test_editing_a_prompt_file_plans_its_generation_and_dependants_only(tiny_run):
    """Issue 22.5: a prompt file is an input of its generation jobs: editing one plans those jobs
    and what depends on them, nothing of the other prompt."""
    jobs, out = _plan_after_editing(tiny_run, tiny_run / "prompts" / "simple_code.txt",
                                    lambda b: b.replace(b"def solution():", b"def solution():  # edited", 1))
    assert jobs["generate"] == 2 and jobs["score"] == 2, jobs
    # the prompts of the planned generate jobs (their output lines)
    generated = set(re.findall(r"rule generate:\n(?:    .*\n)*?    output: results/generations/tiny/(\w+)/", out))
    assert generated == {"simple_code"}, generated
    assert set(jobs) - {"generate"} <= GSM_DEPENDANTS, jobs


@pytest.mark.slow
def test_editing_formats_yaml_plans_only_the_generations_of_the_format_that_changed(tiny_run):
    """Issue 43.2: a generation job depends on its own format's entry in formats.yaml (stop strings,
    style: a parameter) and template file, not on the whole file: adding a format or a comment plans
    nothing; changing one format's stop strings plans its generations and their dependants only."""
    formats = tiny_run / "prompts" / "formats.yaml"
    extra = (b"\n# a comment\nmy_new_format:\n  file: simple_code.txt\n  stop: [\"\\nQ:\"]\n  style: code\n")
    jobs, _ = _plan_after_editing(tiny_run, formats, lambda b: b + extra)
    assert jobs == {}, jobs

    def new_stop(b: bytes) -> bytes:
        head, _, rest = b.partition(b"\nsimple_code:\n")
        block, sep, tail = rest.partition(b"\n\n") if b"\n\n" in rest else (rest, b"", b"")
        edited = re.sub(rb'earnest: \["\\nQ:"\]', b'earnest: ["\\nQ:", "\\n\\n\\n"]', block, count=1)
        assert edited != block
        return head + b"\nsimple_code:\n" + edited + sep + tail

    jobs, out = _plan_after_editing(tiny_run, formats, new_stop)
    assert jobs["generate"] == 2 and jobs["score"] == 2, jobs     # simple_code x two datasets
    generated = set(re.findall(r"rule generate:\n(?:    .*\n)*?    output: results/generations/tiny/(\w+)/", out))
    assert generated == {"simple_code"}, generated
    assert set(jobs) - {"generate"} <= GSM_DEPENDANTS, jobs


@pytest.mark.slow
def test_editing_the_statform_taxonomy_or_template_plans_statform_jobs_only(tiny_run):
    """The StatFormBench taxonomy is an input of its data job, its prompt template of its generation
    jobs: editing one plans those jobs and their dependants, nothing of GSM-Symbolic."""
    jobs, _ = _plan_after_editing(tiny_run, tiny_run / "statform" / "taxonomy.yaml", lambda b: b + b"\n# edited\n")
    assert jobs == {"statform_data": 1, "statform_generate": 1, "statform_score": 1, "statform_analysis": 1,
                    "all": 1}, jobs
    jobs, _ = _plan_after_editing(tiny_run, tiny_run / "statform" / "formulation_zero_shot.txt",
                                  lambda b: b + b"\n")
    assert jobs == {"statform_generate": 1, "statform_score": 1, "statform_analysis": 1, "all": 1}, jobs


def test_paper_grid_dry_run_without_weights(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory",
                           str(tmp_path), "--configfile", str(REPO / "config/paper.yaml"), "-n",
                           "results/tables/stats"], capture_output=True, text=True, timeout=600, env=child_env())
    jobs = planned(proc)
    # 20 models x GSM prompt + 8 Ex2 models x 4 prompts, each on GSM-Base and GSM-Variants
    assert jobs["generate"] == (20 + 8 * 4) * 2
    assert jobs["fetch_model"] == 20
    # the paper's items: the official release, fetched once from the hub, read into both datasets
    assert jobs["fetch_gsm_symbolic"] == 1 and jobs["release_items"] == 2
    assert jobs["summaries"] == 1 and jobs["stats_tables"] == 1
    assert not (tmp_path / "results").exists()


def _bad(tmp_path, mutate, expect):
    cfg = copy.deepcopy(TINY)
    mutate(cfg)
    proc = snakemake(tmp_path, cfg, "-n")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-2000:]
    assert re.search(expect, out), out[-2000:]
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("form", ["--configfile", "--configfile="])
def test_a_tab_indented_config_is_named_by_file_and_line_through_snakemake(tmp_path, form):
    """Issue 55.4: Snakemake reads --configfile before the Snakefile and said only "Config file is not
    valid JSON or YAML"; the workflow profile reads it first and names file, line and the fix."""
    lines = (REPO / "tests" / "configs" / "tiny.yaml").read_text().splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("    backend:"))
    lines[at] = "\t" + lines[at][4:]
    bad = tmp_path / "tabbed.yaml"
    bad.write_text("\n".join(lines) + "\n")
    args = [form, str(bad)] if form == "--configfile" else [form + str(bad)]
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory",
                           str(tmp_path), *args, "-n"], capture_output=True, text=True, timeout=300, env=child_env())
    assert proc.returncode != 0
    assert f"{bad}:{at + 1}: invalid YAML" in proc.stderr and "indent with spaces" in proc.stderr, proc.stderr[-2000:]
    assert not (tmp_path / "results").exists()


def test_unknown_prompt_is_named(tmp_path):
    _bad(tmp_path, lambda c: c["experiments"].update(ex2_prompts=["simple_code", "haiku"]),
         r"experiments\.ex2_prompts.*haiku")


def test_unknown_backend_is_named(tmp_path):
    _bad(tmp_path, lambda c: c["models"]["tiny"].update(backend="vllm"), r"models\.tiny\.backend")


def test_paper_mode_needs_revision(tmp_path):
    def mutate(c):
        c["paper_mode"] = True
        c["models"]["tiny"] = {"backend": "transformers", "hub": "org/model"}
    _bad(tmp_path, mutate, r"models\.tiny\.revision")


def test_missing_dataset_file_is_named(tmp_path):
    _bad(tmp_path, lambda c: c["gsm_symbolic"].update(source="jsonl", jsonl=str(tmp_path / "missing.jsonl")),
         r"missing\.jsonl.*not found")


def test_missing_gguf_file_is_named(tmp_path):
    _bad(tmp_path, lambda c: c["models"].update(tiny={"backend": "transformers", "gguf": str(tmp_path / "no.gguf")}),
         r"models\.tiny\.gguf: file not found: .*no\.gguf")


def test_malformed_jsonl_line_is_named(tmp_path):
    good = {"id": 0, "instance": 0, "question": "Q 1", "answer": "x #### 3", "original_id": 5,
            "original_question": "Q 0", "original_answer": "y #### 2"}
    path = tmp_path / "release.jsonl"
    path.write_text(json.dumps(good) + "\n" + '{"id": 0, "instance": 1, "question": \n')
    _bad(tmp_path, lambda c: c["gsm_symbolic"].update(source="jsonl", jsonl=str(path), templates=[0]),
         r"release\.jsonl:2")


def test_config_mistakes_name_file_line_and_key_all_at_once(tmp_path):
    """A misspelt key, NaN, an unsafe model name and a model folder that does not exist: every one named
    with the config file and line, no Snakemake traceback pointing at rules/common.smk."""
    cfg = copy.deepcopy(TINY)
    cfg["stats"]["resampels"] = cfg["stats"].pop("resamples")
    cfg["stats"]["alpha"] = float("nan")
    proc = snakemake(tmp_path, cfg, "-n")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-2000:]
    path = next(tmp_path.glob("config-*.yaml"))
    lines = path.read_text().splitlines()
    line = {k: i + 1 for i, t in enumerate(lines) for k in ("resampels", "alpha") if t.strip().startswith(k + ":")}
    assert f"{path}:{line['resampels']}: stats.resampels: unknown key 'resampels' (did you mean 'resamples'?)" in out
    assert f"{path}:{line['alpha']}: stats.alpha: nan is not a number" in out
    assert "common.smk" not in out and "Traceback" not in out, out[-2000:]
    # the schema passes: the checks after it (every section) speak, again with file and line
    cfg = copy.deepcopy(TINY)
    cfg["models"]["../../escape"] = dict(cfg["models"]["tiny"])
    cfg["compare"] = {"agq": 3, "item_effects": False}
    proc = snakemake(tmp_path, cfg, "-n")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-2000:]
    assert "4 problems:" in out, out[-2000:]
    assert re.search(r"config-\d+\.yaml:\d+: models\.\.\./\.\./escape: the name '\.\./\.\./escape' cannot be used", out)
    assert re.search(r"config-\d+\.yaml:\d+: models\.tiny\.path: directory not found: tiny-model", out), out[-2000:]
    assert re.search(r"config-\d+\.yaml:\d+: compare\.agq: 3 quadrature points", out), out[-2000:]
    assert not (tmp_path / "results").exists() and not (tmp_path.parent / "escape").exists()


def test_schema_violation_is_named(tmp_path):
    _bad(tmp_path, lambda c: c["stats"].update(resamples="many"), r"resamples")


def _report_results(html: str) -> dict:
    """The report's entries (its ``results`` object: path -> name, labels, caption, mime type, data)."""
    m = re.search(r"var results = (\{.*?\});\n", html, re.S)
    assert m, "the report has no results object"
    return json.loads(m.group(1))


def _chromium_check(chromium: str, page: Path, profile: Path, size: tuple[int, int]) -> dict:
    """Open ``page`` offline in headless Chromium at ``size`` and return what tests/report_check.js
    (injected into a copy of it) found: the page's errors, the landing text's place, every table opened."""
    html = page.read_text(encoding="utf-8")
    check = (REPO / "tests" / "report_check.js").read_text()
    copy = page.with_name(f"report-check-{size[0]}.html")
    copy.write_text(html.replace("<head>", f"<head><script>{check}</script>", 1), encoding="utf-8")
    # offline: every host name fails to resolve, so any request the page made would be an error
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--host-resolver-rules=MAP * ~NOTFOUND", f"--user-data-dir={profile}",
             f"--window-size={size[0]},{size[1]}", "--virtual-time-budget=30000"]
    dom = subprocess.run([chromium, *flags, "--dump-dom", copy.as_uri()], capture_output=True, text=True,
                         timeout=300)
    assert dom.returncode == 0, dom.stderr[-2000:]
    m = re.search(r'<pre id="report-check">(.*?)</pre>', dom.stdout, re.S)
    assert m, ("the check did not finish", dom.stdout[-2000:], dom.stderr[-2000:])
    import html as _html

    return json.loads(_html.unescape(m.group(1)))


@pytest.mark.slow
def test_report_opens_in_a_real_browser(tiny_run):
    """`snakemake --report` gives one self-contained page a researcher can read, checked in headless
    Chromium offline at 1280 and 1920 px: no error, the findings (each model's verdicts, the § rule
    explained) in the first screen, every table opened in the page and sortable, every entry labelled
    and captioned, figures as SVG, and the answers behind the numbers."""
    wd = tiny_run
    proc = snakemake(wd, TINY, "--report", "report.html")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    page = wd / "report.html"
    html = page.read_text()
    entries = _report_results(html)
    names = {e["name"] for e in entries.values()}
    for stem in ("fig1_variant_effect_gsm", "fig2_prompts", "fig3_number_effect", "fig9_errors_nl", "fig8_integers",
                 "dataset_statistics", "category_accuracy", "confusion_coarse_tiny", "confusion_fine_tiny"):
        assert f"{stem}.svg" in names, stem
    assert "findings.html" in names
    # each SVG figure fits the report's content at 1280 px (less its 240 px menu) at full size: a
    # figure is never shrunk until its legend and § note are unreadable (Figure 2 was shown at 45%)
    import base64

    for path, e in entries.items():
        if e["mime_type"] == "image/svg+xml":
            svg = base64.b64decode(e["data_uri"].split("base64,", 1)[1]).decode("utf-8")
            width_pt = float(re.search(r'<svg[^>]*?width="([\d.]+)pt"', svg).group(1))
            assert width_pt * 4 / 3 <= 1280 - 240, (path, width_pt)
    # nothing is download-only: tables are HTML pages, figures images; every entry labelled and captioned
    kinds = {e["mime_type"] for e in entries.values()}
    assert kinds <= {"text/html", "image/svg+xml"}, kinds
    for path, e in entries.items():
        assert isinstance(e["labels"], dict) and e["labels"], path
        assert len(re.sub(r"<[^>]+>", "", e["caption"]).strip()) > 40, path
    # the answers behind every model x prompt's numbers, labelled by model and prompt
    answers = {(e["labels"]["model"], e["labels"]["prompt"]) for p, e in entries.items() if "/answers/" in p}
    assert answers == {("tiny", "GSM prompt (Ex1)"), ("tiny", "Ex2.C simple code prompt")}, answers
    sf = {e["labels"]["figure"]: e["labels"]["model"] for p, e in entries.items() if "/statform/figures/" in p}
    assert sf["confusion matrix, fine categories (L2)"] == "tiny" and sf["Figure 4: accuracy per category"], sf
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.fail("chromium is not installed (scripts/setup.sh installs it)")
    import pandas as pd

    summaries = pd.read_parquet(wd / "results/stats/summaries.parquet")
    tables = [p for p, e in entries.items() if e["mime_type"] == "text/html"]
    for size in ((1280, 800), (1920, 1080)):
        found = _chromium_check(chromium, page, wd / f"chromium-profile-{size[0]}", size)
        assert found["errors"] == [], found["errors"]
        land = found["landing"]
        assert land["found"], "no Findings heading in the landing text"
        # the findings start in the first screen, whole lines, at a readable size
        left, top, right, bottom = land["first_finding"]
        width, height = land["viewport"]
        assert 0 <= land["heading"][1] and bottom <= height and 0 <= left and right <= width, land
        assert land["font_px"] >= 14, land
        # each model's verdict, as the summaries record it, with the § rule explained at its first §
        first_model = sorted(summaries["model"].unique())[0]
        text = land["first_finding_text"]
        assert text.startswith(first_model), text
        verdicts = set(summaries.loc[summaries["model"] == first_model, "verdict"])
        assert any(v in text for v in verdicts), (verdicts, text)
        if "§" in text:
            assert "§ marks a degenerate fit" in text, text
        # every table opens in the page with its rows, caption and a header that sorts
        opened = {t["path"]: t for t in found["tables"]}
        assert set(opened) == set(tables)
        for path, t in opened.items():
            # a table may be empty in the tiny run (no refits, no published model); it still opens
            assert t["rows"] >= 0 and t["columns"] >= 2 and t["caption"], t
            assert t["sorted"] == "ascending", t
        assert all(opened[p]["rows"] >= 1 for p in opened if "/report/" in p)   # findings, answers
        # the answers pages hold report.answers_max_rows of the 9 answers and say where the rest are
        bound = TINY["report"]["answers_max_rows"]
        for path in (p for p in opened if "/answers/" in p):
            assert opened[path]["rows"] == bound, opened[path]
            assert f"{9 - bound} left out" in opened[path]["caption"] and "results/scored/" in opened[path]["caption"]


@pytest.mark.slow
def test_ex1_checkpoint_decides_ex2(tiny_run):
    """With experiments.ex2_models null, the ex2_selection checkpoint reads the Ex1 summaries. The tiny
    random model answers nothing correctly, so its fit is degenerate and it does not go on to Ex2."""
    cfg = copy.deepcopy(TINY)
    cfg["experiments"]["ex2_models"] = None
    proc = snakemake(tiny_run, cfg, *TARGETS)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    decision = yaml.safe_load((tiny_run / "results/experiments/ex2_models.yaml").read_text())
    assert decision["ex2_models"] == []
    tiny = decision["decisions"]["tiny"]
    assert tiny["verdict"] == "degenerate" and tiny["selected"] is False
    assert any("no correct answer" in s for s in tiny["problems"])
    import pandas as pd

    summaries = pd.read_parquet(tiny_run / "results/stats/summaries.parquet")
    assert set(summaries["prompt"]) == {"gsm"}     # Ex2 prompts were not planned for anyone
    assert not summaries["ex2"].any() and not summaries["significant_uncorrected"].any()
    problems = pd.read_csv(tiny_run / "results/tables/stats/fit_problems.csv")
    assert (problems["verdict"] == "degenerate").all()


def test_cluster_plan_groups_small_jobs_and_routes_cpu_models(tmp_path, tiny_model_dir):
    """The Slurm profile's plan (a dry run; no cluster needed): every small CPU job inside a group job
    (the tiny config bundles the shards into post and its paired comparisons into final), generation
    and the power study on their own; a model on the CPU (device cpu) generates
    in the cpu partition without GPUs, a CUDA model in the gpu partition with its GPUs."""
    pytest.importorskip("snakemake_executor_plugin_slurm")
    cfg = copy.deepcopy(TINY)
    (tmp_path / "tiny-model").symlink_to(tiny_model_dir, target_is_directory=True)
    cfg["models"]["big"] = {**cfg["models"]["tiny"], "device": "cuda", "resources": {"gpu": 2, "mem_mb": 9000}}
    cfg["models"]["tiny"]["resources"] = {"gpu": 1}   # asks for a GPU it would not use: ignored
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory",
                           str(tmp_path), "--profile", str(REPO / "profiles" / "slurm"), "--configfile", str(path),
                           "-n"], capture_output=True, text=True, timeout=600, env=child_env())
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    lines = [re.sub(r"^\[[^\]]+\] ", "", line) for line in out.splitlines()]
    groups = [m.group(1) for line in lines if (m := re.match(r"^Group job (\w+) ", line))]
    # post=5 in the profile: five model x prompt chains per post job, so two models need more than one
    assert sorted(set(groups)) == ["final", "post", "prep"] and groups.count("prep") == groups.count("final") == 1, groups
    alone = {m.group(1) for line in lines if (m := re.match(r"^(?:local)?rule (\w+):", line))}
    assert alone == {"generate", "statform_generate", "power_paper_design", "all"}, alone
    gen = {}
    for i, line in enumerate(lines):
        if re.match(r"^\s*rule (statform_)?generate:", line):
            block = lines[i:i + 12]
            wc = next(x for x in block if "wildcards:" in x)
            res = next(x for x in block if "resources:" in x)
            model = re.search(r"model=(\w+)", wc).group(1)
            gen.setdefault(model, set()).add((re.search(r"slurm_partition=(\w+)", res).group(1),
                                              re.search(r"\bgpu=(\d+)", res).group(1)))
    assert gen == {"tiny": {("cpu", "0")}, "big": {("gpu", "2")}}, gen
    assert not (tmp_path / "results").exists()


#: loads the workflow (no jobs, no DAG) and prints each scoring rule's conda env and params as JSON
_RULE_PROPERTIES = """
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import ConfigSettings, ResourceSettings
out = {}
with SnakemakeApi() as api:
    wf = api.workflow(resource_settings=ResourceSettings(cores=1),
                      config_settings=ConfigSettings(configfiles=[Path(sys.argv[3])]),
                      snakefile=Path(sys.argv[1]), workdir=Path(sys.argv[2]))
    for name in ("score", "sensitivity_score"):
        rule = wf._workflow.get_rule(name)
        out[name] = {"conda": str(rule.conda_env), "fidelity": rule.params.fidelity,
                     "sandbox_python": rule.params.sandbox_python}
print("RULES " + json.dumps(out))
"""


def _scoring_rules(tmp_path, cfg, model_dir) -> dict:
    if not (tmp_path / "tiny-model").exists():   # a real checkpoint: the config checks read its folder
        (tmp_path / "tiny-model").symlink_to(model_dir, target_is_directory=True)
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg))
    proc = subprocess.run([sys.executable, "-c", _RULE_PROPERTIES, str(REPO / "Snakefile"), str(tmp_path), str(path)],
                          capture_output=True, text=True, timeout=600, env=child_env())
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RULES ")), None)
    assert proc.returncode == 0 and line, (proc.stdout + proc.stderr)[-3000:]
    return json.loads(line[len("RULES "):])


@pytest.mark.parametrize("main", ["earnest", "reference"])
def test_each_mode_is_scored_in_its_own_env_and_interpreter(tmp_path, main, tiny_model_dir):
    """Issue 41.2: the sensitivity table's other column is scored as that mode scores (its conda env:
    the reference column on the authors' Python 3.12, envs/score-reference.yaml; its sandbox.python),
    not with the env and interpreter rule score took from the top-level fidelity."""
    cfg = copy.deepcopy(TINY)
    cfg["fidelity"] = main
    rules = _scoring_rules(tmp_path, cfg, tiny_model_dir)
    other = "reference" if main == "earnest" else "earnest"
    env = {"reference": "../envs/score-reference.yaml", "earnest": "../envs/score.yaml"}
    assert rules["score"] == {"conda": env[main], "fidelity": main, "sandbox_python": ""}
    assert rules["sensitivity_score"] == {"conda": env[other], "fidelity": other, "sandbox_python": ""}
    # one interpreter per mode where the config names them
    # (interpreters that run: the config checks start each one; a link tells them apart)
    (tmp_path / "py-reference").symlink_to(sys.executable)
    cfg["sandbox"] = {"python": {"reference": str(tmp_path / "py-reference"), "earnest": sys.executable}}
    rules = _scoring_rules(tmp_path, cfg, tiny_model_dir)
    python = cfg["sandbox"]["python"]
    assert rules["score"]["sandbox_python"] == python[main]
    assert rules["sensitivity_score"]["sandbox_python"] == python[other]
    assert rules["sensitivity_score"]["conda"] == env[other]


@pytest.mark.parametrize("main", ["earnest", "reference"])
def test_reference_glmm2_fits_read_the_pool_of_every_model_of_the_prompt(tmp_path, main, tiny_model_dir):
    """Issue 41.6 / 55.2: reference mode's GLMM 2 is centred on the mean gamma of every model of the
    prompt (the authors' pool): its centre (rule gamma_centre) reads the scored tables of every model
    of the prompt, and its GLMM 2 shards and summaries read that centre; every GLMM input reads its own
    model only, and no GLMM 1 fit and no earnest-mode fit reads the centre."""
    cfg = copy.deepcopy(TINY)
    cfg["fidelity"] = main
    cfg["models"]["tiny2"] = dict(cfg["models"]["tiny"])
    (tmp_path / "tiny-model").symlink_to(tiny_model_dir, target_is_directory=True)
    proc = snakemake(tmp_path, cfg, "-n", "results/tables/sensitivity.md", "results/stats/summaries.parquet")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    other = "reference" if main == "earnest" else "earnest"
    for prefix, mode in (("", main), ("sensitivity_", other)):
        jobs = planned_jobs(out)
        gsm_lines = [j["input"] for j in jobs if j["rule"] == prefix + "glmm_input" and "/gsm/" in j["input"]]
        assert len(gsm_lines) == 2                   # one per model, each its own model's tables
        for line in gsm_lines:
            assert len({re.search(r"/scored/(\w+)/", p).group(1) for p in line.split(", ") if "/scored/" in p}) == 1
        centres = [j["input"] for j in jobs if j["rule"] == prefix + "gamma_centre"]
        # all errors: gsm and simple_code; the main results also the reasoning-only analysis of simple_code
        assert len(centres) == {"reference": 3 if prefix == "" else 2, "earnest": 0}[mode]
        for line in centres:
            if "/gsm/" in line:
                assert {re.search(r"/scored/(\w+)/", p).group(1) for p in line.split(", ")} == {"tiny", "tiny2"}
        for rule in ("bootstrap_shard", "glmm_summary"):
            fits = [(j["input"], j["output"]) for j in jobs if j["rule"] == prefix + rule]
            assert fits
            for inputs, outputs in fits:
                glmm2 = "/glmm2/" in outputs and ("/all/" in outputs or "/reasoning_only/" in outputs)
                assert ("/centre/" in inputs) == (mode == "reference" and glmm2), (rule, inputs, outputs)
