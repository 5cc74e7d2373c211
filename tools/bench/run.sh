#!/usr/bin/env bash
# Speed benchmarks: runs `dtsim run` on each benchmark scenario REPEAT times (default 5) and prints the
# median wall time and the median peak resident memory of the simulation (GNU time's maximum RSS over
# dtsim and the child process that runs SimGrid).
#   tools/bench/run.sh [REPEAT] [SCENARIO...]
set -euo pipefail
cd "$(dirname "$0")/../.."
repeat=${1:-5}
shift || true
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(tools/bench/*.json)
dtsim=build/dtsim
[ -x "$dtsim" ] || tools/build.sh --target dtsim > /dev/null

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

printf '%-40s %12s %14s\n' "scenario" "wall (s)" "peak RSS (MiB)"
for s in "${scenarios[@]}"; do
  walls=() ; rss=()
  for _ in $(seq "$repeat"); do
    out=$( { /usr/bin/time -f '%e %M' "$dtsim" run "$s" > /dev/null; } 2>&1 | tail -n 1 )
    walls+=("${out% *}"); rss+=("${out#* }")
  done
  w=$(printf '%s\n' "${walls[@]}" | median)
  m=$(printf '%s\n' "${rss[@]}" | median)
  printf '%-40s %12.2f %14.1f\n' "$(basename "$s" .json)" "$w" "$(echo "$m / 1024" | bc -l)"
done
