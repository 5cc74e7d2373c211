// The communication of large-model parallelism's programs: pipeline transfers, tensor-parallel collectives (replayed,
// or in closed form under coarse fidelity), MoE all-to-alls, gradient reductions and ZeRO-3's gathers.
#include "sim/collectives/closed_form.hpp"
#include "sim/graph/collective_request.hpp"
#include "sim/plan/model_parallel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace dtsim::plan::detail {

using collectives::Operation;
using graph::Axis;
using graph::Stream;

// A stage boundary's activations (or their gradients), from virtual stage `boundary` to the next: the last op's
// output of the micro-batch, a t-th per tensor-parallel rank (Megatron's scatter-gather, Narayanan et al. 2021
// section 4.1; the all-gather over NVLink after it is left out).
std::uint32_t ModelParallelPlanner::send_recv(int peer, int boundary, bool send, std::string name,
                                              std::vector<std::uint32_t> deps) {
  const auto& layer = s_.model.workload.layers.at(units_.at(chunk_units_.at(boundary).back()).back());
  double bytes = static_cast<double>(layer.output_elements) * s_.model.batch_per_gpu *
                 calibration::activation_bytes(s_.model.precision) / spec_.tensor;
  const bool crosses = peer / s_.cluster.gpus_per_node != rank_ / s_.cluster.gpus_per_node;
  if (coarse() && crosses) bytes *= nic_share();
  return add_op(
      graph::Op{std::move(name), Stream::p2p, graph::SendRecv{peer, bytes, send}, std::move(deps), 1, Axis::pipeline});
}

std::uint32_t ModelParallelPlanner::add_collective(Operation op, double bytes, int group, std::string name,
                                                   std::vector<std::uint32_t> deps, Stream stream, Axis axis,
                                                   std::vector<double> matrix) {
  // Coarse fidelity: a simulated rank's traffic through its NIC is also that of the tensor ranks it stands for.
  const double share = coarse() && crosses_nodes(group) ? nic_share() : 1;
  for (auto& m : matrix)
    m *= share;
  graph::Collective c;
  c.op = op;
  c.bytes = bytes * share;
  c.group = group;
  c.algorithm = collectives::Algorithm::automatic;
  c.aggregate = s_.run.fidelity != scenario::Fidelity::step;
  c.reduce_seconds_per_byte = s_.gpu.reduce_seconds_per_byte();
  c.matrix = std::move(matrix);
  auto request = graph::collective_request(c, graph_->groups.at(group), s_.cluster);
  c.algorithm = graph::resolved_algorithm(request);
  const auto index = add_op(graph::Op{std::move(name), stream, c, std::move(deps), 1, axis});
  if (stream == Stream::compute) last_compute_ = index;
  return index;
}

void ModelParallelPlanner::tensor_collective(const TensorCollective& t, const std::string& name,
                                             std::vector<std::uint32_t>& deps) {
  const double bytes = t.elements * s_.model.batch_per_gpu * calibration::activation_bytes(s_.model.precision);
  if (!coarse()) {
    add_collective(t.op, bytes, rank_groups_[rank_].tensor, name, std::exchange(deps, {}), Stream::compute,
                   Axis::tensor);
    return;
  }
  pending_.tensor_seconds += tensor_closed_form(t.op, bytes);
  pending_.deps.insert(pending_.deps.end(), deps.begin(), deps.end());
  deps.clear();
}

// Coarse fidelity: a tensor-parallel collective inside the node, by the closed form of the algorithm NCCL would run
// on the intra-node fabric (collectives/closed_form.hpp).
double ModelParallelPlanner::tensor_closed_form(Operation op, double bytes) {
  const auto key = std::make_pair(static_cast<int>(op), bytes);
  if (const auto found = closed_forms_.find(key); found != closed_forms_.end()) return found->second;
  graph::Collective c;
  c.op = op;
  c.bytes = bytes;
  std::vector<int> members(spec_.tensor);
  std::iota(members.begin(), members.end(), 0); // a node's first GPUs: every tensor-parallel group looks alike
  const auto request = collectives::resolve(graph::collective_request(c, members, s_.cluster));
  // A message crosses two fabric links through an NVSwitch (GPU to switch to GPU), one between mesh or PCIe peers.
  const auto& fabric = s_.cluster;
  const bool nvswitch = fabric.intra_kind == topologies::IntraNodeKind::nvlink;
  const double alpha = fabric.intra.latency * (nvswitch ? 2 : 1);
  const auto link = request.nccl.nvlink ? collectives::LinkClass::nvlink : collectives::LinkClass::pcie;
  const double seconds = collectives::closed_form_time(request, collectives::wire_model(request), link, alpha,
                                                       fabric.intra.bandwidth * fabric.fabric_efficiency,
                                                       s_.gpu.reduce_seconds_per_byte());
  return closed_forms_.emplace(key, seconds).first->second;
}

// Tokens to the ranks of their experts (dispatch) or back (combine); in backward the gradients go the other way.
void ModelParallelPlanner::expert_all_to_all(std::size_t i, bool forward, bool dispatch,
                                             std::vector<std::uint32_t>& deps) {
  const auto& routing = routing_.at(i);
  const auto& layer = s_.model.workload.layers[i];
  const int ep = spec_.expert;
  const int group = rank_groups_[rank_].expert;
  const double token_bytes = static_cast<double>(layer.gemm.k) * calibration::activation_bytes(s_.model.precision);
  std::vector<double> matrix(routing.matrix.size());
  const bool outward = dispatch == forward;
  for (int a = 0; a < ep; ++a)
    for (int b = 0; b < ep; ++b)
      matrix[a * ep + b] = token_bytes * (outward ? routing.matrix[a * ep + b] : routing.matrix[b * ep + a]);
  flush();
  const double bytes = std::accumulate(matrix.begin(), matrix.end(), 0.0) / ep;
  add_collective(Operation::all_to_all_v, bytes, group,
                 fmt::format("{} {} {}", layer.name, dispatch ? "dispatch" : "combine", forward ? "fwd" : "bwd"),
                 std::exchange(deps, {}), Stream::compute, Axis::expert, std::move(matrix));
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
  const double weight = calibration::activation_bytes(s_.model.precision) == 4 ? 4 : 2;
  const double bytes = unit_params_[unit].total() * weight;
  const int group = rank_groups_[rank_].data;
  if (group < 0 || bytes <= 0) return flush();
  return add_collective(Operation::all_gather, bytes, group, fmt::format("allgather unit {} weights", unit),
                        std::move(deps), Stream::comm, Axis::data);
}

// Coarse fidelity: the tensor-parallel ranks one simulated rank stands for that share its NIC (their traffic goes
// through it too). On a rail network each GPU has its own NIC and the share is 1.
double ModelParallelPlanner::nic_share() const {
  const auto& c = s_.cluster;
  return std::max(1, std::min(spec_.tensor, c.gpus_per_node / c.nics_per_node()));
}

bool ModelParallelPlanner::crosses_nodes(int group) const {
  const auto& members = graph_->groups.at(group);
  const int gpn = s_.cluster.gpus_per_node;
  return std::any_of(members.begin(), members.end(), [&](int r) { return r / gpn != members.front() / gpn; });
}

} // namespace dtsim::plan::detail
