// What a person checks a network with: the route between two GPUs, the diameter, the cut between two halves.
#include "topologies/network_graph.hpp"

// GCC 12 sees an optional edge iterator in Boost's adjacency-list edge iteration as maybe uninitialized (a known
// false positive of boost::optional); the max flow itself is Boost's.
#if defined(__GNUC__) && !defined(__clang__) // clang has no such warning (and no such false positive)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/boykov_kolmogorov_max_flow.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace dtsim::topologies {

Path path_between(const NetworkModel& m, int a, int b) {
  const auto hops = Router(m).route_gpus(a, b);
  const auto& g = m.graph;
  Path p;
  p.bottleneck = a == b ? 0 : std::numeric_limits<double>::infinity();
  p.vertices.push_back(g[m.gpu_vertex[a]].name);
  for (const auto& hop : hops) {
    const auto& e = m.edges[hop.edge];
    const auto& link = g[e];
    const auto prev = hop.forward ? boost::source(e, g) : boost::target(e, g);
    const auto next = hop.forward ? boost::target(e, g) : boost::source(e, g);
    // A NIC's attachment is not a link, so the hop after it starts where the last one did not end.
    if (g[prev].name != p.vertices.back()) p.vertices.push_back(g[prev].name);
    p.vertices.push_back(g[next].name);
    p.links.push_back(link.name);
    p.bottleneck = std::min(p.bottleneck, link.bandwidth);
    p.latency += link.latency;
  }
  return p;
}

int gpu_diameter(const NetworkModel& m) {
  // Tori, trees, rails and dragonflies look the same from every node, so the first 64 GPUs see every distance
  // there is; an explicit network may not, so every GPU is a source up to 256 of them.
  const Router router(m);
  const std::size_t gpus = m.gpu_vertex.size();
  const std::size_t sources = gpus <= 256 ? gpus : 64;
  std::size_t diameter = 0;
  for (std::size_t s = 0; s < sources; ++s)
    for (std::size_t t = 0; t < gpus; ++t)
      diameter = std::max(diameter, router.route_gpus(static_cast<int>(s), static_cast<int>(t)).size());
  return static_cast<int>(diameter);
}

ClusterSummary summarize(const ClusterSpec& c, const NetworkModel& m) {
  const auto& g = m.graph;
  ClusterSummary s;
  s.gpus = c.gpu_count();
  for (const auto v : boost::make_iterator_range(boost::vertices(g)))
    s.switches += g[v].kind == VertexKind::network_switch;
  for (const auto& e : boost::make_iterator_range(boost::edges(g)))
    s.links += g[e].kind != LinkClass::attach; // a NIC's attachment is not a link
  s.bisection_bandwidth = !c.routed_by_graph() ? tier_bisection(c) : c.nodes > 1 ? half_cut_bandwidth(m, c.nodes) : 0;
  return s;
}

ClusterSummary summarize(const ClusterSpec& c) {
  return summarize(c, build_network(c));
}

double half_cut_bandwidth(const NetworkModel& m, int nodes) {
  // A directed copy of the network's links (each way a capacity of the link's bandwidth), a source feeding the
  // first half's NICs and a sink draining the second half's; Boykov-Kolmogorov max flow (Boost.Graph).
  using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
  using Flow = boost::adjacency_list<
      boost::vecS, boost::vecS, boost::directedS,
      boost::property<
          boost::vertex_index_t, long,
          boost::property<boost::vertex_color_t, boost::default_color_type,
                          boost::property<boost::vertex_distance_t, long,
                                          boost::property<boost::vertex_predecessor_t, Traits::edge_descriptor>>>>,
      boost::property<boost::edge_capacity_t, double,
                      boost::property<boost::edge_residual_capacity_t, double,
                                      boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
  const auto& g = m.graph;
  const auto n = boost::num_vertices(g);
  Flow f(n + 2);
  const auto source = n, sink = n + 1;
  auto capacity = boost::get(boost::edge_capacity, f);
  auto reverse = boost::get(boost::edge_reverse, f);
  auto arc = [&](std::size_t a, std::size_t b, double cap) {
    const auto ab = boost::add_edge(a, b, f).first;
    const auto ba = boost::add_edge(b, a, f).first;
    capacity[ab] = cap;
    capacity[ba] = 0;
    reverse[ab] = ba;
    reverse[ba] = ab;
  };
  for (const auto& e : boost::make_iterator_range(boost::edges(g)))
    if (g[e].kind == LinkClass::network) {
      arc(boost::source(e, g), boost::target(e, g), g[e].bandwidth);
      arc(boost::target(e, g), boost::source(e, g), g[e].bandwidth);
    }
  constexpr double kUnbounded = 1e30;
  for (std::size_t v = 0; v < n; ++v)
    if (g[v].kind == VertexKind::nic) {
      if (g[v].node < nodes / 2)
        arc(source, v, kUnbounded);
      else if (g[v].node < nodes / 2 * 2)
        arc(v, sink, kUnbounded);
    }
  return boost::boykov_kolmogorov_max_flow(f, source, sink);
}

} // namespace dtsim::topologies
