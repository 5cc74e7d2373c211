#!/usr/bin/env bash
# Aggregate against step fidelity: the same collective simulated both ways over a grid of operations,
# algorithms, rank counts, sizes and node shapes; prints both times and the difference.
#   tools/bench/fidelity.sh > fidelity.txt
set -euo pipefail
cd "$(dirname "$0")/../.."
dtsim=build/dtsim
[ -x "$dtsim" ] || tools/build.sh --target dtsim > /dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Node shapes: one GPU per node behind a 100 Gb/s NIC; 8 H100 on NVSwitch behind one 400 Gb/s NIC.
cat > "$tmp/flat.json" <<'JSON'
{"version": 1, "model": {"preset": "mlp-small", "batch_per_gpu": 1},
 "cluster": {"nodes": 64, "gpus_per_node": 1, "gpu": "a100-80gb", "nic": {"bandwidth": "100Gbps", "latency": "2us"}}}
JSON
cat > "$tmp/nvswitch.json" <<'JSON'
{"version": 1, "model": {"preset": "mlp-small", "batch_per_gpu": 1},
 "cluster": {"nodes": 8, "gpus_per_node": 8, "gpu": "h100-sxm", "nic": {"bandwidth": "400Gbps", "latency": "2us"}}}
JSON

time_of() { # shape op algo ranks size fidelity -> seconds
  "$dtsim" collective "$tmp/$1.json" --op "$2" --algo "$3" --ranks "$4" --sizes "$5" --fidelity "$6" --csv "$tmp/out.csv" \
    > /dev/null
  tail -n 1 "$tmp/out.csv" | cut -d, -f5 # size,algorithm,protocol,channels,time_seconds,...
}

printf '%-9s %-15s %-19s %6s %8s %14s %14s %8s\n' shape operation algorithm ranks size "step (us)" "aggregate (us)" diff
for shape in flat nvswitch; do
  for spec in "all-reduce ring" "all-reduce double-binary-tree" "all-reduce rabenseifner" "all-reduce hierarchical" \
              "all-gather ring" "reduce-scatter ring" "broadcast binomial-tree" "broadcast ring" "all-to-all pairwise"; do
    set -- $spec
    [[ "$shape" == flat && "$2" == hierarchical ]] && continue
    for ranks in 16 64; do
      for size in 64KiB 16MiB 1GiB; do
        s=$(time_of "$shape" "$1" "$2" "$ranks" "$size" step)
        a=$(time_of "$shape" "$1" "$2" "$ranks" "$size" aggregate)
        awk -v sh="$shape" -v op="$1" -v al="$2" -v n="$ranks" -v sz="$size" -v s="$s" -v a="$a" \
          'BEGIN { printf "%-9s %-15s %-19s %6s %8s %14.1f %14.1f %7.1f%%\n", sh, op, al, n, sz, s * 1e6, a * 1e6, (a - s) / s * 100 }'
      done
    done
  done
done
