// NCCL's tree all-reduce on nodes of several GPUs (src/graph/trees.cc ncclGetDtree, src/graph/connect.cc
// connectTrees): inside a node the GPUs form a chain, whose head talks to other nodes; across nodes the heads form
// two complementary binary trees (double_binary_tree.cpp's, over nodes instead of positions), each carrying half
// of the buffer. Every channel has its own chain, whose head is the GPU nearest its NIC, so the channels of a node
// reach the network through different NICs: dtsim draws R channels (one per NIC, as the rings of multi_ring.cpp),
// the chain of channel r starting at the r-th of R evenly spaced positions of each node.
//
// Each of the 2R trees over positions (the chain's links, then the head's link to its parent node's head) carries
// S / 2R in C chunks and runs the pipeline of double_binary_tree.cpp: v sends chunk j up in step j + h(v), and the
// result down to its children in step j + D + d(v), D the tree's height. A channel's two trees are one lane
// (Schedule::lanes()), a position's transfers to one peer in a step one message. The hop's latency is paid by its
// first chunk (pipelined()). Every send but a leaf's upward one passes on data received (Transfer::forwarded): under
// LL and LL128 it leaves line by line as it comes in, so the protocol's rate bounds only the leaves' sends.
#include "sim/collectives/detail.hpp"

#include <algorithm>

namespace dtsim::collectives::detail {
namespace {

struct Tree {
  std::vector<int> parent; // -1 at the root
  std::vector<std::vector<int>> children;
  std::vector<int> depth, height;
  int root = 0;
  double bytes = 0;
};

// Children, depths and heights from the parents.
Tree from_parents(std::vector<int> parent, double bytes) {
  const int n = static_cast<int>(parent.size());
  Tree t;
  t.children.assign(static_cast<std::size_t>(n), {});
  t.depth.assign(static_cast<std::size_t>(n), 0);
  t.height.assign(static_cast<std::size_t>(n), 0);
  t.bytes = bytes;
  for (int v = 0; v < n; ++v) {
    if (parent[static_cast<std::size_t>(v)] < 0)
      t.root = v;
    else
      t.children[static_cast<std::size_t>(parent[static_cast<std::size_t>(v)])].push_back(v);
  }
  std::vector<int> order{t.root}; // breadth first: parents before children
  for (std::size_t i = 0; i < order.size(); ++i)
    for (int c : t.children[static_cast<std::size_t>(order[i])]) {
      t.depth[static_cast<std::size_t>(c)] = t.depth[static_cast<std::size_t>(order[i])] + 1;
      order.push_back(c);
    }
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    if (const int p = parent[static_cast<std::size_t>(*it)]; p >= 0)
      t.height[static_cast<std::size_t>(p)] =
          std::max(t.height[static_cast<std::size_t>(p)], t.height[static_cast<std::size_t>(*it)] + 1);
  t.parent = std::move(parent);
  return t;
}

void add(std::vector<Transfer>& transfers, int peer, double bytes, bool forwarded = false) {
  for (auto& t : transfers)
    if (t.peer == peer) {
      t.bytes += bytes;
      t.forwarded = t.forwarded && forwarded;
      return;
    }
  transfers.push_back({peer, bytes, forwarded});
}

class TreePipeline final : public Schedule {
public:
  TreePipeline(int n, std::vector<Tree> trees) : n_(n), trees_(std::move(trees)) {
    chunks_ = pipeline_chunks(trees_.front().bytes);
    int depth = 0;
    for (const auto& t : trees_)
      depth = std::max(depth, t.height[static_cast<std::size_t>(t.root)]);
    steps_ = chunks_ + 2 * depth - 1;
  }

  int ranks() const override { return n_; }
  int step_count() const override { return steps_; }
  std::vector<int> phase_starts() const override { return phases_every(steps_, chunks_); }

  Step step(int p, int k) const override {
    Step s = idle_step();
    const auto v = static_cast<std::size_t>(p);
    for (const auto& tree : trees_) {
      const int depth = tree.height[static_cast<std::size_t>(tree.root)];
      const auto chunk = [&](int j) { return j >= 0 && j < chunks_ ? part_bytes(tree.bytes, chunks_, j) : -1.0; };
      const int parent = tree.parent[v];
      const bool leaf = tree.children[v].empty();
      if (parent >= 0)
        if (const double c = chunk(k - tree.height[v]); c >= 0) add(s.sends, parent, c, !leaf);
      for (int child : tree.children[v])
        if (const double c = chunk(k - depth - tree.depth[v]); c >= 0) add(s.sends, child, c, true);
      for (int child : tree.children[v]) {
        const int first = tree.height[static_cast<std::size_t>(child)];
        if (const double c = chunk(k - first); c >= 0) {
          add(s.recvs, child, c);
          s.reduce_bytes += c;
          if (k == first) s.latency_terms = 1;
        }
      }
      if (parent >= 0) {
        const int first = depth + tree.depth[v] - 1;
        if (const double c = chunk(k - first); c >= 0) {
          add(s.recvs, parent, c);
          if (k == first) s.latency_terms = 1;
        }
      }
    }
    return s;
  }

private:
  int n_;
  std::vector<Tree> trees_;
  int chunks_ = 1;
  int steps_ = 0;
};

} // namespace

SchedulePtr nccl_tree_all_reduce(const NodeLayout& layout, int channels, double bytes) {
  const int g = layout.per_node;
  const int nodes = static_cast<int>(layout.nodes.size());
  const int n = g * nodes;
  channels = std::max(1, std::min(channels, g));
  const auto node_trees = nccl_double_binary_tree(nodes);
  std::vector<SchedulePtr> lanes;            // one a channel: its own thread block, at its own pace
  const int per_channel = nodes > 1 ? 2 : 1; // one node: a single chain
  for (int r = 0; r < channels; ++r) {
    std::vector<Tree> trees;
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
      trees.push_back(from_parents(std::move(parent), part_bytes(bytes, channels * per_channel, r * per_channel + t)));
    }
    lanes.push_back(std::make_shared<TreePipeline>(n, std::move(trees)));
  }
  return concurrent(std::move(lanes));
}

} // namespace dtsim::collectives::detail
