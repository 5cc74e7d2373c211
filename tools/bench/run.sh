#!/usr/bin/env bash
# Speed benchmarks: runs each benchmark command REPEAT times (default 5) and prints the median wall time and
# the median peak resident memory (GNU time's maximum RSS over dtsim and the child processes that run SimGrid).
#   tools/bench/run.sh [REPEAT] [NAME-FILTER]
set -euo pipefail
cd "$(dirname "$0")/../.."
repeat=${1:-5}
filter=${2:-}
dtsim=build/dtsim
[ -x "$dtsim" ] || tools/build.sh --target dtsim > /dev/null

# name | dtsim arguments | target
benchmarks=(
  "resnet50-64-nodes|run tools/bench/resnet50-64-nodes.json|< 1 s"
  "ring-1gib-1024-gpus|run tools/bench/ring-1gib-1024-gpus.json|< 15 s"
  "allreduce-1gib-1024-aggregate|collective tools/bench/h100-nodes.json --ranks 1024 --sizes 1GiB --fidelity aggregate --jobs 1|< 1 s"
  "allreduce-1gib-1024-step|collective tools/bench/h100-nodes.json --ranks 1024 --sizes 1GiB --jobs 1|< 20 s"
  "ring-allreduce-1gib-1024-step|collective tools/bench/h100-nodes.json --ranks 1024 --sizes 1GiB --algo ring --jobs 1|< 20 s"
  "fat-tree-16384-gpus-platform|collective tools/bench/fat-tree-16384-gpus.json --op send-recv --sizes 1MiB --jobs 1|< 10 s, 4 GiB"
  "k-ary-fat-tree-16384-platform|collective tools/bench/k-ary-fat-tree-16384-gpus.json --op send-recv --sizes 1MiB --jobs 1|< 10 s, 4 GiB"
  "k-ary-fat-tree-16384-1m-routes|explain tools/bench/k-ary-fat-tree-16384-gpus.json|< 10 s, 4 GiB (diameter over 64 x 16,384 routes, max-flow bisection)"
  "gpt3-175b-layer-graph|explain tools/bench/gpt3-175b-layer-graph.json|< 50 ms (GPT-3 175B's layer table and memory per GPU, process start included)"
  "gpt3-175b-1024-gpus-coarse|run scenarios/gpt3-175b-a100x1024.json|< 1 s, 4 GiB (one measured iteration after a warm-up)"
  "gpt3-175b-8192-gpus-coarse|run scenarios/gpt3-175b-a100x1024.json --set cluster.nodes=1024|< 120 s"
  "llama3-405b-16384-gpus-coarse|run scenarios/llama3-405b-h100x16384-train.json|< 10 s, 8 GiB (TP 8 PP 16 DP 128, interleaved over 4 virtual stages, one measured iteration after a warm-up)"
  "dense-98304-gpus-coarse|run tools/bench/dense-98304-h100.json --max-memory 16GiB|< 60 s, 4 GiB (Llama 3 405B's layout on 98,304 H100, DP 768: 12,288 simulated ranks)"
  "train-llama3-16384-gpus-1-trial|train scenarios/llama3-405b-h100x16384-train.json --iteration-time 6.144s --trials 1|< 2 s (a 72-day run: 22,678 checkpoints, about 560 failures)"
  "train-llama3-16384-gpus-1000-trials|train scenarios/llama3-405b-h100x16384-train.json --iteration-time 6.144s --trials 1000|< 30 s"
  "train-resnet50-spot-policies|compare scenarios/resnet50-p3.2xlarge-spot.json --trials 100 --policies 'wait: spot.interruptions_per_month=20; shrink: spot.interruptions_per_month=20, elastic.policy=shrink'|< 30 s (two policies, 100 trials each, 5 shapes simulated)"
  "train-gpt2-xl-redundancy|train scenarios/gpt2-xl-p3.2xlarge-spot-redundancy.json --trials 100|< 10 s (100 trials of about 56 preemptions; 3 shapes of the 8-stage pipeline simulated)"
  "sweep-resnet50-to-512-nodes|sweep scenarios/resnet50-p3.2xlarge-sync.json --nodes 1..512|< 10 s (10 points, the default fidelity: auto)"
  "mixed-v100-a100-proportional|run scenarios/resnet50-v100-a100-mixed.json --set cluster.batch_split=proportional|< 5 s (64 GPUs of two kinds, the split planned 4 times)"
  "search-gpt2-2-nodes-screen|search scenarios/gpt2-p4d.24xlarge-x2.json --simulate 1 --jobs 1|612 candidates: 576 priced in closed form, the best 64 and 36 data-parallel ones built and estimated, 1 simulated"
  "plan-llama3-8b-2-instances|plan scenarios/llama3-8b-pretraining-plan.json --tokens 100B --deadline 5d --instances aws.p5.48xlarge,gcp.a3-highgpu-8g --nodes 4,8 --jobs 2|4 clusters, 5,808 layouts screened, 4 clusters simulated (3 layouts each) and trialled"
  "search-gpt3-175b-1024-gpus|search scenarios/gpt3-175b-a100x1024.json|< 60 s (1,320 candidates priced in closed form, the best 64 built, the best 20 simulated)"
  "moe-128-experts-128-gpus|run tools/bench/moe-128-experts.json|< 5 s (auto: coarse; each all-to-all-v timed from its link loads)"
  "moe-256-experts-1024-gpus|run tools/bench/moe-256-experts.json|< 30 s (four expert groups of 256 on 1,024 A100)"
  "chakra-resnet50-64-ranks|run tools/bench/resnet50-64-chakra.json|< 2 s (a 64-rank data-parallel Chakra trace of ResNet-50 read and replayed, auto fidelity)"
  "pytorch-trace-resnet50-2-gpus|run scenarios/resnet50-ddp-a100x2-pytorch-trace.json|< 2 s (a torch.profiler trace of a DDP step, 9.8 MB of JSON: 1,251 kernels and copies replayed with its 7 collectives)"
  "pytorch-trace-8-ranks|run scenarios/ddp-a100x8-pytorch-trace.json|< 3 s (35 MB of trace JSON read)"
  "pytorch-trace-resnet50-512-gpus|run scenarios/resnet50-ddp-a100x2-pytorch-trace.json --set cluster.nodes=64 --set cluster.gpus_per_node=8|< 60 s (every rank replays the step's 1,251 kernels and copies, each an op, and the gaps between them)"
  "alltoall-256mib-4096-aggregate|collective tools/bench/h100-nodes.json --op all-to-all --ranks 4096 --sizes 256MiB --fidelity aggregate --jobs 1|< 30 s, 4 GiB"
)

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# The Chakra benchmark replays a trace dtsim exports first: ResNet-50 on 64 one-V100 nodes, 22,656 nodes in 64 files.
if [[ -z "$filter" || "chakra-resnet50-64-ranks" == *"$filter"* ]]; then
  "$dtsim" export scenarios/resnet50-p3.2xlarge-sync.json --set cluster.nodes=64 --chakra build/bench/chakra \
    --name resnet50 > /dev/null
fi

printf '%-34s %10s %15s   %s\n' "benchmark" "wall (s)" "peak RSS (MiB)" "target"
for b in "${benchmarks[@]}"; do
  IFS='|' read -r name args target <<< "$b"
  [[ -z "$filter" || "$name" == *"$filter"* ]] || continue
  walls=(); rss=()
  for _ in $(seq "$repeat"); do
    # The arguments as a shell reads them: a --policies list is one quoted word.
    out=$( { eval "/usr/bin/time -f '%e %M' \"\$dtsim\" $args" > /dev/null; } 2>&1 | tail -n 1 )
    walls+=("${out% *}"); rss+=("${out#* }")
  done
  w=$(printf '%s\n' "${walls[@]}" | median)
  m=$(printf '%s\n' "${rss[@]}" | median)
  printf '%-34s %10.2f %15.1f   %s\n' "$name" "$w" "$(echo "$m / 1024" | bc -l)" "$target"
done

# The search's closed-form screen alone (plan/layout_price.hpp): every candidate of a scenario's search space priced on
# one core, the reference scenario built and each shape priced once included; its own median of REPEAT runs.
screens=(scenarios/gpt3-175b-a100x1024.json scenarios/llama3-8b-pretraining-plan.json scenarios/gpt2-p4d.24xlarge-x2.json)
if [[ -z "$filter" || "closed-form-screen" == *"$filter"* ]]; then
  tools/build.sh --target dtsim_bench_screen > /dev/null
  echo "closed-form-screen (target: 10,000 candidates/s on one core)"
  for s in "${screens[@]}"; do
    build/dtsim_bench_screen "$s" "$repeat"
  done
fi
