// Hierarchical all-reduce (NCCL's multi-node pattern; Horovod's hierarchical all-reduce; the "2D ring" of
// Jia et al. 2018): with N nodes of g positions each,
//   1. reduce-scatter inside every node (ring over its g positions): local position l ends with block l of g;
//   2. all-reduce of block l among the N positions with local index l, one per node (ring "across rails");
//   3. all-gather inside every node (ring).
// Three phases. With intra-node links (alpha_i, B_i) and inter-node ones (alpha_e, B_e):
//   T: see closed_form.cpp (a reducing step costs alpha + x max(1/B, gamma): the reduction overlaps the receive)
// Positions of a node are taken in ascending order (local index), nodes in ascending node index.
//
// Hierarchical (rail-parallel) reduce-scatter and all-gather: the halves of the all-reduce, NCCL's multi-channel
// rings for these operations, which cross the network on every NIC at once instead of through the one NIC of a
// single flat ring. Position p ends with (reduce-scatter) or starts with (all-gather) block p of n, part p of
// the buffer exactly as in the flat operation. Rail l is local position l of every node, position R_l[j] on
// node j; its blocks are {block R_l[j] : j}, so "block l of the node" is that union (not a contiguous slice):
//   reduce-scatter 1. inside every node, a ring reduce-scatter over g blocks, block l = the blocks of rail l:
//                     local position l ends with rail l's blocks summed over its node;
//                  2. on each rail (g rings side by side), a ring reduce-scatter of rail l's N blocks: position
//                     R_l[j] ends with block R_l[j] summed over every node, i.e. block p at position p.
//   all-gather     1. on each rail, a ring all-gather of rail l's N blocks: local position l of every node
//                     holds rail l's blocks;
//                  2. inside every node, a ring all-gather of the g rails' unions.
// Each position sends all but its own block, S - |block p|, as in the flat operation ((n-1)/n S), and receives
// as much up to the rounding of blocks. Two phases each; the closed forms are in closed_form.cpp.
#include "sim/collectives/detail.hpp"

#include <fmt/format.h>

#include <map>
#include <stdexcept>

namespace dtsim::collectives::detail {

NodeLayout node_layout(int n, const std::vector<int>& node_of, std::string_view what) {
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
      throw std::invalid_argument(
          fmt::format("{} needs the same number of positions on every node: node {} has {}, node {} has {}", what,
                      by_node.begin()->first, layout.per_node, node, layout.nodes[i].size()));
    }
  return layout;
}

namespace {

std::vector<std::vector<int>> rails_of(const NodeLayout& layout) {
  std::vector<std::vector<int>> rails(layout.per_node); // rails[l]: local position l of every node
  for (const auto& node : layout.nodes)
    for (int l = 0; l < layout.per_node; ++l)
      rails[l].push_back(node[l]);
  return rails;
}

// The blocks of the two-level rings: rail l's blocks (the flat blocks of its positions, in node order), and
// each node's g blocks (block l: the sum of rail l's).
struct RailBlocks {
  std::vector<std::vector<int>> rails;
  std::vector<std::vector<double>> of_rail;
  std::vector<double> of_node;
};

RailBlocks rail_blocks(const NodeLayout& layout, int n, double bytes) {
  RailBlocks b;
  b.rails = rails_of(layout);
  for (const auto& rail : b.rails) {
    std::vector<double> blocks;
    double sum = 0;
    for (int p : rail) {
      blocks.push_back(part_bytes(bytes, n, p));
      sum += blocks.back();
    }
    b.of_rail.push_back(std::move(blocks));
    b.of_node.push_back(sum);
  }
  return b;
}

} // namespace

SchedulePtr hierarchical_reduce_scatter(int n, double bytes, const std::vector<int>& node_of) {
  const NodeLayout layout = node_layout(n, node_of, "hierarchical reduce-scatter");
  RailBlocks b = rail_blocks(layout, n, bytes);
  std::vector<SchedulePtr> intra(layout.nodes.size(), ring_reduce_scatter(b.of_node)), inter;
  for (auto& blocks : b.of_rail)
    inter.push_back(ring_reduce_scatter(std::move(blocks)));
  return in_sequence(n, {{side_by_side(n, layout.nodes, std::move(intra)), true},
                         {side_by_side(n, std::move(b.rails), std::move(inter)), true}});
}

SchedulePtr hierarchical_all_gather(int n, double bytes, const std::vector<int>& node_of) {
  const NodeLayout layout = node_layout(n, node_of, "hierarchical all-gather");
  RailBlocks b = rail_blocks(layout, n, bytes);
  std::vector<SchedulePtr> intra(layout.nodes.size(), ring_all_gather(b.of_node)), inter;
  for (auto& blocks : b.of_rail)
    inter.push_back(ring_all_gather(std::move(blocks)));
  return in_sequence(n, {{side_by_side(n, std::move(b.rails), std::move(inter)), true},
                         {side_by_side(n, layout.nodes, std::move(intra)), true}});
}

SchedulePtr hierarchical_all_reduce(int n, double bytes, const std::vector<int>& node_of) {
  const NodeLayout layout = node_layout(n, node_of);
  const int g = layout.per_node;
  const int nodes = static_cast<int>(layout.nodes.size());
  auto rails = rails_of(layout);

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
