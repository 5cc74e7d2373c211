#!/usr/bin/env bash
# The simulation-memory estimate (sim/engine/footprint.hpp) against what simulations take: for each case, the
# estimate `dtsim explain` prints and the peak resident memory GNU time measures over dtsim and its simulation
# process, and their ratio. The estimate's constants come from the first rows: the per-rank cost from the quickstart
# MLP at 1,024 to 12,288 single-GPU nodes (one iteration), the per-interval cost from GPT-2 on one GPU at 100 and
# 1,000 iterations of 396 ops. The other rows check it on other shapes.
#   tools/bench/footprint.sh [NAME-FILTER]
set -euo pipefail
cd "$(dirname "$0")/../.."
filter=${1:-}
dtsim=build/dtsim
[ -x "$dtsim" ] || tools/build.sh --target dtsim > /dev/null

# name | scenario | --set overrides
cases=(
  "mlp-1024-nodes|scenarios/quickstart.json|--set cluster.nodes=1024 --set run.iterations=1 --set run.warmup_iterations=0"
  "mlp-4096-nodes|scenarios/quickstart.json|--set cluster.nodes=4096 --set run.iterations=1 --set run.warmup_iterations=0"
  "mlp-12288-nodes|scenarios/quickstart.json|--set cluster.nodes=12288 --set run.iterations=1 --set run.warmup_iterations=0"
  "gpt2-1-gpu-100-iterations|scenarios/gpt2-h100-micro-batch-1.json|--set run.iterations=100 --set run.warmup_iterations=0"
  "gpt2-1-gpu-1000-iterations|scenarios/gpt2-h100-micro-batch-1.json|--set run.iterations=1000 --set run.warmup_iterations=0"
  "resnet50-64-nodes|tools/bench/resnet50-64-nodes.json|"
  "gpt3-175b-1024-gpus-coarse|scenarios/gpt3-175b-a100x1024.json|"
  "llama3-70b-fsdp-64-gpus|scenarios/llama3-70b-fsdp-h100x64.json|"
  "mixtral-ep8-32-gpus|scenarios/mixtral-8x7b-ep8-h100x32.json|"
)

printf '%-28s %14s %14s %8s %8s\n' "case" "estimate (MiB)" "peak RSS (MiB)" "ratio" "wall (s)"
for entry in "${cases[@]}"; do
  IFS='|' read -r name scenario sets <<< "$entry"
  [[ -n "$filter" && "$name" != *"$filter"* ]] && continue
  # shellcheck disable=SC2086 # the overrides are words
  estimate=$("$dtsim" explain "$scenario" $sets | awk '/estimated peak/ {print $3, $4}' | tr -d ',')
  mib=$(awk -v v="${estimate% *}" -v u="${estimate#* }" 'BEGIN {
    f = (u == "GiB") ? 1024 : (u == "KiB") ? 1 / 1024 : (u == "B") ? 1 / 1048576 : 1; printf "%.0f", v * f }')
  tmp=$(mktemp)
  # shellcheck disable=SC2086
  /usr/bin/time -o "$tmp" -f '%M %e' "$dtsim" run "$scenario" $sets > /dev/null 2>&1 || true
  measured=$(tail -1 "$tmp")
  rm -f "$tmp"
  rss_mib=$(awk -v k="${measured% *}" 'BEGIN {printf "%.0f", k / 1024}')
  printf '%-28s %14s %14s %8s %8s\n' "$name" "$mib" "$rss_mib" "$(awk -v a="$mib" -v b="$rss_mib" 'BEGIN {printf "%.2f", a / b}')" "${measured#* }"
done
