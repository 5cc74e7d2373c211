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

// Layout (all links full duplex, tracked as their UP and DOWN halves, created from topologies::build_network's
// edges and named as they are there; a link that ends at a GPU carries half the per-message software overhead
// for that GPU, so GPU-to-GPU messages pay it once):
//   single switch and tiers: nested StarZones (a switch's children, its backplane carrying the switch latency,
//     one aggregated uplink per switch); each node a FullZone whose routes are the graph Router's inside-node
//     routes (GPU to GPU over the fabric or PCIe, GPU to the NIC router over PCIe);
//   torus and ring: SimGrid's TorusZone with those node zones as its points;
//   networks with every switch drawn (spines, k-ary fat-trees, rails, dragonflies, explicit): one GraphZone
//     (graph_zone.hpp) holding every host and link, routed by the Router with per-flow ECMP.
// nic_share: the ranks each GPU's network traffic stands for (graph::ExecutionGraph::nic_share); a GPU's own PCIe link
// on a node whose GPUs talk over NVLink carries only its network traffic, so it is that many times as wide.
Platform build_platform(const topologies::ClusterSpec& cluster, double nic_share = 1);

} // namespace dtsim::engine
