#!/usr/bin/env bash
# Speed benchmark of `dtsim compare`: six strategies on 64 workers (scenarios/bench-compare-64-workers.json, target
# < 30 s on a 2-core machine), run REPEAT times (default 3). Prints the median wall time and the median peak resident
# memory (GNU time's maximum RSS over dtsim and the child processes that run SimGrid: the largest one, not their sum;
# --jobs of them run at once). With "each", also times every strategy alone (`dtsim run`), to see which one the
# comparison waits for.
#   tools/bench/compare.sh [REPEAT] [each]
set -euo pipefail
cd "$(dirname "$0")/../.."
repeat=${1:-3}
each=${2:-}
dtsim=build/dtsim
[ -x "$dtsim" ] || tools/build.sh --target dtsim > /dev/null

scenario=scenarios/bench-compare-64-workers.json
strategies=allreduce,ps-sync,ps-async,ssp:3,gossip,dpsgd

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# Prints one line: NAME, then the median wall time and peak RSS of REPEAT runs of `dtsim ARGS...`.
measure() {
  local name=$1
  shift
  local walls=() rss=() out
  for _ in $(seq "$repeat"); do
    out=$( { /usr/bin/time -f '%e %M' "$dtsim" "$@" > /dev/null; } 2>&1 | tail -n 1 )
    walls+=("${out% *}"); rss+=("${out#* }")
  done
  local w m
  w=$(printf '%s\n' "${walls[@]}" | median)
  m=$(printf '%s\n' "${rss[@]}" | median)
  printf '%-60s %10.2f %15.1f\n' "$name" "$w" "$(echo "$m / 1024" | bc -l)"
}

echo "$(nproc) cores; median of $repeat runs"
printf '%-60s %10s %15s\n' "benchmark" "wall (s)" "peak RSS (MiB)"
measure "compare ($strategies)" compare "$scenario" --strategies "$strategies"
if [ "$each" = each ]; then
  IFS=',' read -r -a names <<< "$strategies"
  for s in "${names[@]}"; do
    measure "  run --set training.strategy=$s" run "$scenario" --set "training.strategy=$s"
  done
fi
