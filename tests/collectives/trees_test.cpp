// NCCL's double binary tree: the trees of NCCL's trees.cc comments, their structure, and the pipeline's shape.
#include "schedule_checks.hpp"
#include "sim/collectives/detail.hpp"

namespace dtsim::collectives {
namespace {

using detail::nccl_double_binary_tree;

const std::vector<int>& kids(const detail::Tree& t, int v) {
  return t.children[v];
}

TEST(DoubleBinaryTree, MatchesNcclsMirroredTreesFor12Ranks) {
  // NCCL src/graph/trees.cc: tree A 0-8, 8-{4,10}, 4-{2,6}, 10-{9,11}, 2-{1,3}, 6-{5,7};
  // tree B is its mirror: 11-3, 3-{1,7}, 1-{0,2}, 7-{5,9}, 5-{4,6}, 9-{8,10}.
  const auto [a, b] = nccl_double_binary_tree(12);
  EXPECT_EQ(a.root, 0);
  EXPECT_EQ(kids(a, 0), (std::vector<int>{8}));
  EXPECT_EQ(kids(a, 8), (std::vector<int>{4, 10}));
  EXPECT_EQ(kids(a, 10), (std::vector<int>{9, 11}));
  EXPECT_EQ(kids(a, 2), (std::vector<int>{1, 3}));
  EXPECT_EQ(b.root, 11);
  EXPECT_EQ(kids(b, 11), (std::vector<int>{3}));
  EXPECT_EQ(kids(b, 3), (std::vector<int>{1, 7}));
  EXPECT_EQ(kids(b, 1), (std::vector<int>{0, 2}));
  EXPECT_EQ(a.height[a.root], 4);
}

TEST(DoubleBinaryTree, MatchesNcclsShiftedTreesFor13Ranks) {
  // Odd n: tree B is tree A shifted by one rank: 1-9, 9-{5,0}, 5-{3,7}, 0-{11}.
  const auto [a, b] = nccl_double_binary_tree(13);
  EXPECT_EQ(kids(a, 12), (std::vector<int>{10}));
  EXPECT_EQ(b.root, 1);
  EXPECT_EQ(kids(b, 1), (std::vector<int>{9}));
  EXPECT_EQ(kids(b, 9), (std::vector<int>{0, 5}));
  EXPECT_EQ(kids(b, 5), (std::vector<int>{3, 7}));
  EXPECT_EQ(kids(b, 0), (std::vector<int>{11}));
}

TEST(DoubleBinaryTree, TreesAreBinaryAndComplementary) {
  for (int n = 2; n <= 300; ++n) {
    const auto trees = nccl_double_binary_tree(n);
    for (const auto& t : trees) {
      int roots = 0;
      for (int v = 0; v < n; ++v) {
        roots += t.parent[v] < 0;
        if (t.parent[v] >= 0) {
          EXPECT_EQ(t.depth[v], t.depth[t.parent[v]] + 1);
        }
        EXPECT_LE(t.children[v].size(), 2u) << "binary";
        for (int c : t.children[v])
          EXPECT_EQ(t.parent[c], v);
      }
      EXPECT_EQ(roots, 1);
      EXPECT_EQ(kids(t, t.root).size(), 1u) << "NCCL's roots have one child";
      EXPECT_LE(t.height[t.root], detail::ceil_log2(n) + 1);
    }
    // A position is busy in at most four tree links: it is a leaf (or the single-child root) in one tree.
    for (int v = 0; v < n; ++v) {
      int links = 0;
      for (const auto& t : trees)
        links += static_cast<int>(kids(t, v).size()) + (t.parent[v] >= 0);
      EXPECT_LE(links, 4) << n << " ranks, position " << v;
    }
    if (n % 2 == 0) {
      for (int v = 0; v < n; ++v)
        EXPECT_TRUE(kids(trees[0], v).empty() || kids(trees[1], v).empty()) << "leaf in one tree: " << v;
    }
  }
}

TEST(DoubleBinaryTree, PipelineOfChunksOfAbout512KiB) {
  Request r;
  r.ranks = 12;
  r.algorithm = Algorithm::double_binary_tree;
  for (double bytes : {1000.0, 1024.0 * 1024, 64.0 * 1024 * 1024, 8.0 * 1024 * 1024 * 1024}) {
    r.bytes = bytes;
    const int chunks = detail::double_binary_tree_chunks(r.ranks, bytes, r.nccl.version);
    EXPECT_EQ(chunks, std::clamp(static_cast<int>(std::ceil(bytes / 2 / (512 * 1024))), 1, 1024));
    const auto s = make_schedule(r);
    EXPECT_EQ(s->step_count(), chunks + 2 * 4 - 1);
    for (int k = 0; k < s->step_count(); ++k)
      for (int p = 0; p < r.ranks; ++p) {
        const Step st = s->step(p, k);
        EXPECT_LE(st.sends.size(), 4u);
        EXPECT_LE(st.recvs.size(), 4u);
        for (const auto& t : st.sends)
          EXPECT_LE(t.bytes, std::ceil(bytes / 2 / chunks));
      }
  }
}

TEST(DoubleBinaryTree, TwoRanksExchangeHalvesBothWays) {
  Request r;
  r.ranks = 2;
  r.bytes = 1000;
  r.algorithm = Algorithm::double_binary_tree;
  const auto s = make_schedule(r);
  ASSERT_EQ(s->step_count(), 2);
  // Step 0: 1 reduces its half up to 0 (tree A), 0 its half up to 1 (tree B); step 1: the results come back.
  EXPECT_EQ(s->step(1, 0).sends.at(0).peer, 0);
  EXPECT_EQ(s->step(0, 0).reduce_bytes, 500);
  EXPECT_EQ(s->step(0, 1).sends.at(0).peer, 1);
  EXPECT_EQ(s->step(0, 1).reduce_bytes, 0);
  EXPECT_TRUE(checks::pairs_match(*s));
}

} // namespace
} // namespace dtsim::collectives
