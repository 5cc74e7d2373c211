#pragma once
// The plan: how a scenario's training job maps onto ranks, what each rank executes (the execution
// graph), and whether it fits in GPU memory.
#include "calibration/sustained_clock.hpp"
#include "io/error.hpp"
#include "sim/graph/execution_graph.hpp"
#include "sim/scenario/scenario.hpp"

#include <stdexcept>
#include <string>
#include <vector>

namespace dtsim::plan {

struct MemoryItem {
  std::string name; // "weights", "activations", ...
  double bytes = 0;
  std::string detail; // how it was counted: "fp32 master + 2 states, 4 + 8 B/parameter, ZeRO-1 shard of 8"
};

struct MemoryEstimate {
  std::vector<MemoryItem> items;      // on each GPU
  std::vector<MemoryItem> host_items; // moved to the host by offloading
  double capacity = 0;                // the GPU's memory, bytes
  double total() const;               // of `items`
  bool fits() const { return capacity <= 0 || total() <= capacity; }
};

// Large-model parallelism (model_parallel.hpp); tensor = 0 for data parallelism.
struct ParallelInfo {
  int tensor = 0, pipeline = 1, data = 1, expert = 1, micro_batches = 1, virtual_stages = 1;
  int context = 1;
  std::string schedule;
  bool sequence_parallel = false;
  std::vector<int> chunk_units;             // pipeline units (transformer blocks) per model chunk, in model order
  std::vector<MemoryEstimate> stage_memory; // per pipeline stage (device)
  double routed_tokens = 0;                 // MoE: token-expert assignments per iteration, over the cluster ...
  double dropped_tokens = 0;                // ... and those over their expert's capacity
  int peak_micro_batches = 0;               // micro-batches of activations the first stage holds at its peak
  bool enabled() const { return tensor > 0; }
};

// One distinct kernel of rank 0's iteration (`dtsim run --ops`): what a user holds against their profiler.
struct KernelRow {
  std::string name;        // "gemm dgrad", "layer_norm bwd", "optimizer step (adam, fused)"
  std::string kind;        // gemm, convolution, attention, memory
  std::string shape;       // a GEMM's "m x n x k" (times the batch count); a memory kernel's megabytes per launch
  std::string precision;   // what the math runs in
  int launches = 0;        // per iteration
  double seconds = 0;      // GPU time of all its launches per iteration, the GPU-side overhead included
  double host_wait = 0;    // seconds per iteration the GPU waited for the host to issue it
  double flops = 0;        // per launch
  double bytes = 0;        // per launch, read and written in device memory
  std::string bound;       // math, HBM, L2, launch (the GPU-side overhead, or a host that fell behind)
  double efficiency = 0;   // achieved over the bound's peak (FLOP/s over the precision's peak, or bytes/s over HBM's)
  double math_seconds = 0; // per iteration, the part of `seconds` the SM clock sets (math- and L2-bound work)
  double sm_clock_mhz = 0; // the clock it ran at (the rank's sustained clock; 0: the profile has no clock figures)
};

// Kernel GPU time by what bounds it: math; HBM or L2 (memory); launch (the GPU-side overhead, a host behind).
struct BoundSeconds {
  double math = 0, memory = 0, launch = 0;
};
BoundSeconds bound_seconds(const std::vector<KernelRow>& kernels);

// One group of a cluster of mixed GPUs, as planned: its micro-batch and its GPUs' time per iteration.
struct GroupPlan {
  std::string name, gpu;
  int first_rank = 0, ranks = 0;
  std::int64_t batch_per_gpu = 0;
  double kernel_seconds = 0; // GPU time of one rank's kernels per iteration (compute alone, from its own profile)
  BoundSeconds bounds;       // the same by bound (all 0 where the planner keeps no table per group)
};

struct Plan {
  graph::ExecutionGraph graph;
  MemoryEstimate memory;                         // per GPU
  double gradient_bytes = 0;                     // gradient bytes each rank reduces per iteration
  int buckets = 0;                               // gradient reductions (all-reduce or ZeRO's reduce-scatter)
  std::vector<std::string> allreduce_algorithms; // the algorithms its collectives run (auto resolved), sorted
  int workers = 0; // ranks that train (dedicated parameter servers take the rest); data-parallel replicas under
                   // tensor, pipeline or expert parallelism (each of workers x samples_per_worker_iteration)
  double samples_per_worker_iteration = 0; // micro-batch x accumulation steps
  double spectral_gap = -1;                // decentralized averaging: 1 - |lambda_2|; -1 otherwise
  double wire_bytes = 0;                   // per worker per iteration, the gradients as sent (compressed, sparse) ...
  double dense_bytes = 0;                  // ... and as they would have been, dense
  ParallelInfo parallel;
  std::vector<KernelRow> kernels; // rank 0's iteration by distinct kernel, the longest first
  calibration::ClockState clock;  // the SM clock rank 0's GPU sustains over its kernels (sustained_clock.hpp)
  // The slowest GPU's compute time over the median GPU's (gpu_speed.hpp): 1 where every GPU runs at the profile's
  // speed.
  double slowest_gpu = 1;
  // The expected wait for the slowest member's kernels at the groups' synchronizations inside an iteration, over the
  // compute (kernel_noise.hpp): 0 where no group synchronizes or kernels take their priced times exactly.
  double synchronization_wait = 0;
  // Per program: its priced kernels' stretch at burst clocks, and the clock that stretch set (rate 1: not capped).
  std::vector<calibration::Stretch> burst_stretches;
  std::vector<calibration::ClockState> program_clocks;
  double host_wait_seconds = 0; // per iteration, rank 0's compute stream waiting for its host to issue kernels
  // What a user should know of the plan's inputs before trusting it (a trace recorded on another GPU than the
  // cluster's); empty for most plans. Carried into RunResult::warnings.
  std::vector<std::string> warnings;
  std::vector<GroupPlan> groups; // a cluster of mixed GPUs: each group's program (empty otherwise)
};

// The plan cannot run: it does not fit, or the scenario asks for something the planner cannot build.
class PlanError : public InputError {
public:
  using InputError::InputError;
};

Plan make_plan(const scenario::Scenario& scenario);

// For the closed-form estimate (graph/estimate.hpp) of a model-parallel job without expert parallelism: programs for
// the first data-parallel replica only (the others, empty, are its mirror images: on one kind of GPU, with no
// contention, every replica posts each data-parallel collective at the same time). Groups keep every member. Other
// plans are make_plan's.
Plan make_first_replica_plan(const scenario::Scenario& scenario);

// Each program's priced kernels re-timed at the clock its GPU sustains over `stretches[p]` (one per program) instead
// of its own: the search prices a schedule from a plan of fewer micro-batches than the job has, at the clock the
// whole job's kernels hold (search.cpp, estimate_seconds).
void retime_sustained_clocks(Plan& plan, const scenario::Scenario& s,
                             const std::vector<calibration::Stretch>& stretches);

// Per-GPU memory of data-parallel training (weights, gradients, optimizer states, saved activations, temporary
// buffers, communication buckets), with ZeRO's sharding and offloading applied. Exposed for `explain` and tests.
MemoryEstimate estimate_memory(const scenario::Scenario& scenario);

// Bytes one op keeps for backward over `batch` samples (models::Layer::saved_elements at the precision's element
// size, its fixed bytes, and an unfused attention core's scores unless selective recomputation drops them).
double saved_activation_bytes(const models::Layer& layer, std::int64_t batch, calibration::Precision precision,
                              scenario::AttentionKernel attention, scenario::Recompute recompute);

// Throws PlanError when `memory` exceeds the GPU's capacity: the message names the largest items and the changes to
// the scenario that would make it fit, each tried on the memory model.
void check_fits(const scenario::Scenario& scenario, const MemoryEstimate& memory);

} // namespace dtsim::plan
