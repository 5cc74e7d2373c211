// "cluster.topology": the network between the nodes, one reader per kind. Each kind takes only its own keys.
#include "sim/scenario/reader.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dtsim::scenario::detail {
namespace {

constexpr std::int64_t kMaxCount = std::int64_t{1} << 20;

const std::vector<std::string>& topology_keys() {
  static const std::vector<std::string> keys{"kind",
                                             "nodes_per_leaf",
                                             "leaves_per_pod",
                                             "oversubscription",
                                             "dimensions",
                                             "spines",
                                             "k",
                                             "rails",
                                             "nodes_per_group",
                                             "groups",
                                             "routers_per_group",
                                             "nodes_per_router",
                                             "links_between_groups",
                                             "global_bandwidth",
                                             "local_bandwidth",
                                             "switches",
                                             "links"};
  return keys;
}

// Refuses the keys that belong to other kinds.
void only(const Object& t, const std::string& kind, const std::vector<std::string>& allowed) {
  for (const auto& key : topology_keys())
    if (key != "kind" && t.has(key) && std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      t.fail(key, allowed.empty()
                      ? fmt::format("a {} takes no \"{}\"", kind, key)
                      : fmt::format("a {} takes no \"{}\"; its keys are {}", kind, key, quoted_list(allowed)));
}

int count(const Object& t, const char* key, std::int64_t min, std::optional<std::int64_t> fallback) {
  return static_cast<int>(t.integer(key, min, fallback, kMaxCount));
}

// "oversubscription": one ratio, or one per tier from the leaves up.
std::vector<double> ratios(const Object& t, std::size_t tiers) {
  std::vector<double> over;
  if (const auto* o = t.get("oversubscription"); o && o->is_array()) {
    for (const auto& r : *o) {
      if (!r.is_number() || r.get<double>() < 1)
        t.fail("oversubscription",
               fmt::format("expected ratios >= 1 (one per tier, from the leaves up), got {}", show(*o)));
      over.push_back(r.get<double>());
    }
    if (over.empty() || over.size() > tiers)
      t.fail("oversubscription", fmt::format("{} ratios for {} tier{}", over.size(), tiers, tiers == 1 ? "" : "s"));
  } else {
    over.push_back(t.number("oversubscription", 1, 1.0, 1e6));
  }
  over.resize(tiers, over.back());
  return over;
}

void fail_if_invalid(const Object& t, const char* key, const topologies::ClusterSpec& cluster) {
  if (const auto problem = topologies::check_network(cluster); !problem.empty()) t.fail(key, problem);
}

// A torus of the given dimensions (their product is the node count), or a ring of all the nodes.
void read_torus(const Object& t, const std::string& kind, topologies::ClusterSpec& cluster) {
  if (kind == "ring") {
    only(t, kind, {});
    cluster.torus = {cluster.nodes};
    return;
  }
  only(t, kind, {"dimensions"});
  const auto* dims = t.get("dimensions");
  if (!dims || !dims->is_array() || dims->empty() || dims->size() > 3)
    t.fail("dimensions", fmt::format("expected 1 to 3 sizes such as [4, 4], got {}", dims ? show(*dims) : "nothing"));
  long product = 1;
  for (const auto& d : *dims) {
    if (!d.is_number_integer() || d.get<long>() < 1 || d.get<long>() > kMaxCount)
      t.fail("dimensions", fmt::format("expected positive integers, got {}", show(*dims)));
    cluster.torus.push_back(d.get<int>());
    product *= d.get<long>();
  }
  if (product != cluster.nodes)
    t.fail("dimensions", fmt::format("{} makes {} nodes, but the cluster has {}", show(*dims), product, cluster.nodes));
}

// Leaf-spine (leaves under one spine: aggregated, or `spines` drawn with ECMP), or a three-tier fat-tree given
// by its fan-ins or as a k-ary fat-tree.
void read_tiers(const Object& t, const std::string& kind, topologies::ClusterSpec& cluster) {
  if (kind == "fat-tree" && t.has("k")) {
    only(t, "k-ary fat-tree", {"k", "oversubscription"});
    cluster.fat_tree.k = count(t, "k", 2, std::nullopt);
    const auto over = ratios(t, 2);
    cluster.fat_tree.edge_oversubscription = over[0];
    cluster.fat_tree.aggregation_oversubscription = over[1];
    fail_if_invalid(t, "k", cluster);
    return;
  }
  if (kind == "leaf-spine")
    only(t, kind, {"nodes_per_leaf", "oversubscription", "spines"});
  else
    only(t, kind, {"nodes_per_leaf", "leaves_per_pod", "oversubscription"});
  const auto over = ratios(t, kind == "fat-tree" ? 2 : 1);
  cluster.tiers.push_back({count(t, "nodes_per_leaf", 1, std::nullopt), over[0]});
  if (kind == "fat-tree") cluster.tiers.push_back({count(t, "leaves_per_pod", 1, std::nullopt), over[1]});
  cluster.spines = count(t, "spines", 1, 0);
  fail_if_invalid(t, "nodes_per_leaf", cluster);
}

void read_rails(const Object& t, int instance_nics, topologies::ClusterSpec& cluster) {
  only(t, "rail-optimized network", {"rails", "nodes_per_group", "spines", "oversubscription"});
  auto& r = cluster.rail;
  // One rail per GPU by default; an instance with fewer NICs than GPUs (p4d: 4 for 8) has one rail per NIC.
  const int rails = std::min(cluster.gpus_per_node, instance_nics > 0 ? instance_nics : cluster.gpus_per_node);
  r.rails = count(t, "rails", 1, rails);
  r.nodes_per_group = count(t, "nodes_per_group", 1, 0); // 0: every node, whatever their number
  r.spines = count(t, "spines", 1, 0);                   // 0: one per node of a group
  r.oversubscription = t.number("oversubscription", 1, 1.0, 1e6);
  fail_if_invalid(t, "rails", cluster);
}

void read_dragonfly(const Object& t, topologies::ClusterSpec& cluster) {
  only(t, "dragonfly",
       {"groups", "routers_per_group", "nodes_per_router", "links_between_groups", "global_bandwidth",
        "local_bandwidth"});
  auto& d = cluster.dragonfly;
  d.groups = count(t, "groups", 1, std::nullopt);
  d.routers_per_group = count(t, "routers_per_group", 1, std::nullopt);
  d.nodes_per_router = count(t, "nodes_per_router", 1, std::nullopt);
  d.links_between_groups = count(t, "links_between_groups", 1, 1);
  d.global_bandwidth = t.quantity("global_bandwidth", Dimension::bandwidth, Bound::positive, 0.0);
  d.local_bandwidth = t.quantity("local_bandwidth", Dimension::bandwidth, Bound::positive, 0.0);
  fail_if_invalid(t, "groups", cluster);
}

// Switches by name; links between switches and nodes ("node0" ...), each of the NIC's bandwidth unless given.
void read_explicit(const Object& t, topologies::ClusterSpec& cluster) {
  only(t, "explicit network", {"switches", "links"});
  auto& net = cluster.explicit_network;
  const auto* switches = t.get("switches");
  if (switches && !switches->is_array()) t.fail("switches", "expected an array of {\"name\", \"latency\"} objects");
  if (switches)
    for (std::size_t i = 0; i < switches->size(); ++i) {
      const Object s(t.file(), &(*switches)[i], t.pointer("switches") + "/" + std::to_string(i), {"name", "latency"});
      net.switches.push_back({s.string("name", std::nullopt),
                              s.quantity("latency", Dimension::time, Bound::non_negative, cluster.switch_latency)});
    }
  const auto* links = t.get("links");
  if (!links || !links->is_array() || links->empty())
    t.fail("links", "expected an array of links such as {\"from\": \"node0\", \"to\": \"s0\"}");
  for (std::size_t i = 0; i < links->size(); ++i) {
    const Object l(t.file(), &(*links)[i], t.pointer("links") + "/" + std::to_string(i),
                   {"from", "to", "bandwidth", "latency"});
    net.links.push_back({l.string("from", std::nullopt),
                         l.string("to", std::nullopt),
                         {l.quantity("bandwidth", Dimension::bandwidth, Bound::positive, cluster.nic.bandwidth),
                          l.quantity("latency", Dimension::time, Bound::non_negative, cluster.nic.latency)}});
  }
  fail_if_invalid(t, "links", cluster);
}

} // namespace

const std::vector<std::string>& topology_kind_names() {
  static const std::vector<std::string> kinds{"single-switch", "leaf-spine", "fat-tree", "rail-optimized",
                                              "dragonfly",     "torus",      "ring",     "explicit"};
  return kinds;
}

void read_topology(const Object& c, int instance_nics, topologies::ClusterSpec& cluster) {
  const Object t = c.object("topology", topology_keys());
  const auto kind = t.choice("kind", topology_kind_names(), "topology", std::string("single-switch"));
  if (kind == "single-switch")
    only(t, kind, {});
  else if (kind == "torus" || kind == "ring")
    read_torus(t, kind, cluster);
  else if (kind == "leaf-spine" || kind == "fat-tree")
    read_tiers(t, kind, cluster);
  else if (kind == "rail-optimized")
    read_rails(t, instance_nics, cluster);
  else if (kind == "dragonfly")
    read_dragonfly(t, cluster);
  else
    read_explicit(t, cluster);
  // InfiniBand SHARP reduces in the one switch at the top of a tree.
  if (cluster.switch_reduces && (!cluster.torus.empty() || cluster.routed_by_graph()))
    c.fail("switch", fmt::format("in-network reduction (switch.sharp) needs one switch at the top of the network: "
                                 "single-switch, or leaf-spine and fat-tree without drawn spines; this is a {}",
                                 topologies::network_kind(cluster)));
}

} // namespace dtsim::scenario::detail
