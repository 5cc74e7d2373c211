// Routes between GPUs: fabric or PCIe inside a node, shortest paths with ECMP across the network.
#include "topologies/network_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <stdexcept>

namespace dtsim::topologies {
namespace {

// splitmix64's finalizer (Steele et al. 2014): a well-mixed hash that is the same on every platform and run.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Boost hands out an undirected edge with `source` at whichever end it was reached from; the way the edge was
// added (kept in NetworkModel::edges) decides which half of the duplex link a hop crosses.
Hop hop_from(const NetworkModel& m, const NetworkGraph::edge_descriptor& e, std::size_t from) {
  const int index = m.graph[e].index;
  return {index, boost::source(m.edges[static_cast<std::size_t>(index)], m.graph) == from};
}

bool in_network(const NetworkGraph& g, std::size_t v) {
  return g[v].kind == VertexKind::nic || g[v].kind == VertexKind::network_switch;
}

} // namespace

Router::Router(const NetworkModel& network) : network_(&network) {
  for (std::size_t i = 0; i < network.gpu_vertex.size(); ++i)
    gpu_of_vertex_.emplace(network.gpu_vertex[i], static_cast<int>(i));
  // Where every NIC hangs off one switch (every topology dtsim builds), a NIC's distances are its switch's plus the
  // last link: distances are kept per destination switch and over switches alone, not per NIC over every vertex
  // (98,304 NICs x 220,000 vertices would be 86 GB).
  const auto& g = network.graph;
  switch_index_.assign(boost::num_vertices(g), -1);
  leaf_of_.assign(boost::num_vertices(g), -1);
  int switches = 0;
  for (std::size_t v = 0; v < boost::num_vertices(g); ++v)
    if (g[v].kind == VertexKind::network_switch) switch_index_[v] = switches++;
  single_homed_ = true;
  for (std::size_t v = 0; v < boost::num_vertices(g) && single_homed_; ++v) {
    if (g[v].kind != VertexKind::nic) continue;
    int links = 0;
    for (const auto& e : boost::make_iterator_range(boost::out_edges(v, g))) {
      if (g[e].kind != LinkClass::network) continue;
      ++links;
      const auto u = boost::target(e, g);
      if (switch_index_[u] < 0) single_homed_ = false;
      leaf_of_[v] = static_cast<int>(u);
    }
    if (links != 1) single_homed_ = false;
  }
}

// Network hops from every switch to switch `leaf` (-1: unreachable), over switch-to-switch links.
const std::vector<int>& Router::switch_distances(std::size_t leaf) const {
  if (const auto found = switch_distances_.find(leaf); found != switch_distances_.end()) return found->second;
  const auto& g = network_->graph;
  std::vector<int> dist(static_cast<std::size_t>(*std::max_element(switch_index_.begin(), switch_index_.end()) + 1),
                        -1);
  dist[static_cast<std::size_t>(switch_index_[leaf])] = 0;
  std::deque<std::size_t> queue{leaf};
  while (!queue.empty()) {
    const auto v = queue.front();
    queue.pop_front();
    const int here = dist[static_cast<std::size_t>(switch_index_[v])];
    for (const auto& e : boost::make_iterator_range(boost::out_edges(v, g))) {
      const auto u = boost::target(e, g);
      if (g[e].kind != LinkClass::network || switch_index_[u] < 0) continue;
      auto& d = dist[static_cast<std::size_t>(switch_index_[u])];
      if (d >= 0) continue;
      d = here + 1;
      queue.push_back(u);
    }
  }
  return switch_distances_.emplace(leaf, std::move(dist)).first->second;
}

// Breadth-first inside the node over links of one class set; a GPU other than the source is never crossed.
std::vector<Hop> Router::inside_node(std::size_t from, std::size_t to) const {
  const auto& g = network_->graph;
  const int node = g[from].node;
  for (const bool fabric : {true, false}) {
    std::unordered_map<std::size_t, NetworkGraph::edge_descriptor> reached_by;
    std::deque<std::size_t> queue{from};
    bool found = from == to;
    while (!queue.empty() && !found) {
      const auto v = queue.front();
      queue.pop_front();
      if (v != from && g[v].kind == VertexKind::gpu) continue;
      for (const auto& e : boost::make_iterator_range(boost::out_edges(v, g))) {
        const auto kind = g[e].kind;
        if (kind == LinkClass::network || (kind == LinkClass::fabric) != fabric) continue;
        const auto u = boost::target(e, g);
        if (u == from || g[u].node != node || reached_by.count(u)) continue;
        reached_by.emplace(u, e);
        if (u == to) {
          found = true;
          break;
        }
        queue.push_back(u);
      }
    }
    if (!found) continue;
    std::vector<Hop> hops;
    for (auto v = to; v != from;) {
      const auto& e = reached_by.at(v);
      const auto prev = boost::source(e, g) == v ? boost::target(e, g) : boost::source(e, g);
      if (g[e].kind != LinkClass::attach) hops.push_back(hop_from(*network_, e, prev));
      v = prev;
    }
    std::reverse(hops.begin(), hops.end());
    return hops;
  }
  throw std::logic_error(fmt::format("no route inside node {} from {} to {}", node, g[from].name, g[to].name));
}

// Network hops from every network vertex to `nic` (-1: unreachable), computed once per destination NIC.
const std::vector<int>& Router::distances_to(std::size_t nic) const {
  if (const auto found = distances_.find(nic); found != distances_.end()) return found->second;
  const auto& g = network_->graph;
  std::vector<int> dist(boost::num_vertices(g), -1);
  dist[nic] = 0;
  std::deque<std::size_t> queue{nic};
  while (!queue.empty()) {
    const auto v = queue.front();
    queue.pop_front();
    for (const auto& e : boost::make_iterator_range(boost::out_edges(v, g))) {
      const auto u = boost::target(e, g);
      if (g[e].kind != LinkClass::network || dist[u] >= 0 || !in_network(g, u)) continue;
      dist[u] = dist[v] + 1;
      queue.push_back(u);
    }
  }
  return distances_.emplace(nic, std::move(dist)).first->second;
}

void Router::across_network(std::size_t from_nic, std::size_t to_nic, std::uint64_t flow, std::vector<Hop>& out) const {
  const auto& g = network_->graph;
  // Hops from vertex v to `to_nic`: through its switch where NICs are single-homed, else from the full table.
  const std::vector<int>* full = single_homed_ ? nullptr : &distances_to(to_nic);
  const std::vector<int>* to_leaf =
      single_homed_ ? &switch_distances(static_cast<std::size_t>(leaf_of_[to_nic])) : nullptr;
  const auto hops_to = [&](std::size_t v) {
    if (full) return (*full)[v];
    if (v == to_nic) return 0;
    const int sw = switch_index_[v] >= 0 ? switch_index_[v] : switch_index_[static_cast<std::size_t>(leaf_of_[v])];
    const int d = (*to_leaf)[static_cast<std::size_t>(sw)];
    return d < 0 ? -1 : d + 1 + (switch_index_[v] >= 0 ? 0 : 1);
  };
  if (hops_to(from_nic) < 0)
    throw std::logic_error(
        fmt::format("{} cannot reach {}: the network is disconnected", g[from_nic].name, g[to_nic].name));
  std::vector<NetworkGraph::edge_descriptor> next;
  for (auto v = from_nic; v != to_nic;) {
    next.clear();
    const int closer = hops_to(v) - 1;
    for (const auto& e : boost::make_iterator_range(boost::out_edges(v, g)))
      if (g[e].kind == LinkClass::network && hops_to(boost::target(e, g)) == closer) next.push_back(e);
    // ECMP: the switch hashes the flow with its own id, so one flow keeps one path and flows spread over all.
    const auto& e = next[mix(flow ^ mix(v)) % next.size()];
    out.push_back(hop_from(*network_, e, v));
    v = boost::target(e, g);
  }
}

std::vector<Hop> Router::route(std::size_t from, std::size_t to) const {
  const auto& g = network_->graph;
  if (g[from].node == g[to].node) return inside_node(from, to);
  if (g[from].kind != VertexKind::gpu || g[to].kind != VertexKind::gpu)
    throw std::logic_error(fmt::format("routes between nodes join two GPUs, not {} and {}", g[from].name, g[to].name));
  return route_gpus(gpu_of_vertex_.at(from), gpu_of_vertex_.at(to));
}

std::vector<Hop> Router::route_gpus(int a, int b) const {
  const auto& m = *network_;
  const auto gpus = static_cast<int>(m.gpu_vertex.size());
  if (a < 0 || b < 0 || a >= gpus || b >= gpus)
    throw std::out_of_range(fmt::format("GPUs are numbered 0 to {}; got {} and {}", gpus - 1, a, b));
  const auto from = m.gpu_vertex[a], to = m.gpu_vertex[b];
  if (m.graph[from].node == m.graph[to].node) return inside_node(from, to);
  // PXN: the GPU of a's node on b's rail (the same local index as b) relays, when a's own NIC is on another rail.
  int sender = a;
  if (m.pxn) {
    const int relay = a - a % m.gpus_per_node + b % m.gpus_per_node;
    if (m.nic_vertex[relay] != m.nic_vertex[a]) sender = relay;
  }
  auto hops = sender == a ? std::vector<Hop>{} : inside_node(from, m.gpu_vertex[sender]);
  const auto to_nic = inside_node(m.gpu_vertex[sender], m.nic_vertex[sender]);
  hops.insert(hops.end(), to_nic.begin(), to_nic.end());
  const auto flow = mix((static_cast<std::uint64_t>(a) << 32) | static_cast<std::uint32_t>(b));
  across_network(m.nic_vertex[sender], m.nic_vertex[b], flow, hops);
  const auto last = inside_node(m.nic_vertex[b], to);
  hops.insert(hops.end(), last.begin(), last.end());
  return hops;
}

} // namespace dtsim::topologies
