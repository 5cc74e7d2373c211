#pragma once
// Builds the SimGrid platform of a cluster. Engine-private: includes SimGrid.
#include "topologies/cluster.hpp"

#include <simgrid/s4u.hpp>
#include <unordered_map>
#include <vector>

namespace dtsim::engine {

struct Platform {
  std::vector<simgrid::s4u::Host*> gpus; // by global GPU index (node-major)
  // Endpoints of in-switch reduction: each node's NVSwitch (when it reduces) and the network switch (when it
  // reduces); empty / null otherwise.
  std::vector<simgrid::s4u::Host*> node_switches;
  simgrid::s4u::Host* network_switch = nullptr;
  std::vector<simgrid::s4u::Link*> links; // every tracked link half, in creation order
  std::unordered_map<const simgrid::s4u::Link*, int> link_index;
};

// Layout (all links full duplex, tracked as their UP and DOWN halves):
//   node zone (FullZone): GPU <-> GPU over each GPU's intra-node port (NVLink to an NVSwitch, or PCIe),
//                         GPU <-> NIC router over the GPU's PCIe link (GPUDirect RDMA); a GPU's ports carry
//                         half the per-message software overhead each, so GPU-to-GPU messages pay it once;
//   cluster zone (StarZone): every node's NIC link into one switch, modeled as a fat-pipe carrying
//                            the switch latency (a switch backplane is not the bottleneck).
Platform build_platform(const topologies::ClusterSpec& cluster);

} // namespace dtsim::engine
