// The networks between the nodes' NICs, one builder per kind. Names are the ones the engine gives its links.
#include "topologies/graph_builder.hpp"

#include <fmt/format.h>

#include <map>

namespace dtsim::topologies::detail {

// One switch at the top, tiers of switches under it, each switch with one (aggregated) uplink: SimGrid's nested
// star zones route this tree themselves, so the graph mirrors them (links "leaf3-uplink", "node7-nic").
void build_switch_tiers(GraphBuilder& b) {
  const auto& c = b.cluster();
  auto& m = b.model();
  const auto top = b.vertex("switch", VertexKind::network_switch);
  m.top_switch = top;
  const auto uplinks = tier_uplinks(c);
  std::vector<std::size_t> parents{top}; // switches of the tier above, in order
  for (int level = static_cast<int>(c.tiers.size()) - 1; level >= 0; --level) {
    int groups = c.nodes;
    for (int i = 0; i <= level; ++i)
      groups /= c.tiers[i].fan_in;
    std::vector<std::size_t> current;
    for (int i = 0; i < groups; ++i) {
      const auto name = fmt::format("{}{}", tier_name(level), i);
      const auto v = b.vertex(name + "-switch", VertexKind::network_switch);
      b.network_link(v, parents[static_cast<std::size_t>(i) * parents.size() / groups], name + "-uplink",
                     uplinks[level], 0);
      current.push_back(v);
    }
    parents = std::move(current);
  }
  for (int node = 0; node < c.nodes; ++node)
    b.network_link(b.nics()[node][0], parents[static_cast<std::size_t>(node) * parents.size() / c.nodes],
                   fmt::format("node{}-nic", node), c.nic_of(node).bandwidth, c.nic_of(node).latency);
}

// Leaf-spine with every spine drawn: each leaf has one link to each spine, of the leaf's uplink bandwidth divided
// among the spines.
void build_spines(GraphBuilder& b) {
  const auto& c = b.cluster();
  const int per_leaf = c.tiers.at(0).fan_in;
  const int leaves = c.nodes / per_leaf;
  const double uplink = per_leaf * c.nic.bandwidth / (c.tiers[0].oversubscription * c.spines);
  std::vector<std::size_t> spines;
  for (int s = 0; s < c.spines; ++s)
    spines.push_back(b.vertex(fmt::format("spine{}-switch", s), VertexKind::network_switch));
  for (int l = 0; l < leaves; ++l) {
    const auto leaf = b.vertex(fmt::format("leaf{}-switch", l), VertexKind::network_switch);
    for (int s = 0; s < c.spines; ++s)
      b.network_link(leaf, spines[s], fmt::format("leaf{}-spine{}", l, s), uplink, 0);
    for (int node = l * per_leaf; node < (l + 1) * per_leaf; ++node)
      b.network_link(b.nics()[node][0], leaf, fmt::format("node{}-nic", node), c.nic_of(node).bandwidth,
                     c.nic_of(node).latency);
  }
}

// k-ary fat-tree (Al-Fares et al. 2008): pod p has edge switches e and aggregation switches a (k/2 of each),
// every edge joined to every aggregation switch of its pod; aggregation switch a of every pod joins core switches
// a*k/2 .. a*k/2 + k/2 - 1. Nodes fill the edge switches in order, k/2 each.
void build_fat_tree(GraphBuilder& b) {
  const auto& c = b.cluster();
  const int k = c.fat_tree.k, half = k / 2;
  const double edge_up = c.nic.bandwidth / c.fat_tree.edge_oversubscription;
  const double agg_up = c.nic.bandwidth / c.fat_tree.aggregation_oversubscription;
  std::vector<std::size_t> cores;
  for (int i = 0; i < half * half; ++i)
    cores.push_back(b.vertex(fmt::format("core{}-switch", i), VertexKind::network_switch));
  for (int p = 0; p < k; ++p) {
    std::vector<std::size_t> aggs;
    for (int a = 0; a < half; ++a) {
      aggs.push_back(b.vertex(fmt::format("pod{}-agg{}-switch", p, a), VertexKind::network_switch));
      for (int i = 0; i < half; ++i)
        b.network_link(aggs.back(), cores[a * half + i], fmt::format("pod{}-agg{}-core{}", p, a, a * half + i), agg_up,
                       0);
    }
    for (int e = 0; e < half; ++e) {
      const auto edge = b.vertex(fmt::format("pod{}-edge{}-switch", p, e), VertexKind::network_switch);
      for (int a = 0; a < half; ++a)
        b.network_link(edge, aggs[a], fmt::format("pod{}-edge{}-agg{}", p, e, a), edge_up, 0);
      const int first = (p * half + e) * half;
      for (int node = first; node < std::min(first + half, c.nodes); ++node)
        b.network_link(b.nics()[node][0], edge, fmt::format("node{}-nic", node), c.nic_of(node).bandwidth,
                       c.nic_of(node).latency);
    }
  }
}

// Rail-optimized: in each group of nodes, rail r's leaf joins NIC r of every node of the group; every leaf has one
// link to every spine.
void build_rails(GraphBuilder& b) {
  const auto& c = b.cluster();
  const auto& r = c.rail;
  const double nic = c.nic.bandwidth / r.rails; // the node's bandwidth, split among its rails
  const int group = c.rail_group(), spine_count = c.rail_spines();
  const double uplink = group * nic / (r.oversubscription * spine_count);
  std::vector<std::size_t> spines;
  for (int s = 0; s < spine_count; ++s)
    spines.push_back(b.vertex(fmt::format("spine{}-switch", s), VertexKind::network_switch));
  for (int g = 0; g < c.nodes / group; ++g)
    for (int rail = 0; rail < r.rails; ++rail) {
      const auto leaf = b.vertex(fmt::format("group{}-rail{}-switch", g, rail), VertexKind::network_switch);
      for (int s = 0; s < spine_count; ++s)
        b.network_link(leaf, spines[s], fmt::format("group{}-rail{}-spine{}", g, rail, s), uplink, 0);
      for (int node = g * group; node < (g + 1) * group; ++node)
        b.network_link(b.nics()[node][rail], leaf, fmt::format("node{}-nic{}", node, rail), nic, c.nic.latency);
    }
}

// Each node's NIC to the next node along every dimension, wrapping around (the engine uses SimGrid's TorusZone). A
// dimension of two nodes has one link between them, not two: TorusZone routes both directions over the first node's
// (its second node's "next" link is never used), so the graph (bisection, link reports) says what the replay does.
void build_torus(GraphBuilder& b) {
  const auto& c = b.cluster();
  for (int node = 0; node < c.nodes; ++node) {
    int stride = 1;
    for (int size : c.torus) {
      const int coordinate = node / stride % size;
      const int next = node + ((coordinate + 1) % size - coordinate) * stride;
      if (next != node && !(size == 2 && coordinate == 1))
        b.link(b.nics()[node][0], b.nics()[next][0], fmt::format("node{}-node{}", node, next), c.nic);
      stride *= size;
    }
  }
}

// Dragonfly: routers of a group joined all-to-all; each pair of groups joined by `links_between_groups` global
// links, which each group hands out to its routers in turn; nodes fill the routers in order.
void build_dragonfly(GraphBuilder& b) {
  const auto& c = b.cluster();
  const auto& d = c.dragonfly;
  const double local = d.local_bandwidth > 0 ? d.local_bandwidth : c.nic.bandwidth;
  const double global = d.global_bandwidth > 0 ? d.global_bandwidth : c.nic.bandwidth;
  std::vector<std::vector<std::size_t>> routers(d.groups);
  for (int g = 0; g < d.groups; ++g) {
    for (int r = 0; r < d.routers_per_group; ++r)
      routers[g].push_back(b.vertex(fmt::format("group{}-router{}-switch", g, r), VertexKind::network_switch));
    for (int r = 0; r < d.routers_per_group; ++r)
      for (int s = r + 1; s < d.routers_per_group; ++s)
        b.network_link(routers[g][r], routers[g][s], fmt::format("group{}-router{}-router{}", g, r, s), local, 0);
  }
  std::vector<int> ports_used(d.groups, 0);
  for (int g = 0; g < d.groups; ++g)
    for (int h = g + 1; h < d.groups; ++h)
      for (int t = 0; t < d.links_between_groups; ++t) {
        const auto from = routers[g][ports_used[g]++ % d.routers_per_group];
        const auto to = routers[h][ports_used[h]++ % d.routers_per_group];
        b.network_link(from, to, fmt::format("group{}-group{}-link{}", g, h, t), global, 0);
      }
  for (int node = 0; node < c.nodes; ++node) {
    const int router = node / d.nodes_per_router;
    b.network_link(b.nics()[node][0], routers[router / d.routers_per_group][router % d.routers_per_group],
                   fmt::format("node{}-nic", node), c.nic_of(node).bandwidth, c.nic_of(node).latency);
  }
}

// Listed switches and links; a link's latency gains half of each switch's latency at its ends. check_network()
// has refused unknown names, so every end is a switch or a node.
void build_explicit(GraphBuilder& b) {
  const auto& c = b.cluster();
  std::map<std::string, std::pair<std::size_t, double>, std::less<>> ends; // name -> vertex, half latency
  for (const auto& s : c.explicit_network.switches)
    ends.emplace(s.name, std::pair{b.vertex(s.name, VertexKind::network_switch), s.latency / 2});
  for (int node = 0; node < c.nodes; ++node)
    ends.emplace(fmt::format("node{}", node), std::pair{b.nics()[node][0], 0.0});
  std::map<std::string, int, std::less<>> seen; // parallel links get a suffix
  for (const auto& l : c.explicit_network.links) {
    const auto& [from, from_half] = ends.at(l.from);
    const auto& [to, to_half] = ends.at(l.to);
    auto name = fmt::format("{}-{}", l.from, l.to);
    if (const int n = seen[name]++; n > 0) name += fmt::format("-{}", n);
    b.link(from, to, name, {l.link.bandwidth, l.link.latency + from_half + to_half});
  }
}

} // namespace dtsim::topologies::detail
