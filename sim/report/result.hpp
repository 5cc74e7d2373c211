#pragma once
// What a run reports: the figures a person reads (iteration time, throughput, where the time goes,
// traffic, link load, memory), derived from the replay. Plain values; rendered as text, JSON or CSV.
#include "sim/engine/engine.hpp"
#include "sim/plan/plan.hpp"
#include "sim/scenario/scenario.hpp"

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace dtsim::report {

struct Distribution {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, min = 0, max = 0;
  std::vector<double> samples;
};
Distribution distribution(std::vector<double> samples); // nearest-rank percentiles

// Seconds per iteration, averaged over ranks: compute-stream busy, communication not hidden behind
// compute, and neither (waiting on other ranks, or on the input pipeline). They add up to the iteration time.
struct Breakdown {
  double compute = 0;
  double exposed_communication = 0;
  double idle = 0;
  // exposed_communication by the parallel dimension it serves (data parallelism: all of it is `data`)
  double exposed_tensor = 0, exposed_pipeline = 0, exposed_expert = 0, exposed_data = 0;
};

struct LinkUsage {
  std::string name;
  std::string kind;       // link_kind(name): NVLink, PCIe, NIC, network switches, other
  double bandwidth = 0;   // bytes/s
  double bytes = 0;       // carried over the whole run, warm-up included
  double utilization = 0; // bytes / (bandwidth * simulated time)
};

// The kind of a link, from the names the platform gives its links (sim/engine/platform.cpp, topologies/): "NVLink"
// (gpuN-nvlink, gpuA-gpuB-nvlink, the NVSwitch), "PCIe" (gpuN-pcie, PCIe switches), "NIC" (nodeN-nic, a rail's NIC),
// "network switches" (uplinks, leaves, spines, cores, routers), else "other".
std::string link_kind(std::string_view link_name);

// The input pipeline (scenario "input"), when the scenario models one: each node's loading rate, what a GPU's batch
// costs the loader per iteration, and the GPU's own work per iteration, from the start of the iteration to its last
// compute or communication op (what the iteration would last if data were free).
struct InputStage {
  bool modeled = false;
  double samples_per_second = 0;         // the node's rate, shared by its GPUs
  double cpu_samples_per_second = 0;     // cores x samples per core per second
  double storage_samples_per_second = 0; // storage bandwidth / sample bytes; 0 = no storage bound
  double loader_seconds = 0;             // per iteration, per GPU
  double gpu_seconds = 0;                // per iteration (mean over measured iterations of the slowest rank)
  bool bounds_iteration() const { return modeled && loader_seconds > gpu_seconds; }
};

// What the synchronization strategy did (sim/strategies). Asynchronous throughput is not progress: a gradient
// computed on parameters `staleness` iterations old moves the model less usefully (docs/guide.md, "Staleness").
struct StrategyMetrics {
  std::string name = "allreduce"; // short name ("ssp:3", "preset:Petuum")
  int workers = 0;                // GPUs that train
  int servers = 0;                // parameter-server shards
  bool asynchronous = false;      // workers do not wait for each other every iteration
  // What the time per iteration measures: "iteration" (the slowest worker's, as synchronous training waits for it),
  // "worker" (each worker's own, asynchronous) or "round" (a server round closed by the first n - b, backup workers).
  std::string time_per = "iteration";
  double updates_per_second = 0;                  // gradients the servers applied per second (0 without servers)
  Distribution staleness;                         // iterations, per applied gradient (servers; empty otherwise)
  std::vector<std::uint64_t> staleness_histogram; // applied gradients with staleness 0, 1, 2, ...
  double mean_update_lag = 0;                     // updates applied between a gradient's read and its own update
  std::uint64_t dropped = 0;                      // late gradients dropped (backup workers)
  double barrier_wait = 0;              // seconds per iteration a worker waits on others (the breakdown's idle)
  double bytes_received_per_worker = 0; // per iteration
  double server_bytes_per_second = 0;   // busiest shard, received + sent
  double server_nic_utilization = 0;    // busiest shard's NIC: its busier direction's bytes / (bandwidth x time)
  double gossip_rounds_per_worker = 0;  // pushes sent and received per worker per iteration
  double spectral_gap = -1;             // 1 - |lambda_2| of the averaging; -1 where workers average exactly
  double compression_ratio = 1;         // dense gradient bytes over the bytes sent
};

// Model FLOPs as Megatron-LM counts them (its num_floating_point_operations; Narayanan et al. 2021, appendix): every
// GEMM of the model (attention's included, the causal mask not discounted, experts for the tokens routed to them)
// three times per sample, forward and the two backward GEMMs, recomputation not counted. TFLOP/s per GPU = model FLOPs
// per iteration / (iteration time x GPUs); MFU = that over the GPU's dense peak at the scenario's precision
// (Chowdhery et al. 2022).
struct Utilization {
  double tokens_per_second = 0; // 0 when a sample is not a sequence
  double model_flops_per_iteration = 0;
  double tflops_per_gpu = 0;
  double mfu = 0; // fraction of the dense peak
};

// Large-model parallelism (scenario "parallelism").
struct ParallelMetrics {
  bool enabled = false;
  int tensor = 1, pipeline = 1, data = 1, expert = 1, micro_batches = 1, virtual_stages = 1;
  int context = 1; // ranks each sequence is split over
  std::string schedule;
  bool sequence_parallel = false;
  std::vector<int> chunk_units;     // transformer blocks per model chunk
  double bubble_fraction = 0;       // pipeline: the idle share of the iteration (waiting on other stages)
  std::vector<double> stage_memory; // bytes per GPU, per pipeline stage
  std::vector<std::vector<plan::MemoryItem>> stage_items; // per pipeline stage: what its GPUs hold (sums stage_memory)
  int peak_micro_batches = 0; // micro-batches of activations the first stage holds at its peak
  double routed_tokens = 0;   // MoE: token-expert assignments per iteration ...
  double dropped_tokens = 0;  // ... over capacity, dropped
};

// What the run draws (sim/report/energy.hpp); `known` false where the GPU profile has no power figures.
struct IterationEnergy {
  bool known = false;
  double gpu_watts = 0;       // one GPU's mean draw over the iteration
  double math_share = 0;      // of the iteration, at the compute-bound draw
  double memory_share = 0;    // at the streaming draw (memory-bound kernels, exposed communication)
  double node_watts = 0;      // a node's GPUs, host and network, before the facility's overhead (mixed GPUs: the mean
                              // node's)
  double node_idle_watts = 0; // the same with its GPUs idle
  std::vector<double> group_gpu_watts; // a cluster of mixed GPUs: one GPU's mean draw in each group
  double host_watts = 0;               // the node's host and network alone (0: not known, not counted)
  double cluster_watts = 0;            // every node, at the meter (PUE)
  double kwh_per_iteration = 0;
  double kwh_per_epoch = 0; // 0 without a dataset size
  double kwh_of_run = 0;    // the epochs of the run, or the simulated iterations
  double co2_kg_of_run = 0; // 0 without a grid intensity
};

// A group of a cluster of mixed GPUs: where its ranks' time went, averaged over them. Who waits for whom: the
// fastest groups' idle time is the slowest group's extra compute.
struct GroupMetrics {
  std::string name, gpu;
  int ranks = 0;
  std::int64_t batch_per_gpu = 0;
  double kernel_seconds = 0; // planned GPU time of its kernels per iteration
  plan::BoundSeconds bounds; // the same by bound (all 0: not planned per group, no energy reported)
  Breakdown breakdown;       // simulated, per iteration
};

// Compression after dense warm-up steps (training.compression.warmup_steps): the dense stage's iteration, and the
// run's mean over its steps, the warm-up's at the dense stage's pace and the rest compressed. The run's length is
// training.steps, else its epochs of the dataset; unknown (run_steps 0), the stages are reported alone.
struct CompressionStages {
  std::int64_t warmup_steps = 0; // 0: compressed from the first step (nothing else here is set)
  std::int64_t run_steps = 0;
  double warmup_iteration = 0; // seconds, dense gradients
  double run_iteration = 0;    // seconds per step over the run; 0 when run_steps is
};

struct RunResult {
  std::string name;
  int nodes = 0;
  int gpus = 0;
  std::int64_t global_batch = 0;
  std::string sample_unit;
  std::string framework;             // the framework whose kernels ran (training.framework, "auto" resolved)
  std::string fidelity;              // how collectives were replayed: step, aggregate, coarse
  std::string fidelity_reason;       // run.fidelity "auto": what dtsim chose and why; empty when the scenario chose
  std::vector<std::string> warnings; // the plan's (Plan::warnings): printed first, and in JSON only when there are any
  Distribution iteration;            // seconds, measured iterations only (the compressed stage's under `stages`)
  double throughput = 0;             // samples/s
  CompressionStages stages;
  double epoch_seconds = 0; // 0 when the scenario gives no dataset size
  int epochs = 1;           // of the whole training run
  // Dollars (USD), when the cluster has a price (0 otherwise): the cluster per hour, one epoch, the whole run
  // (epochs x epoch; without a dataset size, the simulated iterations).
  double price_per_hour = 0;
  double cost_per_epoch = 0;
  double cost_of_run = 0;
  IterationEnergy energy;
  Breakdown breakdown;
  double communication_seconds = 0; // communication ops' time per iteration, hidden or not
  double bytes_sent_per_gpu = 0;    // per iteration
  double gradient_bytes = 0;
  int buckets = 0;
  std::vector<std::string> allreduce_algorithms;
  std::string nccl; // the NCCL release whose algorithms and pipelines ran (training.nccl), "2.30.7" by default
  std::vector<LinkUsage> busiest_links; // highest utilization first
  // The busiest few of each kind of link (NVLink, PCIe, NIC, network switches), by kind then utilization: a lightly
  // used class shows beside the saturated one instead of being cut from the overall top.
  std::vector<LinkUsage> busiest_links_by_kind;
  plan::MemoryEstimate memory;
  InputStage input;
  StrategyMetrics strategy;
  Utilization utilization;
  ParallelMetrics parallel;
  std::vector<GroupMetrics> groups; // a cluster of mixed GPUs (empty otherwise)
  // Rank 0's kernels of one iteration by distinct kernel, the longest first, and the time per iteration its compute
  // stream waited for the host to issue them (part of `breakdown.compute`).
  std::vector<plan::KernelRow> kernels;
  double host_wait_seconds = 0;
  calibration::ClockState clock; // the SM clock rank 0's GPU sustained over them (power-capped or not)
  // GPUs of one model at different speeds (stragglers.gpu_speed_sigma): sigma of ln(compute time), and the slowest
  // GPU's compute time over the median GPU's (1: every GPU at the profile's speed).
  double gpu_speed_sigma = 0;
  double slowest_gpu = 1;
  // Kernels whose times vary (stragglers.kernel_noise_sigma): sigma of one kernel's time over its mean, and the
  // expected wait at the groups' synchronizations over the compute (0: none priced).
  double kernel_noise_sigma = 0;
  double synchronization_wait = 0;
  double simulated_seconds = 0;
  std::uint64_t transfers = 0;
  // Iterations replayed, warm-up included (fewer than the run's when the rest repeat a steady state exactly: the last
  // `repeat_period` replayed ones again and again), and the run's in all.
  int replayed_iterations = 0;
  int repeat_period = 0;
  int total_iterations = 0;
  nlohmann::json scenario; // canonical scenario, so a result says what produced it
};

RunResult summarize(const scenario::Scenario& scenario, const plan::Plan& plan, const engine::ReplayResult& replay);
// Asynchronous workers' time per iteration (summarize's): each worker's iterations counted over one window in which
// every worker runs, from the latest end of warm-up (iteration `first` - 1 of each) to the earliest end of iteration
// `total` - 1, the iteration under way at each end by its share. A worker that got ahead (the first to reach the
// servers) is not timed alone over early iterations whose pace the others never shared. Without such a window (the
// last warm-up ends after the first worker is done) each worker is timed on its own clock, from its warm-up's end to
// its last iteration. `iteration_ends`: each worker's iteration end times, at least `total` of them.
std::vector<double> shared_window_periods(const std::vector<std::vector<double>>& iteration_ends, std::size_t first,
                                          std::size_t total);
// Makes `compressed` (the scenario's result) a two-stage run with `dense`, the same scenario without compression:
// its stages, and the epoch, the run's cost and its energy over both.
void add_warmup_stage(const scenario::Scenario& scenario, const RunResult& dense, RunResult& compressed);

nlohmann::json to_json(const RunResult& result);
RunResult run_result_from_json(const nlohmann::json& json); // the inverse, for results from child processes
std::string format_summary(const RunResult& result);        // the human-readable report of `dtsim run`
// The kernel table as CSV (`dtsim run --ops`): one row per distinct kernel of rank 0's iteration, header first.
std::string kernels_csv(const RunResult& result);

} // namespace dtsim::report
