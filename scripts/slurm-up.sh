#!/usr/bin/env bash
# Start a single-node Slurm cluster (with slurmdbd accounting) on this machine.
#
# Usage: sudo scripts/slurm-up.sh          (as root; idempotent)
#
# Everything the cluster writes lives under $EARNEST_SLURM_DIR
# (default /var/lib/earnest-slurm): etc/ (slurm.conf, slurmdbd.conf, gres.conf,
# my.cnf), mysql/ (a private MariaDB data directory), spool/, run/ (pid files,
# sockets) and log/ (daemon logs).  /etc/slurm/slurm.conf is made a symlink to
# etc/slurm.conf so that sinfo/sbatch/sacct work without SLURM_CONF; the script
# refuses to touch an /etc/slurm/slurm.conf that it did not create.
#
# The cluster: one node (CPUs and memory from `slurmd -C`), two partitions on
# it, `cpu` (default) and `gpu`, and EARNEST_SLURM_GPUS (default 1, at most 4)
# stand-in GPUs: a gres/gpu backed by harmless character devices (/dev/null,
# ...), so `--gpus=N` requests are scheduled and recorded by accounting
# (AllocTRES gres/gpu=N) although no GPU exists.  Accounting
# runs through slurmdbd + MariaDB with AccountingStorageEnforce=associations;
# the account EARNEST_SLURM_ACCOUNT (default `earnest`) exists and is the
# default account of the invoking user.  No systemd and no cgroups are needed
# (proctrack/linuxproc, task/none: memory limits are not enforced).
#
# Daemons are started by hand: munged (as the munge user), mariadbd, slurmdbd,
# slurmctld, slurmd.  A running daemon is left alone; if the generated
# configuration differs from the one in place, slurmctld and slurmd are
# restarted.  The script returns once `sinfo` shows the node idle and `sacct`
# answers.  Stop everything with scripts/slurm-down.sh.
set -euo pipefail

DIR=${EARNEST_SLURM_DIR:-/var/lib/earnest-slurm}
CLUSTER=earnest
ACCOUNT=${EARNEST_SLURM_ACCOUNT:-earnest}
NGPUS=${EARNEST_SLURM_GPUS:-1}
DB_PORT=${EARNEST_SLURM_DB_PORT:-3399}
WAIT_S=${EARNEST_SLURM_WAIT_S:-120}
PACKAGES=(slurm-wlm slurmdbd munge mariadb-server)

log() { printf '[slurm-up %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[[ $(id -u) -eq 0 ]] || die "must run as root (it installs packages and starts system daemons)"
T0=$SECONDS

# --- packages ---------------------------------------------------------------
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # try without an index refresh first: it is slow and usually not needed
  apt-get install -y -qq "${missing[@]}" >"${TMPDIR:-/tmp}/earnest-slurm-apt.log" 2>&1 || {
    apt-get update -qq >>"${TMPDIR:-/tmp}/earnest-slurm-apt.log" 2>&1
    apt-get install -y -qq "${missing[@]}" >>"${TMPDIR:-/tmp}/earnest-slurm-apt.log" 2>&1 \
      || die "apt-get install ${missing[*]} failed, see ${TMPDIR:-/tmp}/earnest-slurm-apt.log"
  }
  log "packages installed in $((SECONDS - T0)) s"
fi

alive() { [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

wait_for() {  # wait_for <what> <command...>: poll until the command succeeds
  local what=$1; shift
  local deadline=$((SECONDS + WAIT_S))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || die "timed out after ${WAIT_S} s waiting for $what (logs in $DIR/log)"
    sleep 0.5
  done
}

mkdir -p "$DIR"/{etc,run,log,spool/slurmctld,spool/slurmd}
chmod 755 "$DIR"

# --- munge -----------------------------------------------------------------
if [[ ! -s /etc/munge/munge.key ]]; then
  log "creating /etc/munge/munge.key"
  runuser -u munge -- mungekey --create --keyfile=/etc/munge/munge.key
fi
install -d -o munge -g munge -m 755 /run/munge
if ! alive /run/munge/munged.pid; then
  log "starting munged"
  runuser -u munge -- /usr/sbin/munged </dev/null >/dev/null 2>&1
fi
wait_for "munge" bash -c 'munge -n | unmunge'

# --- MariaDB (private data directory, TCP on 127.0.0.1:$DB_PORT) -------------
cat >"$DIR/etc/my.cnf" <<EOF
[mysqld]
user = mysql
datadir = $DIR/mysql
socket = $DIR/run/mysqld.sock
pid-file = $DIR/run/mysqld.pid
bind-address = 127.0.0.1
port = $DB_PORT
log-error = $DIR/log/mariadb.log
# small footprint: the accounting database of one node stays tiny
innodb_buffer_pool_size = 64M
innodb_log_file_size = 16M
skip-name-resolve
EOF
chown mysql:mysql "$DIR/run"
if [[ ! -d $DIR/mysql/mysql ]]; then
  log "initialising MariaDB data directory $DIR/mysql"
  install -d -o mysql -g mysql -m 750 "$DIR/mysql"
  mariadb-install-db --defaults-file="$DIR/etc/my.cnf" --auth-root-authentication-method=socket \
    --skip-test-db >"$DIR/log/mariadb-install.log" 2>&1 \
    || die "mariadb-install-db failed, see $DIR/log/mariadb-install.log"
fi
SQL=(mariadb --defaults-file=/dev/null --socket="$DIR/run/mysqld.sock" -u root)
if ! alive "$DIR/run/mysqld.pid"; then
  log "starting mariadbd"
  setsid /usr/sbin/mariadbd --defaults-file="$DIR/etc/my.cnf" </dev/null >>"$DIR/log/mariadb.log" 2>&1 &
fi
wait_for "mariadbd" "${SQL[@]}" -e "select 1"

# the slurm database user's password is generated once and kept
if [[ ! -s $DIR/etc/db.pass ]]; then
  (umask 077; head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' >"$DIR/etc/db.pass")
fi
DB_PASS=$(cat "$DIR/etc/db.pass")
"${SQL[@]}" <<EOF
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
EOF

# --- Slurm configuration ----------------------------------------------------
NODE_LINE=$(slurmd -C | head -1)          # NodeName=<host> CPUs=... RealMemory=...
NODE=$(sed -E 's/^NodeName=([^ ]+).*/\1/' <<<"$NODE_LINE")
[[ -n $NODE && $NODE_LINE == NodeName=* ]] || die "unexpected 'slurmd -C' output: $NODE_LINE"
GRES_NODE=""; GRES_TYPES=""
if ((NGPUS > 0)); then GRES_NODE=" Gres=gpu:$NGPUS"; GRES_TYPES="GresTypes=gpu"; fi

new_conf=$(cat <<EOF
# Generated by scripts/slurm-up.sh; edits are overwritten on the next run.
ClusterName=$CLUSTER
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$DIR/spool/slurmctld
SlurmdSpoolDir=$DIR/spool/slurmd
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
# no cgroups on this kind of machine: track processes through /proc
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
# keep finished jobs visible to squeue for 5 minutes (sacct has them for good)
MinJobAge=300
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStorageEnforce=associations
AccountingStorageTRES=gres/gpu
# the Snakemake plugin puts rule_<name>_wildcards_<...> into the job comment
AccountingStoreFlags=job_comment
JobCompType=jobcomp/none
$GRES_TYPES
$NODE_LINE NodeAddr=127.0.0.1$GRES_NODE State=UNKNOWN
PartitionName=cpu Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=$NODE Default=NO MaxTime=INFINITE State=UP
EOF
)
new_gres="AutoDetect=off"
if ((NGPUS > 0)); then
  # Slurm 22.05 drops GPUs that have no File=, and wants a character device
  # there; harmless ones stand in (nothing is bound without cgroups).  Jobs see
  # CUDA_VISIBLE_DEVICES=0..N-1, which finds no device on a machine without GPUs.
  fake_devices=(/dev/null /dev/zero /dev/full /dev/urandom)
  ((NGPUS <= ${#fake_devices[@]})) || die "EARNEST_SLURM_GPUS=$NGPUS: at most ${#fake_devices[@]} stand-in GPUs"
  for ((i = 0; i < NGPUS; i++)); do
    new_gres+=$'\n'"NodeName=$NODE Name=gpu File=${fake_devices[i]}"
  done
fi
changed=0
if [[ ! -f $DIR/etc/slurm.conf ]] || [[ $(cat "$DIR/etc/slurm.conf") != "$new_conf" ]]; then
  printf '%s\n' "$new_conf" >"$DIR/etc/slurm.conf"; changed=1
fi
if [[ ! -f $DIR/etc/gres.conf ]] || [[ $(cat "$DIR/etc/gres.conf") != "$new_gres" ]]; then
  printf '%s\n' "$new_gres" >"$DIR/etc/gres.conf"; changed=1
fi
(umask 077; cat >"$DIR/etc/slurmdbd.conf.new" <<EOF
# Generated by scripts/slurm-up.sh
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
SlurmUser=root
PidFile=$DIR/run/slurmdbd.pid
LogFile=$DIR/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
EOF
)
mv "$DIR/etc/slurmdbd.conf.new" "$DIR/etc/slurmdbd.conf"

mkdir -p /etc/slurm
if [[ -e /etc/slurm/slurm.conf || -L /etc/slurm/slurm.conf ]]; then
  [[ $(readlink /etc/slurm/slurm.conf || true) == "$DIR/etc/slurm.conf" ]] \
    || die "/etc/slurm/slurm.conf exists and is not ours; refusing to replace it"
else
  ln -s "$DIR/etc/slurm.conf" /etc/slurm/slurm.conf
fi
export SLURM_CONF=$DIR/etc/slurm.conf

# --- slurmdbd and the accounting records ------------------------------------
if ! alive "$DIR/run/slurmdbd.pid"; then
  log "starting slurmdbd"
  setsid /usr/sbin/slurmdbd </dev/null >/dev/null 2>&1
fi
wait_for "slurmdbd" sacctmgr -n list cluster
sacctmgr -n -P list cluster format=cluster | grep -qx "$CLUSTER" \
  || sacctmgr -i add cluster "$CLUSTER" >/dev/null
sacctmgr -n -P list account format=account | grep -qx "$ACCOUNT" \
  || sacctmgr -i add account "$ACCOUNT" cluster="$CLUSTER" description="earnest workflow" organization=earnest >/dev/null
USER_NAME=${SUDO_USER:-$(id -un)}
for u in root "$USER_NAME"; do
  sacctmgr -n -P list assoc user="$u" account="$ACCOUNT" format=user | grep -qx "$u" \
    || sacctmgr -i add user "$u" account="$ACCOUNT" defaultaccount="$ACCOUNT" cluster="$CLUSTER" >/dev/null
done

# --- slurmctld and slurmd ---------------------------------------------------
if ((changed)); then
  for d in slurmd slurmctld; do
    if alive "$DIR/run/$d.pid"; then
      log "configuration changed: stopping $d"
      pid=$(cat "$DIR/run/$d.pid"); kill "$pid"
      wait_for "$d to stop" bash -c "! kill -0 $pid"
    fi
  done
fi
if ! alive "$DIR/run/slurmctld.pid"; then
  log "starting slurmctld"
  setsid /usr/sbin/slurmctld </dev/null >/dev/null 2>&1
fi
wait_for "slurmctld" scontrol ping
if ! alive "$DIR/run/slurmd.pid"; then
  log "starting slurmd"
  setsid /usr/sbin/slurmd </dev/null >/dev/null 2>&1
fi

node_state() { sinfo -h -n "$NODE" -o %T 2>/dev/null | head -1; }
deadline=$((SECONDS + WAIT_S))
until [[ $(node_state) == idle || $(node_state) == mixed || $(node_state) == allocated ]]; do
  st=$(node_state)
  # a node left drained or down by an earlier run is put back into service
  if [[ $st == drain* || $st == down* ]]; then
    scontrol update nodename="$NODE" state=resume >/dev/null 2>&1 || true
  fi
  ((SECONDS < deadline)) || die "node $NODE is '$st', not idle, after ${WAIT_S} s (see $DIR/log)"
  sleep 0.5
done
wait_for "sacct" sacct -n -X --starttime now-1hours
log "cluster '$CLUSTER' up: node $NODE ($(sed -E 's/.*(CPUs=[0-9]+).*(RealMemory=[0-9]+).*/\1 \2/' <<<"$NODE_LINE"), GPUs=$NGPUS), partitions cpu (default) and gpu, account $ACCOUNT; $((SECONDS - T0)) s"
