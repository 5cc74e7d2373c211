// Synchronous data parallelism as PyTorch DDP runs it (Li et al., "PyTorch Distributed", VLDB 2020):
// every rank runs forward and backward on its own micro-batch; gradients are grouped into buckets in
// reverse layer order (the first bucket capped at 1 MiB, the rest at bucket_cap_mb = 25 MiB; a bucket
// closes once it reaches its cap), and each bucket's all-reduce starts on the communication stream as
// soon as backward has produced all of its gradients. The optimizer step waits for every bucket.
// Without overlap, one all-reduce of all gradients follows backward.
//
// ZeRO (Rajbhandari et al. 2020) as DeepSpeed and FSDP run it: stages 1 and 2 reduce-scatter the gradient buckets
// (each rank keeps the sum of its shard), step their shard of the parameters and all-gather the updated weights, the
// same bytes as an all-reduce; stage 3 also keeps only its shard of the weights, all-gathering each layer's before
// its forward and again before its backward (prefetched one layer ahead), 1.5x the traffic of plain data
// parallelism. With optimizer offload (ZeRO-Offload, Ren et al. 2021) the step runs on the host CPU: the gradient
// shard goes down and the updated weights come back over PCIe.
#include "sim/graph/collective_request.hpp"
#include "sim/plan/input_pipeline.hpp"
#include "sim/plan/op_cost.hpp"
#include "sim/plan/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace dtsim::plan {

using collectives::Operation;
using graph::Op;
using graph::Stream;

namespace {

class DataParallelPlanner {
public:
  explicit DataParallelPlanner(const scenario::Scenario& s) : s_(s), context_(CostContext::of(s)) {}

  Plan build() {
    Plan plan;
    plan.memory = estimate_memory(s_);
    check_fits(s_, plan.memory);
    auto& program = plan.graph.programs.emplace_back();
    program_ = &program;
    const int world = s_.world_size();
    plan.graph.rank_program.assign(world, 0);
    for (int r = 0; r < world; ++r)
      everyone_.push_back(r);
    plan.graph.groups.push_back(everyone_);

    const auto& layers = s_.model.workload.layers;
    for (std::size_t i = 0; i < layers.size(); ++i)
      hold(i, add_compute(layers[i].name + " fwd", forward_cost(layers[i], context_), gather_deps(i, Pass::forward)));
    held_.clear(); // the forward's gathered weights are freed once it is over

    std::vector<std::uint32_t> reductions;
    Bucket bucket;
    std::uint32_t backward = 0;
    for (std::size_t i = layers.size(); i-- > 0;) {
      const auto& layer = layers[i];
      backward = add_compute(layer.name + " bwd", backward_cost(layer, context_), gather_deps(i, Pass::backward));
      hold(i, backward);
      if (sharded_weights()) prefetch_backward_gather(i);
      if (layer.parameters == 0 || world == 1) continue;
      bucket.bytes += static_cast<double>(layer.parameters) * grad_bytes();
      bucket.ready_after = backward;
      const double cap = reductions.empty() ? s_.training.first_bucket_bytes : s_.training.bucket_bytes;
      if (s_.training.overlap && bucket.bytes >= cap) reductions.push_back(close_bucket(bucket, reductions.size()));
    }
    if (!s_.training.overlap) bucket.ready_after = backward; // one reduction once backward is over
    if (bucket.bytes > 0) reductions.push_back(close_bucket(bucket, reductions.size()));

    const double params = static_cast<double>(s_.model.workload.parameter_count());
    const double shard = sharded_optimizer() ? params / world : params;
    const std::uint32_t step = add_step(shard, reductions);
    if (sharded_optimizer() && !sharded_weights() && world > 1)
      add_collective(Operation::all_gather, params * weight_bytes(), "allgather updated weights", {step});
    // The data loader prepares the next batch beside all of this; the next iteration waits for it.
    add_input_stage(program, input_rates(s_).seconds_per_iteration);

    plan.gradient_bytes = world > 1 ? params * grad_bytes() : 0;
    plan.buckets = static_cast<int>(reductions.size());
    plan.allreduce_algorithms.assign(algorithms_.begin(), algorithms_.end());
    return plan;
  }

private:
  struct Bucket {
    double bytes = 0;
    std::uint32_t ready_after = 0; // the backward op that produced its last gradient
  };

  bool sharded_optimizer() const { return s_.training.zero_stage >= 1 && s_.world_size() > 1; }
  bool sharded_weights() const { return s_.training.zero_stage >= 3 && s_.world_size() > 1; }
  // Bytes of a weight as the forward uses it: the 16-bit working copy in mixed precision (amp, fp16, bf16, fp8),
  // fp32 otherwise; what ZeRO-3 gathers and ZeRO-1/2 all-gather after the step.
  double weight_bytes() const { return calibration::activation_bytes(s_.model.precision) == 4 ? 4 : 2; }
  double grad_bytes() const { return calibration::gradient_bytes(s_.model.precision); }

  enum class Pass : std::uint8_t { forward, backward };

  // ZeRO-3: the all-gather of layer i's weights that its forward (or backward) waits for, posted on first need. At
  // most two layers' weights are gathered at once (the one computing and the one prefetched, as FSDP's
  // limit_all_gathers keeps it, and as memory.cpp counts them): a gather waits for the compute that frees the
  // older of the two held.
  std::vector<std::uint32_t> gather_deps(std::size_t i, Pass pass) {
    const auto& layer = s_.model.workload.layers[i];
    if (!sharded_weights() || layer.parameters == 0) return {};
    auto& gathers = pass == Pass::forward ? forward_gathers_ : backward_gathers_;
    if (!gathers.contains(i)) {
      std::vector<std::uint32_t> frees;
      if (held_.size() >= 2) frees.push_back(held_[held_.size() - 2]);
      gathers[i] =
          add_collective(Operation::all_gather, static_cast<double>(layer.parameters) * weight_bytes(),
                         fmt::format("allgather {} weights ({})", layer.name, pass == Pass::forward ? "fwd" : "bwd"),
                         std::move(frees));
    }
    return {gathers[i]};
  }

  // ZeRO-3: layer i's compute op holds its gathered weights until it is done.
  void hold(std::size_t i, std::uint32_t compute) {
    if (sharded_weights() && s_.model.workload.layers[i].parameters > 0) held_.push_back(compute);
  }

  // FSDP's backward prefetch: once layer i's backward is queued, gather the next layer's weights before its
  // gradients are reduced.
  void prefetch_backward_gather(std::size_t i) {
    for (std::size_t j = i; j-- > 0;)
      if (s_.model.workload.layers[j].parameters > 0) {
        gather_deps(j, Pass::backward);
        return;
      }
  }

  std::uint32_t close_bucket(Bucket& bucket, std::size_t index) {
    const bool scatter = sharded_optimizer();
    const auto op = scatter ? Operation::reduce_scatter : Operation::all_reduce;
    const auto name = fmt::format("{} bucket {} ({:.2f} MiB)", scatter ? "reducescatter" : "allreduce", index,
                                  bucket.bytes / (1 << 20));
    const auto id = add_collective(op, bucket.bytes, name, {bucket.ready_after});
    bucket = Bucket{};
    return id;
  }

  std::uint32_t add_collective(Operation op, double bytes, std::string name, std::vector<std::uint32_t> deps) {
    graph::Collective c;
    c.op = op;
    c.bytes = bytes;
    c.algorithm = resolve_algorithm(c);
    c.aggregate = s_.run.fidelity == scenario::Fidelity::aggregate;
    c.reduce_seconds_per_byte = s_.gpu.reduce_seconds_per_byte();
    program_->ops.push_back(Op{std::move(name), Stream::comm, c, std::move(deps)});
    return static_cast<std::uint32_t>(program_->ops.size() - 1);
  }

  std::uint32_t add_compute(std::string name, const OpCost& cost, std::vector<std::uint32_t> deps) {
    program_->ops.push_back(Op{std::move(name), Stream::compute,
                               graph::Compute{cost.seconds(s_.gpu), cost.flops(), cost.bytes()}, std::move(deps)});
    return static_cast<std::uint32_t>(program_->ops.size() - 1);
  }

  // The optimizer step over this rank's parameters, once every gradient is reduced. Offloaded, the host streams
  // the states at its memory bandwidth between the gradients' trip down and the weights' trip back over PCIe.
  std::uint32_t add_step(double parameters, std::vector<std::uint32_t> deps) {
    const OpCost step = optimizer_step_cost(parameters, parameter_tensors(), s_);
    if (s_.training.offload == scenario::Offload::none) return add_compute("optimizer step", step, std::move(deps));
    const double pcie = parameters * (grad_bytes() + weight_bytes()) / s_.gpu.pcie_bandwidth;
    const double host = step.bytes() / s_.training.host_memory_bandwidth;
    program_->ops.push_back(Op{"optimizer step (host CPU, offloaded)", Stream::compute,
                               graph::Compute{pcie + host, 0, step.bytes()}, std::move(deps)});
    return static_cast<std::uint32_t>(program_->ops.size() - 1);
  }

  // The scenario's all-reduce algorithm; `auto` picks per bucket size and cluster as NCCL would.
  // An algorithm the cluster cannot run (in-switch without reducing switches, hierarchical on uneven nodes) is
  // the scenario's error, reported before anything is simulated.
  collectives::Algorithm resolve_algorithm(graph::Collective c) {
    // training.algorithm names the gradient all-reduce's; ZeRO's reduce-scatters and all-gathers pick their own.
    c.algorithm = c.op == Operation::all_reduce ? s_.training.algorithm : collectives::Algorithm::automatic;
    auto request = graph::collective_request(c, everyone_, s_.cluster);
    request.algorithm = graph::resolved_algorithm(request);
    try {
      collectives::make_schedule(request);
    } catch (const std::invalid_argument& e) {
      throw PlanError(fmt::format("training.algorithm \"{}\" cannot run on this cluster: {}",
                                  collectives::to_string(request.algorithm), e.what()));
    }
    algorithms_.insert(std::string(collectives::to_string(request.algorithm)));
    return request.algorithm;
  }

  int parameter_tensors() const {
    return static_cast<int>(std::count_if(s_.model.workload.layers.begin(), s_.model.workload.layers.end(),
                                          [](const models::Layer& l) { return l.parameters > 0; }));
  }

  const scenario::Scenario& s_;
  CostContext context_;
  graph::Program* program_ = nullptr;                    // the program being built (plan.graph owns it)
  std::set<std::string> algorithms_;                     // every collective algorithm the plan uses
  std::vector<int> everyone_;                            // the data-parallel group: every rank
  std::map<std::size_t, std::uint32_t> forward_gathers_; // ZeRO-3: layer -> its weights' all-gather op
  std::map<std::size_t, std::uint32_t> backward_gathers_;
  std::vector<std::uint32_t> held_; // ZeRO-3: compute ops of the layers holding gathered weights, oldest first
};

} // namespace

Plan make_plan(const scenario::Scenario& scenario) {
  if (scenario.training.strategy != scenario::Strategy::allreduce)
    throw PlanError("only the allreduce strategy can be planned so far");
  return DataParallelPlanner(scenario).build();
}

} // namespace dtsim::plan
