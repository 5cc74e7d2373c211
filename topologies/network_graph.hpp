#pragma once
// The cluster's network as a graph (Boost.Graph): GPUs, each node's fabric hub (NVSwitch or PCIe root), NICs,
// switches, and the links between them with their bandwidth and latency. Used to explain a cluster (paths,
// diameter, bottlenecks) without simulating it; the engine builds its SimGrid platform from the same description.
#include "topologies/cluster.hpp"

#include <boost/graph/adjacency_list.hpp>

#include <string>
#include <vector>

namespace dtsim::topologies {

enum class VertexKind : std::uint8_t { gpu, node_hub, nic, network_switch };

struct NetworkVertex {
  std::string name;
  VertexKind kind = VertexKind::gpu;
  int node = -1; // -1 for network switches
};

struct NetworkEdge {
  std::string name;     // as the engine names the link ("gpu3-nvlink", "node0-nic")
  double bandwidth = 0; // bytes/s per direction
  double latency = 0;   // seconds
};

using NetworkGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, NetworkVertex, NetworkEdge>;

struct NetworkModel {
  NetworkGraph graph;
  std::vector<std::size_t> gpu_vertex; // vertex of each GPU
};

NetworkModel build_network(const ClusterSpec& cluster);

// The route between two GPUs as the engine takes it: its links, the narrowest bandwidth and the summed latency.
struct Path {
  std::vector<std::string> vertices;
  std::vector<std::string> links;
  double bottleneck = 0; // bytes/s
  double latency = 0;    // seconds
};
Path path_between(const NetworkModel& network, int gpu_a, int gpu_b);

// The largest number of links between two GPUs (shortest paths).
int gpu_diameter(const NetworkModel& network);

} // namespace dtsim::topologies
