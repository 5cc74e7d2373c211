#!/usr/bin/env bash
# Every kind of HTML report (run, sweep, compare, compare --policies, train, search, plan, collective) written by the built
# dtsim and opened in headless Chromium (render.mjs): no console error, every expected figure drawn with the number of
# marks worked out below and its axes titled with their units, nothing fetched. Screenshots are left in OUT_DIR
# (NAME.png) to look at. Skips (77) without Chromium or the plotting runtime (tools/setup.sh --tests installs both).
#   reports.sh BUILD_DIR NODE_MODULES OUT_DIR
set -euo pipefail
build=$1 modules=$2 out=$3
dtsim=$build/dtsim
root=$(cd "$(dirname "$0")/../.." && pwd)
chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium" ] || [ ! -d "$modules/playwright-core" ] || ! command -v node > /dev/null; then
  echo "skipped: needs Debian's chromium, Node.js and BUILD/report/node_modules (tools/setup.sh --tests, then the build)"
  exit 77
fi
rm -rf "$out" && mkdir -p "$out"
cd "$out"

# A small training run with failures for train and compare --policies (as tests/cli/train_test.cpp's).
python3 - <<'PY'
import json
json.dump({"version": 1, "name": "train-small", "model": {"preset": "mlp-small", "batch_per_gpu": 64},
           "cluster": {"nodes": 4, "gpus_per_node": 1, "gpu": "v100", "nic": {"bandwidth": "10Gbps"},
                       "price_per_hour": 3},
           "training": {"steps": 200000}, "storage": {"write_bandwidth": "1GB/s", "latency": "1s"},
           "checkpoint": {"interval": "young"}, "failures": {"sources": [{"component": "node", "mtbf": "2h"}]},
           "restart": {"reschedule": "2min"}, "run": {"iterations": 2}}, open("train.json", "w"), indent=2)
PY

q=$root/scenarios/quickstart.json
"$dtsim" run "$q" --html run.html --json run.json > run.txt
# Two pipeline stages, each holding weights, gradients, optimizer states, activations and activation gradients: the
# memory figure's 2 x 5 bars and the capacity rule = 11 marks.
"$dtsim" run "$root/scenarios/gpt2-v100-a100-hetpipe.json" --html pipeline.html > /dev/null
"$dtsim" sweep "$q" --nodes 1,2,4 --html sweep.html --csv sweep.csv --json sweep.json > sweep.txt
"$dtsim" compare "$q" --strategies allreduce,ps-sync,dpsgd --price-per-hour 3 --html compare.html > /dev/null
"$dtsim" compare train.json --policies 'sync: ; every 2h: checkpoint.interval=2h' --trials 4 --html policies.html \
  > /dev/null
"$dtsim" train train.json --trials 6 --html train.html > /dev/null
# search-small simulates 4 layouts at 2 spots (recomputation none and selective alike): the front figure's marks are
# 4 points, the front's line and its one point, and 2 labels (one per spot) = 8.
"$dtsim" search "$root/tests/data/search-small.json" --jobs 2 --html search.html > /dev/null
# The plan of tests/studies/planning_test.cpp: two instances at one and two nodes, a2-highgpu-8g on spot too.
python3 - <<'PY'
import json
layers = [{"name": f"fc{i}", "kind": "matmul", "forward_flops": 2e10, "parameters": 10000000,
           "input_elements": 4096, "output_elements": 4096} for i in range(8)]
json.dump({"version": 1, "name": "plan-small", "model": {"layers": layers, "batch_per_gpu": 8},
           "cluster": {"instance": "aws.p4d.24xlarge", "nodes": 1},
           "training": {"optimizer": "momentum", "steps": 20000},
           "spot": {"interruptions_per_month": 0, "notice": "30s", "replacement": "10min"},
           "run": {"iterations": 2, "warmup_iterations": 1}}, open("plan.json", "w"), indent=2)
PY
"$dtsim" plan plan.json --instances aws.p4d.24xlarge,gcp.a2-highgpu-8g --nodes 1,2 --trials 2 --deadline 0.8h \
  --jobs 2 --html plan.html > /dev/null
# Two p4d nodes, 1 to 8 MiB: the busbw figure's 4 points and their line, and the nodes' NIC peak (4 x 100 Gbit/s
# EFA = 50 GB/s) as a rule and its label = 7 marks.
"$dtsim" collective --instance aws.p4d.24xlarge --nodes 2 --algo ring --proto Simple -b 1M -e 8M \
  --html collective.html > /dev/null

# Expected figures: {name: [axis titles, marks]}, marks counted from the inputs above (-1: at least one). Run: one
# group of GPUs, compute + exposed data-parallel communication + idle = 3 bars; 6 memory items + the capacity rule;
# the busiest 3 links of each kind it loads (NICs, PCIe) = 6. The pipeline: all GPUs (compute, exposed data and
# pipeline communication, idle) and 2 GPU groups of 3 = 10 bars; 2 stages + the rule; 3 kinds (NIC, NVLink, PCIe) x 3
# links = 9. Sweep: 2 series x (a line + 3 points); efficiency a line + 3 points. Compare: 3
# strategies x 3 parts. Search: 4 layouts fit and are simulated (search_test.cpp counts them by hand): 4 points, the
# front's line and 4 labels; the estimate 4 points and the diagonal. Plan: 6 plans (p4d on demand, a2-highgpu-8g on
# demand and on spot, at 1 and 2 nodes) as 6 points with 6 + 6 bars to their p90, the front's line, the chosen plan's
# ring and the deadline's rule. Collective: 1M, 2M, 4M, 8M: a line + 4 points.
cat > expectations.json <<JSON
[
  {"file": "$out/run.html", "title": "dtsim run: quickstart", "figures": {
    "breakdown": [["GPUs", "time per iteration (ms)"], 3],
    "memory": [["memory (GiB)"], 7],
    "links": [["link", "utilization (%)"], 6],
    "timeline": [["rank and stream", "time from the iteration's start (ms)"], -1]}},
  {"file": "$out/pipeline.html", "title": "dtsim run: gpt2-v100-a100-hetpipe", "figures": {
    "breakdown": [["time per iteration (ms)"], 10],
    "memory": [["pipeline stage", "memory (GiB)"], 11],
    "links": [["link", "utilization (%)"], 9],
    "timeline": [["time from the iteration's start (ms)"], -1]}},
  {"file": "$out/sweep.html", "title": "dtsim sweep: quickstart", "figures": {
    "throughput": [["nodes", "throughput (samples/s)"], 8],
    "speedup": [["nodes", "speedup (x)"], 8],
    "efficiency": [["nodes", "efficiency (%)"], 4]}},
  {"file": "$out/compare.html", "title": "dtsim compare: quickstart", "figures": {
    "breakdown": [["strategy", "time per iteration (ms)"], 9],
    "throughput": [["throughput (samples/s)"], 3],
    "traffic": [["bytes sent per GPU per iteration (MiB)"], 3],
    "epoch": [["time per epoch (s)"], 3],
    "cost-epoch": [["cost per epoch (USD)"], 3]}},
  {"file": "$out/policies.html", "title": "dtsim compare-policies: train-small", "figures": {
    "time-to-train": [["time to train (min)"], 2],
    "goodput": [["goodput (%)"], 2],
    "cost": [["cost (USD)"], 2]}},
  {"file": "$out/train.html", "title": "dtsim train: train-small", "figures": {
    "time-to-train": [["time to train (min)", "trials"], -1],
    "wall-time": [["time (min)"], 4],
    "cost": [["cost (USD)", "trials"], -1]}},
  {"file": "$out/search.html", "title": "dtsim search: search-small", "figures": {
    "front": [["cost (USD per million samples)", "throughput (samples/s)"], 8],
    "estimate": [["estimated iteration (ms)", "simulated iteration (ms)"], 5]}},
  {"file": "$out/plan.html", "title": "dtsim plan: plan-small", "figures": {
    "front": [["time to train (min, mean; bar to p90)", "cost (USD, mean; bar to p90)"], 21]}},
  {"file": "$out/collective.html", "title": "dtsim collective", "figures": {
    "busbw": [["message size (bytes)", "bus bandwidth (GB/s)"], 7],
    "time": [["message size (bytes)", "time (us)"], 5]}}
]
JSON
node "$root/tests/report/render.mjs" "$modules" "$chromium" expectations.json
# The figures the pages show equal those of the text, the CSV and the JSON, in the same units.
python3 "$root/tests/report/agree.py" "$out"
