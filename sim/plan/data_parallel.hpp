#pragma once
// Plan-private: the data-parallel planner. Every worker runs forward and backward on its own micro-batches; what
// happens to the gradients is the strategy's business. data_parallel.cpp builds the compute, PyTorch DDP's buckets
// and ZeRO; strategy_ops.cpp the parameter servers, the model-averaging schemes and gradient compression.
#include "models/layer.hpp"
#include "sim/plan/kernel_table.hpp"
#include "sim/plan/op_cost.hpp"
#include "sim/plan/plan.hpp"
#include "sim/plan/strategy_layout.hpp"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dtsim::plan::detail {

// ZeRO-3's sharding units (FSDP's wrapped modules): layers [first, last] in forward order, whose weights are
// all-gathered together before their forward and again before their backward, and whose gradients are
// reduce-scattered together once their backward is over.
struct ShardUnit {
  std::size_t first = 0;
  std::size_t last = 0;
  std::int64_t parameters = 0;
  std::string name; // "block 3", or the layer (or the first..last layers) outside the blocks
};
// A model with blocks (models::Layer::block >= 0): one unit per block, and one per run of consecutive ops outside
// the blocks (the embeddings before the first block; the final norm and the head after the last). A model without
// blocks (CNNs, MLPs): one unit per layer with parameters. Units without parameters are left out. data_parallel.cpp
// plans them and memory.cpp counts their gathered weights, from this one definition.
std::vector<ShardUnit> shard_units(const models::Workload& workload);

// Data parallelism over a cluster of mixed GPUs (groups.cpp): each group's program planned on its own GPU and
// micro-batch, the collectives the same for all.
Plan make_grouped_plan(const scenario::Scenario& s);

// model.trace (trace_plan.cpp): the graph read from the job's own trace, one rank per GPU.
Plan make_trace_plan(const scenario::Scenario& s);
// model.trace of a PyTorch profiler trace (profiler_plan.cpp): one GPU's measured step on every GPU, DDP's all-reduces
// added.
Plan make_profiler_plan(const scenario::Scenario& s);

// The algorithm `c` runs over `members` (`automatic` chosen as NCCL would, graph::resolved_request), checked by
// building its schedule: one the cluster cannot run is a PlanError.
collectives::Algorithm checked_algorithm(const graph::Collective& c, const std::vector<int>& members,
                                         const topologies::ClusterSpec& cluster);

class DataParallelPlanner {
public:
  explicit DataParallelPlanner(const scenario::Scenario& s);
  Plan build();

private:
  struct Bucket {
    double bytes = 0;
    double elements = 0;
    std::vector<std::size_t> layers;
    std::uint32_t ready_after = 0; // the backward op that produced its last gradient
  };
  enum class Pass : std::uint8_t { forward, backward };

  // One rank's program (programs are shared when every rank's would be the same).
  void build_program(int rank);
  void add_iteration_compute(std::vector<std::uint32_t>& reductions);
  std::uint32_t add_step(double parameters, std::vector<std::uint32_t> deps);

  // data_parallel.cpp: DDP and ZeRO.
  bool sharded_optimizer() const;
  bool sharded_weights() const;
  double weight_bytes() const;
  double grad_bytes() const;
  std::vector<std::uint32_t> gather_deps(std::size_t i, Pass pass);
  // A unit's gather for a pass (posted once); `after`: an op it must also wait for (the framework's backward prefetch).
  static constexpr std::uint32_t kNoOp = ~std::uint32_t{0};
  std::uint32_t gather(std::size_t unit, Pass pass, std::uint32_t after = kNoOp);
  int unit_of(std::size_t i) const;
  std::uint32_t add_collective(collectives::Operation op, double bytes, std::string name,
                               std::vector<std::uint32_t> deps, int group = 0);
  std::uint32_t add_compute(std::string name, const OpCost& cost, std::vector<std::uint32_t> deps);
  std::uint32_t add_op(graph::Op op);
  collectives::Algorithm resolve_algorithm(graph::Collective c, int group);
  int parameter_tensors() const;

  // strategy_ops.cpp: what a closed bucket of gradients becomes, and the model exchange after the step.
  std::uint32_t close_bucket(Bucket& bucket, std::size_t index);
  // Horovod's fusion: the bucket goes out at its cycle's tick, `wait` seconds after its last gradient (a wait on the
  // host stream, where Horovod's background thread runs), then as close_bucket sends it.
  std::uint32_t close_fusion(Bucket& bucket, double wait, std::size_t index);
  bool fuses_by_cycle() const;
  std::uint32_t compress(const Bucket& bucket, std::size_t index, std::vector<std::uint32_t> deps);
  // `recompressed`: the format goes out as a compressed all-reduce (strategies::WireFormat::recompressed).
  double wire_bytes(const Bucket& bucket, collectives::Operation& op, bool* recompressed = nullptr) const;
  std::uint32_t push_pull(double push_bytes, double pull_bytes, int key, std::string name,
                          std::vector<std::uint32_t> deps);
  std::uint32_t push_bucket(const Bucket& bucket, std::size_t index, std::vector<std::uint32_t> deps);
  std::uint32_t push_tensors(const Bucket& bucket, double push_bytes, double pull_bytes, int key, std::string name,
                             std::vector<std::uint32_t> deps);
  std::uint32_t push_partitions(double dense_bytes, double push_bytes, double pull_bytes, std::string name,
                                std::vector<std::uint32_t> deps);
  void add_model_exchange_before(); // posted with the iteration's first ops (D-PSGD, AD-PSGD, gossip)
  void add_model_exchange_after(std::uint32_t step);
  double model_bytes() const;
  double stored_weight_bytes() const;
  bool worker_steps() const; // false where the servers apply the optimizer
  int node_group(int rank) const;
  int worker_nodes() const; // nodes holding the workers (the last may be partly filled)

  const scenario::Scenario& s_;
  const strategies::StrategySpec& strategy_;
  CostContext context_;
  StrategyLayout layout_;
  int rank_ = 0;                                         // the rank whose program is being built
  graph::ExecutionGraph* graph_ = nullptr;               // the plan's graph
  graph::Program* program_ = nullptr;                    // the program being built (graph_ owns it)
  std::set<std::string> algorithms_;                     // every collective algorithm the plan uses
  std::vector<int> everyone_;                            // the data-parallel group: every worker
  std::vector<std::vector<int>> peers_;                  // gossip, AD-PSGD: per worker, per iteration
  std::vector<std::vector<int>> neighbours_;             // D-PSGD: per worker
  std::vector<ShardUnit> units_;                         // ZeRO-3: the sharding units, in forward order
  std::vector<int> unit_of_;                             // ZeRO-3: layer -> its unit (-1: none)
  std::map<std::size_t, std::uint32_t> forward_gathers_; // ZeRO-3: unit -> its weights' all-gather op
  std::map<std::size_t, std::uint32_t> backward_gathers_;
  std::vector<std::uint32_t> held_; // ZeRO-3: per unit whose weights were gathered, the compute op after which they
                                    // are freed (its last in the pass), oldest first
  std::uint32_t last_backward_ = 0; // the iteration's last backward op
  std::optional<std::uint32_t> exchange_; // D-PSGD: the neighbour exchange the step waits for
  int next_partition_ = 0;                // BytePS: the key of the program's next partition
  int buckets_ = 0;             // gradient reductions (all-reduce, ZeRO's reduce-scatter or pushes) per iteration
  double compressed_bytes_ = 0; // per iteration, what the gradients were sent as
  double dense_bytes_ = 0;      // ... and what they would have been
  calibration::LaunchTimeline timeline_; // the program's host issuing its kernels, from the iteration's start
  KernelTable kernels_;                  // rank 0's kernels
};

} // namespace dtsim::plan::detail
