// `dtsim search` and `dtsim plan` on every shipped scenario, as a user first tries them: each finds a layout, and a
// plan lists each instance as a plan or as a row saying why it cannot run the job. A scenario's own choices (an
// overlap, a fidelity, a recorded step, a spot or elastic policy) must not make the other layouts and clusters
// invalid.
#include "cli_util.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace dtsim::testing {
namespace {

class ShippedStudies : public ::testing::TestWithParam<std::string> {};

std::string scenario_path(const std::string& name) {
  return (std::filesystem::path(DTSIM_SOURCE_DIR) / "scenarios" / (name + ".json")).string();
}

// One candidate simulated: the search exits 0 with its best layout ranked.
TEST_P(ShippedStudies, SearchFindsALayout) {
  TempDir dir;
  const auto json = dir.path() / "search.json";
  const auto inv = run_dtsim(
      "search '" + scenario_path(GetParam()) + "' --simulate 1 --top 1 --jobs 1 --json '" + json.string() + "'", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  const auto d = nlohmann::json::parse(read_file(json));
  EXPECT_GE(d.at("counts").at("simulated").get<int>() - d.at("counts").at("failed").get<int>(), 1) << inv.out;
}

// Two instances: a p3.2xlarge, whose V100 has no bf16 or fused attention (a row saying why for the jobs that need
// them), and a p5.48xlarge of 8 H100. The plan has at least one plan, and every cluster screened either has its best
// layout or says why it has none.
TEST_P(ShippedStudies, PlanListsEveryInstance) {
  TempDir dir;
  const auto json = dir.path() / "plan.json";
  const auto inv = run_dtsim("plan '" + scenario_path(GetParam()) +
                                 "' --steps 10 --instances aws.p3.2xlarge,aws.p5.48xlarge --clusters 1 --layouts 1 "
                                 "--trials 1 --capacity on-demand --jobs 1 --json '" +
                                 json.string() + "'",
                             dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  const auto d = nlohmann::json::parse(read_file(json));
  EXPECT_GE(d.at("plans").size(), 1u);
  ASSERT_EQ(d.at("clusters").size(), 2u);
  for (const auto& c : d.at("clusters"))
    EXPECT_TRUE(c.contains("estimate_seconds") || !c.at("why_none").get<std::string>().empty()) << c;
}

INSTANTIATE_TEST_SUITE_P(Every, ShippedStudies, ::testing::ValuesIn(shipped_scenarios()),
                         [](const auto& info) { return test_name(info.param); });

} // namespace
} // namespace dtsim::testing
