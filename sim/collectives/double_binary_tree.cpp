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
// Each tree carries half of the buffer in C chunks (512 KiB, or smaller under NCCL 2.4 to 2.19: nccl_release.hpp)
// through tree_pipeline.cpp's pipeline, one message per tree and peer (a pair linked in both trees exchanges two).
#include "sim/collectives/detail.hpp"

#include <utility>

namespace dtsim::collectives::detail {
namespace {

int btree_parent(int n, int r) {
  if (r == 0) return -1;
  const int bit = r & -r;
  const int up = (r ^ bit) | (bit << 1);
  return up < n ? up : r ^ bit;
}

} // namespace

std::array<Tree, 2> nccl_double_binary_tree(int n) {
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
  return {tree_from_parents(std::move(a)), tree_from_parents(std::move(b))};
}

int double_binary_tree_chunks(int n, double bytes, int version) {
  return nccl_tree_chunks(bytes / 2, 1, n, version);
}

SchedulePtr double_binary_tree_all_reduce(int n, double bytes, int version) {
  auto [a, b] = nccl_double_binary_tree(n);
  std::vector<TreeShare> trees{{std::move(a), part_bytes(bytes, 2, 0)}, {std::move(b), part_bytes(bytes, 2, 1)}};
  return tree_pipeline(n, std::move(trees), double_binary_tree_chunks(n, bytes, version), {});
}

} // namespace dtsim::collectives::detail
