// Bamboo's redundant computation in the per-iteration plan: each stage runs its successor's forward after its own
// (the last stage the first's), holds its successor's model state, and keeps it current with the successor's reduced
// gradients. Checked against a pipeline of round-number slabs whose timeline is written out by hand.
#include "sim/plan/plan.hpp"
#include "sim/simulate.hpp"

#include "tests/sim/round_gpu.hpp"

#include <gtest/gtest.h>

#include <string>

namespace dtsim {
namespace {

using scenario::PipelineSchedule;

// Four slabs over a GPipe pipeline of two single-GPU nodes (two slabs a stage), four micro-batches, free network.
scenario::Scenario two_stages(bool redundant) {
  auto s = test::pipeline_scenario(4, 2, 4, PipelineSchedule::gpipe);
  s.lifecycle.spot.enabled = redundant;
  s.lifecycle.spot.policy = redundant ? lifecycle::SpotPolicy::redundancy : lifecycle::SpotPolicy::wait;
  return s;
}

TEST(RedundantComputation, EachStageRunsItsSuccessorsForwardOnEveryMicroBatch) {
  const auto plan = plan::make_plan(two_stages(true));
  // Stage 0 runs stage 1's slabs (2, 3) and stage 1 runs stage 0's (0, 1), once per micro-batch: 4 x 2 ops, each a
  // slab's forward (10.01 ms).
  for (int rank = 0; rank < 2; ++rank) {
    const auto& program = plan.graph.program_of(rank);
    int redundant = 0;
    double seconds = 0;
    for (const auto& op : program.ops)
      if (op.name.find("redundant fwd") != std::string::npos) {
        ++redundant;
        seconds += std::get<graph::Compute>(op.body).seconds;
        const std::string expected = rank == 0 ? "slab2" : "slab0";
        const std::string other = rank == 0 ? "slab3" : "slab1";
        EXPECT_TRUE(op.name.starts_with(expected) || op.name.starts_with(other)) << op.name;
      }
    EXPECT_EQ(redundant, 8) << "rank " << rank;
    EXPECT_NEAR(seconds, 8 * 10.01e-3, 1e-9) << "rank " << rank;
  }
}

TEST(RedundantComputation, GPipesTimelineWithTheRedundantForwards) {
  // Per micro-batch a stage's forward F = 20 ms, backward B = 40 ms, a redundant forward R = 20 ms (x 1.001 launch).
  // Without redundancy: stage 0 forwards 0-80, stage 1 20-100, stage 1's backwards 100-260, stage 0's 140-300:
  // 15 F. With it, stage 0 runs F R F R ..., sending each micro-batch before its R: F0 ends at 20, F1 at 60, F2 at
  // 100, F3 at 140. Stage 1 runs F0 20-40, R 40-60, F1 60-80, R 80-100, F2 100-120, R, F3 140-160, R 160-180, then
  // its backwards 180-340; stage 0's backwards follow each gradient 40 ms later: 220-380. 19 F.
  const double f = 20.02e-3;
  const auto without = simulate(two_stages(false)).result;
  const auto with = simulate(two_stages(true)).result;
  EXPECT_NEAR(without.iteration.mean, 15 * f, 0.002 * 15 * f);
  EXPECT_NEAR(with.iteration.mean, 19 * f, 0.002 * 19 * f);
}

TEST(RedundantComputation, EachStageHoldsItsSuccessorsModelState) {
  const auto without = plan::make_plan(two_stages(false)).parallel.stage_memory;
  const auto with = plan::make_plan(two_stages(true)).parallel.stage_memory;
  ASSERT_EQ(with.size(), 2u);
  const auto state = [](const plan::MemoryEstimate& m) {
    double bytes = 0;
    for (const auto& item : m.items)
      if (item.name == "weights" || item.name == "gradients" || item.name == "optimizer states") bytes += item.bytes;
    return bytes;
  };
  for (std::size_t stage = 0; stage < 2; ++stage) {
    const auto& next = without[(stage + 1) % 2];
    // Two slabs of 1,000 parameters in fp32 with SGD: weights 4 B, gradients 4 B, no optimizer state.
    EXPECT_DOUBLE_EQ(state(next), 2 * 1000 * (4 + 4));
    EXPECT_DOUBLE_EQ(with[stage].total(), without[stage].total() + state(next));
    EXPECT_EQ(with[stage].items.back().name, "successor's replica");
  }
}

// The run's result carries each stage's items as the plan has them (the report draws them by kind), the same after a
// trip through JSON as child processes make; two slabs of 1,000 fp32 parameters with SGD: 4,000 B of weights each.
TEST(RedundantComputation, TheResultCarriesEachStagesItems) {
  const auto result = simulate(two_stages(true)).result;
  const auto plan = plan::make_plan(two_stages(true));
  ASSERT_EQ(result.parallel.stage_items.size(), 2u);
  for (std::size_t stage = 0; stage < 2; ++stage) {
    double sum = 0;
    for (const auto& item : result.parallel.stage_items[stage])
      sum += item.bytes;
    EXPECT_DOUBLE_EQ(sum, result.parallel.stage_memory[stage]);
    EXPECT_DOUBLE_EQ(sum, plan.parallel.stage_memory[stage].total());
    EXPECT_EQ(result.parallel.stage_items[stage].front().name, "weights");
    EXPECT_DOUBLE_EQ(result.parallel.stage_items[stage].front().bytes, 2 * 1000 * 4.0);
  }
  const auto back = report::run_result_from_json(report::to_json(result)).parallel.stage_items;
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].back().name, result.parallel.stage_items[1].back().name);
  EXPECT_DOUBLE_EQ(back[1].back().bytes, result.parallel.stage_items[1].back().bytes);
}

TEST(RedundantComputation, TheSuccessorsGradientsCrossToItsShadow) {
  const auto plan = plan::make_plan(two_stages(true));
  // Each stage sends its 2,000 parameters' fp32 gradients to the stage before it (ring: stage 0's to stage 1).
  for (int rank = 0; rank < 2; ++rank) {
    int sends = 0;
    for (const auto& op : plan.graph.program_of(rank).ops)
      if (op.name == "send gradients to the shadow stage") {
        ++sends;
        const auto& p2p = std::get<graph::SendRecv>(op.body);
        EXPECT_EQ(p2p.peer, 1 - rank);
        EXPECT_DOUBLE_EQ(p2p.bytes, 2000 * 4);
      }
    EXPECT_EQ(sends, 1);
  }
}

} // namespace
} // namespace dtsim
