#!/usr/bin/env bash
# Runs a dtsim sweep, compare or search as N Slurm array tasks and merges them once every shard has succeeded.
#   tools/slurm/submit.sh N OUT [SBATCH-OPTION...] -- DTSIM-ARGS...
# e.g. tools/slurm/submit.sh 8 results/sweep --partition=cpu -- sweep scenarios/x.json --nodes 1..512
# Writes OUT/shard1 .. OUT/shardN (the points), then OUT/merged.txt and OUT/merged.csv (the whole run's table; what
# the merge says on stderr goes to OUT/merged.err).
# Prints the two job ids. DTSIM (default: build/dtsim, made absolute) must be on a file system every node sees.
set -euo pipefail
if [ $# -lt 4 ] || ! [[ $1 =~ ^[1-9][0-9]*$ ]]; then
  sed -n "2,7p" "$0" >&2
  exit 2
fi
shards=$1 out=$2
shift 2
sbatch_options=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do sbatch_options+=("$1"); shift; done
[ "${1:-}" = "--" ] || { echo "submit.sh: expected -- before dtsim's arguments" >&2; exit 2; }
shift
dtsim=$(realpath "${DTSIM:-build/dtsim}")
here=$(dirname "$(realpath "$0")")
mkdir -p "$out"
out=$(realpath "$out")
array=$(sbatch --parsable "${sbatch_options[@]}" --array=0-$((shards - 1)) --output="$out/shard-%a.log" \
  --export=ALL,DTSIM="$dtsim",OUT="$out",SHARDS="$shards" "$here/shard.sbatch" "$@")
dirs=()
for k in $(seq 1 "$shards"); do dirs+=("$out/shard$k"); done
csv=()
[ "$1" = search ] || csv=(--csv "$out/merged.csv")
merge=$(sbatch --parsable "${sbatch_options[@]}" --dependency=afterok:"${array%%;*}" --job-name=dtsim-merge \
  --output="$out/merged.txt" --error="$out/merged.err" --wrap "$(printf '%q ' "$dtsim" merge "${dirs[@]}" "${csv[@]}")")
echo "shards: job $array; merge: job $merge"
