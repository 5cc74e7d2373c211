#pragma once
// Plan-private: the planner of large-model parallelism (tensor x pipeline x data ranks, experts over expert groups,
// ZeRO over the data-parallel ranks), as Megatron-LM runs it (Shoeybi et al. 2019; Narayanan et al. 2021;
// Korthikanti et al. 2022). Each rank's program is its stage's pipeline order (pipeline_schedule.hpp): every
// forward waits for the previous stage's activations, every backward for the next stage's gradients (p2p stream);
// each op runs its tensor-parallel share (tensor_split.hpp) with the tensor-parallel collectives blocking the compute
// stream as Megatron's synchronous all-reduces do; MoE layers dispatch and combine their tokens by all-to-all over
// the expert group (moe_routing.hpp); after the last micro-batch's backward of a chunk its gradients are reduced over
// the data-parallel group in buckets (comm stream) while the remaining backwards run; the optimizer steps its
// (ZeRO: sharded) parameters once all are reduced. Under Bamboo's redundant computation (Thorpe et al., NSDI 2023)
// each stage also holds its successor's layers (the last stage the first's: a ring), runs their forward on each
// micro-batch it has just sent on (filling the pipeline's bubbles where it has them, delaying it where not), and keeps
// that copy current with the successor's reduced gradients and an optimizer step of its own.
#include "sim/plan/kernel_table.hpp"
#include "sim/plan/moe_routing.hpp"
#include "sim/plan/op_cost.hpp"
#include "sim/plan/parallel_layout.hpp"
#include "sim/plan/pipeline_schedule.hpp"
#include "sim/plan/plan.hpp"
#include "sim/plan/tensor_split.hpp"

#include <fmt/format.h>

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

namespace dtsim::plan::detail {

// A tensor-parallel collective inside a node in closed form, as coarse fidelity prices it: the algorithm NCCL would run
// on the node's fabric over `tensor` GPUs, and the share of the GPU's SMs its channels hold.
struct TensorClosedForm {
  double seconds = 0;
  double sm_share = 0;
};
TensorClosedForm tensor_collective_closed_form(collectives::Operation op, double bytes, int tensor,
                                               const topologies::ClusterSpec& fabric,
                                               const calibration::GpuProfile& gpu);

// What one pipeline unit holds on a rank, for the memory of the stage it lands in.
struct UnitFootprint {
  double dense = 0, experts = 0; // parameters of this rank's share
  int tensors = 0;               // parameter tensors
  double saved = 0;              // activations one micro-batch keeps for backward
  double block_input = 0;        // its block's input for one micro-batch (all full recomputation keeps)
  double gradient = 0;           // the largest op's input and output gradients for one micro-batch
};
UnitFootprint unit_footprint(const std::vector<models::Layer>& shared, const std::vector<std::size_t>& unit,
                             std::int64_t batch, calibration::Precision precision, scenario::AttentionKernel attention,
                             scenario::Recompute recompute);

// What a stage's memory depends on besides its units.
struct StageMemoryShape {
  ModelStateBytes states;     // gradients: as reduced (Megatron-LM's fp32 buffer under bf16)
  double data_replicas = 1;   // ranks that shard ZeRO's dense states
  double expert_replicas = 1; // ... and the experts'
  int zero_stage = 0;
  scenario::Recompute recompute = scenario::Recompute::none;
  scenario::PipelineSchedule schedule = scenario::PipelineSchedule::one_f_one_b;
  int pipeline = 1, micro_batches = 1, virtual_stages = 1, tensor = 1, expert = 1;
  std::int64_t batch = 1;
  double capacity = 0;
};
// The shape of `spec`'s layout (its tensor, pipeline, expert sizes, schedule and micro-batches) for `s`'s model and
// optimizer, with the training settings and replicas given (the planner's, or a layout the search prices).
StageMemoryShape stage_memory_shape(const scenario::Scenario& s, const scenario::ParallelismSpec& spec, int zero_stage,
                                    scenario::Recompute recompute, std::int64_t batch, double data_replicas,
                                    double expert_replicas);

// Gradient bytes per parameter as they are reduced over the data-parallel ranks: the framework version's rule
// (calibration::Framework::reduced_gradient_bytes), unless the layout reduces in bf16 (--grad-reduce-in-bf16).
double reduced_gradient_bytes(const scenario::Scenario& s, const scenario::ParallelismSpec& spec);

// Coarse fidelity: the tensor-parallel ranks one simulated rank stands for that share its NIC (their traffic goes
// through it too); 1 on a rail network, where each GPU has its own NIC.
double coarse_nic_share(int tensor, const topologies::ClusterSpec& cluster);

// One stage's memory (model_parallel_memory.cpp says what each item counts), its activations' peak read off `order`
// (the stage's pipeline_order); `with_details` writes each item's description (the search's screen needs the bytes
// alone).
MemoryEstimate stage_memory_of(int stage, const std::vector<std::vector<std::size_t>>& chunk_units,
                               const std::vector<UnitFootprint>& units, const StageMemoryShape& shape,
                               const std::vector<PipelineSlot>& order, bool with_details);

class ModelParallelPlanner {
public:
  explicit ModelParallelPlanner(const scenario::Scenario& s);
  // `first_replica_only`: programs for the first data-parallel replica's ranks only (make_first_replica_plan).
  Plan build(bool first_replica_only = false);

  // The stages' units (chunk -> unit indices) and each stage's memory, without building programs: for
  // estimate_memory and `explain`.
  std::vector<MemoryEstimate> stage_memory() const;
  const std::vector<std::vector<std::size_t>>& chunk_units() const { return chunk_units_; }

private:
  struct RankGroups {
    int tensor = -1, data = -1, expert = -1, expert_data = -1; // graph group indices; -1: no such group (size 1)
    int context = -1;                                          // the ranks one sequence is split over
    int embedding = -1; // the first and last stage (tied embeddings), as Megatron-LM's embedding group
    int model = -1;     // the ranks that hold one model copy (tensor x pipeline): the gradient norm's group
  };

  void add_groups(graph::ExecutionGraph& g);
  ParallelInfo parallel_info(const std::vector<MemoryEstimate>& stages) const;
  void build_program(int rank, graph::Program& program);
  std::uint32_t send_recv(int peer, int boundary, bool send, std::string name, std::vector<std::uint32_t> deps,
                          graph::Stream stream = graph::Stream::p2p);
  std::uint32_t point_to_point(int peer, double bytes, bool send, std::string name, std::vector<std::uint32_t> deps,
                               graph::Stream stream = graph::Stream::p2p);
  std::uint32_t run_forward(int chunk, std::vector<std::uint32_t> deps);
  std::uint32_t run_backward(int chunk, std::vector<std::uint32_t> deps, bool reduce);
  void run_layer(std::size_t layer, bool forward, std::vector<std::uint32_t>& deps);
  models::Layer local_layer(std::size_t i) const; // this rank's share, experts' FLOPs set by routing
  std::uint32_t add_op(graph::Op op);
  void add_compute(std::string name, const calibration::Stretch& work, double flops, double bytes,
                   std::vector<std::uint32_t>& deps);
  std::uint32_t flush(); // coarse: the pending compute as ops; returns the last compute-stream op
  std::uint32_t add_collective(collectives::Operation op, double bytes, int group, std::string name,
                               std::vector<std::uint32_t> deps, graph::Stream stream, graph::Axis axis,
                               std::shared_ptr<const std::vector<double>> matrix = nullptr);
  void tensor_collective(const TensorCollective& c, const std::string& name, std::vector<std::uint32_t>& deps);
  TensorClosedForm tensor_closed_form(collectives::Operation op, double bytes);
  double tensor_bytes(const TensorCollective& c) const;
  void expert_all_to_all(std::size_t layer, bool forward, bool dispatch, std::vector<std::uint32_t>& deps);
  void reduce_gradients(std::uint32_t after);
  std::vector<std::uint32_t>
  finalize_gradients();           // deferred reductions, tied embeddings, gradient norm: the optimizer's deps
  void gather_parameters_ahead(); // --overlap-param-gather: each unit's updated weights before its forward
  // Gradient bytes per parameter as they are reduced (and kept) over the data-parallel ranks.
  double reduced_gradient_bytes() const;
  struct Exchange {
    collectives::Operation op;
    double bytes = 0; // each call's
    int calls = 1;
  };
  void overlapped_layer(const PricedOp& op, const std::vector<Exchange>& parts, bool context, const std::string& name,
                        std::vector<std::uint32_t>& deps);
  void context_attention(std::size_t layer, bool forward, const std::string& name, std::vector<std::uint32_t>& deps);
  void add_step();
  // Bamboo: each stage's replica of its successor.
  bool redundant() const;
  void redundant_forward(int chunk, std::uint32_t after);
  struct StageParameters {
    double dense = 0, experts = 0; // this rank's share
    int tensors = 0;
    double stepped = 0; // parameters its optimizer steps (ZeRO: its shard)
  };
  StageParameters stage_parameters(int stage) const;
  std::uint32_t gather_unit(std::size_t unit);
  bool sharded_weights() const;
  // What an op of the pass costs this rank (its expert position's share for expert layers), priced once.
  const PricedOp& pass_cost(std::size_t layer, bool forward);
  int overlap_chunks(std::size_t layer, bool forward) const; // GEMM chunks beside a tensor-parallel exchange
  // An op's name in the trace; coarse fidelity fuses ops and drops their names, so none is built.
  template <class... Args> std::string label(fmt::format_string<Args...> format, Args&&... args) const {
    return coarse() ? std::string() : fmt::format(format, std::forward<Args>(args)...);
  }
  double nic_share() const;
  bool crosses_nodes(int group) const;
  bool coarse() const { return s_.run.fidelity == scenario::Fidelity::coarse; }
  bool simulated(int rank) const;

  // The GPU a pipeline stage runs on: the scenario's, or on a cluster of mixed GPUs the group its ranks are in.
  const calibration::GpuProfile& stage_gpu(int stage) const;
  void assign_stage_groups();
  const calibration::GpuProfile& chunk_gpu(int chunk) const { return stage_gpu(chunk % spec_.pipeline); }

  const scenario::Scenario& s_;
  const scenario::ParallelismSpec& spec_;
  ParallelLayout layout_;
  CostContext context_;
  std::vector<models::Layer> shared_;           // each layer's tensor-parallel share (expert FLOPs unscaled)
  std::vector<std::vector<std::size_t>> units_; // pipeline units: layer indices
  struct UnitParameters {
    double dense = 0, experts = 0; // this rank's share of the unit's weights
    double total() const { return dense + experts; }
  };
  std::vector<UnitParameters> unit_params_; // per unit
  // [expert position][layer][forward, backward], filled on first use.
  std::vector<std::vector<std::array<std::optional<PricedOp>, 2>>> costs_;
  std::vector<std::vector<std::size_t>> chunk_units_; // virtual stage -> its units
  std::vector<int> chunk_of_layer_;                   // layer -> its virtual stage
  std::vector<int> stage_group_;                      // pipeline stage -> its GPU group (mixed GPUs), else empty
  std::map<std::size_t, ExpertRouting> routing_;      // expert layer -> where its tokens go
  // (expert layer, outward, NIC share) -> the all-to-all's bytes matrix, shared by every rank's op.
  std::map<std::tuple<std::size_t, bool, double>, std::shared_ptr<const std::vector<double>>> expert_matrices_;
  double tokens_per_rank_ = 0; // tokens of a micro-batch on one rank
  std::vector<RankGroups> rank_groups_;
  std::map<std::pair<int, double>, TensorClosedForm> closed_forms_; // coarse: (operation, bytes) -> its time

  // The program being built.
  int rank_ = 0;
  GridCoord coord_;
  graph::Program* program_ = nullptr;
  graph::ExecutionGraph* graph_ = nullptr;
  std::vector<std::uint32_t> reductions_;
  std::vector<std::pair<double, double>> deferred_;           // buckets (dense, expert bytes) reduced after backward
  std::map<std::size_t, std::vector<std::uint32_t>> gathers_; // unit -> its weights' all-gathers, until its forward
  int buckets_ = 0;                                           // gradient reductions of rank 0 per iteration
  std::map<int, int> syncs_; // rank 0's waits on a group inside an iteration, by the group's size (kernel_noise.hpp)
  std::vector<KernelRow> pass_kernels_; // rank 0's kernels of the micro-batches' passes (before the optimizer's)
  void synchronizes(int group_size) {
    if (rank_ == 0) ++syncs_[group_size];
  }
  double bucket_dense_ = 0, bucket_expert_ = 0; // gradient bytes waiting for the next bucket
  // Coarse fidelity: consecutive compute (and closed-form tensor-parallel) work waiting to become one op each.
  struct Pending {
    calibration::Stretch work;
    double flops = 0, bytes = 0, tensor_seconds = 0;
    std::vector<std::uint32_t> deps;
    bool empty() const { return work.seconds == 0 && tensor_seconds == 0 && flops == 0 && deps.empty(); }
  } pending_;
  std::optional<std::uint32_t> last_compute_;
  std::vector<std::uint32_t> unit_compute_; // ZeRO-3: per unit of the pass, its last compute op
  bool redundant_pass_ = false;             // the ops being added are a successor's redundant forward
  calibration::LaunchTimeline timeline_;    // the rank's host issuing its kernels, from the iteration's start
  KernelTable kernels_;                     // rank 0's kernels
  // Runs an op's kernels on the rank's timeline (rank 0's into the kernel table) as one compute op.
  void run_priced(const PricedOp& op, const std::string& name, std::vector<std::uint32_t>& deps);
};

// Throws PlanError when a stage does not fit: the stage, its largest items, and the changes that would fit.
Plan make_model_parallel_plan(const scenario::Scenario& s, bool first_replica_only = false);
void check_model_parallel_fits(const scenario::Scenario& s, const std::vector<MemoryEstimate>& stages);

} // namespace dtsim::plan::detail
