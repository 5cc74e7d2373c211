#pragma once
// The platform closed forms assume: n nodes of `gpus_per_node` GPUs whose PCIe and intra-node hops are free,
// so every inter-node transfer costs alpha = 2 * nic_latency + switch_latency plus bytes / nic_bandwidth.
#include "topologies/cluster.hpp"

namespace dtsim::testing {

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

} // namespace dtsim::testing
