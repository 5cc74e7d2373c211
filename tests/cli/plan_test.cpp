// `dtsim plan` as a user runs it on the shipped planning scenario: the run's length from --tokens, the plan's cost
// from its time at the instance's price, and the choice against the deadline, each worked out by hand below.
#include "cli_util.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

namespace dtsim::testing {
namespace {

// Llama-3-8B on 10 billion tokens over 4 AWS p5.48xlarge, one layout simulated and three trials. By hand:
//   steps = ceil(10e9 / (512 sequences x 8,192 tokens)) = ceil(2,384.19) = 2,385;
//   the cluster costs 4 x 55.04 = 220.16 USD an hour (the preset's on-demand price), so a run of T seconds costs
//   T / 3600 x 220.16 USD; AWS publishes no spot price for p5.48xlarge, so there is one plan, on demand;
//   a run is at least its steps' iterations (checkpoints and restarts only add), and the deadline of 5 days is met.
TEST(PlanCommand, TheShippedPlanCostsItsTimeAtTheInstancesPrice) {
  TempDir dir;
  const auto json = dir.path() / "plan.json";
  const auto scenario = std::filesystem::path(DTSIM_SOURCE_DIR) / "scenarios/llama3-8b-pretraining-plan.json";
  const auto inv = run_dtsim("plan '" + scenario.string() +
                                 "' --tokens 10B --deadline 5d --instances aws.p5.48xlarge --nodes 4 --layouts 1 "
                                 "--trials 3 --jobs 2 --json '" +
                                 json.string() + "'",
                             dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  const auto d = nlohmann::json::parse(read_file(json));
  EXPECT_EQ(d.at("steps").get<long>(), 2385);
  ASSERT_EQ(d.at("plans").size(), 1u);
  const auto& plan = d.at("plans").at(0);
  EXPECT_EQ(plan.at("capacity"), "on-demand");
  EXPECT_EQ(plan.at("gpus"), 32);
  const double seconds = plan.at("time_to_train_seconds_mean").get<double>();
  EXPECT_NEAR(plan.at("cost_usd_mean").get<double>(), seconds / 3600 * 220.16, 1e-9 * seconds);
  EXPECT_GE(seconds, 2385 * plan.at("iteration_seconds").get<double>());
  EXPECT_LE(plan.at("time_to_train_seconds_p90").get<double>(), 5 * 86400.0);
  EXPECT_EQ(d.at("cheapest_on_time"), 0);
  EXPECT_NE(inv.out.find("Cheapest on time: 4 x aws.p5.48xlarge (32 GPUs) on demand"), std::string::npos) << inv.out;
}

} // namespace
} // namespace dtsim::testing
