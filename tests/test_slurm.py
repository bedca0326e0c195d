"""The workflow on a real single-node Slurm cluster through profiles/slurm.

scripts/slurm-up.sh starts the cluster (munge, MariaDB + slurmdbd accounting, partitions `cpu` and
`gpu`, one stand-in GPU).  The test runs the real Snakefile with tests/configs/tiny.yaml (a tiny random model) and checks,
from Slurm's own accounting records (sacct), that generation jobs ran in the gpu partition with a
GPU and the configured account, every other job in the cpu partition, the small CPU jobs in two
group jobs (one before the generations, one after them), each with the time limit (sbatch -t) that
scripts/slurm_plan.py reads from the dry run; that a generation job
cancelled with scancel while running is retried by the profile and resumes from its checkpoint,
the final table holding every item exactly once; and that a second run submits nothing.

Needs root (or passwordless sudo) and apt: it installs and starts system daemons.  The cluster is
left running afterwards (stop it with scripts/slurm-down.sh).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from helpers import child_env

# one worker for the cluster's start and its runs (pytest-xdist)
pytestmark = [pytest.mark.slurm, pytest.mark.slow, pytest.mark.xdist_group("slurm_cluster")]

ROOT = Path(__file__).resolve().parents[1]
MODEL = "tiny"                  # the model of tests/configs/tiny.yaml
ACCOUNT = "earnest-slurmtest"   # a non-default account, so that sacct shows the config value was used
RUN_TIMEOUT_S = 900
GROUPS = ("prep", "post", "inputs", "fits", "final")   # the job groups of the rules (profiles/slurm group-components)


def _as_root() -> list[str]:
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0:
        return ["sudo", "-n", "-E"]
    pytest.skip("the Slurm test starts system daemons: run it as root or with passwordless sudo")


def _sh(*cmd: str, check: bool = True) -> str:
    proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=120, env=child_env())
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr}")
    return proc.stdout


@pytest.fixture(scope="module")
def slurm_cluster():
    """The local cluster, started (and if need be installed) by scripts/slurm-up.sh."""
    sudo = _as_root()
    if shutil.which("apt-get") is None and shutil.which("slurmctld") is None:
        pytest.skip("no apt-get to install Slurm with, and Slurm is not installed")
    if shutil.which("snakemake") is None:
        pytest.skip("snakemake is not installed")
    t0 = time.monotonic()
    proc = subprocess.run(sudo + [str(ROOT / "scripts" / "slurm-up.sh")], capture_output=True, text=True,
                          timeout=1200)
    assert proc.returncode == 0, f"slurm-up.sh failed:\n{proc.stdout}\n{proc.stderr}"
    print(f"slurm-up.sh: {time.monotonic() - t0:.1f} s\n{proc.stderr}")
    # a second account besides the default one, so that the test can tell whether the
    # config's slurm.account reached sbatch
    user = _sh("id", "-un").strip()
    if ACCOUNT not in _sh("sacctmgr", "-n", "-P", "list", "account", "format=account").split():
        _sh(*sudo, "sacctmgr", "-i", "add", "account", ACCOUNT, "cluster=earnest", "description=earnest tests")
    if user not in _sh("sacctmgr", "-n", "-P", "list", "assoc", f"account={ACCOUNT}", "format=user").split():
        _sh(*sudo, "sacctmgr", "-i", "add", "user", user, f"account={ACCOUNT}", "cluster=earnest")
    yield


def _configs(tmp_path: Path, workdir: Path, model_dir: Path) -> tuple[list[Path], str]:
    """The config files for the run and the Ex1 prompt format name.

    tests/configs/tiny.yaml (its model `tiny` loads from <workdir>/tiny-model), and on top: one
    item per checkpoint and per batch, long answers (so that a job can be interrupted between two
    checkpoints) and a non-default Slurm account."""
    tiny = ROOT / "tests" / "configs" / "tiny.yaml"
    base_cfg = yaml.safe_load(tiny.read_text(encoding="utf-8"))
    assert MODEL in base_cfg["models"], f"{tiny} has no model {MODEL!r}"
    (workdir / "tiny-model").symlink_to(model_dir, target_is_directory=True)
    overlay = {
        # device auto: a GPU model (device cpu would route its generation to the cpu partition); it
        # finds no CUDA device behind the stand-in GPU and runs on the CPU
        "models": {MODEL: {"batch_size": 1, "device": "auto", "resources": {"gpu": 1}}},
        # a random model never stops early: every item takes max_new_tokens decode steps (about
        # 0.8 s here), which leaves seconds to interrupt the job between two checkpoints
        "generation": {"max_new_tokens": 600, "checkpoint_every": 1},
        # the partitions scripts/slurm-up.sh creates, GPUs requested, a non-default account
        "slurm": {"gpu_partition": "gpu", "cpu_partition": "cpu", "request_gpus": True, "account": ACCOUNT},
    }
    path = tmp_path / "slurm-test.yaml"
    path.write_text(yaml.safe_dump(overlay), encoding="utf-8")
    return [tiny, path], base_cfg["experiments"]["ex1_prompt"]


def _snakemake(workdir: Path, targets: list[str], configs: list[Path]) -> list[str]:
    # targets before --configfile, which takes several values
    return [shutil.which("snakemake"), *targets, "--profile", str(ROOT / "profiles" / "slurm"),
            "-s", str(ROOT / "Snakefile"), "--directory", str(workdir),
            "--configfile", *map(str, configs),
            # poll Slurm every few seconds instead of the profile's 20 s start
            "--slurm-init-seconds-before-status-checks", "2"]


def _run_uuid(output: str) -> str:
    m = re.search(r"SLURM run ID: ([0-9a-f-]{36})", output)
    assert m, "Snakemake printed no 'SLURM run ID' (is the slurm executor in use?)\n" + output[-3000:]
    return m.group(1)


def _sacct(run_uuid: str) -> pd.DataFrame:
    """Slurm's accounting records of every job one Snakemake run submitted (job name = run id)."""
    fields = ["JobIDRaw", "JobName", "Partition", "Account", "Comment", "State", "AllocTRES", "TimelimitRaw"]
    out = _sh("sacct", "-X", "-P", "-n", "--starttime", "now-1days", "--name", run_uuid,
              "--format", ",".join(fields))
    rows = [line.split("|") for line in out.splitlines() if line.strip()]
    df = pd.DataFrame(rows, columns=fields)
    # the plugin puts rule_<rule>[_wildcards_<values>] into the job comment (rule_<group> for a group job)
    df["rule"] = df["Comment"].str.extract(r"^rule_(.+?)(?:_wildcards_.*)?$")[0]
    # a group job's comment is rule_<group>_<its rules>: it is named by its group
    group = df["rule"].str.extract(rf"^({'|'.join(GROUPS)})_")[0]
    df["rule"] = group.fillna(df["rule"])
    df["wildcards"] = df["Comment"].str.extract(r"_wildcards_(.*)$")[0].fillna("")
    return df


def _squeue() -> list[tuple[str, str, str]]:
    """(job id, comment, state) of every job Slurm holds right now."""
    out = _sh("squeue", "-h", "-o", "%A|%k|%T", check=False)
    return [tuple(line.split("|", 2)) for line in out.splitlines() if line.count("|") == 2]


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGINT)  # Snakemake cancels its Slurm jobs on SIGINT
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_workflow_on_slurm(slurm_cluster, tiny_model_dir, tmp_path):
    workdir = tmp_path / "run"
    workdir.mkdir()
    configs, prompt = _configs(tmp_path, workdir, tiny_model_dir)
    datasets = ["gsm_base", "gsm_variants"]
    gen = {d: f"results/generations/{MODEL}/{prompt}/{d}.parquet" for d in datasets}
    scored = {d: f"results/scored/{MODEL}/{prompt}/{d}.parquet" for d in datasets}
    targets = list(gen.values()) + list(scored.values())
    victim = "gsm_variants"  # the generation job cancelled mid-run
    ckpt = workdir / Path(gen[victim]).parent / f".{victim}.partial"
    victim_comment = f"rule_generate_wildcards_{MODEL}_{prompt}_{victim}"

    # ---- the plan: each job's time limit as scripts/slurm_plan.py reads it from the dry run
    plan_json = tmp_path / "plan.json"
    cmd = _snakemake(workdir, targets, configs)
    plan = subprocess.run([sys.executable, str(ROOT / "scripts" / "slurm_plan.py"), "--quiet", "--json",
                           str(plan_json), "--", *cmd[1:]], cwd=workdir, env=child_env(), capture_output=True,
                          text=True, timeout=600)
    assert plan.returncode == 0, plan.stderr[-3000:]
    planned = {j["name"]: j["runtime"] for j in json.loads(plan_json.read_text()) if j["kind"] == "group"}

    # ---- first run: everything is submitted; one generation job is cancelled while it runs
    log1 = tmp_path / "snakemake-run1.log"  # a file, not a pipe: nobody reads a pipe while we poll
    with log1.open("w") as fh:
        proc = subprocess.Popen(_snakemake(workdir, targets, configs), cwd=workdir, env=child_env(),
                                stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    cancelled_job, parts_at_cancel = None, 0
    deadline = time.monotonic() + RUN_TIMEOUT_S
    try:
        while cancelled_job is None:
            assert proc.poll() is None, "Snakemake ended before the generation job could be cancelled:\n" + \
                log1.read_text()[-4000:]
            assert not (workdir / gen[victim]).exists(), \
                "the generation job finished before it could be interrupted; give it more work (max_new_tokens)"
            assert time.monotonic() < deadline, "timed out waiting for the generation job to checkpoint"
            running = [j for j, comment, state in _squeue() if comment == victim_comment and state == "RUNNING"]
            parts = len(list(ckpt.glob("part-*.parquet"))) if ckpt.is_dir() else 0
            if running and parts >= 1:
                _sh("scancel", running[0])
                cancelled_job, parts_at_cancel = running[0], parts
            time.sleep(0.2)
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    except BaseException:
        _stop(proc)
        print(log1.read_text()[-6000:])
        raise
    out = log1.read_text()
    assert proc.returncode == 0, out[-6000:]
    run1 = _sacct(_run_uuid(out))

    # ---- Slurm's records: partitions, GPUs, account
    assert not run1.empty and run1["rule"].notna().all(), run1.to_string()
    gen_jobs, other = run1[run1["rule"] == "generate"], run1[run1["rule"] != "generate"]
    # the small CPU jobs travel in groups (profiles/slurm group-components): one job before the
    # generations (the item tables), one after them (the four scoring jobs)
    assert sorted(other["rule"]) == ["post", "prep"], run1.to_string()
    assert (gen_jobs["Partition"] == "gpu").all(), run1.to_string()
    assert (other["Partition"] == "cpu").all(), run1.to_string()
    assert gen_jobs["AllocTRES"].str.contains("gres/gpu=1").all(), run1.to_string()
    # each group job was given the time the plan says (sbatch -t, minutes): a few minutes, not the
    # sum of 60-minute defaults over its steps
    limits = {r.rule: int(r.TimelimitRaw) for r in other.itertuples()}
    assert limits == planned and max(limits.values()) <= 60, (limits, planned)
    assert not other["AllocTRES"].str.contains("gres/gpu").any(), run1.to_string()

    # ---- the cancelled job was retried: one CANCELLED attempt, then one COMPLETED
    victim_jobs = gen_jobs[gen_jobs["wildcards"] == f"{MODEL}_{prompt}_{victim}"]
    states = dict(zip(victim_jobs["JobIDRaw"], victim_jobs["State"]))
    assert states.get(cancelled_job, "").startswith("CANCELLED"), victim_jobs.to_string()
    assert [s for j, s in states.items() if j != cancelled_job] == ["COMPLETED"], victim_jobs.to_string()
    assert (run1[run1["JobIDRaw"] != cancelled_job]["State"] == "COMPLETED").all(), run1.to_string()

    # ---- and resumed from its checkpoint instead of starting over
    log = (workdir / "logs" / "generate" / MODEL / prompt / f"{victim}.log").read_text(encoding="utf-8")
    starts = re.findall(r"(\d+) items, (\d+) already checkpointed", log)
    assert starts, log
    n_items, resumed_from = map(int, starts[-1])  # the retry's start
    assert resumed_from >= parts_at_cancel >= 1, log

    # ---- every output exists; each table holds every item exactly once
    for target in targets:
        assert (workdir / target).exists(), target
    assert not ckpt.exists(), "the checkpoint directory should be gone once the table is written"
    for d in datasets:
        items = pd.read_parquet(workdir / "results" / "data" / f"{d}.parquet")
        for path in (gen[d], scored[d]):
            table = pd.read_parquet(workdir / path)
            assert table["item_id"].is_unique, path
            assert sorted(table["item_id"]) == sorted(items["item_id"]), path
    assert len(pd.read_parquet(workdir / gen[victim])) == n_items

    # ---- second run: nothing to do, nothing submitted
    proc2 = subprocess.run(_snakemake(workdir, targets, configs), cwd=workdir, env=child_env(),
                           capture_output=True, text=True, timeout=300)
    assert proc2.returncode == 0, proc2.stderr[-4000:]
    out2 = proc2.stdout + proc2.stderr
    assert "Nothing to be done" in out2, out2[-4000:]
    assert _sacct(_run_uuid(out2)).empty

    # ---- the config's slurm.account reached sbatch (-A) for every job, rules of both partitions
    assert (run1["Account"] == ACCOUNT).all(), run1[["Comment", "Account"]].to_string()
