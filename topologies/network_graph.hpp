#pragma once
// The cluster's network as a graph (Boost.Graph): GPUs, each node's fabric (NVSwitch, NVLink mesh, PCIe root and
// switches), NICs, network switches, and the links between them with their bandwidth and latency. It is the one
// description both `dtsim explain` and the engine use: the engine creates a SimGrid link per edge, and for the
// networks whose switches are all drawn (routed_by_graph()) it routes every flow with this file's Router.
#include "topologies/cluster.hpp"

#include <boost/graph/adjacency_list.hpp>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace dtsim::topologies {

enum class VertexKind : std::uint8_t { gpu, node_hub, pcie_switch, nic, network_switch };

struct NetworkVertex {
  std::string name;
  VertexKind kind = VertexKind::gpu;
  int node = -1; // -1 for network switches
};

// What a link is for, which decides the routes that may use it.
enum class LinkClass : std::uint8_t {
  fabric,  // GPU to GPU inside a node: NVLink ports into an NVSwitch, or NVLink between two GPUs
  pcie,    // PCIe inside a node: GPU to PCIe switch or root, PCIe switch to root
  attach,  // a NIC on its PCIe switch or root: no link of its own (the GPU's PCIe link limits that hop)
  network, // NIC to switch, switch to switch, NIC to NIC (tori)
};

struct NetworkEdge {
  std::string name;     // as the engine names the link ("gpu3-nvlink", "node0-nic")
  double bandwidth = 0; // bytes/s per direction
  double latency = 0;   // seconds
  LinkClass kind = LinkClass::network;
  int index = 0; // 0 .. edges-1, in the order the edges were added
};

using NetworkGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, NetworkVertex, NetworkEdge>;

struct NetworkModel {
  NetworkGraph graph;
  std::vector<std::size_t> gpu_vertex;              // vertex of each GPU
  std::vector<std::size_t> nic_vertex;              // vertex of each GPU's NIC
  std::vector<std::size_t> hub_vertex;              // each node's NVSwitch (nvlink) or PCIe root
  std::vector<NetworkGraph::edge_descriptor> edges; // by NetworkEdge::index
  std::size_t top_switch = SIZE_MAX; // the single switch at the top of a tree of switches, if there is one
  int gpus_per_node = 1;
  // PXN (NCCL 2.12+, NVIDIA "Doubling all2all performance with NCCL 2.12", 2022): on a rail-optimized network of
  // NVSwitch nodes, a GPU sends to a GPU on another rail through the GPU of its own node on that rail, over NVLink,
  // so that the data crosses the network on one rail and never a spine.
  bool pxn = false;
};

// Builds the graph; throws std::invalid_argument with check_network()'s message when the description is wrong.
NetworkModel build_network(const ClusterSpec& cluster);

// One link of a route and the way it is crossed: forward from the edge's source to its target (SimGrid's UP
// half of the engine's split-duplex link) or backward (DOWN).
struct Hop {
  int edge = 0;
  bool forward = true;
};

// How flows are routed:
// - inside a node, over the fabric (NVSwitch ports or direct NVLinks) when it joins the two GPUs, else over PCIe;
//   a route never passes through a GPU;
// - across nodes, from the GPU to its NIC over PCIe, then over the network's shortest paths (in links), then from
//   the NIC to the GPU; with PXN (NetworkModel::pxn), to a GPU on another rail, first over NVLink to the GPU of the
//   same node whose NIC is on the destination's rail, then from that GPU's NIC;
// - where several shortest paths exist (spines, fat-tree cores, dragonfly groups), each switch picks its next hop
//   by a hash of the two endpoints: ECMP as switches do it, per flow and the same on every run.
class Router {
public:
  explicit Router(const NetworkModel& network);
  // Between two GPUs, or a GPU and its node's hub (in-switch reduction).
  std::vector<Hop> route(std::size_t from_vertex, std::size_t to_vertex) const;
  std::vector<Hop> route_gpus(int gpu_a, int gpu_b) const;

private:
  std::vector<Hop> inside_node(std::size_t from, std::size_t to) const;
  void across_network(std::size_t from_nic, std::size_t to_nic, std::uint64_t flow, std::vector<Hop>& out) const;
  const std::vector<int>& distances_to(std::size_t nic) const;
  const std::vector<int>& switch_distances(std::size_t leaf) const;

  const NetworkModel* network_;
  std::unordered_map<std::size_t, int> gpu_of_vertex_;
  mutable std::unordered_map<std::size_t, std::vector<int>> distances_; // network hops to each destination NIC
  // Every NIC on one switch: per destination switch, hops from each switch (by switch_index_), and each NIC's switch.
  bool single_homed_ = false;
  std::vector<int> switch_index_, leaf_of_;
  mutable std::unordered_map<std::size_t, std::vector<int>> switch_distances_;
};

// The route between two GPUs as the engine takes it: its links, the narrowest bandwidth and the summed latency.
struct Path {
  std::vector<std::string> vertices;
  std::vector<std::string> links;
  double bottleneck = 0; // bytes/s
  double latency = 0;    // seconds
};
Path path_between(const NetworkModel& network, int gpu_a, int gpu_b);

// The largest number of links on the route between two GPUs.
int gpu_diameter(const NetworkModel& network);

// Switches and links counted on the graph; the bisection by its closed form where SimGrid's zones route
// (tier_bisection), else the max flow between the two halves of the nodes.
ClusterSummary summarize(const ClusterSpec& cluster, const NetworkModel& network);
ClusterSummary summarize(const ClusterSpec& cluster); // builds the network first

// The most bytes/s the network carries from the first half of the nodes (by number) to the second half: a max
// flow over the network's links. For the symmetric networks dtsim draws this cut is the bisection.
double half_cut_bandwidth(const NetworkModel& network, int nodes);

} // namespace dtsim::topologies
