#include "topologies/cluster.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dtsim::topologies {
std::string_view to_string(IntraNodeKind kind) {
  switch (kind) {
  case IntraNodeKind::nvlink:
    return "nvlink";
  case IntraNodeKind::hybrid_cube_mesh:
    return "hybrid-cube-mesh";
  case IntraNodeKind::pcie:
    return "pcie";
  case IntraNodeKind::pcie_tree:
    return "pcie-tree";
  }
  return "?";
}

std::string network_kind(const ClusterSpec& c) {
  if (!c.explicit_network.links.empty()) return "explicit";
  if (c.dragonfly.groups > 0) return "dragonfly";
  if (c.rail.rails > 0) return "rail-optimized";
  if (c.fat_tree.k > 0 || c.tiers.size() > 1) return "fat-tree";
  if (!c.torus.empty()) return c.torus.size() == 1 ? "ring" : "torus";
  return c.tiers.empty() ? "single-switch" : "leaf-spine";
}

std::string tier_name(std::size_t level) {
  if (level == 0) return "leaf";
  if (level == 1) return "pod";
  return "tier" + std::to_string(level + 1);
}

std::vector<double> tier_uplinks(const ClusterSpec& c) {
  std::vector<double> out;
  double below = c.nic.bandwidth; // what each child of the first tier sends up
  for (const auto& t : c.tiers) {
    below = t.fan_in * below / t.oversubscription;
    out.push_back(below);
  }
  return out;
}

std::string check_tiers(const ClusterSpec& c) {
  long group = 1;
  for (std::size_t i = 0; i < c.tiers.size(); ++i) {
    if (c.tiers[i].fan_in < 1)
      return fmt::format("tier {} ({}) joins {} children: expected at least 1", i, tier_name(i), c.tiers[i].fan_in);
    if (c.tiers[i].oversubscription < 1)
      return fmt::format("tier {} ({}) has oversubscription {}: expected 1 or more", i, tier_name(i),
                         c.tiers[i].oversubscription);
    group *= c.tiers[i].fan_in;
    if (c.nodes % group != 0)
      return fmt::format("{} nodes do not fill the {} switches of {} nodes each: give a multiple of {}", c.nodes,
                         tier_name(i), group, group);
  }
  return "";
}

double tier_bisection(const ClusterSpec& c) {
  if (c.nodes == 1) return (c.gpus_per_node / 2) * c.intra.bandwidth; // the cut runs through the GPUs' ports
  if (!c.torus.empty()) {
    // Halving the largest dimension d cuts two links per ring along it: 2 N / d links.
    const int largest = *std::max_element(c.torus.begin(), c.torus.end());
    return largest > 1 ? 2.0 * c.nodes / largest * c.nic.bandwidth : 0;
  }
  // Cut the top switch's children into two halves: the traffic crossing funnels through the uplinks of the
  // smaller half (the NICs when there are no tiers).
  long groups = c.nodes;
  for (const auto& t : c.tiers)
    groups /= t.fan_in;
  const auto uplinks = tier_uplinks(c);
  if (groups > 1) return (groups / 2) * (uplinks.empty() ? c.nic.bandwidth : uplinks.back());
  // One top child: the cut runs inside it, one tier down.
  const double below = uplinks.size() >= 2 ? uplinks[uplinks.size() - 2] : c.nic.bandwidth;
  return (c.tiers.back().fan_in / 2) * below;
}

const LinkSpec& ClusterSpec::slowest_nic() const {
  const LinkSpec* slowest = node_nics.empty() ? &nic : &node_nics.front();
  for (const auto& n : node_nics)
    if (n.bandwidth < slowest->bandwidth) slowest = &n;
  return *slowest;
}

} // namespace dtsim::topologies
