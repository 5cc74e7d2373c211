// From NCCL's choice to what the engine applies to a collective's flows (nccl.hpp), and the resolution of
// `automatic` algorithms and protocols.
#include "sim/collectives/detail.hpp"
#include "sim/collectives/nccl.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <stdexcept>

namespace dtsim::collectives {
namespace {

int node_count(const Request& r) {
  if (r.node_of.empty()) return r.ranks;
  return static_cast<int>(std::set<int>(r.node_of.begin(), r.node_of.end()).size());
}

// The functions NCCL's tuning prices; the rest run over its point-to-point channels (all-to-all, send/recv) or are
// MPI's (barrier).
bool tuned(Operation op) {
  return op == Operation::all_reduce || op == Operation::reduce_scatter || op == Operation::all_gather ||
         op == Operation::broadcast || op == Operation::reduce;
}

NcclTuning tuning_of(const Request& r) {
  return NcclTuning(r.op, r.ranks, node_count(r), r.nccl);
}

} // namespace

Algorithm replayed_as(NcclAlgorithm algorithm) {
  switch (algorithm) {
  case NcclAlgorithm::ring:
    return Algorithm::ring;
  case NcclAlgorithm::tree:
    return Algorithm::double_binary_tree;
  default:
    return Algorithm::in_switch;
  }
}

std::optional<NcclAlgorithm> nccl_algorithm(const Request& r, Algorithm algorithm) {
  if (!tuned(r.op)) return std::nullopt;
  switch (algorithm) {
  case Algorithm::ring:
    return NcclAlgorithm::ring;
  case Algorithm::double_binary_tree:
    return NcclAlgorithm::tree;
  case Algorithm::in_switch: {
    if (node_count(r) == 1) return NcclAlgorithm::nvls;
    const bool direct = r.nccl.nvswitch && r.ranks <= 8 * node_count(r);
    return direct ? NcclAlgorithm::collnet_direct : NcclAlgorithm::collnet_chain;
  }
  default:
    return std::nullopt;
  }
}

Request resolve(Request r) {
  if (r.protocol != Protocol::automatic && !r.nccl.present())
    throw std::invalid_argument(
        fmt::format("protocol {} is NCCL's; these ranks are not GPUs running NCCL", to_string(r.protocol)));
  if (!r.nccl.present() || !tuned(r.op) || r.ranks <= 1) {
    if (r.algorithm == Algorithm::automatic) r.algorithm = choose_algorithm(r);
    if (r.protocol == Protocol::automatic) r.protocol = Protocol::simple;
    return r;
  }
  const NcclTuning tuning = tuning_of(r);
  if (r.algorithm == Algorithm::automatic) {
    const auto choice = tuning.choose(r.bytes, std::nullopt, r.protocol);
    r.algorithm = replayed_as(choice.algorithm);
    r.protocol = choice.protocol;
    return r;
  }
  if (const auto algorithm = nccl_algorithm(r, r.algorithm)) {
    // A forced algorithm NCCL would not offer here keeps the requested protocol (Simple by default): make_schedule
    // says why the cluster cannot run it, in dtsim's terms.
    try {
      r.protocol = tuning.choose(r.bytes, *algorithm, r.protocol).protocol;
    } catch (const std::invalid_argument&) {
      if (r.protocol == Protocol::automatic) r.protocol = Protocol::simple;
    }
    return r;
  }
  if (r.protocol == Protocol::automatic) r.protocol = Protocol::simple;
  return r;
}

WireModel wire_model(const Request& r) {
  WireModel m;
  m.protocol = r.protocol == Protocol::automatic ? Protocol::simple : r.protocol;
  m.wire_factor = wire_factor(m.protocol);
  if (!r.nccl.present() || r.ranks <= 1) return m;
  const int nodes = node_count(r);
  // Operations NCCL does not tune run over its point-to-point channels: priced as a ring's steps.
  const NcclTuning tuning(tuned(r.op) ? r.op : Operation::all_gather, r.ranks, nodes, r.nccl);
  const auto algorithm = nccl_algorithm(r, r.algorithm);
  const NcclAlgorithm priced = algorithm.value_or(NcclAlgorithm::ring);
  m.eager_sends = algorithm.has_value();
  m.channels = tuning.channels(priced, m.protocol, r.bytes);
  m.base_latency = tuning.base_latency(priced, m.protocol);
  for (auto link : {LinkClass::nvlink, LinkClass::pcie, LinkClass::network})
    m.step_latency[static_cast<int>(link)] = tuning.step_latency(priced, m.protocol, link);
  if (priced == NcclAlgorithm::nvls || priced == NcclAlgorithm::collnet_direct ||
      priced == NcclAlgorithm::collnet_chain) {
    // In-switch reductions: NCCL's latency is the stream's, once (its steps are one pipeline), and their flows reach
    // nvlsEfficiency of the links (tuning.cc: NVLS bandwidth x 0.85 on Hopper; CollNet x 0.85 on Hopper and newer).
    m.base_latency += tuning.latency(priced, m.protocol);
    m.step_latency = {};
    const double efficiency = tuning.nvls_efficiency();
    if (efficiency > 0) m.wire_factor /= efficiency;
    return m;
  }
  if (!algorithm) return m; // the links bound them
  // The rate the call's channels can push, in data bytes/s: the ring graph's channels x speed, cut by the protocol's
  // limits (tuning.cc's model refinements). Not scaled down to the channels a small call runs on: enqueue.cc drops
  // channels only while each thread would carry under its threshold, where the call is latency, and NCCL's own model
  // prices such calls at this whole rate too.
  const NcclGraph& graph = priced == NcclAlgorithm::tree ? tuning.tree_graph() : tuning.ring_graph();
  const double total =
      graph.channels * (priced == NcclAlgorithm::tree ? tuning.tree_channel_speed() : tuning.channel_bandwidth());
  double data = total;
  if (priced == NcclAlgorithm::ring) {
    if (m.protocol == Protocol::ll) data = std::min(tuning.ll_max_bandwidth(), total * 0.5);
    if (m.protocol == Protocol::ll128)
      data = std::min(total * 0.92, graph.channels * tuning.ll128_channel_bandwidth(priced));
  } else { // tree
    data = std::min(total * 0.92, graph.channels * tuning.tree_channel_bandwidth());
    if (m.protocol == Protocol::ll) data = std::min(data / 3.8, tuning.ll_max_bandwidth());
    if (m.protocol == Protocol::ll128)
      data = std::min(data * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                      graph.channels * tuning.ll128_channel_bandwidth(priced));
  }
  // Simple on every channel is what the links carry: no cap of its own.
  if (m.protocol != Protocol::simple || priced == NcclAlgorithm::tree) m.rate_cap = data * m.wire_factor;
  return m;
}

double sm_share(const WireModel& wire, int compute_units) {
  if (compute_units <= 0 || wire.channels <= 0) return 0;
  return std::min(0.5, static_cast<double>(wire.channels) / compute_units);
}

} // namespace dtsim::collectives
