// The communication of large-model parallelism's programs: pipeline transfers, tensor-parallel collectives (replayed,
// or in closed form under coarse fidelity), MoE all-to-alls, gradient reductions and ZeRO-3's gathers.
#include "sim/collectives/closed_form.hpp"
#include "sim/graph/collective_request.hpp"
#include "sim/plan/model_parallel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <utility>

namespace dtsim::plan::detail {

using collectives::Operation;
using graph::Axis;
using graph::Stream;

// A stage boundary's activations (or their gradients), from virtual stage `boundary` to the next: the last op's
// output of the micro-batch, a t-th per tensor-parallel rank (Megatron's scatter-gather, Narayanan et al. 2021
// section 4.1; the all-gather over NVLink after it is left out).
std::uint32_t ModelParallelPlanner::send_recv(int peer, int boundary, bool send, std::string name,
                                              std::vector<std::uint32_t> deps, Stream stream) {
  const auto& layer = s_.model.workload.layers.at(units_.at(chunk_units_.at(boundary).back()).back());
  const double bytes = static_cast<double>(layer.output_elements) * s_.model.batch_per_gpu *
                       calibration::activation_bytes(s_.model.precision) / spec_.tensor / spec_.context;
  return point_to_point(peer, bytes, send, std::move(name), std::move(deps), stream);
}

std::uint32_t ModelParallelPlanner::point_to_point(int peer, double bytes, bool send, std::string name,
                                                   std::vector<std::uint32_t> deps, Stream stream) {
  const bool crosses = peer / s_.cluster.gpus_per_node != rank_ / s_.cluster.gpus_per_node;
  if (coarse() && crosses) bytes *= nic_share();
  return add_op(
      graph::Op{std::move(name), stream, graph::SendRecv{peer, bytes, send}, std::move(deps), 1, Axis::pipeline});
}

std::uint32_t ModelParallelPlanner::add_collective(Operation op, double bytes, int group, std::string name,
                                                   std::vector<std::uint32_t> deps, Stream stream, Axis axis,
                                                   std::shared_ptr<const std::vector<double>> matrix) {
  // Coarse fidelity: a simulated rank's traffic through its NIC is also that of the tensor ranks it stands for (a
  // matrix comes scaled already).
  const double share = coarse() && crosses_nodes(group) ? nic_share() : 1;
  graph::Collective c;
  c.op = op;
  c.bytes = bytes * share;
  c.stands_for = share;
  c.group = group;
  c.algorithm = collectives::Algorithm::automatic;
  c.aggregate = s_.run.fidelity != scenario::Fidelity::step;
  c.reduce_seconds_per_byte = s_.gpu.reduce_seconds_per_byte();
  // The algorithm does not depend on an all-to-all-v's matrix: resolved without copying it into the request (for
  // each member's op of 128 experts' dispatches, that copy was most of the plan's time).
  c.algorithm = graph::resolved_request(c, graph_->groups.at(group), s_.cluster).algorithm;
  c.matrix = std::move(matrix);
  const auto index = add_op(graph::Op{std::move(name), stream, c, std::move(deps), 1, axis});
  if (stream == Stream::compute) last_compute_ = index;
  return index;
}

// One call's bytes: the micro-batch's elements at the precision they cross the wire in.
double ModelParallelPlanner::tensor_bytes(const TensorCollective& t) const {
  const double element = t.element_bytes > 0 ? t.element_bytes : calibration::activation_bytes(s_.model.precision);
  return t.elements / t.calls / spec_.context * s_.model.batch_per_gpu * element; // this rank's tokens
}

void ModelParallelPlanner::tensor_collective(const TensorCollective& t, const std::string& name,
                                             std::vector<std::uint32_t>& deps) {
  const double bytes = tensor_bytes(t);
  for (int call = 0; call < t.calls; ++call) {
    synchronizes(spec_.tensor);
    if (!coarse()) {
      deps = {add_collective(t.op, bytes, rank_groups_[rank_].tensor, name, std::exchange(deps, {}), Stream::compute,
                             Axis::tensor)};
      continue;
    }
    pending_.tensor_seconds += tensor_closed_form(t.op, bytes).seconds;
  }
  if (!coarse()) {
    deps.clear();
    return;
  }
  pending_.deps.insert(pending_.deps.end(), deps.begin(), deps.end());
  deps.clear();
}

TensorClosedForm tensor_collective_closed_form(Operation op, double bytes, int tensor,
                                               const topologies::ClusterSpec& fabric,
                                               const calibration::GpuProfile& gpu) {
  graph::Collective c;
  c.op = op;
  c.bytes = bytes;
  std::vector<int> members(tensor);
  std::iota(members.begin(), members.end(), 0); // a node's first GPUs: every tensor-parallel group looks alike
  const auto request = graph::resolved_request(c, members, fabric);
  // A message crosses two fabric links through an NVSwitch (GPU to switch to GPU), one between mesh or PCIe peers.
  const bool nvswitch = fabric.intra_kind == topologies::IntraNodeKind::nvlink;
  const double alpha = fabric.intra.latency * (nvswitch ? 2 : 1);
  const auto link = request.nccl.nvlink ? collectives::LinkClass::nvlink : collectives::LinkClass::pcie;
  const auto wire = collectives::wire_model(request);
  TensorClosedForm form;
  form.seconds = collectives::closed_form_time(
      request, wire, link, alpha, fabric.intra.bandwidth * fabric.fabric_efficiency, gpu.reduce_seconds_per_byte());
  form.sm_share = collectives::sm_share(wire, fabric.compute_units); // as the engine holds them
  return form;
}

// Coarse fidelity: a tensor-parallel collective inside the node, by the closed form of the algorithm NCCL would run
// on the intra-node fabric (collectives/closed_form.hpp), priced once per (operation, bytes).
TensorClosedForm ModelParallelPlanner::tensor_closed_form(Operation op, double bytes) {
  const auto key = std::make_pair(static_cast<int>(op), bytes);
  if (const auto found = closed_forms_.find(key); found != closed_forms_.end()) return found->second;
  return closed_forms_.emplace(key, tensor_collective_closed_form(op, bytes, spec_.tensor, s_.cluster, s_.gpu))
      .first->second;
}

// Tokens to the ranks of their experts (dispatch) or back (combine); in backward the gradients go the other way.
void ModelParallelPlanner::expert_all_to_all(std::size_t i, bool forward, bool dispatch,
                                             std::vector<std::uint32_t>& deps) {
  const auto& routing = routing_.at(i);
  const auto& layer = s_.model.workload.layers[i];
  const int ep = spec_.expert;
  const int group = rank_groups_[rank_].expert;
  const double token_bytes = static_cast<double>(layer.gemm.k) * calibration::activation_bytes(s_.model.precision);
  const bool outward = dispatch == forward;
  const double share = coarse() && crosses_nodes(group) ? nic_share() : 1;
  auto& matrix = expert_matrices_[{i, outward, share}];
  if (!matrix) {
    std::vector<double> bytes(routing.matrix.size());
    for (int a = 0; a < ep; ++a)
      for (int b = 0; b < ep; ++b)
        bytes[a * ep + b] = share * token_bytes * (outward ? routing.matrix[a * ep + b] : routing.matrix[b * ep + a]);
    matrix = std::make_shared<const std::vector<double>>(std::move(bytes));
  }
  synchronizes(ep);
  flush();
  // The mean bytes a position sends, before the NIC share (add_collective applies it).
  const double bytes = std::accumulate(matrix->begin(), matrix->end(), 0.0) / ep / share;
  add_collective(Operation::all_to_all_v, bytes, group,
                 fmt::format("{} {} {}", layer.name, dispatch ? "dispatch" : "combine", forward ? "fwd" : "bwd"),
                 std::exchange(deps, {}), Stream::compute, Axis::expert, matrix);
}

// The gradients of the bucket just closed, over the data-parallel ranks (dense weights) and the expert-data ranks
// (experts): all-reduced, or reduce-scattered under ZeRO.
void ModelParallelPlanner::reduce_gradients(std::uint32_t after) {
  const auto op = s_.training.zero_stage >= 1 ? Operation::reduce_scatter : Operation::all_reduce;
  const auto& g = rank_groups_[rank_];
  const auto reduce = [&](double bytes, int group, const char* what) {
    if (bytes <= 0 || group < 0) return;
    if (rank_ == 0) ++buckets_;
    reductions_.push_back(add_collective(op, bytes, group,
                                         fmt::format("{} gradients bucket {}", what, reductions_.size()), {after},
                                         Stream::comm, Axis::data));
  };
  reduce(bucket_dense_, g.data, "dense");
  reduce(bucket_expert_, g.expert_data, "expert");
  bucket_dense_ = bucket_expert_ = 0;
}

// ZeRO-3: the unit's weights all-gathered over the data-parallel ranks before it runs, at most two units held (the
// gather of unit u waits for the compute of the unit two before it: one computing, one prefetched).
std::uint32_t ModelParallelPlanner::gather_unit(std::size_t unit) {
  std::vector<std::uint32_t> deps;
  if (unit_compute_.size() >= 2) deps.push_back(unit_compute_[unit_compute_.size() - 2]);
  const double weight = working_weight_bytes(s_.model.precision);
  const double bytes = unit_params_[unit].total() * weight;
  const int group = rank_groups_[rank_].data;
  if (group < 0 || bytes <= 0) return flush();
  return add_collective(Operation::all_gather, bytes, group, fmt::format("allgather unit {} weights", unit),
                        std::move(deps), Stream::comm, Axis::data);
}

// Coarse fidelity: the tensor-parallel ranks one simulated rank stands for that share its NIC (their traffic goes
// through it too). On a rail network each GPU has its own NIC and the share is 1.
double coarse_nic_share(int tensor, const topologies::ClusterSpec& c) {
  return std::max(1, std::min(tensor, c.gpus_per_node / c.nics_per_node()));
}

double ModelParallelPlanner::nic_share() const {
  return coarse_nic_share(spec_.tensor, s_.cluster);
}

bool ModelParallelPlanner::crosses_nodes(int group) const {
  const auto& members = graph_->groups.at(group);
  const int gpn = s_.cluster.gpus_per_node;
  return std::any_of(members.begin(), members.end(), [&](int r) { return r / gpn != members.front() / gpn; });
}

} // namespace dtsim::plan::detail

namespace dtsim::plan::detail {

// Megatron-Core's --tp-comm-overlap (Transformer Engine's userbuffers): the GEMM runs in t chunks, each chunk's part
// of the all-gather or reduce-scatter exchanged under another chunk's GEMM, so one chunk of GEMM (an all-gather's last,
// a reduce-scatter's first) stays outside the exchange: max(c, g (t-1)/t) + g/t, the GEMM slowed by the SMs the
// exchange holds while both run. An op with a collective on both sides (a column-parallel op's backward: the input's
// all-gather under the data-gradient GEMM, the data gradient's reduce-scatter under the weight-gradient GEMM) splits
// its time between them. Ring attention overlaps its K/V exchange with its context blocks the same way.
void ModelParallelPlanner::overlapped_layer(const PricedOp& op, const std::vector<Exchange>& parts, bool context,
                                            const std::string& name, std::vector<std::uint32_t>& deps) {
  const auto work = op.run(timeline_, rank_ == 0 ? &kernels_ : nullptr);
  const double t = context ? spec_.context : spec_.tensor, share = 1.0 / static_cast<double>(parts.size());
  const double g = work.seconds * share, flops = op.flops * share, bytes = op.bytes * share;
  const auto part = [&](double f) { // f of this exchange's share of the op's work
    return calibration::Stretch{g * f, work.math_seconds * share * f, work.joules * share * f};
  };
  const int group = context ? rank_groups_[rank_].context : rank_groups_[rank_].tensor;
  const auto axis = context ? Axis::context : Axis::tensor;
  for (const auto& c : parts) {
    for (int call = 0; call < c.calls; ++call)
      synchronizes(context ? spec_.context : spec_.tensor);
    const std::string what = label("{} {} {} (overlapped)", name, context ? "cp" : "tp", collectives::to_string(c.op));
    if (coarse() && !context) { // tensor-parallel groups are priced in closed form
      const auto form = tensor_closed_form(c.op, c.bytes);
      const double exchange = form.seconds * c.calls, inside = g * (t - 1) / t;
      const double pair = std::max(exchange, inside + form.sm_share * exchange) + g / t;
      add_compute(name, part(1), flops, bytes, deps);
      pending_.tensor_seconds += pair - g;
      continue;
    }
    if (coarse()) deps.push_back(flush());
    std::vector<std::uint32_t> after = deps;
    for (int call = 0; call < c.calls; ++call)
      after = {add_collective(c.op, c.bytes, group, what, std::move(after), Stream::tensor, axis)};
    add_compute(name, part((t - 1) / t), flops * (t - 1) / t, bytes * (t - 1) / t, deps);
    deps = {flush(), after.front()};
    add_compute(name, part(1 / t), flops / t, bytes / t, deps);
    if (coarse()) flush();
  }
}

// Context parallelism around the attention core (the ops around it compute their own tokens). Ring attention (p2p)
// passes each rank's K and V around the group, context - 1 steps under the attention blocks: an all-gather of the
// sequence's K and V in forward, and in backward the K and V again with their gradients going back (a reduce-scatter).
// DeepSpeed-Ulysses (a2a) all-to-alls Q, K and V from a sequence split to a head split before the core and its output
// back after it (the gradients the other way in backward), blocking, as DeepSpeed runs them.
void ModelParallelPlanner::context_attention(std::size_t i, bool forward, const std::string& name,
                                             std::vector<std::uint32_t>& deps) {
  const auto& full = s_.model.workload.layers[i];
  const double e = calibration::activation_bytes(s_.model.precision);
  const double b = s_.model.batch_per_gpu, t = spec_.tensor, cp = spec_.context;
  const auto& op = pass_cost(i, forward);
  if (spec_.context_comm == scenario::ContextComm::p2p) {
    // K and V of the whole sequence, this rank's heads: the core reads Q, K, V and writes what Q reads.
    const double kv = static_cast<double>(full.input_elements - full.output_elements) / t * b * e;
    std::vector<Exchange> parts{{Operation::all_gather, kv}};
    if (!forward) parts.push_back({Operation::reduce_scatter, kv});
    overlapped_layer(op, parts, true, name, deps);
    return;
  }
  const double in = static_cast<double>(full.input_elements) / t / cp * b * e;
  const double out = static_cast<double>(full.output_elements) / t / cp * b * e;
  const auto all_to_all = [&](double bytes, const char* what) {
    synchronizes(spec_.context);
    flush();
    add_collective(Operation::all_to_all, bytes, rank_groups_[rank_].context, label("{} cp all-to-all {}", name, what),
                   std::exchange(deps, {}), Stream::compute, Axis::context);
  };
  all_to_all(forward ? in : out, forward ? "q k v" : "output gradient");
  run_priced(op, name, deps);
  all_to_all(forward ? out : in, forward ? "output" : "q k v gradients");
}

// After the last backward: the gradient buckets not reduced under it, then what Megatron-LM's finalize_model_grads
// adds: the tied embedding's gradient all-reduced between the first and last stage, which both hold the word
// embeddings (Narayanan et al. 2021; _allreduce_embedding_grads), and, where gradients are clipped, their norm: one
// fp32 all-reduced over the ranks that hold parts of one model copy (get_grad_norm_fp32; with the distributed optimizer
// every rank, each holding a shard of the gradients). Returns what the optimizer waits for.
std::vector<std::uint32_t> ModelParallelPlanner::finalize_gradients() {
  const auto end = flush();
  for (const auto& [dense, expert] : deferred_) {
    bucket_dense_ = dense;
    bucket_expert_ = expert;
    reduce_gradients(end);
  }
  deferred_.clear();
  auto deps = reductions_;
  deps.push_back(end);
  const auto& g = rank_groups_[rank_];
  const auto transformer = scenario::transformer_of(s_.model);
  if (g.embedding >= 0 && transformer) {
    const double words = static_cast<double>(transformer->vocabulary * transformer->hidden) / spec_.tensor;
    deps = {add_collective(Operation::all_reduce, words * reduced_gradient_bytes(), g.embedding,
                           "allreduce tied embedding gradients", std::move(deps), Stream::comm, Axis::pipeline)};
  }
  if (g.model >= 0 && s_.clips_gradients())
    deps = {add_collective(Operation::all_reduce, 4, g.model, "allreduce gradient norm", std::move(deps), Stream::comm,
                           Axis::data)};
  return deps;
}

// --overlap-param-gather: the distributed optimizer's updated weights are all-gathered unit by unit at the start of the
// next iteration, each unit's forward waiting only for its own (Megatron-Core's forward pre-hooks), instead of all of
// them after the step.
void ModelParallelPlanner::gather_parameters_ahead() {
  gathers_.clear();
  if (!spec_.overlap.param_gather) return;
  const double weight = working_weight_bytes(s_.model.precision);
  const auto& g = rank_groups_[rank_];
  for (int c = coord_.pp; c < static_cast<int>(chunk_units_.size()); c += spec_.pipeline)
    for (auto u : chunk_units_[c]) {
      const auto gather = [&](double params, int group, const char* what) {
        if (params <= 0 || group < 0) return;
        gathers_[u].push_back(add_collective(Operation::all_gather, params * weight, group,
                                             fmt::format("allgather unit {} updated {} weights", u, what), {},
                                             Stream::comm, Axis::data));
      };
      gather(unit_params_[u].dense, g.data, "dense");
      gather(unit_params_[u].experts, g.expert_data, "expert");
    }
}

// The framework version's rule (calibration::Framework::reduced_gradient_bytes: Megatron-LM reduces bf16 and fp8
// training's gradients in fp32, arguments.py: "bfloat16 requires gradient accumulation and all-reduce to be done in
// fp32"), unless told --grad-reduce-in-bf16 (Megatron-Core 0.12).
double reduced_gradient_bytes(const scenario::Scenario& s, const scenario::ParallelismSpec& spec) {
  const auto p = s.model.precision;
  if (spec.grad_reduce_in_bf16) return calibration::gradient_bytes(p);
  return s.framework.reduced_gradient_bytes(p);
}

double ModelParallelPlanner::reduced_gradient_bytes() const {
  return detail::reduced_gradient_bytes(s_, spec_);
}

} // namespace dtsim::plan::detail
