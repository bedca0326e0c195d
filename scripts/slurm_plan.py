"""The Slurm jobs a run would submit, read from Snakemake's own dry run: each group job and each job
of its own, with the time (`sbatch --time`, minutes), the CPUs and the partition it would ask for.

    python scripts/slurm_plan.py [--json FILE] [--quiet] -- SNAKEMAKE ARGUMENTS
    python scripts/slurm_plan.py -- --profile profiles/slurm --configfile my.yaml

No Slurm is needed: Snakemake plans the run (`snakemake -n` with the arguments given, the profile's
group settings included) and, as it prints each job, this script reads the job's resources. A group
job's are what Snakemake computes for a job it submits to a cluster (`GroupResources.basic_layered`,
as `GroupJob.resources` calls it when the executor is not local): the members of each step of the
group (a toposort level) side by side on the job's CPUs (the profile's `cores` at most), a step's
time the longest of its members' (in as many layers as its CPUs take), the job's time the sum over
its steps, its CPUs those of its widest layer. A job of its own asks for its rule's runtime and
threads. The Slurm executor plugin turns runtime into `-t` and the CPUs into `--cpus-per-task`.

Prints one line per job (largest time first) and a summary; with --json, writes every job as
{"kind": "group"|"job", "name", "rules", "members", "runtime", "cpus", "partition", "steps",
"step_jobs"} where members is the number of rule jobs, steps the number of jobs in each of a group's
steps and step_jobs each step's jobs ({"rule", "runtime", "cpus"}). Exits with Snakemake's exit
status.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter


def _member(job) -> dict:
    res = job.resources
    return {"rule": job.rule.name, "runtime": res.get("runtime"), "cpus": res.get("_cores")}


def plan(snakemake_args: list[str]) -> tuple[int, list[dict]]:
    """Run Snakemake's dry run with these arguments; (its exit status, the jobs it would submit)."""
    import snakemake.jobs as sm_jobs
    from snakemake.cli import main as snakemake_main
    from snakemake.resources import GroupResources

    jobs: list[dict] = []
    grouped: set[int] = set()
    group_log_info, job_log_info = sm_jobs.GroupJob.log_info, sm_jobs.Job.log_info

    def group_info(self):
        res = GroupResources.basic_layered(toposorted_jobs=self.toposorted, constraints=self.global_resources,
                                           run_local=False, additive_resources=["runtime"], sortby=["runtime"])
        grouped.update(id(j) for j in self.jobs)
        jobs.append({"kind": "group", "name": self.groupid, "rules": dict(Counter(j.rule.name for j in self.jobs)),
                     "members": len(self.jobs), "runtime": res.get("runtime"), "cpus": res.get("_cores"),
                     "partition": res.get("slurm_partition"), "steps": [len(level) for level in self.toposorted],
                     "step_jobs": [[_member(j) for j in level] for level in self.toposorted]})
        group_log_info(self)

    def job_info(self, indent=False, printshellcmd=True):
        wf = self.dag.workflow
        if id(self) not in grouped and not (self.rule.name in wf._localrules or self.rule.norun):
            res = self.resources
            jobs.append({"kind": "job", "name": self.rule.name, "rules": {self.rule.name: 1}, "members": 1,
                         "runtime": res.get("runtime"), "cpus": res.get("_cores"),
                         "partition": res.get("slurm_partition"), "steps": [1],
                         "step_jobs": [[_member(self)]]})
        return job_log_info(self, indent=indent, printshellcmd=printshellcmd)

    sm_jobs.GroupJob.log_info, sm_jobs.Job.log_info = group_info, job_info
    try:
        snakemake_main(["--dry-run", *snakemake_args])
        status = 0
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sm_jobs.GroupJob.log_info, sm_jobs.Job.log_info = group_log_info, job_log_info
    return status, jobs


def describe(jobs: list[dict]) -> str:
    lines = []
    for j in sorted(jobs, key=lambda j: (-(j["runtime"] or 0), j["kind"], j["name"])):
        rules = ", ".join(f"{r} x{n}" if n > 1 else r for r, n in sorted(j["rules"].items()))
        what = f"group {j['name']} ({j['members']} jobs in {len(j['steps'])} steps: {rules})" \
            if j["kind"] == "group" else j["name"]
        lines.append(f"{j['runtime'] or 0:>7} min  {j['cpus'] or 1:>3} CPUs  {j['partition'] or '-':<8} {what}")
    groups = [j for j in jobs if j["kind"] == "group"]
    lines.append(f"{len(jobs)} Slurm jobs ({len(groups)} group jobs holding "
                 f"{sum(j['members'] for j in groups)} rule jobs, {len(jobs) - len(groups)} jobs of their own); "
                 f"longest time asked: {max((j['runtime'] or 0 for j in jobs), default=0)} min")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], usage="%(prog)s [--json FILE] -- ARGS")
    ap.add_argument("--json", help="write the jobs to this file")
    ap.add_argument("--quiet", action="store_true", help="do not print the jobs (only the summary line)")
    ap.add_argument("snakemake_args", nargs=argparse.REMAINDER, help="arguments for snakemake (after --)")
    args = ap.parse_args()
    sm_args = args.snakemake_args[1:] if args.snakemake_args[:1] == ["--"] else args.snakemake_args
    status, jobs = plan(sm_args + ["--quiet", "all"])
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(jobs, fh, indent=1)
    text = describe(jobs)
    print(text.splitlines()[-1] if args.quiet else text, file=sys.stderr)
    sys.exit(status)


if __name__ == "__main__":
    main()
