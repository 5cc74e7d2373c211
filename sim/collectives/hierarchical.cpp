// Hierarchical all-reduce (NCCL's multi-node pattern; Horovod's hierarchical all-reduce; the "2D ring" of
// Jia et al. 2018): with N nodes of g positions each,
//   1. reduce-scatter inside every node (ring over its g positions): local position l ends with block l of g;
//   2. all-reduce of block l among the N positions with local index l, one per node (ring "across rails");
//   3. all-gather inside every node (ring).
// Three phases. With intra-node links (alpha_i, B_i) and inter-node ones (alpha_e, B_e):
//   T: see closed_form.cpp (a reducing step costs alpha + x max(1/B, gamma): the reduction overlaps the receive)
// Positions of a node are taken in ascending order (local index), nodes in ascending node index.
#include "sim/collectives/detail.hpp"

#include <fmt/format.h>

#include <map>
#include <stdexcept>

namespace dtsim::collectives::detail {

NodeLayout node_layout(int n, const std::vector<int>& node_of) {
  NodeLayout layout;
  if (node_of.empty()) { // every position its own node
    for (int p = 0; p < n; ++p)
      layout.nodes.push_back({p});
    return layout;
  }
  if (static_cast<int>(node_of.size()) != n)
    throw std::invalid_argument(fmt::format(
        "node_of has {} entries for a group of {} positions: give one node per position", node_of.size(), n));
  std::map<int, std::vector<int>> by_node;
  for (int p = 0; p < n; ++p)
    by_node[node_of[p]].push_back(p);
  for (auto& [node, positions] : by_node)
    layout.nodes.push_back(std::move(positions));
  layout.per_node = static_cast<int>(layout.nodes.front().size());
  for (std::size_t i = 0; i < layout.nodes.size(); ++i)
    if (static_cast<int>(layout.nodes[i].size()) != layout.per_node) {
      const auto node = std::next(by_node.begin(), static_cast<std::ptrdiff_t>(i))->first;
      throw std::invalid_argument(fmt::format(
          "hierarchical all-reduce needs the same number of positions on every node: node {} has {}, node {} has {}",
          by_node.begin()->first, layout.per_node, node, layout.nodes[i].size()));
    }
  return layout;
}

SchedulePtr hierarchical_all_reduce(int n, double bytes, const std::vector<int>& node_of) {
  const NodeLayout layout = node_layout(n, node_of);
  const int g = layout.per_node;
  const int nodes = static_cast<int>(layout.nodes.size());

  std::vector<std::vector<int>> rails(g); // rails[l]: local position l of every node
  for (const auto& node : layout.nodes)
    for (int l = 0; l < g; ++l)
      rails[l].push_back(node[l]);

  const auto reduce_scatter = ring_reduce_scatter(g, bytes);
  const auto all_gather = ring_all_gather(g, bytes);
  std::vector<SchedulePtr> intra_rs(nodes, reduce_scatter), intra_ag(nodes, all_gather), inter;
  for (int l = 0; l < g; ++l)
    inter.push_back(ring_all_reduce(nodes, part_bytes(bytes, g, l)));

  return in_sequence(n, {{side_by_side(n, layout.nodes, std::move(intra_rs)), true},
                         {side_by_side(n, std::move(rails), std::move(inter)), true},
                         {side_by_side(n, layout.nodes, std::move(intra_ag)), true}});
}

} // namespace dtsim::collectives::detail
