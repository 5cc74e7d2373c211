#pragma once
// What the engine tests share: the platform closed forms assume, the plain alpha-beta network model, and a
// graph in which every rank runs one collective.
#include "sim/engine/engine.hpp"
#include "topologies/cluster.hpp"

namespace dtsim::testing {

// The engine tests' network: 100 Gb/s NICs of 2 us latency a link, 1 us a switch crossing; a transfer between two
// nodes on one switch pays alpha = two NIC links and the switch.
constexpr double kNic = 12.5e9;
constexpr double kNicLatency = 2e-6;
constexpr double kSwitchLatency = 1e-6;
constexpr double kAlpha = 2 * kNicLatency + kSwitchLatency;

// n nodes of `gpus_per_node` GPUs whose PCIe and intra-node hops are free, so every inter-node transfer costs
// alpha = 2 * nic_latency + switch_latency plus bytes / nic_bandwidth.
inline topologies::ClusterSpec uniform_cluster(int nodes, double nic_bandwidth, double nic_latency,
                                               double switch_latency, int gpus_per_node = 1) {
  topologies::ClusterSpec c;
  c.nodes = nodes;
  c.gpus_per_node = gpus_per_node;
  c.intra_kind = topologies::IntraNodeKind::pcie;
  c.intra = {1e15, 0};
  c.pcie = {1e15, 0};
  c.nic = {nic_bandwidth, nic_latency};
  c.switch_latency = switch_latency;
  return c;
}

// CM02 without cross traffic: the alpha-beta model the closed forms are written for.
inline engine::ReplayOptions cm02_options() {
  engine::ReplayOptions o;
  o.network_model = engine::NetworkModel::cm02;
  o.cross_traffic = false;
  return o;
}

// Ranks 0..ranks-1 each run `c` once, as one group.
inline graph::ExecutionGraph one_collective(int ranks, graph::Collective c) {
  graph::ExecutionGraph g;
  c.group = 0;
  g.programs.push_back({{graph::Op{"collective", graph::Stream::comm, c, {}}}});
  g.rank_program.assign(ranks, 0);
  g.groups.emplace_back();
  for (int r = 0; r < ranks; ++r)
    g.groups[0].push_back(r);
  return g;
}

} // namespace dtsim::testing
