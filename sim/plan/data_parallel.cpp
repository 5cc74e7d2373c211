// Synchronous data parallelism as PyTorch DDP runs it (Li et al., "PyTorch Distributed", VLDB 2020):
// every rank runs forward and backward on its own micro-batch; gradients are grouped into buckets in
// reverse layer order (the first bucket capped at 1 MiB, the rest at bucket_cap_mb = 25 MiB; a bucket
// closes once it reaches its cap), and each bucket's all-reduce starts on the communication stream as
// soon as backward has produced all of its gradients. The optimizer step waits for every bucket.
// Without overlap, one all-reduce of all gradients follows backward. With gradient accumulation the first
// micro-batches run without communication (DDP's no_sync) and the last one's backward fills the buckets.
//
// ZeRO (Rajbhandari et al. 2020) as DeepSpeed and FSDP run it: stages 1 and 2 reduce-scatter the gradient buckets
// (each rank keeps the sum of its shard), step their shard of the parameters and all-gather the updated weights, the
// same bytes as an all-reduce. Stage 3 also keeps only its shard of the weights and works in units, as PyTorch FSDP
// runs a transformer wrapped block by block (Zhao et al. 2023, "PyTorch FSDP: Experiences on Scaling Fully Sharded
// Data Parallel", VLDB 2023; transformer_auto_wrap_policy): each block is a unit, and so is each run of ops outside
// the blocks (the embeddings before them, the final norm and head after them); a model without blocks has one unit
// per layer with parameters (shard_units). A unit's weights are all-gathered before its forward and again before its
// backward, the next unit's gather prefetched while one computes (forward_prefetch, backward_prefetch BACKWARD_PRE),
// at most two units' weights gathered at once (limit_all_gathers); once a unit's backward is over its gradients are
// reduce-scattered (FSDP's post-backward hook) in place of DDP's buckets. Two all-gathers and one reduce-scatter of
// every unit: 3 (n-1)/n of the weights' bytes, 1.5x the traffic of plain data parallelism. Without overlap
// (training.overlap false) the gradients are reduce-scattered at once after backward, as DDP's would be all-reduced.
// With optimizer offload (ZeRO-Offload, Ren et al. 2021) the step runs on the host CPU: the gradient shard goes down
// and the updated weights come back over PCIe.
//
// Other strategies change what a closed bucket becomes and what follows the step: strategy_ops.cpp.
#include "sim/plan/data_parallel.hpp"
#include "sim/graph/collective_request.hpp"
#include "sim/plan/gpu_speed.hpp"
#include "sim/plan/input_pipeline.hpp"
#include "sim/plan/model_parallel.hpp"
#include "sim/plan/sustained_clock.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace dtsim::plan {
namespace detail {

using collectives::Operation;
using graph::Op;
using graph::Stream;
using strategies::Kind;

// FSDP's root unit would hold the ops outside the blocks, before and after them, and keep its weights gathered from
// forward to backward; here the ops before the first block and those after the last are units of their own, gathered
// twice like the blocks, so that every parameter moves as Rajbhandari et al. count it (and a run of ops between two
// stacks of blocks, an encoder's final norm before a decoder, is a unit too).
std::vector<ShardUnit> shard_units(const models::Workload& workload) {
  const auto& layers = workload.layers;
  const bool blocks = std::any_of(layers.begin(), layers.end(), [](const models::Layer& l) { return l.block >= 0; });
  std::vector<ShardUnit> units;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (!blocks && layers[i].parameters == 0) continue;
    if (!blocks || units.empty() || layers[i - 1].block != layers[i].block) units.push_back({i, i, 0, ""});
    units.back().last = i;
    units.back().parameters += layers[i].parameters;
  }
  std::erase_if(units, [](const ShardUnit& u) { return u.parameters == 0; });
  for (auto& u : units) {
    if (layers[u.first].block >= 0) {
      u.name = fmt::format("block {}", layers[u.first].block);
      continue;
    }
    std::vector<std::string> owners; // the unit's layers with parameters: the first and the last name it
    for (std::size_t i = u.first; i <= u.last; ++i)
      if (layers[i].parameters > 0) owners.push_back(layers[i].name);
    u.name = owners.size() == 1 ? owners.front() : fmt::format("{} to {}", owners.front(), owners.back());
  }
  return units;
}

DataParallelPlanner::DataParallelPlanner(const scenario::Scenario& s)
    : s_(s), strategy_(s.training.strategy), context_(CostContext::of(s)), layout_(strategy_layout(s)),
      units_(shard_units(s.model.workload)), unit_of_(s.model.workload.layers.size(), -1) {
  for (std::size_t u = 0; u < units_.size(); ++u)
    for (std::size_t i = units_[u].first; i <= units_[u].last; ++i)
      unit_of_[i] = static_cast<int>(u);
}

Plan DataParallelPlanner::build() {
  Plan plan;
  plan.memory = estimate_memory(s_);
  check_fits(s_, plan.memory);
  graph_ = &plan.graph;
  const int workers = layout_.workers;
  for (int r = 0; r < workers; ++r)
    everyone_.push_back(r);
  plan.graph.groups.push_back(everyone_);
  // Hierarchical servers: each node's GPUs, once for the reduces; with partitions once more for the broadcasts, which
  // then run on a stream of their own, in an order of their own (BytePS's broadcast loop).
  if (strategies::uses_servers(strategy_) && strategy_.servers.hierarchical)
    for (int copy = 0; copy < (strategy_.servers.partition_bytes > 0 ? 2 : 1); ++copy)
      for (int node = 0; node < worker_nodes(); ++node) {
        std::vector<int> members;
        for (int g = 0; g < s_.cluster.gpus_per_node; ++g)
          members.push_back(node * s_.cluster.gpus_per_node + g);
        plan.graph.groups.push_back(std::move(members));
      }
  const int iterations = s_.run.warmup_iterations + s_.run.iterations;
  if (strategy_.kind == Kind::gossip || strategy_.kind == Kind::adpsgd)
    peers_ =
        random_peers(workers, iterations, strategy_.kind == Kind::gossip ? strategy_.probability : 1.0, s_.run.seed);
  plan.graph.servers = server_specs(s_, layout_);
  auto gpus = gpu_time_factors(workers, s_.stragglers.gpu_speed_sigma, s_.run.seed);
  plan.slowest_gpu = *std::max_element(gpus.begin(), gpus.end());
  // Aggregate fidelity runs a synchronous all-reduce's replicas at the slowest one's pace, as it runs a model-parallel
  // job's (paced_by_stand_ins): the iteration waits for it all the same, and replicas at one pace repeat their
  // iterations exactly, where replicas at distinct speeds keep shifting against one another by a few tenths of a
  // percent from one iteration to the next and the steady state is never reached.
  if (s_.run.fidelity == scenario::Fidelity::aggregate && strategy_.kind == Kind::allreduce)
    gpus.assign(gpus.size(), plan.slowest_gpu);
  plan.graph.compute_slowdown = compute_slowdown(s_, gpus, iterations);

  // Ranks share one program unless their peers or roles differ.
  const bool per_rank = strategy_.kind == Kind::dpsgd || strategy_.kind == Kind::gossip ||
                        strategy_.kind == Kind::adpsgd ||
                        (strategies::uses_servers(strategy_) && strategy_.servers.hierarchical);
  for (int r = 0; r < (per_rank ? workers : 1); ++r) {
    program_ = &plan.graph.programs.emplace_back();
    build_program(r);
  }
  plan.graph.rank_program.resize(workers);
  for (int r = 0; r < workers; ++r)
    plan.graph.rank_program[r] = per_rank ? r : 0;

  const double params = static_cast<double>(s_.model.workload.parameter_count());
  plan.gradient_bytes = workers > 1 || strategies::uses_servers(strategy_) ? params * grad_bytes() : 0;
  plan.allreduce_algorithms.assign(algorithms_.begin(), algorithms_.end());
  plan.buckets = buckets_;
  plan.workers = workers;
  plan.samples_per_worker_iteration = static_cast<double>(s_.model.batch_per_gpu) * strategy_.accumulation;
  plan.spectral_gap = spectral_gap(s_, workers);
  plan.wire_bytes = compressed_bytes_;
  plan.dense_bytes = dense_bytes_;
  plan.kernels = kernels_.rows();
  plan.host_wait_seconds = kernels_.host_wait();
  apply_sustained_clocks(plan, s_);
  return plan;
}

void DataParallelPlanner::build_program(int rank) {
  rank_ = rank;
  timeline_.synchronize(); // an iteration starts once the host has read the last one's loss
  held_.clear();
  exchange_.reset();
  compressed_bytes_ = dense_bytes_ = 0;
  next_partition_ = 0;
  add_model_exchange_before();
  std::vector<std::uint32_t> reductions;
  add_iteration_compute(reductions);
  buckets_ = static_cast<int>(reductions.size());
  if (worker_steps()) {
    const double params = static_cast<double>(s_.model.workload.parameter_count());
    const double shard = sharded_optimizer() ? params / layout_.workers : params;
    auto deps = reductions;
    deps.push_back(last_backward_);
    if (exchange_) deps.push_back(*exchange_);
    const std::uint32_t step = add_step(shard, std::move(deps));
    if (sharded_optimizer() && !sharded_weights())
      add_collective(Operation::all_gather, params * weight_bytes(), "allgather updated weights", {step});
    add_model_exchange_after(step);
  }
  // The data loader prepares the next batch beside all of this; the next iteration waits for it.
  add_input_stage(*program_, input_rates(s_).seconds_per_iteration);
}

// Forward and backward of every micro-batch; the last one's gradients fill the buckets (when the strategy reduces
// gradients at all: model-averaging schemes step on their own gradients). ZeRO-3 closes a bucket at the end of each
// unit's backward instead of at the bucket cap.
void DataParallelPlanner::add_iteration_compute(std::vector<std::uint32_t>& reductions) {
  const auto& layers = s_.model.workload.layers;
  const bool reduces =
      strategy_.kind == Kind::allreduce || (strategy_.kind == Kind::parameter_server && strategy_.period == 1);
  const bool communicates = reduces && (layout_.workers > 1 || strategies::uses_servers(strategy_));
  const int micro_batches = strategy_.accumulation;
  for (int mb = 0; mb < micro_batches; ++mb) {
    const auto suffix = micro_batches > 1 ? fmt::format(" (micro-batch {})", mb + 1) : std::string();
    forward_gathers_.clear();
    backward_gathers_.clear();
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const auto id = add_compute(layers[i].name + " fwd" + suffix, forward_cost(layers[i], context_),
                                  gather_deps(i, Pass::forward));
      // A unit's gathered weights are freed once its last op in the pass has run. held_ carries on into the
      // backward: its first gather (the last unit's) waits like any other.
      if (const int u = unit_of(i); u >= 0 && i == units_[u].last) held_.push_back(id);
    }
    const bool last = mb + 1 == micro_batches;
    Bucket bucket;
    // Horovod's fusion cycle (calibration::Framework::fusion_cycle), on the backward's clock as the plan prices its
    // ops, the cycle's ticks falling at whole cycles from the backward's start: a bucket opens with its first
    // gradient, takes every gradient ready by the first tick at or after it and goes out at that tick.
    const double cycle = fuses_by_cycle() ? s_.framework.fusion_cycle : 0;
    double clock = 0, ready_at = 0, tick = 0;
    for (std::size_t i = layers.size(); i-- > 0;) {
      const auto& layer = layers[i];
      last_backward_ =
          add_compute(layer.name + " bwd" + suffix, backward_cost(layer, context_), gather_deps(i, Pass::backward));
      clock += std::get<graph::Compute>(program_->ops[last_backward_].body).seconds;
      const int u = unit_of(i);
      const bool unit_done = u >= 0 && i == units_[u].first; // ZeRO-3: the unit's backward is over
      if (unit_done) {
        held_.push_back(last_backward_);
        // FSDP's backward prefetch: the previous unit's gather goes out ahead of this unit's reduce-scatter. Posted
        // here, it runs as soon as the stream is free (BACKWARD_PRE: beside this unit's backward); BACKWARD_POST
        // issues it from the post-backward hook, once this unit's gradients are computed.
        const bool post = s_.framework.backward_prefetch == calibration::BackwardPrefetch::post;
        if (u > 0) gather(static_cast<std::size_t>(u - 1), Pass::backward, post ? last_backward_ : kNoOp);
      }
      if (!last || !communicates) continue;
      if (cycle > 0 && bucket.bytes > 0 && clock > tick)
        reductions.push_back(close_fusion(bucket, tick - ready_at, reductions.size()));
      if (layer.parameters > 0) {
        if (cycle > 0 && bucket.bytes == 0 && clock > tick) tick = cycle * std::ceil(clock / cycle);
        bucket.bytes += static_cast<double>(layer.parameters) * grad_bytes();
        bucket.elements += static_cast<double>(layer.parameters);
        bucket.layers.push_back(i);
        bucket.ready_after = last_backward_;
        ready_at = clock;
      }
      if (cycle > 0) { // a fusion buffer full: out at the same tick, the gradients after it in the next buffer
        if (bucket.bytes >= s_.framework.fusion_threshold)
          reductions.push_back(close_fusion(bucket, tick - ready_at, reductions.size()));
        continue;
      }
      if (!s_.training.overlap || bucket.bytes == 0) continue;
      const double cap = reductions.empty() ? s_.training.first_bucket_bytes : s_.training.bucket_bytes;
      if (sharded_weights() ? unit_done : layer.parameters > 0 && bucket.bytes >= cap) {
        bucket.ready_after = last_backward_;
        reductions.push_back(close_bucket(bucket, reductions.size()));
      }
    }
    if (!last) continue;
    if (cycle > 0) {
      if (bucket.bytes > 0) reductions.push_back(close_fusion(bucket, tick - ready_at, reductions.size()));
      continue;
    }
    if (!s_.training.overlap) bucket.ready_after = last_backward_; // one reduction once backward is over
    if (bucket.bytes > 0) reductions.push_back(close_bucket(bucket, reductions.size()));
  }
}

// Horovod fuses by its cycle where gradients are all-reduced whole under backward; ZeRO's reduce-scatters and a
// reduction after backward (training.overlap false) keep their own buckets.
bool DataParallelPlanner::fuses_by_cycle() const {
  return s_.framework.fusion_cycle > 0 && s_.training.overlap && !sharded_weights();
}

std::uint32_t DataParallelPlanner::close_fusion(Bucket& bucket, double wait, std::size_t index) {
  if (wait > 0)
    bucket.ready_after = add_op(Op{fmt::format("fusion cycle wait (bucket {})", index),
                                   Stream::host,
                                   graph::Compute{wait, 0, 0},
                                   {bucket.ready_after}});
  return close_bucket(bucket, index);
}

bool DataParallelPlanner::sharded_optimizer() const {
  return s_.training.zero_stage >= 1 && layout_.workers > 1;
}
bool DataParallelPlanner::sharded_weights() const {
  return s_.training.zero_stage >= 3 && layout_.workers > 1;
}
// Bytes of a weight as the forward uses it: the 16-bit working copy in mixed precision (amp, fp16, bf16, fp8),
// fp32 otherwise; what ZeRO-3 gathers and ZeRO-1/2 all-gather after the step.
double DataParallelPlanner::weight_bytes() const {
  return working_weight_bytes(s_.model.precision);
}
// The framework version's rule (calibration::Framework::reduced_gradient_bytes), as under a parallelism section.
double DataParallelPlanner::grad_bytes() const {
  return s_.framework.reduced_gradient_bytes(s_.model.precision);
}

// ZeRO-3: the unit layer i belongs to; -1 outside them, and for every layer without ZeRO-3.
int DataParallelPlanner::unit_of(std::size_t i) const {
  return sharded_weights() ? unit_of_[i] : -1;
}

// ZeRO-3: what layer i waits for, the gather of its unit's weights where it is the unit's first op in the pass (its
// first layer forward, its last backward); the unit's other ops follow it on the compute stream.
std::vector<std::uint32_t> DataParallelPlanner::gather_deps(std::size_t i, Pass pass) {
  const int u = unit_of(i);
  if (u < 0) return {};
  const auto& unit = units_[u];
  if (i != (pass == Pass::forward ? unit.first : unit.last)) return {};
  return {gather(static_cast<std::size_t>(u), pass)};
}

// ZeRO-3: the all-gather of a unit's weights for a pass, posted on first need (or by the backward prefetch). At most
// two units' weights are gathered at once (the one computing and the one prefetched, as FSDP's limit_all_gathers
// keeps it, and as memory.cpp counts them): a gather waits for the compute op that frees the older of the two held.
// Posted while the unit before it computes, it runs beside that compute: the prefetch one unit ahead.
std::uint32_t DataParallelPlanner::gather(std::size_t unit, Pass pass, std::uint32_t after) {
  auto& gathers = pass == Pass::forward ? forward_gathers_ : backward_gathers_;
  if (const auto it = gathers.find(unit); it != gathers.end()) return it->second;
  std::vector<std::uint32_t> frees;
  if (held_.size() >= 2) frees.push_back(held_[held_.size() - 2]);
  if (after != kNoOp && std::find(frees.begin(), frees.end(), after) == frees.end()) frees.push_back(after);
  const auto& u = units_[unit];
  return gathers[unit] = add_collective(
             Operation::all_gather, static_cast<double>(u.parameters) * weight_bytes(),
             fmt::format("allgather {} weights ({})", u.name, pass == Pass::forward ? "fwd" : "bwd"), std::move(frees));
}

std::uint32_t DataParallelPlanner::add_op(graph::Op op) {
  program_->ops.push_back(std::move(op));
  return static_cast<std::uint32_t>(program_->ops.size() - 1);
}

std::uint32_t DataParallelPlanner::add_collective(Operation op, double bytes, std::string name,
                                                  std::vector<std::uint32_t> deps, int group) {
  graph::Collective c;
  c.op = op;
  c.bytes = bytes;
  c.group = group;
  c.algorithm = resolve_algorithm(c, group);
  c.aggregate = s_.run.fidelity == scenario::Fidelity::aggregate;
  c.reduce_seconds_per_byte = s_.gpu.reduce_seconds_per_byte();
  return add_op(Op{std::move(name), Stream::comm, c, std::move(deps)});
}

std::uint32_t DataParallelPlanner::add_compute(std::string name, const OpCost& cost, std::vector<std::uint32_t> deps) {
  const auto run = PricedOp(cost, s_.gpu).run(timeline_, rank_ == 0 ? &kernels_ : nullptr);
  return add_op(Op{std::move(name), Stream::compute,
                   graph::Compute{run.seconds, cost.flops(), cost.bytes(), run.math_seconds, run.joules},
                   std::move(deps)});
}

// The optimizer step over this rank's parameters, once every gradient is reduced. Offloaded, the host streams
// the states at its memory bandwidth between the gradients' trip down and the weights' trip back over PCIe.
std::uint32_t DataParallelPlanner::add_step(double parameters, std::vector<std::uint32_t> deps) {
  if (s_.training.offload == scenario::Offload::none)
    return add_compute("optimizer step", iteration_passes(parameters, parameter_tensors(), s_), std::move(deps));
  const double bytes = parameters * optimizer_step_bytes(s_.training.optimizer, s_.model.precision);
  const double pcie = parameters * (grad_bytes() + weight_bytes()) / s_.gpu.pcie_bandwidth;
  const double host = bytes / s_.training.host_memory_bandwidth;
  return add_op(Op{"optimizer step (host CPU, offloaded)", Stream::compute, graph::Compute{pcie + host, 0, bytes},
                   std::move(deps)});
}

// The scenario's all-reduce algorithm (or the strategy preset's); `auto` picks per size and cluster as NCCL would.
// An algorithm the cluster cannot run (in-switch without reducing switches, hierarchical on uneven nodes) is
// the scenario's error, reported before anything is simulated.
collectives::Algorithm DataParallelPlanner::resolve_algorithm(graph::Collective c, int group) {
  // training.algorithm names the gradient all-reduce's; ZeRO's reduce-scatters and all-gathers pick their own.
  const auto chosen = strategy_.algorithm.value_or(s_.training.algorithm);
  c.algorithm = c.op == Operation::all_reduce && group == 0 ? chosen : collectives::Algorithm::automatic;
  const auto algorithm = checked_algorithm(c, graph_->groups.at(group), s_.cluster);
  algorithms_.insert(std::string(collectives::to_string(algorithm)));
  return algorithm;
}

collectives::Algorithm checked_algorithm(const graph::Collective& c, const std::vector<int>& members,
                                         const topologies::ClusterSpec& cluster) {
  try {
    const auto request = graph::resolved_request(c, members, cluster);
    collectives::make_schedule(request);
    return request.algorithm;
  } catch (const std::invalid_argument& e) {
    throw PlanError(fmt::format("training.algorithm \"{}\" cannot run on this cluster: {}",
                                collectives::to_string(c.algorithm), e.what()));
  }
}

int DataParallelPlanner::parameter_tensors() const {
  return static_cast<int>(std::count_if(s_.model.workload.layers.begin(), s_.model.workload.layers.end(),
                                        [](const models::Layer& l) { return l.parameters > 0; }));
}

} // namespace detail

Plan make_first_replica_plan(const scenario::Scenario& scenario) {
  const auto& p = scenario.parallelism;
  if (p.model_parallel() && p.expert == 1 && scenario.groups.empty())
    return detail::make_model_parallel_plan(scenario, /*first_replica_only=*/true);
  return make_plan(scenario);
}

Plan make_plan(const scenario::Scenario& scenario) {
  if (scenario.model.trace) return detail::make_trace_plan(scenario); // the trace holds its own parallelism
  if (scenario.parallelism.model_parallel()) return detail::make_model_parallel_plan(scenario);
  if (!scenario.groups.empty()) return detail::make_grouped_plan(scenario);
  const auto& t = scenario.training;
  if (t.zero_stage > 0 && t.strategy.kind != strategies::Kind::allreduce)
    throw PlanError(fmt::format("training.zero_stage {} shards the all-reduce's optimizer states; strategy \"{}\" "
                                "keeps whole models (use zero_stage 0)",
                                t.zero_stage, strategies::strategy_name(t.strategy)));
  if (t.compression.kind != strategies::CompressionKind::none && t.zero_stage > 0)
    throw PlanError("training.compression works on whole gradients; ZeRO's reduce-scatter of compressed shards is not "
                    "modeled (use zero_stage 0)");
  return detail::DataParallelPlanner(scenario).build();
}

} // namespace dtsim::plan
