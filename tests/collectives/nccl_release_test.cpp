// What differs between NCCL releases (sim/collectives/nccl_release.hpp): each expected value is worked out by hand from
// the release's own code (enqueue's "Optimize chunkSize / nSteps" loops in 2.4.2 to 2.19.4; trees from 2.4.2; LL128
// from 2.5.6).
#include "sim/collectives/closed_form.hpp"
#include "sim/collectives/detail.hpp"
#include "sim/collectives/nccl.hpp"
#include "topologies/cluster.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace dtsim::collectives {
namespace {

constexpr double KiB = 1024;
constexpr double MiB = 1024 * KiB;

TEST(NcclRelease, VersionsReadAsNcclVersionCode) {
  EXPECT_EQ(parse_nccl_version("2.6.3"), 20603);
  EXPECT_EQ(parse_nccl_version("2.30.7"), 23007);
  EXPECT_EQ(parse_nccl_version("2.3.5"), 20305);
  EXPECT_EQ(nccl_version_name(20603), "2.6.3");
  EXPECT_EQ(nccl_version_name(kNcclTuningVersion), "2.30.7");
  // topologies/ cannot include the collectives, so a cluster spells the default release out: the same one.
  EXPECT_EQ(topologies::ClusterSpec{}.nccl_version, kNcclTuningVersion);
  for (const char* bad :
       {"", "2.6", "2.6.3.1", "2.6.x", "v2.6.3", "1.3.4", "2.3.4", "2.31.0", "3.0.0", "2.100.0", "2..3"})
    EXPECT_THROW(parse_nccl_version(bad), std::invalid_argument) << bad;
}

// 128 nodes of 4 GPUs, a 16 MiB all-reduce on 2 channels of two trees each: each tree carries
// 16 MiB / 4 = 4 MiB. NCCL's depth: 4 - 1 + log2(128) = 10.
//   2.6.3: 4 MiB / 512 KiB = 8 < 80: 256 KiB; 16 < 80: 128 KiB (the first loop stops above 128 KiB);
//          32 < 40: 64 KiB; 64 >= 40 stops; 64 >= 10. 64 chunks of 64 KiB.
//   2.4.8: depth 4 + 7 = 11, the same halvings (32 < 44, 64 >= 44): 64 chunks.
//   2.30.7: the 512 KiB slot: 8 chunks.
TEST(NcclRelease, TreesCutSmallMessagesFinerBefore2_20) {
  EXPECT_EQ(nccl_tree_chunks(4 * MiB, 4, 128, 20603), 64);
  EXPECT_EQ(nccl_tree_chunks(4 * MiB, 4, 128, 20408), 64);
  EXPECT_EQ(nccl_tree_chunks(4 * MiB, 4, 128, 21904), 64);
  EXPECT_EQ(nccl_tree_chunks(4 * MiB, 4, 128, 22003), 8);
  EXPECT_EQ(nccl_tree_chunks(4 * MiB, 4, 128, kNcclTuningVersion), 8);
  // One GPU a node, 128 nodes (depth 7), 1 MiB: 512 KiB a tree. 1 < 56: 256 KiB; 2 < 56: 128 KiB; 4 < 28: 64 KiB;
  // 8 >= 7. 8 chunks, where 2.30.7 sends the tree's half whole.
  EXPECT_EQ(detail::double_binary_tree_chunks(128, 1 * MiB, 20603), 8);
  EXPECT_EQ(detail::double_binary_tree_chunks(128, 1 * MiB, kNcclTuningVersion), 1);
  // 64 KiB: 32 KiB a tree, halved down to the 32 KiB floor: one chunk.
  EXPECT_EQ(detail::double_binary_tree_chunks(128, 64 * KiB, 20603), 1);
  // Large messages keep the slot: 256 MiB a tree is 512 chunks of 512 KiB in every release.
  EXPECT_EQ(nccl_tree_chunks(256 * MiB, 4, 128, 20603), 512);
}

// The schedule is the pipeline of those chunks: C + 2D - 1 steps, D = 7 for NCCL's trees over 128 positions (tree A:
// root 0 over 64, a subtree of height 6).
TEST(NcclRelease, TheTreePipelineRunsTheReleasesChunks) {
  Request r;
  r.ranks = 128;
  r.bytes = 1 * MiB;
  r.algorithm = Algorithm::double_binary_tree;
  r.nccl.version = 20603;
  EXPECT_EQ(make_schedule(r)->step_count(), 8 + 2 * 7 - 1);
  r.nccl.version = kNcclTuningVersion;
  EXPECT_EQ(make_schedule(r)->step_count(), 1 + 2 * 7 - 1);
}

// Bandwidth alone (alpha = 0, no reduction cost) over B: 2.30.7 crosses 14 steps, each moving at least one whole
// 512 KiB chunk over some link, so T >= 14 x 512 KiB / B; 2.6.3 crosses 21 steps of 64 KiB chunks, no position moving
// more than 4 in a step (each is a leaf in one tree), so T <= 21 x 4 x 64 KiB / B = 5376 KiB / B < 7168 KiB / B.
TEST(NcclRelease, FinerChunksFillADeepTreesPipeline) {
  Request r;
  r.ranks = 128;
  r.bytes = 1 * MiB;
  r.algorithm = Algorithm::double_binary_tree;
  const double B = 3.125e9; // 25 Gb/s
  r.nccl.version = 20603;
  const double older = closed_form_time(r, 0, B, 0);
  r.nccl.version = kNcclTuningVersion;
  const double newer = closed_form_time(r, 0, B, 0);
  EXPECT_LE(older, 21 * 4 * 64 * KiB / B * (1 + 1e-12));
  EXPECT_GE(newer, 14 * 512 * KiB / B * (1 - 1e-12));
}

NcclSystem pcie_v100_nodes(int version) {
  NcclSystem s;
  s.compute_capability = 70;
  s.gpu_bandwidth = 12e9;    // PCIe Gen3 x16 as NCCL counts it (topo.cc kvDictPciGen)
  s.nic_bandwidth = 3.125e9; // 25 GbE
  s.version = version;
  return s;
}

NcclSystem nvlink_a100_nodes(int version) {
  NcclSystem s;
  s.compute_capability = 80;
  s.nvlink = s.nvswitch = true;
  s.gpu_bandwidth = 12 * 20.0e9;
  s.nic_bandwidth = 25e9;
  s.nics = 8;
  s.version = version;
  return s;
}

// Before 2.4.2 NCCL had rings only; before 2.5.6 no LL128. The same systems under 2.30.7 do pick them, so the
// releases are what changes the choice.
TEST(NcclRelease, OlderReleasesChooseOnlyWhatTheyHad) {
  const auto picks = [](const NcclTuning& t, NcclAlgorithm a, Protocol p) {
    for (double bytes = 8; bytes <= 4.0 * 1024 * MiB; bytes *= 2)
      if (const auto c = t.choose(bytes); c.algorithm == a && (p == Protocol::automatic || c.protocol == p))
        return true;
    return false;
  };
  EXPECT_FALSE(picks(NcclTuning(Operation::all_reduce, 512, 128, pcie_v100_nodes(20307)), NcclAlgorithm::tree,
                     Protocol::automatic));
  EXPECT_TRUE(picks(NcclTuning(Operation::all_reduce, 512, 128, pcie_v100_nodes(20408)), NcclAlgorithm::tree,
                    Protocol::automatic));
  EXPECT_FALSE(
      picks(NcclTuning(Operation::all_reduce, 64, 8, nvlink_a100_nodes(20408)), NcclAlgorithm::ring, Protocol::ll128) ||
      picks(NcclTuning(Operation::all_reduce, 64, 8, nvlink_a100_nodes(20408)), NcclAlgorithm::tree, Protocol::ll128));
  const NcclTuning newest(Operation::all_reduce, 64, 8, nvlink_a100_nodes(kNcclTuningVersion));
  EXPECT_TRUE(picks(newest, NcclAlgorithm::ring, Protocol::ll128) ||
              picks(newest, NcclAlgorithm::tree, Protocol::ll128));
}

} // namespace
} // namespace dtsim::collectives
