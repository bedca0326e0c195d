"""The tiny config end to end through the Slurm profile against a local `snakemake -c2`, same machine,
back to back: wall time of each, their ratio, and the Slurm jobs the run submitted.

    sudo scripts/slurm-up.sh        # a local single-node Slurm cluster
    python benchmarks/slurm.py      # prints the two times, the ratio, the job counts, their time
                                    # limits against their run times, and the load

Both runs build every target of tests/configs/tiny.yaml (generation, scoring, bootstraps,
sensitivity, StatFormBench, power, compare, tables, figures) from nothing, in fresh folders, with
the same tiny random model.  The Slurm run uses profiles/slurm unchanged except for the first status
check (2 s instead of 20 s, as tests/test_slurm.py does).  The local run goes first.
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
    t_slurm = _run(snake + ["--directory", str(dirs["slurm"]), "--profile", str(ROOT / "profiles" / "slurm"),
                            "--slurm-init-seconds-before-status-checks", "2"], dirs["slurm"], base / "slurm.log")
    load2 = os.getloadavg()
    out = (base / "slurm.log").read_text()
    m = re.search(r"SLURM run ID: ([0-9a-f-]{36})", out)
    jobs, limits = Counter(), {}
    if m:
        acct = subprocess.run(["sacct", "-X", "-P", "-n", "--starttime", "now-1days", "--name", m.group(1),
                               "--format", "Comment,Partition,TimelimitRaw,ElapsedRaw"],
                              capture_output=True, text=True).stdout
        for line in acct.splitlines():
            comment, part, limit, elapsed = line.split("|")
            rule = re.sub(r"_wildcards_.*$", "", comment).removeprefix("rule_")
            rule = next((g for g in ("prep", "post", "fits", "final") if rule.startswith(g + "_")), rule)
            jobs[f"{rule} ({part})"] += 1
            limits.setdefault(rule, []).append((int(limit), int(elapsed)))
    print(f"slurm profile: {t_slurm:.0f} s, {sum(jobs.values())} Slurm jobs: "
          + ", ".join(f"{k} x{v}" for k, v in sorted(jobs.items())))
    # what each job asked Slurm for (sbatch -t, minutes) against what it took
    print("time limit asked / taken: " + "; ".join(
        f"{rule} " + ", ".join(f"{lim} min / {el} s" for lim, el in sorted(v)) for rule, v in sorted(limits.items())))
    print(f"ratio slurm / local: {t_slurm / t_local:.2f}")
    print(f"load after local run: {load1[0]:.2f}; after slurm run: {load2[0]:.2f}")
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    else:
        print(f"runs kept in {base}")


if __name__ == "__main__":
    main()
