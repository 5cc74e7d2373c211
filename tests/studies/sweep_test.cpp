// The scaling study: each point of a sweep is the scenario read again at its node count.
#include "sim/scenario/scenario.hpp"
#include "sim/studies/sweep.hpp"

#include <gtest/gtest.h>

#include <string>

namespace dtsim::studies {
namespace {

// A sweep of a model-parallel scenario reads each point again at its node count: the data-parallel degree follows the
// GPUs (the canonical form spells out the base's, which no other count has). Llama 3 8B on 2 nodes of 8 H100 at
// tensor 4 x context 4: 16 / 16 = 1 replica; at 4 nodes, 32 / 16 = 2; at 8, 64 / 16 = 4.
TEST(ModelParallelSweep, EachNodeCountGetsItsOwnDataParallelDegree) {
  const auto base =
      scenario::load_scenario(std::string(DTSIM_SOURCE_DIR) + "/scenarios/llama3-8b-context-parallel-h100x16.json");
  ASSERT_EQ(base.parallelism.tensor * base.parallelism.context, 16);
  EXPECT_EQ(base.parallelism.data, 1);
  EXPECT_EQ(with_nodes(base, 4).parallelism.data, 2);
  EXPECT_EQ(with_nodes(base, 8).parallelism.data, 4);
  EXPECT_EQ(with_nodes(base, 4).parallelism.micro_batches, base.parallelism.micro_batches);
}

} // namespace
} // namespace dtsim::studies
