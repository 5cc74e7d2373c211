// `dtsim explain` on a large-model scenario: the parallel groups, the stage split and each stage's memory.
#include "tests/cli/cli_util.hpp"

#include <gtest/gtest.h>

namespace dtsim::testing {
namespace {

TEST(ExplainParallel, Gpt3ShowsItsGroupsStagesAndMemory) {
  TempDir dir;
  const auto inv = run_dtsim(std::string("explain '") + DTSIM_SOURCE_DIR + "/scenarios/gpt3-175b-a100x1024.json'", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  const auto& out = inv.out;
  const auto section = out.find("Parallel groups: tensor 8 x pipeline 8 x data 16");
  ASSERT_NE(section, std::string::npos) << out;
  // TP 8 fills each 8-GPU node (ranks 0-7 first), on NVSwitch at 300 GB/s per GPU.
  EXPECT_NE(out.find("tensor                       128 groups of 8 GPUs (first: 0, 1, ..., 7); inside a node; "
                     "ring bottleneck 2.40 Tbps (300.00 GB/s) per GPU",
                     section),
            std::string::npos)
      << out;
  // Pipeline stages are outermost (128 ranks apart); each GPU has its own 200 Gb/s rail.
  EXPECT_NE(out.find("pipeline                     128 groups of 8 GPUs (first: 0, 128, ..., 896); crosses the "
                     "network; ring bottleneck 200.00 Gbps (25.00 GB/s) per GPU",
                     section),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("data                         64 groups of 16 GPUs (first: 0, 8, ..., 120); crosses the network",
                     section),
            std::string::npos)
      << out;
  // 96 layers over 8 stages; global batch 1536 = micro-batch 1 x 16 replicas x 96 micro-batches.
  EXPECT_NE(out.find("12/12/12/12/12/12/12/12 blocks per model chunk", section), std::string::npos) << out;
  EXPECT_NE(out.find("x 96 micro-batches = global batch 1536 samples", section), std::string::npos) << out;
  EXPECT_NE(out.find("memory per GPU by stage", section), std::string::npos) << out;
  EXPECT_NE(out.find("Memory per GPU (the fullest pipeline stage)"), std::string::npos) << out;
}

TEST(ExplainParallel, DataParallelScenariosHaveNoGroupsSection) {
  TempDir dir;
  const auto inv = run_dtsim(std::string("explain '") + DTSIM_SOURCE_DIR + "/scenarios/quickstart.json'", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  EXPECT_EQ(inv.out.find("Parallel groups"), std::string::npos) << inv.out;
  EXPECT_NE(inv.out.find("Memory per GPU (data parallel)"), std::string::npos) << inv.out;
}

} // namespace
} // namespace dtsim::testing
