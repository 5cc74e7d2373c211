#!/usr/bin/env bash
# A 4-shard sweep on a real single-node Slurm cluster started here (slurmctld and slurmd as root, on ports of their
# own, with munge), submitted by tools/slurm/submit.sh; the merged table and CSV must be the local run's bytes.
# Skips (exit 77) where Slurm or munge is not installed: `apt-get install slurm-wlm munge` to run it.
#   tests/slurm/sharded_sweep.sh BUILD_DIR
set -euo pipefail
build=$(realpath "$1")
cd "$(dirname "$0")/../.."
for tool in slurmctld slurmd sbatch squeue sinfo munged munge; do
  command -v "$tool" > /dev/null || PATH=$PATH:/usr/sbin command -v "$tool" > /dev/null ||
    { echo "SKIP: $tool is not installed (apt-get install slurm-wlm munge)"; exit 77; }
done
export PATH=$PATH:/usr/sbin
[ "$(id -u)" = 0 ] || { echo "SKIP: starting slurmd takes root"; exit 77; }
[ -r /etc/munge/munge.key ] || { echo "SKIP: no munge key (/etc/munge/munge.key)"; exit 77; }

work=$(mktemp -d /tmp/dtsim-slurm-XXXXXX)
host=$(hostname)
cleanup() {
  local pids=()
  for pid in "$work"/*.pid; do [ -f "$pid" ] && pids+=("$(cat "$pid")"); done
  kill "${pids[@]}" 2> /dev/null || true
  # The daemons write their state as they stop: wait for them (at most 10 s) before removing their directory.
  for _ in $(seq 100); do
    local alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2> /dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  rm -rf "$work" 2> /dev/null || { sleep 1; rm -rf "$work" 2> /dev/null; } || true
}
trap cleanup EXIT
# On a failure, what Slurm and the jobs said.
trap 'echo "FAIL at line $LINENO"; tail -n 20 "$work"/*.log "$work"/out/*.log "$work"/out/merged.* 2> /dev/null' ERR
mkdir -p "$work/state" "$work/spool"
cat > "$work/slurm.conf" << CONF
ClusterName=dtsimtest
SlurmctldHost=$host
SlurmctldPort=6917
SlurmdPort=6918
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=dtsim Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$work/slurm.conf
if ! munge -n > /dev/null 2>&1; then
  mkdir -p /run/munge && chown munge:munge /run/munge
  runuser -u munge -- munged
fi
slurmctld
slurmd
for _ in $(seq 60); do sinfo -h -o %T 2> /dev/null | grep -q idle && break; sleep 1; done
sinfo -h -o %T | grep -q idle || { echo "FAIL: the Slurm node did not come up"; cat "$work"/*.log; exit 1; }

args=(sweep scenarios/resnet50-p3.2xlarge-sync.json --nodes 1..8)
DTSIM=$build/dtsim tools/slurm/submit.sh 4 "$work/out" -- "${args[@]}"
for _ in $(seq 300); do [ -z "$(squeue -h)" ] && break; sleep 1; done
[ -z "$(squeue -h)" ] || { echo "FAIL: the jobs did not finish"; squeue; exit 1; }
"$build/dtsim" "${args[@]}" --csv "$work/whole.csv" > "$work/whole.txt" 2> /dev/null
# The table the merge job printed is the local run's (but the line naming the CSV file each wrote), the CSV the same.
diff <(grep -v '^Wrote' "$work/whole.txt") <(grep -v '^Wrote' "$work/out/merged.txt")
cmp "$work/whole.csv" "$work/out/merged.csv"
echo "PASS: 4 shards under Slurm merged to the local run's bytes"
