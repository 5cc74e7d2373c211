// NCCL's tree all-reduce on nodes of several GPUs (src/graph/trees.cc ncclGetDtree, src/graph/connect.cc
// connectTrees): inside a node the GPUs form a chain, whose head talks to other nodes; across nodes the heads form
// two complementary binary trees (double_binary_tree.cpp's, over nodes instead of positions), each carrying half
// of the buffer. Every channel has its own chain, whose head is the GPU nearest its NIC, so the channels of a node
// reach the network through different NICs: dtsim draws R channels (one per NIC, as the rings of multi_ring.cpp),
// the chain of channel r starting at the r-th of R evenly spaced positions of each node.
//
// Each of the 2R trees over positions (the chain's links, then the head's link to its parent node's head) carries
// S / 2R in C chunks (as NCCL's release cuts them: nccl_release.hpp) through tree_pipeline.cpp's pipeline. A channel's
// two trees are one lane (Schedule::lanes()), a position's transfers to one peer in a step one message. Every send but
// a leaf's upward one passes on data received (Transfer::forwarded): under LL and LL128 it leaves line by line as it
// comes in, so the protocol's rate bounds only the leaves' sends.
#include "sim/collectives/detail.hpp"

#include <algorithm>

namespace dtsim::collectives::detail {
SchedulePtr nccl_tree_all_reduce(const NodeLayout& layout, int channels, double bytes, int version) {
  const int g = layout.per_node;
  const int nodes = static_cast<int>(layout.nodes.size());
  const int n = g * nodes;
  channels = std::max(1, std::min(channels, g));
  const auto node_trees = nccl_double_binary_tree(nodes);
  std::vector<SchedulePtr> lanes;            // one a channel: its own thread block, at its own pace
  const int per_channel = nodes > 1 ? 2 : 1; // one node: a single chain
  for (int r = 0; r < channels; ++r) {
    std::vector<TreeShare> trees;
    const int first = r * g / channels;
    const auto chain = [&](int node, int k) {
      return layout.nodes[static_cast<std::size_t>(node)][static_cast<std::size_t>((first + k) % g)];
    };
    for (int t = 0; t < per_channel; ++t) {
      std::vector<int> parent(static_cast<std::size_t>(n), -1);
      for (int node = 0; node < nodes; ++node) {
        for (int k = 1; k < g; ++k)
          parent[static_cast<std::size_t>(chain(node, k))] = chain(node, k - 1);
        if (const int up = node_trees[static_cast<std::size_t>(t)].parent[static_cast<std::size_t>(node)]; up >= 0)
          parent[static_cast<std::size_t>(chain(node, 0))] = chain(up, 0);
      }
      trees.push_back(
          {tree_from_parents(std::move(parent)), part_bytes(bytes, channels * per_channel, r * per_channel + t)});
    }
    const int chunks = nccl_tree_chunks(trees.front().bytes, g, nodes, version);
    lanes.push_back(tree_pipeline(n, std::move(trees), chunks, {.one_per_peer = true, .mark_forwarded = true}));
  }
  return concurrent(std::move(lanes));
}

} // namespace dtsim::collectives::detail
