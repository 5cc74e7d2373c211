#include "sim/graph/collective_request.hpp"

#include <algorithm>

namespace dtsim::graph {

collectives::NcclSystem nccl_system(const topologies::ClusterSpec& c) {
  collectives::NcclSystem s;
  s.compute_capability = c.compute_capability;
  s.version = c.nccl_version;
  if (!s.present()) return s;
  using topologies::IntraNodeKind;
  s.nvlink = c.intra_kind == IntraNodeKind::nvlink || c.intra_kind == IntraNodeKind::hybrid_cube_mesh;
  s.nvswitch = c.intra_kind == IntraNodeKind::nvlink;
  // A cube-mesh link is one of a GPU's six NVLinks; NCCL's rings use them all.
  const double links = c.intra_kind == IntraNodeKind::hybrid_cube_mesh ? 6 : 1;
  s.gpu_bandwidth = c.intra.bandwidth * links * c.fabric_efficiency;
  s.nics = std::max(1, c.nic_ports);
  s.nic_bandwidth = c.slowest_nic().bandwidth / s.nics; // NCCL's ring moves at its slowest link's pace
  // A channel that leaves the node crosses PCIe between its GPU and the NIC, and NCCL's search takes each channel's
  // speed from every link on that path (search.cc, ncclTopoSearchTryGpu -> ncclTopoFollowPath; a PCIe link counted
  // at topo.cc's kvDictPciGen rate, the profile's pcie_efficiency): a NIC faster than PCIe gets no more channels.
  if (c.pcie.bandwidth > 0) s.nic_bandwidth = std::min(s.nic_bandwidth, c.pcie.bandwidth * c.pcie_efficiency);
  s.nvls = c.nvswitch_reduces;
  s.collnet = c.switch_reduces;
  return s;
}

collectives::Request collective_request(const Collective& c, const std::vector<int>& members,
                                        const topologies::ClusterSpec& cluster) {
  collectives::Request r;
  r.op = c.op;
  r.algorithm = c.algorithm;
  r.protocol = c.protocol;
  r.ranks = static_cast<int>(members.size());
  r.bytes = c.bytes;
  r.root = c.root;
  if (c.matrix) r.matrix = *c.matrix;
  r.node_switch_reduces = cluster.nvswitch_reduces;
  r.network_switch_reduces = cluster.switch_reduces;
  for (int member : members)
    r.node_of.push_back(cluster.node_of(member));
  r.nccl = nccl_system(cluster);
  return r;
}

collectives::Request resolved_request(const Collective& c, const std::vector<int>& members,
                                      const topologies::ClusterSpec& cluster) {
  if (c.stands_for == 1) return collectives::resolve(collective_request(c, members, cluster));
  // NCCL chooses for the bytes one rank posts; the request then carries the bytes of every rank it stands for.
  // (The choice does not depend on an all-to-all-v's matrix: left out rather than copied and scaled.)
  auto one = c;
  one.bytes = c.bytes / c.stands_for;
  one.matrix = nullptr;
  auto request = collectives::resolve(collective_request(one, members, cluster));
  request.bytes = c.bytes;
  if (c.matrix) request.matrix = *c.matrix;
  return request;
}

collectives::WireModel wire_model(const Collective& c, const collectives::Request& resolved) {
  if (c.stands_for == 1) return collectives::wire_model(resolved);
  auto one = resolved;
  one.bytes = c.bytes / c.stands_for;
  one.matrix.clear();
  auto wire = collectives::wire_model(one);
  wire.rate_cap *= c.stands_for;
  return wire;
}

} // namespace dtsim::graph
