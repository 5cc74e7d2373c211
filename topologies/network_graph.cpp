#include "topologies/network_graph.hpp"

#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/filtered_graph.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace dtsim::topologies {
namespace {

// A large bandwidth for the hub-to-NIC attachment: the GPU's own PCIe link is what limits that hop.
constexpr double kInternal = 1e15;

std::size_t add_vertex(NetworkGraph& g, std::string name, VertexKind kind, int node) {
  return boost::add_vertex(NetworkVertex{std::move(name), kind, node}, g);
}

void add_link(NetworkGraph& g, std::size_t a, std::size_t b, std::string name, const LinkSpec& spec) {
  boost::add_edge(a, b, NetworkEdge{std::move(name), spec.bandwidth, spec.latency}, g);
}

// Predecessors of a breadth-first search from `source` over graph `g` (the network, or a filtered view of it).
template <class Graph> std::vector<std::size_t> bfs_parents(const Graph& g, std::size_t source, std::size_t vertices) {
  std::vector<std::size_t> parent(vertices, std::numeric_limits<std::size_t>::max());
  parent[source] = source;
  boost::breadth_first_search(
      g, source,
      boost::visitor(boost::make_bfs_visitor(boost::record_predecessors(
          boost::make_iterator_property_map(parent.begin(), get(boost::vertex_index, g)), boost::on_tree_edge()))));
  return parent;
}

// Inside an NVLink node GPUs talk over NVLink, never through the PCIe root (which carries NIC traffic): paths
// between two GPUs of one node are searched without the PCIe links.
struct NotPcie {
  const NetworkGraph* g = nullptr;
  bool operator()(const NetworkGraph::edge_descriptor& e) const {
    const auto& name = (*g)[e].name;
    return name.size() < 5 || name.compare(name.size() - 5, 5, "-pcie") != 0;
  }
};

} // namespace

NetworkModel build_network(const ClusterSpec& c) {
  NetworkModel m;
  auto& g = m.graph;
  // Switches from the top down: the top switch, then each tier's switches, each joined to its parent by its
  // (aggregated) uplink. Half a switch's latency sits on each link into it: a crossing pays it once.
  const bool torus = !c.torus.empty();
  const auto top = torus ? 0 : add_vertex(g, "switch", VertexKind::network_switch, -1);
  const auto uplinks = tier_uplinks(c);
  std::vector<std::size_t> parents{top}; // switches of the tier above, in order
  int groups = 1;
  for (int level = static_cast<int>(c.tiers.size()) - 1; level >= 0; --level) {
    groups = c.nodes;
    for (int i = 0; i <= level; ++i)
      groups /= c.tiers[i].fan_in;
    std::vector<std::size_t> current;
    for (int i = 0; i < groups; ++i) {
      const auto name = fmt::format("{}{}", tier_name(level), i);
      const auto v = add_vertex(g, name + "-switch", VertexKind::network_switch, -1);
      const auto parent = parents[static_cast<std::size_t>(i) * parents.size() / groups];
      add_link(g, v, parent, name + "-uplink", {uplinks[level], c.switch_latency});
      current.push_back(v);
    }
    parents = std::move(current);
  }
  const bool nvlink = c.intra_kind == IntraNodeKind::nvlink;
  std::vector<std::size_t> nics;
  for (int node = 0; node < c.nodes; ++node) {
    // The engine routes GPU <-> GPU over each GPU's fabric port, and GPU <-> NIC over its PCIe link.
    const auto hub =
        add_vertex(g, fmt::format("node{}-{}", node, nvlink ? "nvswitch" : "pcie-root"), VertexKind::node_hub, node);
    const auto nic = add_vertex(g, fmt::format("node{}-nic", node), VertexKind::nic, node);
    if (!torus) {
      const auto leaf = parents[static_cast<std::size_t>(node) * parents.size() / c.nodes];
      add_link(g, nic, leaf, fmt::format("node{}-nic", node), {c.nic.bandwidth, c.nic.latency + c.switch_latency / 2});
    }
    nics.push_back(nic);
    const auto pcie_root =
        nvlink ? add_vertex(g, fmt::format("node{}-pcie-root", node), VertexKind::node_hub, node) : hub;
    add_link(g, pcie_root, nic, fmt::format("node{}-nic-attach", node), {kInternal, 0});
    for (int local = 0; local < c.gpus_per_node; ++local) {
      const int global = node * c.gpus_per_node + local;
      const auto gpu = add_vertex(g, fmt::format("gpu{}", global), VertexKind::gpu, node);
      m.gpu_vertex.push_back(gpu);
      add_link(g, gpu, hub, fmt::format("gpu{}-{}", global, nvlink ? "nvlink" : "pcie"), c.intra);
      if (nvlink) add_link(g, gpu, pcie_root, fmt::format("gpu{}-pcie", global), c.pcie);
    }
  }
  if (torus) // each node's NIC to the next node along every dimension, wrapping around
    for (int node = 0; node < c.nodes; ++node) {
      int stride = 1;
      for (int size : c.torus) {
        const int coordinate = node / stride % size;
        const int next = node + ((coordinate + 1) % size - coordinate) * stride;
        if (next != node) add_link(g, nics[node], nics[next], fmt::format("node{}-node{}", node, next), c.nic);
        stride *= size;
      }
    }
  return m;
}

Path path_between(const NetworkModel& m, int a, int b) {
  const int gpus = static_cast<int>(m.gpu_vertex.size());
  if (a < 0 || b < 0 || a >= gpus || b >= gpus)
    throw std::out_of_range(fmt::format("GPUs are numbered 0 to {}; got {} and {}", gpus - 1, a, b));
  const auto& g = m.graph;
  const bool same_node = g[m.gpu_vertex[a]].node == g[m.gpu_vertex[b]].node;
  const auto vertices = boost::num_vertices(g);
  const auto parent = same_node ? bfs_parents(boost::make_filtered_graph(g, NotPcie{&g}), m.gpu_vertex[a], vertices)
                                : bfs_parents(g, m.gpu_vertex[a], vertices);
  Path p;
  p.bottleneck = std::numeric_limits<double>::infinity();
  std::vector<std::size_t> chain{m.gpu_vertex[b]};
  while (chain.back() != m.gpu_vertex[a])
    chain.push_back(parent[chain.back()]);
  std::reverse(chain.begin(), chain.end());
  for (std::size_t i = 0; i < chain.size(); ++i) {
    p.vertices.push_back(g[chain[i]].name);
    if (i == 0) continue;
    const auto [edge, found] = boost::edge(chain[i - 1], chain[i], g);
    const auto& e = g[edge];
    if (e.bandwidth < kInternal) p.links.push_back(e.name);
    p.bottleneck = std::min(p.bottleneck, e.bandwidth);
    p.latency += e.latency;
  }
  if (a == b) p.bottleneck = 0;
  return p;
}

int gpu_diameter(const NetworkModel& m) {
  // Every node is alike, so the GPUs of the first nodes see every distance there is. Links are counted as a
  // person would: attachments inside a node (hub to NIC) are not links.
  const auto& g = m.graph;
  int diameter = 0;
  const std::size_t sources = std::min<std::size_t>(m.gpu_vertex.size(), 64);
  for (std::size_t s = 0; s < sources; ++s) {
    const auto parent = bfs_parents(g, m.gpu_vertex[s], boost::num_vertices(g));
    for (auto target : m.gpu_vertex) {
      int links = 0;
      for (auto v = target; v != m.gpu_vertex[s]; v = parent[v])
        links += g[boost::edge(parent[v], v, g).first].bandwidth < kInternal;
      diameter = std::max(diameter, links);
    }
  }
  return diameter;
}

} // namespace dtsim::topologies
