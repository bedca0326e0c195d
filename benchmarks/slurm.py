"""The tiny config end to end through the Slurm profile against a local `snakemake -c2`, same machine,
back to back: wall time of each, their ratio, whether their results are identical, and where the
Slurm run's time went.

    sudo scripts/slurm-up.sh        # a local single-node Slurm cluster
    python benchmarks/slurm.py      # prints the two times, the ratio, the load, the job counts, their
                                    # time limits against their run times, and the breakdown

Both runs build every target of tests/configs/tiny.yaml (generation, scoring, bootstraps,
sensitivity, StatFormBench, power, compare, tables, figures) from nothing, in fresh folders, with
the same tiny random model.  The Slurm run uses profiles/slurm as shipped.  The local run goes first.
Their results are compared with scripts/result_digest.py (every table's values, timing columns left
out).

The breakdown lists each Slurm job (sacct: submitted, started, ended, seconds from Snakemake's start)
with the Snakemake start inside it (Slurm's start to its first rule, from the job's Slurm log), and
sums what the cluster adds on the run's path: Snakemake's own start before the first submission, the
wait between a job's end and the submission of the jobs that waited for it (the plugin's status
polls), the queue wait, the Snakemake starts inside the jobs, and the end after the last job.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "src"))


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _run(cmd: list[str], cwd: Path, log: Path) -> float:
    t0 = time.monotonic()
    with log.open("w") as fh:
        proc = subprocess.run(cmd, cwd=cwd, env=_env(), stdout=fh, stderr=subprocess.STDOUT)
    dt = time.monotonic() - t0
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd[:4])} ... failed ({proc.returncode}); see {log}:\n{log.read_text()[-3000:]}")
    return dt


def _epoch(stamp: str) -> float | None:
    """sacct's local time stamp (2026-12-05T01:02:03) as seconds since the epoch."""
    try:
        return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S").timestamp()
    except ValueError:
        return None


def _first_rule(workdir: Path, jobid: str) -> float | None:
    """When the first rule of a Slurm job started (its Slurm log's first `localrule` header: the
    Snakemake that srun started inside the job runs it), or None."""
    for log in (workdir / "logs" / "slurm").rglob(f"{jobid}.log"):
        text = log.read_text(errors="replace")
        m = re.search(r"^\s*\[(\w{3} \w{3} +\d+ [\d:]+ \d{4})\]\n\s*localrule \w+:", text, re.M)
        if m:
            return datetime.strptime(" ".join(m.group(1).split()), "%a %b %d %H:%M:%S %Y").timestamp()
    return None


def breakdown(records: list[dict], t0: float, t1: float) -> str:
    """Each Slurm job's times from Snakemake's start, and what the cluster added on the run's path:
    the path is followed back from the last job to end, each job's predecessor the job whose end came
    last before its submission (what it waited for)."""
    recs = sorted((r for r in records if None not in (r["submit"], r["start"], r["end"])), key=lambda r: r["submit"])
    lines = ["job       rule                  submitted  started  first rule  ended   (s from Snakemake's start)"]
    for r in recs:
        first = f"{r['first_rule'] - t0:7.0f}" if r["first_rule"] else "      -"
        lines.append(f"{r['id']:<9} {r['rule']:<21} {r['submit'] - t0:9.0f} {r['start'] - t0:8.0f} {first:>11}"
                     f" {r['end'] - t0:6.0f}")
    path, job = [], max(recs, key=lambda r: r["end"])
    while job is not None:
        path.append(job)
        before = [r for r in recs if r["end"] <= job["submit"]]
        job = max(before, key=lambda r: r["end"]) if before else None
    path.reverse()
    poll = sum(b["submit"] - a["end"] for a, b in zip(path, path[1:]))
    queue = sum(r["start"] - r["submit"] for r in path)
    inner = sum(r["first_rule"] - r["start"] for r in path if r["first_rule"])
    work = sum(r["end"] - (r["first_rule"] or r["start"]) for r in path)
    lines.append(
        f"path: {len(path)} sequential Slurm jobs ({' -> '.join(r['rule'] for r in path)}); Snakemake start "
        f"{path[0]['submit'] - t0:.0f} s, waits for a status poll {poll:.0f} s, queue {queue:.0f} s, Snakemake "
        f"starts inside the jobs {inner:.0f} s, the jobs' rules {work:.0f} s, end after the last job "
        f"{t1 - path[-1]['end']:.0f} s (sacct times are whole seconds)")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", action="store_true", help="keep the two run folders")
    args = ap.parse_args()
    if shutil.which("sbatch") is None:
        sys.exit("no sbatch: start a cluster first (sudo scripts/slurm-up.sh)")
    from tinymodel import build_tiny_model

    base = Path(tempfile.mkdtemp(prefix="earnest-slurm-bench-"))
    config = ROOT / "tests" / "configs" / "tiny.yaml"
    dirs = {}
    for name in ("local", "slurm"):
        d = base / name
        d.mkdir()
        build_tiny_model(d / "tiny-model")
        dirs[name] = d
    snake = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--configfile", str(config)]
    load0 = os.getloadavg()
    print(f"load before: {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} (1/5/15 min), {os.cpu_count()} CPUs", flush=True)
    t_local = _run(snake + ["--directory", str(dirs["local"]), "-c2"], dirs["local"], base / "local.log")
    print(f"local -c2: {t_local:.0f} s", flush=True)
    load1 = os.getloadavg()
    start_slurm = time.time()
    t_slurm = _run(snake + ["--directory", str(dirs["slurm"]), "--profile", str(ROOT / "profiles" / "slurm")],
                   dirs["slurm"], base / "slurm.log")
    load2 = os.getloadavg()
    out = (base / "slurm.log").read_text()
    m = re.search(r"SLURM run ID: ([0-9a-f-]{36})", out)
    jobs, limits, records = Counter(), {}, []
    if m:
        acct = subprocess.run(["sacct", "-X", "-P", "-n", "--starttime", "now-1days", "--name", m.group(1),
                               "--format", "JobIDRaw,Comment,Partition,TimelimitRaw,ElapsedRaw,Submit,Start,End"],
                              capture_output=True, text=True).stdout
        for line in acct.splitlines():
            jobid, comment, part, limit, elapsed, submit, start, end = line.split("|")
            rule = re.sub(r"_wildcards_.*$", "", comment).removeprefix("rule_")
            rule = next((g for g in ("prep", "post", "inputs", "fits", "final") if rule.startswith(g + "_")), rule)
            jobs[f"{rule} ({part})"] += 1
            limits.setdefault(rule, []).append((int(limit), int(elapsed)))
            records.append({"id": jobid, "rule": rule, "submit": _epoch(submit), "start": _epoch(start),
                            "end": _epoch(end), "first_rule": _first_rule(dirs["slurm"], jobid)})
    print(f"slurm profile: {t_slurm:.0f} s, {sum(jobs.values())} Slurm jobs: "
          + ", ".join(f"{k} x{v}" for k, v in sorted(jobs.items())))
    # what each job asked Slurm for (sbatch -t, minutes) against what it took
    print("time limit asked / taken: " + "; ".join(
        f"{rule} " + ", ".join(f"{lim} min / {el} s" for lim, el in sorted(v)) for rule, v in sorted(limits.items())))
    print(f"ratio slurm / local: {t_slurm / t_local:.2f}")
    print(f"load after local run: {load1[0]:.2f}; after slurm run: {load2[0]:.2f}")
    if records:
        print(breakdown(records, start_slurm, start_slurm + t_slurm))
    sys.path.insert(0, str(ROOT / "scripts"))
    from result_digest import compare, digest

    a, b = digest(dirs["local"] / "results"), digest(dirs["slurm"] / "results")
    problems, _ = compare(a, b)
    print(f"results: {len(a['files'])} tables local, {len(b['files'])} through Slurm, "
          + ("identical values" if not problems else f"{len(problems)} differ:\n  " + "\n  ".join(problems)))
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    else:
        print(f"runs kept in {base}")


if __name__ == "__main__":
    main()
