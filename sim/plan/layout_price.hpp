#pragma once
// The search's first screen: one model-parallel layout of a scenario's job priced in closed form, its iteration and
// its memory per GPU, without building its plan. What each op costs comes from the planner's own functions (each
// layer's kernels on the GPU, each tensor-parallel collective in the closed form coarse fidelity runs, each unit's
// memory), computed once per shape (tensor, sequence parallelism, micro-batch, recomputation) and shared by every
// layout of that shape; a layout adds them up by stage and combines them by the pipeline's formula:
//   each virtual stage (model chunk) takes a forward and a backward per micro-batch, tensor-parallel collectives
//   included, and a transfer to pass a micro-batch's activations (or gradients) to the next;
//   the stages' pipeline orders are timed by max-plus over those (time_schedule): the schedule's own warm-up, steady
//   state and cool-down, for any count of micro-batches;
//   each stage's gradients are reduced in buckets, as each chunk's last backward closes them when they overlap it and
//   after it otherwise, over the data-parallel ranks at the graph estimate's price of a collective
//   (graph/estimate.hpp); the tied embedding's gradients, the gradient norm, the optimizer step and the distributed
//   optimizer's weight all-gather follow.
// Each stage's kernels run at the clock its GPU sustains over the iteration (calibration/sustained_clock.hpp), at the
// pace of the stage's slowest GPU (gpu_speed.hpp).
// Left out against the graph estimate: the host's lead carried across units (each unit's pass is priced with the host
// in steady state), the second iteration's start staggered by the first's end, and contention. It covers dense models
// on one kind of GPU trained with the all-reduce strategy and no context parallelism; `unsupported()` names what else a
// scenario asks for, and the search then builds every candidate's plan.
#include "sim/plan/pipeline_schedule.hpp"
#include "sim/scenario/scenario.hpp"

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace dtsim::plan {

class ParallelLayout;

// What the search varies in a layout (search::Candidate, without experts).
struct LayoutSpec {
  int nodes = 1;
  int tensor = 1, pipeline = 1, data = 1;
  int micro_batch = 1;   // samples per GPU per micro-batch
  int micro_batches = 1; // per pipeline per iteration
  scenario::PipelineSchedule schedule = scenario::PipelineSchedule::one_f_one_b;
  int virtual_stages = 1;
  int zero_stage = 0;
  scenario::Recompute recompute = scenario::Recompute::none;
  bool sequence_parallel = false;
};

struct LayoutPrice {
  double iteration_seconds = 0; // 0 where it does not fit
  double memory_bytes = 0;      // per GPU, the fullest stage's (plan::estimate_memory's figure)
  double capacity_bytes = 0;
  bool fits() const { return capacity_bytes <= 0 || memory_bytes <= capacity_bytes; }
};

struct ScheduleTimes {
  std::vector<double> stage_end;         // when each stage's last slot ends
  std::vector<double> last_backward_end; // per virtual stage, when its last backward ends
};

// The stages' pipeline orders (pipeline_schedule.hpp, one per stage) timed by max-plus from a common start, each
// virtual stage c taking forward[c] and backward[c] per micro-batch and transfers[c] to pass a micro-batch's
// activations (or their gradients) between c and c + 1. Each stage runs its slots in order; a forward of c > 0 waits
// for the micro-batch's forward on c - 1 and its transfer, a backward of c < last for the backward on c + 1 and its
// transfer. Without `overlapped` transfers a stage posts a receive only once its previous slot is done (Megatron-LM's
// send_forward_recv_backward waits for both), so the transfer starts no earlier than that. Uniform stages without
// transfers give 1F1B's (m + p - 1)(f + b) and the interleaved schedule's bubble of (p - 1) / v stage-times (Narayanan
// et al. 2021, section 2.2) where the micro-batches are many.
ScheduleTimes time_schedule(const std::vector<std::vector<PipelineSlot>>& orders, const std::vector<double>& forward,
                            const std::vector<double>& backward, const std::vector<double>& transfers,
                            int micro_batches, bool overlapped);

class LayoutPricer {
public:
  explicit LayoutPricer(const scenario::Scenario& base);
  ~LayoutPricer();
  LayoutPricer(const LayoutPricer&) = delete;
  LayoutPricer& operator=(const LayoutPricer&) = delete;

  // Empty where the closed form covers the base scenario; otherwise what it does not cover.
  const std::string& unsupported() const { return unsupported_; }

  // A layout with tensor or pipeline parallelism on `cluster` (the base's at `layout.nodes` nodes). Throws
  // std::invalid_argument for one it does not cover (no model parallelism; unsupported()).
  LayoutPrice price(const LayoutSpec& layout, const topologies::ClusterSpec& cluster);

private:
  struct Shape;
  Shape& shape_of(const LayoutSpec& layout, const topologies::ClusterSpec& cluster);
  const std::vector<double>& stage_paces(const ParallelLayout& grid); // each stage's slowest GPU (gpu_speed.hpp)

  const scenario::Scenario& base_;
  std::string unsupported_;
  std::map<std::tuple<int, bool, int, int>, std::unique_ptr<Shape>> shapes_; // (tensor, sp, micro-batch, recompute)
  // (schedule, stages, micro-batches, chunks) -> each stage's pipeline order
  std::map<std::tuple<int, int, int, int>, std::vector<std::vector<PipelineSlot>>> orders_;
  // (nodes, operation, bytes, NIC sharers, members' nodes from the first's) -> a data-parallel collective's seconds
  std::map<std::tuple<int, int, double, int, std::vector<int>>, double> collectives_;
  std::map<std::tuple<int, int, int>, std::vector<double>> stage_paces_; // (tensor, pipeline, data) -> per stage
};

} // namespace dtsim::plan
