// Every fidelity gives one answer: on each shipped scenario that coarse fidelity can run (tensor, pipeline, expert or
// context parallelism, tensor groups inside a node, one kind of GPU), coarse and aggregate are held within 2% of step,
// every rank, op and flow replayed. Scenarios of more than 32 GPUs are left to docs/guide.md's coarse-fidelity table
// (step takes 27 s to minutes there: Megatron-Core's 7.1B GPT on 96 H100 measured +0.8%); a generated grid of 28
// layouts is held the same way in tests/sim/model_parallel_test.cpp.
#include "sim/simulate.hpp"
#include "tests/shipped_scenarios.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace dtsim {
namespace {

class ShippedFidelities : public ::testing::TestWithParam<std::string> {};

constexpr int kLargestForStep = 32; // GPUs: step stays within seconds

TEST_P(ShippedFidelities, CoarseAndAggregateAgreeWithStep) {
  const auto path = std::filesystem::path(DTSIM_SOURCE_DIR) / "scenarios" / (GetParam() + ".json");
  auto s = scenario::load_scenario(path.string());
  const auto& p = s.parallelism;
  if (!p.model_parallel() || p.tensor > s.cluster.gpus_per_node || !s.groups.empty())
    GTEST_SKIP() << "coarse fidelity does not apply (no model parallelism, tensor groups across nodes or mixed GPUs)";
  if (s.world_size() > kLargestForStep) GTEST_SKIP() << s.world_size() << " GPUs: step is measured in docs/guide.md";
  s.run.fidelity = scenario::Fidelity::step;
  const double step = simulate(s).result.iteration.mean;
  for (auto fidelity : {scenario::Fidelity::aggregate, scenario::Fidelity::coarse}) {
    s.run.fidelity = fidelity;
    EXPECT_NEAR(simulate(s).result.iteration.mean, step, 0.02 * step) << scenario::to_string(fidelity);
  }
}

INSTANTIATE_TEST_SUITE_P(Every, ShippedFidelities, ::testing::ValuesIn(testing::shipped_scenarios()),
                         [](const auto& info) { return testing::test_name(info.param); });

} // namespace
} // namespace dtsim
