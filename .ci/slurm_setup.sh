#!/usr/bin/env bash
# A real single-node Slurm cluster for the sweep's integration test, around one command:
#
#   .ci/slurm_setup.sh COMMAND [ARGS...]
#   .ci/slurm_setup.sh --install-only      # only the apt-get step (idempotent)
#
# Installs Debian's slurm-wlm and munge (apt-get; Slurm 22.05 on bookworm) unless sbatch is
# already there, writes /etc/slurm/slurm.conf for this host (one node, one partition), creates
# a munge key, starts munged, slurmctld and slurmd as root, waits until the node is idle, runs
# COMMAND, and on exit (success, failure or signal) stops exactly the daemons it started, by
# the PIDs in their pid files. Exits with COMMAND's status. Needs root (CI and the dev
# machines run as root). Daemon logs: /var/log/slurm/ (printed when COMMAND fails).
set -euo pipefail

if [ "$#" -lt 1 ]; then
  echo "usage: $0 COMMAND [ARGS...]   |   $0 --install-only" >&2
  exit 2
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "$0: needs root to start munged/slurmctld/slurmd" >&2
  exit 2
fi

if ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
  echo "== slurm_setup: apt-get install slurm-wlm munge" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq slurm-wlm munge >&2
fi
if [ "$1" = "--install-only" ]; then  # .ci/run installs while the tests run
  exit 0
fi

HOST="$(hostname -s)"
CPUS="$(nproc)"
MEM_MIB=$(( $(awk '/MemTotal/{print $2}' /proc/meminfo) / 1024 - 512 ))
RUN=/run/golden-al-slurm
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm "$RUN"

cat >/etc/slurm/slurm.conf <<EOF
# written by golden-al .ci/slurm_setup.sh: one node, accounting off
ClusterName=local
SlurmctldHost=$HOST
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ReturnToService=2
MinJobAge=3600
SchedulerParameters=sched_interval=2
NodeName=$HOST CPUs=$CPUS RealMemory=$MEM_MIB State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF

mkdir -p /etc/munge /var/lib/munge /var/log/munge /run/munge
if [ ! -s /etc/munge/munge.key ]; then
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown munge:munge /etc/munge/munge.key /etc/munge /var/lib/munge /var/log/munge /run/munge
chmod 0400 /etc/munge/munge.key
chmod 0700 /etc/munge /var/lib/munge /var/log/munge
chmod 0755 /run/munge

STARTED=()
stop_daemons() {
  local rc=$?
  local i pid
  for (( i=${#STARTED[@]}-1; i>=0; i-- )); do  # slurmd, slurmctld, munged: reverse start order
    [ -s "${STARTED[$i]}" ] || continue
    pid="$(cat "${STARTED[$i]}")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  if [ "$rc" -ne 0 ]; then
    echo "== slurm_setup: command failed ($rc); daemon log tails:" >&2
    tail -n 20 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
  fi
  exit "$rc"
}
trap stop_daemons EXIT
trap 'exit 130' INT TERM

MUNGE_PID=/run/munge/munged.pid
if ! munge -n >/dev/null 2>&1; then
  runuser -u munge -- munged --pid-file="$MUNGE_PID"
  STARTED+=("$MUNGE_PID")
fi
for _ in $(seq 50); do munge -n >/dev/null 2>&1 && break; sleep 0.1; done
munge -n | unmunge >/dev/null

if [ -s "$RUN/slurmctld.pid" ] && kill -0 "$(cat "$RUN/slurmctld.pid")" 2>/dev/null; then
  echo "== slurm_setup: a slurmctld started by this script is already running; reusing it" >&2
else
  slurmctld -i
  STARTED+=("$RUN/slurmctld.pid")
fi
if [ -s "$RUN/slurmd.pid" ] && kill -0 "$(cat "$RUN/slurmd.pid")" 2>/dev/null; then
  :
else
  slurmd
  STARTED+=("$RUN/slurmd.pid")
fi
for _ in $(seq 60); do
  state="$(sinfo -h -N -o '%T' 2>/dev/null | head -n1 || true)"
  [ "$state" = "idle" ] && break
  sleep 1
done
if [ "$state" != "idle" ]; then
  echo "== slurm_setup: the node did not become idle (state '${state:-none}')" >&2
  exit 1
fi
echo "== slurm_setup: Slurm $(sinfo --version | awk '{print $2}') up on $HOST ($CPUS CPUs, ${MEM_MIB} MiB)" >&2

"$@"
