"""The workflow's optional logging and its containers: the answers of a finished tiny run written as an
Inspect AI log (inspect_ai's own writer) and read back by inspect_ai and by earnest's reader; a run's
tables and figures logged to MLflow (a file store) and read back with MLflow's client; a `container:`
image on every rule that has a conda env; the Dockerfile installing what requirements.txt lists."""

from __future__ import annotations

import copy
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from helpers import child_env

REPO = Path(__file__).resolve().parents[1]
TINY = yaml.safe_load((REPO / "tests" / "configs" / "tiny.yaml").read_text())
LOG = "results/inspect/tiny/gsm/gsm_base.eval"


def _config(tmp: Path, model_dir: Path, **extra) -> Path:
    """The tiny config with only GSM-Symbolic's Ex1 (no StatFormBench, sensitivity, power), plus ``extra``."""
    if not (tmp / "tiny-model").exists():   # a real checkpoint: the config checks read its folder
        (tmp / "tiny-model").symlink_to(model_dir, target_is_directory=True)
    cfg = copy.deepcopy(TINY)
    cfg["statform"] = {"enabled": False}
    cfg["sensitivity"] = {"enabled": False}
    cfg["power"] = {"enabled": False}
    cfg.update(extra)
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _snakemake(tmp: Path, config: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(tmp),
           "--configfile", str(config), "-c2", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=child_env())


@pytest.fixture(scope="module")
def finished(tmp_path_factory, tiny_model_dir):
    """A finished tiny run of one model x prompt x dataset, its Inspect log written by the workflow."""
    pytest.importorskip("inspect_ai")
    tmp = tmp_path_factory.mktemp("inspect-run")
    config = _config(tmp, tiny_model_dir, inspect_logs={"enabled": True})
    proc = _snakemake(tmp, config, LOG)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return tmp, config


def _answers(tmp: Path) -> pd.DataFrame:
    """The run's scored table with its items' questions and its answers' traces."""
    from earnest.inspect_export import answers_table

    return answers_table(*(pd.read_parquet(tmp / f"results/{t}/gsm_base.parquet")
                           for t in ("scored/tiny/gsm", "generations/tiny/gsm", "data")), where="scored")


def test_inspect_log_written_by_the_workflow_reads_back_in_inspect_ai_and_earnest(finished):
    from inspect_ai.log import read_eval_log

    from earnest.readers import inspect_log, lmeval

    tmp, _ = finished
    scored = _answers(tmp).set_index("item_id")
    log = read_eval_log(str(tmp / LOG))
    assert log.status == "success" and log.eval.model == "tiny" and log.eval.task == "gsm_gsm_base"
    assert sorted(s.id for s in log.samples) == sorted(scored.index) and len(scored) == 3
    for s in log.samples:
        row = scored.loc[s.id]
        score = s.scores["earnest"]
        assert score.value == ("C" if row.correct else "I")
        assert score.answer == ("" if pd.isna(row.extracted) else f"{row.extracted:g}")
        assert row.extraction_pattern in score.explanation
        assert s.input == row.question and s.target == row.answer
        prompt, answer = s.messages[0].content, s.messages[1].content
        assert hashlib.sha256(prompt.encode()).hexdigest() == row.prompt_sha256   # the exact prompt sent
        assert answer == row.response and s.output.completion == row.response
        assert s.metadata["id"] == row.template_id and s.metadata["variant"] == 0
    assert log.results.scores[0].metrics["accuracy"].value == pytest.approx(scored.correct.mean())
    # earnest's own reader: the same answers as harness samples, template and variant from the metadata
    rows = inspect_log.read_logs([tmp / LOG], mapping=lmeval.Mapping(variant_field="variant")).set_index("doc_id")
    assert sorted(rows.index) == sorted(scored.index)
    assert (rows.correct == scored.correct.astype(int).reindex(rows.index)).all()
    assert (rows.template == scored.template_id.reindex(rows.index)).all() and (rows.variant == 0).all()
    assert set(rows.model) == {"tiny"} and set(rows.task) == {"gsm_gsm_base"}


def test_inspect_log_refuses_a_prompt_the_model_was_not_sent(finished):
    """A prompt format edited after the answers: the log would show a prompt never sent; refused by item."""
    pytest.importorskip("inspect_ai")
    from earnest.gsm.prompts import load_formats
    from earnest.inspect_export import InspectExportError, write_inspect_log

    tmp, _ = finished
    scored = _answers(tmp)
    fmt = load_formats(REPO / "resources" / "prompts", fidelity=TINY.get("fidelity", "earnest"))["gsm"]
    with pytest.raises(InspectExportError, match=r"scored\.parquet: row 0 \(item t\d+-base\).*regenerate"):
        write_inspect_log(scored, lambda q: fmt.render(q) + " ", tmp / "x.eval", model="tiny", prompt="gsm",
                          dataset="gsm_base", where="scored.parquet")
    assert not (tmp / "x.eval").exists()
    # answers of another run (an item the generations table does not have): refused, naming the item
    from earnest.inspect_export import answers_table

    tables = [pd.read_parquet(tmp / f"results/{t}/gsm_base.parquet")
              for t in ("scored/tiny/gsm", "generations/tiny/gsm", "data")]
    tables[1] = tables[1].iloc[1:]
    with pytest.raises(InspectExportError, match=r"scored: 1 scored answer\(s\) not in the generations table "
                                                 r"\(first: t\d+-base\)"):
        answers_table(*tables, where="scored")


def test_logging_plans_one_inspect_log_per_answers_table_and_one_mlflow_run(finished):
    tmp, _ = finished
    config = _config(tmp, Path(tmp / "tiny-model").resolve(), inspect_logs={"enabled": True},
                     mlflow={"enabled": True})
    proc = _snakemake(tmp, config, "-n")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", out.split("Job stats:", 1)[1], re.M))
    assert jobs["inspect_log"] == "3"   # gsm_variants of gsm, both datasets of simple_code; gsm_base is done
    assert jobs["mlflow_log"] == "1"
    # off (the default): neither is planned
    proc = _snakemake(tmp, _config(tmp, Path(tmp / "tiny-model").resolve()), "-n")
    assert proc.returncode == 0 and "inspect_log" not in proc.stdout and "mlflow_log" not in proc.stdout


def test_mlflow_run_of_tables_and_figures_reads_back(tmp_path):
    pytest.importorskip("mlflow")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from mlflow.tracking import MlflowClient

    from earnest.mlflow_export import log_run, tracking_uri
    from earnest.stats.summaries import SUMMARIES_COLUMNS

    results = tmp_path / "results"
    (results / "tables").mkdir(parents=True)
    (results / "figures").mkdir()
    (results / "tables" / "ks.csv").write_text("D,p\n0.1,0.5\n")
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    fig.savefig(results / "figures" / "fig8_integers.png")
    plt.close(fig)
    row = {c: None for c in SUMMARIES_COLUMNS}
    row.update(analysis="all", glmm=1, model="tiny", prompt="gsm", term="variant", odds_ratio=0.8, ci_low=0.5,
               ci_high=1.3, p_holm=float("nan"), acc_base=0.4, acc_variants=0.3)
    pd.DataFrame([row]).to_parquet(results / "summaries.parquet")
    uri = tracking_uri("mlruns", base=tmp_path)
    assert uri.startswith("file://")
    config = {"fidelity": "earnest", "models": {"tiny": {"backend": "transformers"}}}
    run_id = log_run(uri, "earnest-test", "tiny run", config=config, config_text=yaml.safe_dump(config),
                     tables=[results / "tables" / "ks.csv"], figures=[results / "figures" / "fig8_integers.png"],
                     summaries=results / "summaries.parquet", results_dir=results)
    client = MlflowClient(uri)
    run = client.get_run(run_id)
    assert run.info.run_name == "tiny run" and run.info.status == "FINISHED"
    assert client.get_experiment(run.info.experiment_id).name == "earnest-test"
    assert run.data.params["fidelity"] == "earnest" and run.data.params["models.tiny.backend"] == "transformers"
    assert run.data.metrics == {"all.glmm1.tiny.gsm.variant.odds_ratio": 0.8, "all.glmm1.tiny.gsm.variant.ci_low": 0.5,
                                "all.glmm1.tiny.gsm.variant.ci_high": 1.3, "all.glmm1.tiny.gsm.variant.acc_base": 0.4,
                                "all.glmm1.tiny.gsm.variant.acc_variants": 0.3}   # the NaN P value is not a metric
    paths = {f.path for d in ("tables", "figures") for f in client.list_artifacts(run_id, d)}
    assert paths == {"tables/ks.csv", "figures/fig8_integers.png"}
    assert {f.path for f in client.list_artifacts(run_id)} >= {"config.yaml", "tables", "figures"}
    local = Path(client.download_artifacts(run_id, "tables/ks.csv", str(tmp_path / "back")))
    assert local.read_text() == "D,p\n0.1,0.5\n"


#: loads the workflow (no jobs) and prints every rule's conda env and container image as JSON
_RULE_IMAGES = """
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import ConfigSettings, ResourceSettings
with SnakemakeApi() as api:
    wf = api.workflow(resource_settings=ResourceSettings(cores=1),
                      config_settings=ConfigSettings(configfiles=[Path(sys.argv[3])]),
                      snakefile=Path(sys.argv[1]), workdir=Path(sys.argv[2]))
    out = {r.name: [str(r.conda_env) if r.conda_env else None, r.container_img or None] for r in wf._workflow.rules}
print("RULES " + json.dumps(out))
"""


def _rule_images(tmp: Path, config: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", _RULE_IMAGES, str(REPO / "Snakefile"), str(tmp), str(config)],
                          capture_output=True, text=True, timeout=600, env=child_env())
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RULES ")), None)
    assert proc.returncode == 0 and line, (proc.stdout + proc.stderr)[-3000:]
    return json.loads(line[len("RULES "):])


def test_every_rule_with_an_environment_runs_in_that_environments_image(tmp_path, tiny_model_dir):
    """config containers: each env's image, `all` for the rest, none when unset (snakemake --sdm apptainer)."""
    images = {"all": "docker://example.org/earnest:1", "generate": "/images/earnest-generate.sif"}
    rules = _rule_images(tmp_path, _config(tmp_path, tiny_model_dir, containers=images,
                                           sensitivity={"enabled": True}))
    with_env = {name: v for name, v in rules.items() if v[0]}
    assert len(with_env) >= 40 and "inspect_log" in with_env and "mlflow_log" in with_env
    for name, (env, image) in with_env.items():
        assert image == images["generate" if Path(env).stem == "generate" else "all"], name
    assert rules["generate"][1] == images["generate"] and rules["score"][1] == images["all"]
    # no containers configured: no rule runs in one
    rules = _rule_images(tmp_path, _config(tmp_path, tiny_model_dir))
    assert all(image is None for _, image in rules.values())


def test_dockerfile_installs_requirements_and_envs_agree_with_them():
    """The image is built by scripts/setup.sh, which installs requirements.txt: one list of packages;
    envs/logs.yaml pins the logging packages as requirements.txt does."""
    docker = (REPO / "Dockerfile").read_text()
    steps = [x for x in docker.splitlines() if x.startswith(("COPY", "RUN"))]
    assert any("requirements.txt" in x or x.startswith("COPY . ") for x in steps if x.startswith("COPY"))
    assert any("scripts/setup.sh" in x for x in steps if x.startswith("RUN"))
    assert "conda" not in docker.lower().replace("without conda", "")
    pins = dict(re.findall(r"^([A-Za-z0-9_.\[\]-]+)==(\S+)$", (REPO / "requirements.txt").read_text(), re.M))
    env = yaml.safe_load((REPO / "envs" / "logs.yaml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    for line in pip:
        m = re.match(r"^([A-Za-z0-9_.-]+)==(\S+)$", line)
        if m:
            assert pins[m.group(1)] == m.group(2), line
    assert {"inspect-ai", "mlflow-skinny"} <= set(pins)
