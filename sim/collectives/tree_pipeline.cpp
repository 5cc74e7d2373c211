// The pipelined tree all-reduce both of NCCL's tree algorithms run (double_binary_tree.cpp over positions,
// nccl_tree.cpp over the chains of nodes): each tree reduces up to its root and broadcasts back down, pipelined over
// chunks (NCCL src/device/all_reduce.h, runTreeUpDown). With h(v) the height of v's subtree, d(v) its depth and D the
// height of the highest tree:
//   reduce:    v sends chunk j to its parent in step j + h(v) (its children's chunk j arrived earlier and was
//              reduced as it arrived);
//   broadcast: v sends the result chunk j to its children in step j + D + d(v) (the root in step j + D), so it
//              reaches depth d in step j + D + d - 1.
// A position sends at most one chunk per tree link and direction per step: chunks + 2D - 1 steps. In a step it posts,
// per tree, its send up, then its sends down, its receives from its children, then from its parent; trees in order,
// so a pair linked in two trees matches in order. The hop's latency is paid by its first chunk (pipelined()).
#include "sim/collectives/detail.hpp"

#include <algorithm>

namespace dtsim::collectives::detail {
namespace {

class TreePipeline final : public Schedule {
public:
  TreePipeline(int n, std::vector<TreeShare> trees, int chunks, TreeMessages messages)
      : n_(n), trees_(std::move(trees)), chunks_(chunks), messages_(messages) {
    int depth = 0;
    for (const auto& share : trees_)
      depth = std::max(depth, share.tree.height[static_cast<std::size_t>(share.tree.root)]);
    steps_ = chunks_ + 2 * depth - 1;
  }

  int ranks() const override { return n_; }
  int step_count() const override { return steps_; }
  std::vector<int> phase_starts() const override { return phases_every(steps_, chunks_); }

  Step step(int p, int k) const override {
    Step s = idle_step();
    const auto v = static_cast<std::size_t>(p);
    for (const auto& share : trees_) {
      const auto& tree = share.tree;
      const double bytes = share.bytes; // (a structured binding: clang before 16 cannot capture one)
      const int depth = tree.height[static_cast<std::size_t>(tree.root)];
      const auto chunk = [&](int j) { return j >= 0 && j < chunks_ ? part_bytes(bytes, chunks_, j) : -1.0; };
      const int parent = tree.parent[v];
      const bool leaf = tree.children[v].empty();
      if (parent >= 0)
        if (const double c = chunk(k - tree.height[v]); c >= 0) add(s.sends, parent, c, !leaf);
      for (int child : tree.children[v])
        if (const double c = chunk(k - depth - tree.depth[v]); c >= 0) add(s.sends, child, c, true);
      for (int child : tree.children[v]) {
        const int first = tree.height[static_cast<std::size_t>(child)];
        if (const double c = chunk(k - first); c >= 0) {
          add(s.recvs, child, c, false);
          s.reduce_bytes += c;
          if (k == first) s.latency_terms = 1;
        }
      }
      if (parent >= 0) {
        const int first = depth + tree.depth[v] - 1;
        if (const double c = chunk(k - first); c >= 0) {
          add(s.recvs, parent, c, false);
          if (k == first) s.latency_terms = 1;
        }
      }
    }
    return s;
  }

private:
  void add(std::vector<Transfer>& transfers, int peer, double bytes, bool forwarded) const {
    forwarded = forwarded && messages_.mark_forwarded;
    if (messages_.one_per_peer)
      for (auto& t : transfers)
        if (t.peer == peer) {
          t.bytes += bytes;
          t.forwarded = t.forwarded && forwarded;
          return;
        }
    transfers.push_back({peer, bytes, forwarded});
  }

  int n_;
  std::vector<TreeShare> trees_;
  int chunks_ = 1;
  TreeMessages messages_;
  int steps_ = 0;
};

} // namespace

Tree tree_from_parents(std::vector<int> parent) {
  const auto n = parent.size();
  Tree t;
  t.children.assign(n, {});
  t.depth.assign(n, 0);
  t.height.assign(n, 0);
  for (std::size_t v = 0; v < n; ++v) {
    if (parent[v] < 0)
      t.root = static_cast<int>(v);
    else
      t.children[static_cast<std::size_t>(parent[v])].push_back(static_cast<int>(v)); // ascending: v increases
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

SchedulePtr tree_pipeline(int n, std::vector<TreeShare> trees, int chunks, TreeMessages messages) {
  return std::make_shared<TreePipeline>(n, std::move(trees), chunks, messages);
}

} // namespace dtsim::collectives::detail
