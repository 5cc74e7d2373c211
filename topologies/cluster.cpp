#include "topologies/cluster.hpp"

namespace dtsim::topologies {

std::string_view to_string(IntraNodeKind kind) {
  return kind == IntraNodeKind::nvlink ? "nvlink" : "pcie";
}

ClusterSummary summarize(const ClusterSpec& c) {
  ClusterSummary s;
  s.gpus = c.gpu_count();
  s.switches = 1;
  const int per_gpu = c.intra_kind == IntraNodeKind::nvlink ? 2 : 1; // NVLink port + PCIe link, or PCIe alone
  s.links = c.nodes * (c.gpus_per_node * per_gpu + 1);
  // Cut the nodes into two equal halves: the traffic crossing it funnels through the NICs of the smaller half.
  // Inside a single node the cut is through the GPUs' fabric ports instead.
  s.bisection_bandwidth = c.nodes > 1 ? (c.nodes / 2) * c.nic.bandwidth : (c.gpus_per_node / 2) * c.intra.bandwidth;
  return s;
}

} // namespace dtsim::topologies
