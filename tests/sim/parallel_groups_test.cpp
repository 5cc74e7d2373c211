// The groups of a model-parallel grid as `dtsim explain` describes them (plan::describe_groups): their sizes,
// counts, first members, whether they leave the node, and the narrowest ring step, derived by hand.
#include "sim/plan/parallel_layout.hpp"
#include "sim/plan/stage_summary.hpp"
#include "sim/scenario/scenario.hpp"

#include <gtest/gtest.h>

#include <numeric>
#include <string>

namespace dtsim {
namespace {

// 2 nodes x 8 A100 on NVSwitch (300 GB/s per GPU port), each GPU's PCIe 32 GB/s to the root complex where the
// NIC sits, one 800 Gbps (100 GB/s) NIC per node (or 8 rails of 100 / 8 = 12.5 GB/s), one switch (or rail
// leaves); a Llama-2-7B cut to 4 blocks (32 heads: tensor 8 and 4 divide them).
scenario::Scenario grid(const std::string& parallelism, const std::string& topology = "") {
  const std::string text = R"({
    "version": 1, "name": "grid",
    "model": {"transformer": {"base": "llama2-7b", "layers": 4}, "batch_per_gpu": 1, "precision": "bf16"},
    "cluster": {"nodes": 2, "gpus_per_node": 8, "gpu": "a100-80gb",
                "intra_node": {"fabric": "nvlink", "bandwidth": "300GB/s"}, "pcie": {"bandwidth": "32GB/s"},
                "nic": {"bandwidth": "800Gbps"})" +
                           (topology.empty() ? "" : ", \"topology\": " + topology) + R"(},
    "training": {"optimizer": "adam"},
    "parallelism": )" + parallelism +
                           "}";
  return scenario::parse_scenario(text, "grid.json");
}

std::vector<int> iota(int from, int count, int step = 1) {
  std::vector<int> v(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i)
    v[static_cast<std::size_t>(i)] = from + i * step;
  return v;
}

TEST(ParallelGroups, TensorInsideANodePipelineAcrossTheNetwork) {
  const auto groups = plan::describe_groups(grid(R"({"tensor": 8, "pipeline": 2, "micro_batches": 4})"));
  // Data parallelism is 16 / (8 x 2) = 1: no data groups.
  ASSERT_EQ(groups.size(), 2u);

  // Tensor: ranks 0-7 and 8-15 (tp innermost), each a node; every step GPU -> NVSwitch -> GPU at the port's 300 GB/s.
  EXPECT_EQ(groups[0].kind, "tensor");
  EXPECT_EQ(groups[0].size, 8);
  EXPECT_EQ(groups[0].count, 2);
  EXPECT_EQ(groups[0].first, iota(0, 8));
  EXPECT_FALSE(groups[0].crosses_nodes);
  EXPECT_DOUBLE_EQ(groups[0].ring_bandwidth, 300e9);

  // Pipeline: {i, i + 8} for i = 0..7, stage 0 on node 0 and stage 1 on node 1. All 8 GPUs of a node send across
  // at once through the node's one NIC: 100 GB/s / 8 = 12.5 GB/s each, below their own PCIe (32 GB/s).
  EXPECT_EQ(groups[1].kind, "pipeline");
  EXPECT_EQ(groups[1].size, 2);
  EXPECT_EQ(groups[1].count, 8);
  EXPECT_EQ(groups[1].first, (std::vector<int>{0, 8}));
  EXPECT_TRUE(groups[1].crosses_nodes);
  EXPECT_DOUBLE_EQ(groups[1].ring_bandwidth, 100e9 / 8);
}

TEST(ParallelGroups, OnlyTheStepsThatLeaveANodeShareItsNic) {
  // Tensor 4, no pipeline: data = 16 / 4 = 4 replicas, data groups {t, t + 4, t + 8, t + 12} for t = 0..3. In the
  // ring 0 -> 4 -> 8 -> 12 -> 0 the steps 4 -> 8 and 12 -> 0 leave their node: on each node 4 GPUs send out (4-7 on
  // node 0) and 4 receive, so each gets 100 GB/s / 4 = 25 GB/s of the NIC (under PCIe's 32 GB/s); the steps inside
  // a node get the NVSwitch port's 300 GB/s. Narrowest: 25 GB/s.
  const auto groups = plan::describe_groups(grid(R"({"tensor": 4})"));
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].kind, "tensor");
  EXPECT_EQ(groups[0].count, 4);
  EXPECT_FALSE(groups[0].crosses_nodes);
  EXPECT_EQ(groups[1].kind, "data");
  EXPECT_EQ(groups[1].size, 4);
  EXPECT_EQ(groups[1].count, 4);
  EXPECT_EQ(groups[1].first, iota(0, 4, 4));
  EXPECT_TRUE(groups[1].crosses_nodes);
  EXPECT_DOUBLE_EQ(groups[1].ring_bandwidth, 25e9);
}

TEST(ParallelGroups, RailsGiveEachGpuItsOwnNic) {
  // 8 rails: GPU i of a node on rail NIC i of 100 / 8 = 12.5 GB/s, one pipeline step through each: 12.5 GB/s, the
  // same per-GPU share as one bonded NIC shared by 8 (nic.bandwidth / gpus_per_node).
  const auto groups = plan::describe_groups(
      grid(R"({"tensor": 8, "pipeline": 2, "micro_batches": 4})", R"({"kind": "rail-optimized", "rails": 8})"));
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[1].kind, "pipeline");
  EXPECT_TRUE(groups[1].crosses_nodes);
  EXPECT_DOUBLE_EQ(groups[1].ring_bandwidth, 100e9 / 8);
}

TEST(ParallelGroups, OrderPutsPipelineInsideANode) {
  // "pp-tp-ep-dp": pipeline innermost, so pipeline groups {0, 1}, {2, 3}, ... stay inside a node (300 GB/s), and
  // tensor groups {0, 2, ..., 14} and {1, 3, ..., 15} span both nodes. Two steps leave each node (6 -> 8 and
  // 7 -> 9 from node 0): 100 GB/s / 2 = 50 GB/s of the NIC each, so their PCIe's 32 GB/s is the narrowest.
  const auto groups = plan::describe_groups(grid(R"({"tensor": 8, "pipeline": 2, "micro_batches": 4,
                                                     "order": "pp-tp-ep-dp"})"));
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].kind, "tensor");
  EXPECT_EQ(groups[0].first, iota(0, 8, 2));
  EXPECT_TRUE(groups[0].crosses_nodes);
  EXPECT_DOUBLE_EQ(groups[0].ring_bandwidth, 32e9);
  EXPECT_EQ(groups[1].kind, "pipeline");
  EXPECT_EQ(groups[1].first, (std::vector<int>{0, 1}));
  EXPECT_FALSE(groups[1].crosses_nodes);
  EXPECT_DOUBLE_EQ(groups[1].ring_bandwidth, 300e9);
}

TEST(ParallelGroups, StageSplitAndMemory) {
  // 4 blocks over 2 stages, balanced by time: the embedding joins the first block and the LM head (2 x 4096 x 32000
  // FLOPs per token, about 2/3 of a block's) the last, so 2 + 2 (the larger part about 2.7 blocks' time; 3 + 1: 3).
  const auto stages = plan::describe_stages(grid(R"({"tensor": 8, "pipeline": 2, "micro_batches": 4})"));
  EXPECT_EQ(stages.chunk_units, (std::vector<int>{2, 2}));
  ASSERT_EQ(stages.stage_memory.size(), 2u);
  for (const auto& m : stages.stage_memory) {
    EXPECT_GT(m.total(), 0);
    EXPECT_TRUE(m.fits());
  }
}

} // namespace
} // namespace dtsim
