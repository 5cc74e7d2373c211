// The programs of large-model parallelism (model_parallel.hpp says what each rank runs and why).
#include "sim/plan/model_parallel.hpp"
#include "sim/plan/gpu_speed.hpp"
#include "sim/plan/kernel_noise.hpp"
#include "sim/plan/pipeline_schedule.hpp"
#include "sim/plan/stage_partition.hpp"
#include "sim/plan/sustained_clock.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <utility>

namespace dtsim::plan::detail {

using collectives::Operation;
using graph::Axis;
using graph::Stream;

ModelParallelPlanner::ModelParallelPlanner(const scenario::Scenario& s)
    : s_(s), spec_(s.parallelism), layout_(s.parallelism), context_(CostContext::of(s)) {
  const auto& layers = s.model.workload.layers;
  for (const auto& l : layers)
    shared_.push_back(shard_layer(l, spec_.tensor, spec_.sequence_parallel, spec_.expert, spec_.context));
  int moe_layer = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const auto& l = layers[i];
    if (l.moe.experts == 0) continue;
    // The experts read each token once per expert it visits: input_elements = k tokens x hidden (gemm.k).
    tokens_per_rank_ = static_cast<double>(l.input_elements) / static_cast<double>(l.gemm.k * l.moe.top_k) *
                       static_cast<double>(s.model.batch_per_gpu);
    const auto shares = expert_shares(spec_.routing, l.moe.experts, s.run.seed, moe_layer++);
    const double capacity = spec_.routing.capacity_factor.value_or(l.moe.capacity_factor);
    routing_.emplace(i, route_tokens(shares, tokens_per_rank_, l.moe.top_k, spec_.expert, capacity));
  }
  units_ = pipeline_units(s.model.workload);
  for (const auto& unit : units_) {
    UnitParameters p;
    for (auto i : unit)
      (shared_[i].moe.experts > 0 ? p.experts : p.dense) += static_cast<double>(shared_[i].parameters);
    unit_params_.push_back(p);
  }
  costs_.assign(spec_.expert, std::vector<std::array<std::optional<PricedOp>, 2>>(layers.size()));
  assign_stage_groups();
  const int chunks = spec_.pipeline * spec_.virtual_stages;
  std::vector<int> counts = spec_.stage_blocks;
  if (counts.empty()) counts = framework_split(s, units_.size(), chunks);
  if (counts.empty()) {
    // Balanced by time, each chunk's units priced on its own stage's GPU (HetPipe sizes a slower GPU's stage smaller);
    // the units are priced once per distinct GPU (`dtsim search` builds thousands of planners).
    std::map<const calibration::GpuProfile*, std::vector<double>> unit_seconds;
    std::vector<std::vector<double>> seconds(static_cast<std::size_t>(chunks));
    for (int c = 0; c < chunks; ++c) {
      const auto* gpu = &chunk_gpu(c);
      auto [priced, added] = unit_seconds.try_emplace(gpu);
      if (added)
        for (const auto& unit : units_) {
          double t = 0;
          for (auto i : unit)
            t += forward_cost(shared_[i], context_).seconds(*gpu) + backward_cost(shared_[i], context_).seconds(*gpu);
          priced->second.push_back(t);
        }
      seconds[static_cast<std::size_t>(c)] = priced->second;
    }
    counts = balanced_split_by_chunk(seconds);
  }
  std::size_t next = 0;
  chunk_of_layer_.assign(layers.size(), 0);
  for (int c = 0; c < chunks; ++c) {
    chunk_units_.emplace_back();
    for (int k = 0; k < counts[c]; ++k) {
      for (auto i : units_[next])
        chunk_of_layer_[i] = c;
      chunk_units_.back().push_back(next++);
    }
  }
}

// A cluster of mixed GPUs: every rank of a pipeline stage must be in one group, so that the stage has one GPU.
void ModelParallelPlanner::assign_stage_groups() {
  if (s_.groups.empty()) return;
  stage_group_.assign(static_cast<std::size_t>(spec_.pipeline), -1);
  for (int r = 0; r < layout_.world(); ++r) {
    int group = 0;
    while (r >= s_.groups[group].first_rank + s_.groups[group].ranks)
      ++group;
    int& stage = stage_group_[static_cast<std::size_t>(layout_.coord(r).pp)];
    if (stage >= 0 && stage != group)
      throw PlanError(fmt::format("pipeline stage {} has ranks in GPU groups \"{}\" and \"{}\": on a cluster of "
                                  "mixed GPUs each stage runs on one group (groups of whole stages, with \"pp\" "
                                  "outermost in parallelism.order)",
                                  layout_.coord(r).pp, s_.groups[stage].name, s_.groups[group].name));
    stage = group;
  }
}

const calibration::GpuProfile& ModelParallelPlanner::stage_gpu(int stage) const {
  if (stage_group_.empty()) return s_.gpu;
  return s_.groups[static_cast<std::size_t>(stage_group_[static_cast<std::size_t>(stage)])].gpu;
}

bool ModelParallelPlanner::simulated(int rank) const {
  return !coarse() || layout_.coord(rank).tp == 0;
}

// Groups of two or more ranks; in coarse fidelity only those of the ranks that stand for their tensor-parallel
// group, and no tensor-parallel groups (their collectives are priced in closed form).
void ModelParallelPlanner::add_groups(graph::ExecutionGraph& g) {
  rank_groups_.assign(layout_.world(), {});
  const auto add = [&](const std::vector<std::vector<int>>& groups, int RankGroups::*field) {
    for (const auto& members : groups) {
      if (members.size() < 2 || !simulated(members.front())) continue;
      if (coarse() && field == &RankGroups::tensor) continue;
      for (int r : members)
        rank_groups_[r].*field = static_cast<int>(g.groups.size());
      g.groups.push_back(members);
    }
  };
  add(layout_.tensor_groups(), &RankGroups::tensor);
  add(layout_.context_groups(), &RankGroups::context);
  add(layout_.data_groups(), &RankGroups::data);
  // Coarse fidelity simulates one rank of each tensor-parallel group: its model copy's ranks are its pipeline's.
  add(layout_.groups(coarse() ? std::vector<Dim>{Dim::pp} : std::vector<Dim>{Dim::tp, Dim::pp}), &RankGroups::model);
  if (s_.training.zero_stage >= 1 && layout_.gradient_replicas() > 1) { // the distributed optimizer's norm: every rank
    std::vector<int> world;
    for (int r = 0; r < layout_.world(); ++r)
      if (simulated(r)) world.push_back(r);
    add({world}, &RankGroups::model);
  }
  const auto transformer = scenario::transformer_of(s_.model);
  if (layout_.pipeline() > 1 && transformer && transformer->tied_embeddings) {
    std::vector<std::vector<int>> ends;
    for (const auto& pipeline : layout_.pipeline_groups())
      ends.push_back({pipeline.front(), pipeline.back()});
    add(ends, &RankGroups::embedding);
  }
  if (!routing_.empty()) {
    add(layout_.expert_groups(), &RankGroups::expert);
    add(layout_.expert_data_groups(), &RankGroups::expert_data);
  }
}

Plan ModelParallelPlanner::build(bool first_replica_only) {
  Plan plan;
  syncs_.clear();
  pass_kernels_.clear();
  const auto stages = stage_memory();
  plan.memory = *std::max_element(stages.begin(), stages.end(),
                                  [](const auto& a, const auto& b) { return a.total() < b.total(); });
  check_model_parallel_fits(s_, stages);
  graph_ = &plan.graph;
  if (coarse()) plan.graph.nic_share = nic_share();
  add_groups(plan.graph);
  plan.graph.programs.emplace_back(); // 0: ranks another rank stands for (coarse fidelity)
  plan.graph.rank_program.assign(layout_.world(), 0);
  for (int r = 0; r < layout_.world(); ++r) {
    if (!simulated(r) || (first_replica_only && layout_.coord(r).dp != 0)) continue;
    graph::Program program;
    build_program(r, program);
    plan.graph.rank_program[r] = static_cast<std::uint32_t>(plan.graph.programs.size());
    plan.graph.programs.push_back(std::move(program));
  }
  const auto gpus = gpu_time_factors(layout_.world(), s_.stragglers.gpu_speed_sigma, s_.run.seed);
  plan.slowest_gpu = *std::max_element(gpus.begin(), gpus.end());
  plan.workers = layout_.data();
  plan.samples_per_worker_iteration = static_cast<double>(s_.model.batch_per_gpu) * spec_.micro_batches;
  // Rank 0's (the first stage's) gradients, and the reductions they go in.
  plan.gradient_bytes = 0;
  for (int c = 0; c < static_cast<int>(chunk_units_.size()); c += spec_.pipeline)
    for (auto u : chunk_units_[c])
      plan.gradient_bytes += unit_params_[u].total() * reduced_gradient_bytes();
  plan.buckets = buckets_;
  plan.parallel = parallel_info(stages);
  plan.kernels = kernels_.rows();
  plan.host_wait_seconds = kernels_.host_wait();
  // A cluster of mixed GPUs: each group's ranks, for the report's who-waits-for-whom (their stages' kernels are
  // not kept apart: only rank 0's table is).
  for (const auto& g : s_.groups)
    plan.groups.push_back({g.name, g.gpu.name, g.first_rank, g.ranks, s_.model.batch_per_gpu, 0, {}});
  apply_sustained_clocks(plan, s_);
  // Every rank waits at its groups' synchronizations for the slowest member's kernels (kernel_noise.hpp): priced on
  // rank 0's kernels of the micro-batches' passes, where the synchronizations fall (at burst clocks: the optimizer's
  // kernels would make the fraction depend on the micro-batch count, and the search's screen extends a few
  // micro-batches to many), the same factor on every rank.
  plan.synchronization_wait = synchronization_wait(s_.stragglers.kernel_noise_sigma,
                                                   pass_kernels_.empty() ? plan.kernels : pass_kernels_, syncs_);
  auto paces = paced_by_stand_ins(layout_, gpus, coarse(), first_replica_only || coarse());
  for (auto& pace : paces)
    pace *= 1 + plan.synchronization_wait;
  plan.graph.compute_slowdown = constant_slowdown(paces);
  return plan;
}

ParallelInfo ModelParallelPlanner::parallel_info(const std::vector<MemoryEstimate>& stages) const {
  ParallelInfo info;
  info.tensor = layout_.tensor();
  info.context = layout_.context();
  info.pipeline = layout_.pipeline();
  info.data = layout_.data();
  info.expert = layout_.expert();
  info.micro_batches = spec_.micro_batches;
  info.virtual_stages = spec_.virtual_stages;
  info.schedule = std::string(scenario::to_string(spec_.schedule));
  info.sequence_parallel = spec_.sequence_parallel;
  for (const auto& chunk : chunk_units_)
    info.chunk_units.push_back(static_cast<int>(chunk.size()));
  info.stage_memory = stages;
  const double replicas_of_group = static_cast<double>(layout_.data()) / layout_.expert(); // expert groups per stage
  for (const auto& [layer, r] : routing_) {
    info.routed_tokens += r.assignments * spec_.micro_batches * replicas_of_group;
    info.dropped_tokens += r.dropped * spec_.micro_batches * replicas_of_group;
  }
  info.peak_micro_batches =
      peak_in_flight(pipeline_order(spec_.schedule, spec_.pipeline, 0, spec_.micro_batches, spec_.virtual_stages));
  return info;
}

void ModelParallelPlanner::build_program(int rank, graph::Program& program) {
  rank_ = rank;
  coord_ = layout_.coord(rank);
  program_ = &program;
  timeline_.synchronize(); // an iteration starts once the host has read the last one's loss
  reductions_.clear();
  deferred_.clear();
  pending_ = {};
  last_compute_.reset();
  gather_parameters_ahead();
  const int p = spec_.pipeline, stage = coord_.pp, chunks = p * spec_.virtual_stages;
  const auto order = pipeline_order(spec_.schedule, p, stage, spec_.micro_batches, spec_.virtual_stages);
  std::vector<std::size_t> last_backward(spec_.virtual_stages, 0);
  for (std::size_t i = 0; i < order.size(); ++i)
    if (!order[i].forward) last_backward[order[i].chunk] = i;
  GridCoord prev = coord_, next = coord_;
  prev.pp = (stage + p - 1) % p;
  next.pp = (stage + 1) % p;
  const int before = layout_.rank(prev), after = layout_.rank(next);
  // Megatron-LM posts a micro-batch's send with the next receive in its direction and, without overlap_p2p_comm,
  // waits for both before computing on (schedules.py: send_forward_recv_backward, one stream here, so a receive is
  // posted only once the send before it is issued); with it, each direction waits only where its data is needed
  // (send_forward_recv_forward, send_backward_recv_backward): gradients then travel on a stream of their own.
  const Stream back = spec_.overlap.p2p ? Stream::p2p_back : Stream::p2p;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto& slot = order[i];
    const int vs = slot.chunk * p + stage;
    const bool first = vs == 0, last = vs == chunks - 1;
    const int mb = slot.micro_batch;
    std::vector<std::uint32_t> deps;
    if (slot.forward) {
      if (!first)
        deps.push_back(send_recv(before, vs - 1, false, fmt::format("recv activations chunk {} mb {}", vs, mb), {}));
      const auto done = run_forward(vs, std::move(deps));
      if (!last) send_recv(after, vs, true, fmt::format("send activations chunk {} mb {}", vs, mb), {done});
      if (redundant()) redundant_forward((vs + 1) % chunks, done);
    } else {
      if (!last)
        deps.push_back(send_recv(after, vs, false, fmt::format("recv gradients chunk {} mb {}", vs, mb), {}, back));
      const auto done = run_backward(vs, std::move(deps), i == last_backward[slot.chunk]);
      if (!first) send_recv(before, vs - 1, true, fmt::format("send gradients chunk {} mb {}", vs, mb), {done}, back);
    }
  }
  add_step();
}

std::uint32_t ModelParallelPlanner::run_forward(int chunk, std::vector<std::uint32_t> deps) {
  unit_compute_.clear();
  for (auto u : chunk_units_[chunk]) {
    if (sharded_weights()) deps.push_back(gather_unit(u));
    if (const auto gathered = gathers_.find(u); gathered != gathers_.end()) { // first forward after the step
      deps.insert(deps.end(), gathered->second.begin(), gathered->second.end());
      gathers_.erase(gathered);
    }
    for (auto i : units_[u])
      run_layer(i, true, deps);
    // A unit's compute is an op of its own only where something waits on it or it waits on its own (ZeRO-3's
    // prefetch, each unit's parameter gather); otherwise coarse fidelity runs the chunk's pass as one op.
    if (sharded_weights() || spec_.overlap.param_gather) unit_compute_.push_back(flush());
  }
  return flush();
}

std::uint32_t ModelParallelPlanner::run_backward(int chunk, std::vector<std::uint32_t> deps, bool reduce) {
  unit_compute_.clear();
  const double grad = reduced_gradient_bytes();
  const auto& units = chunk_units_[chunk];
  for (auto u = units.rbegin(); u != units.rend(); ++u) {
    if (sharded_weights()) deps.push_back(gather_unit(*u));
    for (auto i = units_[*u].rbegin(); i != units_[*u].rend(); ++i)
      run_layer(*i, false, deps);
    if (!reduce) {
      if (sharded_weights()) unit_compute_.push_back(flush());
      continue;
    }
    bucket_dense_ += unit_params_[*u].dense * grad;
    bucket_expert_ += unit_params_[*u].experts * grad;
    const bool full = bucket_dense_ + bucket_expert_ >= s_.training.bucket_bytes;
    if (sharded_weights() || full || std::next(u) == units.rend()) {
      if (!spec_.overlap.grad_reduce && !sharded_weights()) { // reduced once backward is over (finalize_gradients)
        deferred_.emplace_back(bucket_dense_, bucket_expert_);
        bucket_dense_ = bucket_expert_ = 0;
        continue;
      }
      const auto done = flush();
      if (sharded_weights()) unit_compute_.push_back(done);
      reduce_gradients(done);
    }
  }
  return flush();
}

// One op of the pass with the tensor-parallel collectives around it and, for experts, the all-to-alls.
void ModelParallelPlanner::run_layer(std::size_t i, bool forward, std::vector<std::uint32_t>& deps) {
  const auto& full = s_.model.workload.layers[i];
  const auto comm = tensor_comm(full, forward, spec_.tensor, spec_.sequence_parallel);
  // Full recomputation reruns the block's forward in backward, its tensor-parallel collectives with it.
  if (!forward && s_.training.recompute == scenario::Recompute::full && full.block >= 0) {
    const auto rerun = tensor_comm(full, true, spec_.tensor, spec_.sequence_parallel);
    for (const auto& c : {rerun.before, rerun.after})
      if (c) tensor_collective(*c, label("{} recompute tp {}", full.name, collectives::to_string(c->op)), deps);
  }
  const bool experts = routing_.count(i) && spec_.expert > 1;
  const char* pass = forward ? (redundant_pass_ ? "redundant fwd" : "fwd") : "bwd";
  const bool gemm = full.tensor_split == models::TensorSplit::column || full.tensor_split == models::TensorSplit::row;
  if (spec_.overlap.tensor && gemm && (comm.before || comm.after)) {
    std::vector<Exchange> parts;
    for (const auto& c : {comm.before, comm.after})
      if (c) parts.push_back({c->op, tensor_bytes(*c), c->calls});
    overlapped_layer(pass_cost(i, forward), parts, false, label("{} {}", full.name, pass), deps);
    return;
  }
  if (spec_.context > 1 && full.kind == models::LayerKind::attention && full.attention.sequence > 0) {
    context_attention(i, forward, label("{} {}", full.name, pass), deps);
    return;
  }
  if (comm.before)
    tensor_collective(*comm.before, label("{} {} tp {}", full.name, pass, collectives::to_string(comm.before->op)),
                      deps);
  if (experts) expert_all_to_all(i, forward, forward, deps);
  run_priced(pass_cost(i, forward), label("{} {}", full.name, pass), deps);
  if (experts) expert_all_to_all(i, forward, !forward, deps);
  if (comm.after)
    tensor_collective(*comm.after, label("{} {} tp {}", full.name, pass, collectives::to_string(comm.after->op)), deps);
}

const PricedOp& ModelParallelPlanner::pass_cost(std::size_t i, bool forward) {
  auto& slot = costs_[coord_.ep][i][forward ? 0 : 1];
  if (!slot) {
    const auto local = local_layer(i);
    auto cost = forward ? forward_cost(local, context_) : backward_cost(local, context_);
    cost = split_gemm_rows(std::move(cost), forward ? kForwardGemm : kDataGradientGemm, overlap_chunks(i, forward),
                           context_);
    slot = PricedOp(std::move(cost), chunk_gpu(chunk_of_layer_[i]));
  }
  return *slot;
}

// Transformer Engine's userbuffers with their defaults (initialize_ub, transformer_engine/pytorch/module/base.py): a
// column-parallel layer's forward GEMM (qkv, fc1 and the gate fused into it) runs beside its all-gather as a ring
// exchange of tensor-size chunks, a row-parallel layer's (proj, fc2) beside its reduce-scatter as a pipeline of 4, and
// a row-parallel layer's data gradient beside its all-gather as a ring exchange; the other backward GEMMs overlap in
// bulk, whole. Only a block's dense layers are Transformer Engine's (the LM head is Megatron's own
// ColumnParallelLinear; experts run grouped GEMMs). 1: the GEMM runs whole.
int ModelParallelPlanner::overlap_chunks(std::size_t i, bool forward) const {
  const auto& layer = s_.model.workload.layers[i];
  if (!spec_.overlap.tensor || spec_.tensor <= 1 || layer.block < 0 || layer.moe.experts > 0) return 1;
  using models::TensorSplit;
  const auto split = layer.tensor_split;
  const bool column = split == TensorSplit::column || split == TensorSplit::column_shared;
  constexpr int kPipelineSplits = 4;
  if (forward) return column ? spec_.tensor : split == TensorSplit::row ? kPipelineSplits : 1;
  return split == TensorSplit::row ? spec_.tensor : 1;
}

void ModelParallelPlanner::run_priced(const PricedOp& op, const std::string& name, std::vector<std::uint32_t>& deps) {
  add_compute(name, op.run(timeline_, rank_ == 0 ? &kernels_ : nullptr), op.flops, op.bytes, deps);
}

// This rank's share of layer i: an expert layer (and the activation after it) computes the tokens routing sent to
// this rank's experts.
models::Layer ModelParallelPlanner::local_layer(std::size_t i) const {
  models::Layer l = shared_[i];
  const bool activation = i > 0 && routing_.count(i - 1) && l.kind == models::LayerKind::elementwise;
  const auto found = routing_.find(activation ? i - 1 : i);
  if (found == routing_.end()) return l;
  const auto& experts = s_.model.workload.layers[found->first];
  const double dense = experts.moe.top_k * tokens_per_rank_; // what the layer's FLOPs count: k tokens per token
  const double tokens = found->second.rank_tokens[coord_.ep];
  const double scale = tokens / dense;
  l.forward_flops *= scale;
  l.backward_flops *= scale;
  l.input_elements = std::llround(static_cast<double>(l.input_elements) * scale);
  l.output_elements = std::llround(static_cast<double>(l.output_elements) * scale);
  l.saved_elements = std::llround(static_cast<double>(l.saved_elements) * scale);
  if (!activation) {
    const int local = experts.moe.experts / spec_.expert;
    const auto matrices = experts.gemm.count / experts.moe.experts;
    l.gemm.count = local * matrices;
    l.gemm.m = std::max<std::int64_t>(1, std::llround(tokens / local / s_.model.batch_per_gpu));
  }
  return l;
}

std::uint32_t ModelParallelPlanner::add_op(graph::Op op) {
  program_->ops.push_back(std::move(op));
  return static_cast<std::uint32_t>(program_->ops.size() - 1);
}

// Compute-stream work. Coarse fidelity gathers consecutive work into one op (and its closed-form tensor-parallel
// time into one more) until something that is not compute-stream work comes.
void ModelParallelPlanner::add_compute(std::string name, const calibration::Stretch& work, double flops, double bytes,
                                       std::vector<std::uint32_t>& deps) {
  if (coarse()) {
    pending_.work += work;
    pending_.flops += flops;
    pending_.bytes += bytes;
    pending_.deps.insert(pending_.deps.end(), deps.begin(), deps.end());
    deps.clear();
    return;
  }
  last_compute_ = add_op(graph::Op{std::move(name), Stream::compute,
                                   graph::Compute{work.seconds, flops, bytes, work.math_seconds, work.joules},
                                   std::exchange(deps, {})});
}

std::uint32_t ModelParallelPlanner::flush() {
  if (!coarse() || pending_.empty()) return last_compute_.value_or(0);
  auto deps = std::move(pending_.deps);
  if (pending_.work.seconds > 0 || pending_.flops > 0) {
    const auto& w = pending_.work;
    last_compute_ = add_op(graph::Op{
        "compute", Stream::compute, graph::Compute{w.seconds, pending_.flops, pending_.bytes, w.math_seconds, w.joules},
        std::exchange(deps, {})});
  }
  if (pending_.tensor_seconds > 0)
    last_compute_ = add_op(graph::Op{"tensor-parallel collectives (closed form)", Stream::compute,
                                     graph::Compute{pending_.tensor_seconds, 0, 0}, std::move(deps), 1, Axis::tensor});
  pending_ = {};
  return *last_compute_;
}

// The optimizer over this rank's (ZeRO: its shard of the) parameters; ZeRO-1 and -2 then all-gather the updated
// weights (Megatron's distributed optimizer).
void ModelParallelPlanner::add_step() {
  if (rank_ == 0) pass_kernels_ = kernels_.rows();
  const bool sharded = s_.training.zero_stage >= 1;
  const int p = spec_.pipeline;
  const auto own = stage_parameters(coord_.pp);
  // Bamboo: this stage also keeps its successor's replica current (successor's gradients in, its own out).
  const bool shadows = redundant();
  const auto successor = shadows ? stage_parameters((coord_.pp + 1) % p) : StageParameters{};
  auto deps = finalize_gradients();
  std::optional<std::uint32_t> replica;
  if (shadows) { // the reduced gradients to the shadow (the previous stage), the successor's from it
    GridCoord prev = coord_, next = coord_;
    prev.pp = (coord_.pp + p - 1) % p;
    next.pp = (coord_.pp + 1) % p;
    point_to_point(layout_.rank(prev), own.stepped * reduced_gradient_bytes(), true,
                   "send gradients to the shadow stage", deps);
    replica = point_to_point(layout_.rank(next), successor.stepped * reduced_gradient_bytes(), false,
                             "recv the successor's gradients", {});
  }
  run_priced(PricedOp(iteration_passes(own.stepped, own.tensors, s_), stage_gpu(coord_.pp)), "optimizer step", deps);
  if (shadows) {
    std::vector<std::uint32_t> after{*replica};
    run_priced(PricedOp(iteration_passes(successor.stepped, successor.tensors, s_), stage_gpu(coord_.pp)),
               "redundant optimizer step", after);
  }
  const auto done = flush();
  if (!sharded || s_.training.zero_stage >= 3 || spec_.overlap.param_gather) return;
  const double weight = working_weight_bytes(s_.model.precision);
  const auto& g = rank_groups_[rank_];
  const auto gather = [&](double bytes, int group, const char* what) {
    if (bytes <= 0 || group < 0) return;
    add_collective(Operation::all_gather, bytes, group, fmt::format("allgather updated {} weights", what), {done},
                   Stream::comm, Axis::data);
  };
  gather(own.dense * weight, g.data, "dense");
  gather(own.experts * weight, g.expert_data, "expert");
  if (!shadows) return;
  gather(successor.dense * weight, g.data, "redundant dense");
  gather(successor.experts * weight, g.expert_data, "redundant expert");
}

ModelParallelPlanner::StageParameters ModelParallelPlanner::stage_parameters(int stage) const {
  StageParameters out;
  for (int c = stage; c < static_cast<int>(chunk_units_.size()); c += spec_.pipeline)
    for (auto u : chunk_units_[c]) {
      out.dense += unit_params_[u].dense;
      out.experts += unit_params_[u].experts;
      for (auto i : units_[u])
        out.tensors += shared_[i].parameters > 0 ? 1 : 0;
    }
  const double expert_replicas = static_cast<double>(layout_.data()) / layout_.expert();
  out.stepped = s_.training.zero_stage >= 1 ? out.dense / layout_.gradient_replicas() + out.experts / expert_replicas
                                            : out.dense + out.experts;
  return out;
}

bool ModelParallelPlanner::redundant() const {
  // A layout without a pipeline (dtsim search tries them) has no successor to shadow.
  return spec_.pipeline > 1 && s_.lifecycle.spot.enabled &&
         s_.lifecycle.spot.policy == lifecycle::SpotPolicy::redundancy;
}

// Bamboo's eager forward redundant computation: the successor's layers on the activations just sent to it. Their
// activations are not kept: the backward that would need them runs only after a failover (Bamboo's lazy backward).
void ModelParallelPlanner::redundant_forward(int chunk, std::uint32_t after) {
  std::vector<std::uint32_t> deps{after};
  redundant_pass_ = true;
  for (auto u : chunk_units_[chunk])
    for (auto i : units_[u])
      run_layer(i, true, deps);
  redundant_pass_ = false;
  flush();
}

bool ModelParallelPlanner::sharded_weights() const {
  return s_.training.zero_stage >= 3 && layout_.gradient_replicas() > 1;
}

} // namespace dtsim::plan::detail
