// NCCL's double binary tree all-reduce (NVIDIA, "Massively Scale Your Deep Learning Training with NCCL 2.4",
// 2019; NCCL src/graph/trees.cc), after Sanders, Speck and Träff 2009 ("Two-tree algorithms for full
// bandwidth broadcast, reduction and scan"): two binary trees over the same positions, each carrying half of
// the buffer, built so that every position is a leaf in at least one of them; each tree reduces up to its
// root and broadcasts back down, pipelined over chunks.
//
// Tree A (ncclGetBtree): position 0 is the root and has a single child, the largest power of two below n;
// any other position r with lowest set bit b has parent (r ^ b) | 2b, or r ^ b when that is out of range.
// Leaves are the odd positions. Tree B mirrors A (r -> n-1-r) when n is even and shifts it by one
// (r -> r+1 mod n) when n is odd, so the leaves of A are interior in B and the other way round.
//
// Pipeline (each tree independently, C chunks of (S/2)/C bytes, about 512 KiB each; depth D = height of the
// tree, h(v) = height of v's subtree, d(v) = depth of v):
//   reduce:    v sends chunk j to its parent in step j + h(v) (its children's chunk j arrived earlier and
//              was reduced as it arrived);
//   broadcast: v sends the result chunk j to its children in step j + D + d(v) (the root in step j + D),
//              so it reaches depth d in step j + D + d - 1.
// A position therefore sends at most one chunk per tree link and direction per step. C + 2D - 1 steps, in
// phases of C steps (phases_every).
// In a step a position posts, per tree, its send up then its sends down, its receives from its children then
// from its parent; tree A before tree B, so a pair that is linked in both trees matches in order.
#include "sim/collectives/detail.hpp"

#include <algorithm>

namespace dtsim::collectives::detail {
namespace {

int btree_parent(int n, int r) {
  if (r == 0) return -1;
  const int bit = r & -r;
  const int up = (r ^ bit) | (bit << 1);
  return up < n ? up : r ^ bit;
}

BinaryTree from_parents(std::vector<int> parent) {
  const int n = static_cast<int>(parent.size());
  BinaryTree t;
  t.children.assign(n, {-1, -1});
  t.depth.assign(n, 0);
  t.height.assign(n, 0);
  for (int v = 0; v < n; ++v) {
    if (parent[v] < 0) {
      t.root = v;
      continue;
    }
    auto& c = t.children[parent[v]];
    if (c[0] < 0)
      c[0] = v;
    else
      c[1] = v;
  }
  for (auto& c : t.children)
    if (c[1] >= 0 && c[1] < c[0]) std::swap(c[0], c[1]);
  // Depths from the root down (parents are at most log2(n) + 1 hops away), heights from the deepest up.
  std::vector<int> order(n);
  for (int v = 0; v < n; ++v) {
    int d = 0;
    for (int u = v; parent[u] >= 0; u = parent[u])
      ++d;
    t.depth[v] = d;
    order[v] = v;
  }
  std::sort(order.begin(), order.end(), [&](int a, int b) { return t.depth[a] > t.depth[b]; });
  for (int v : order)
    if (parent[v] >= 0) t.height[parent[v]] = std::max(t.height[parent[v]], t.height[v] + 1);
  t.parent = std::move(parent);
  return t;
}

class DoubleBinaryTreeAllReduce final : public Schedule {
public:
  DoubleBinaryTreeAllReduce(int n, double bytes)
      : n_(n), trees_(nccl_double_binary_tree(n)),
        chunks_(double_binary_tree_chunks(bytes)), tree_bytes_{part_bytes(bytes, 2, 0), part_bytes(bytes, 2, 1)} {
    int depth = 0;
    for (const auto& t : trees_)
      depth = std::max(depth, t.height[t.root]);
    steps_ = chunks_ + 2 * depth - 1;
  }

  int ranks() const override { return n_; }
  int step_count() const override { return steps_; }
  std::vector<int> phase_starts() const override { return phases_every(steps_, chunks_); }

  Step step(int p, int k) const override {
    Step s = idle_step();
    for (int t = 0; t < 2; ++t) {
      const BinaryTree& tree = trees_[t];
      const int depth = tree.height[tree.root];
      const int parent = tree.parent[p];
      const auto chunk = [&](int j) { return j >= 0 && j < chunks_ ? part_bytes(tree_bytes_[t], chunks_, j) : -1; };
      if (parent >= 0)
        if (const double c = chunk(k - tree.height[p]); c >= 0) s.sends.push_back({parent, c});
      for (int child : tree.children[p])
        if (child >= 0)
          if (const double c = chunk(k - depth - tree.depth[p]); c >= 0) s.sends.push_back({child, c});
      for (int child : tree.children[p])
        if (child >= 0)
          if (const double c = chunk(k - tree.height[child]); c >= 0) {
            s.recvs.push_back({child, c});
            s.reduce_bytes += c;
            if (k == tree.height[child]) s.latency_terms = 1; // the hop's first chunk (pipelined())
          }
      if (parent >= 0)
        if (const double c = chunk(k - depth - tree.depth[p] + 1); c >= 0) {
          s.recvs.push_back({parent, c});
          if (k == depth + tree.depth[p] - 1) s.latency_terms = 1;
        }
    }
    return s;
  }

private:
  int n_;
  std::array<BinaryTree, 2> trees_;
  int chunks_;
  double tree_bytes_[2];
  int steps_ = 0;
};

} // namespace

std::array<BinaryTree, 2> nccl_double_binary_tree(int n) {
  std::vector<int> a(n), b(n);
  for (int r = 0; r < n; ++r)
    a[r] = btree_parent(n, r);
  for (int r = 0; r < n; ++r) {
    if (n % 2 == 0) { // mirror
      const int u = a[n - 1 - r];
      b[r] = u < 0 ? -1 : n - 1 - u;
    } else { // shift by one
      const int u = a[(r - 1 + n) % n];
      b[r] = u < 0 ? -1 : (u + 1) % n;
    }
  }
  return {from_parents(std::move(a)), from_parents(std::move(b))};
}

int double_binary_tree_chunks(double bytes) {
  return pipeline_chunks(bytes / 2);
}

SchedulePtr double_binary_tree_all_reduce(int n, double bytes) {
  return std::make_shared<DoubleBinaryTreeAllReduce>(n, bytes);
}

} // namespace dtsim::collectives::detail
