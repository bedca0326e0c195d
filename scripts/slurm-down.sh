#!/usr/bin/env bash
# Stop the single-node Slurm cluster started by scripts/slurm-up.sh.
#
# Usage: sudo scripts/slurm-down.sh [--purge]
#
# Stops slurmd, slurmctld, slurmdbd, mariadbd and munged, each through the pid
# file it wrote (only processes this cluster started are touched).  Running
# jobs are killed with the node.  --purge also removes $EARNEST_SLURM_DIR
# (default /var/lib/earnest-slurm: configuration, accounting database, state)
# and the /etc/slurm/slurm.conf symlink; without it the next slurm-up.sh keeps
# the accounting history.
set -euo pipefail

DIR=${EARNEST_SLURM_DIR:-/var/lib/earnest-slurm}
PURGE=0
for arg in "$@"; do
  case $arg in
    --purge) PURGE=1 ;;
    *) echo "usage: $0 [--purge]" >&2; exit 2 ;;
  esac
done
[[ $(id -u) -eq 0 ]] || { echo "slurm-down: must run as root" >&2; exit 1; }

stop() {  # stop <name> <pidfile>: SIGTERM, wait up to 30 s, then SIGKILL
  local name=$1 pidfile=$2 pid
  [[ -s $pidfile ]] || return 0
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    echo "slurm-down: stopping $name ($pid)" >&2
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "slurm-down: $name did not stop, killing it" >&2
      kill -9 "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$pidfile"
}

# cancel this cluster's jobs first, so that no job step outlives slurmd
if [[ -s $DIR/run/slurmctld.pid ]] && kill -0 "$(cat "$DIR/run/slurmctld.pid")" 2>/dev/null; then
  export SLURM_CONF=$DIR/etc/slurm.conf
  jobs=$(squeue -h -o %A 2>/dev/null || true)
  if [[ -n $jobs ]]; then
    echo "slurm-down: cancelling jobs $(echo $jobs)" >&2
    scancel $jobs 2>/dev/null || true
    for _ in $(seq 60); do [[ -z $(squeue -h -t R,CG -o %A 2>/dev/null) ]] && break; sleep 0.5; done
  fi
fi
stop slurmd "$DIR/run/slurmd.pid"
stop slurmctld "$DIR/run/slurmctld.pid"
stop slurmdbd "$DIR/run/slurmdbd.pid"
stop mariadbd "$DIR/run/mysqld.pid"
stop munged /run/munge/munged.pid

if ((PURGE)); then
  [[ $(readlink /etc/slurm/slurm.conf || true) == "$DIR/etc/slurm.conf" ]] && rm -f /etc/slurm/slurm.conf
  rm -rf "$DIR"
  echo "slurm-down: removed $DIR" >&2
fi
