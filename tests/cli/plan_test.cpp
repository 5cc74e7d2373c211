// `dtsim plan` as a user runs it on the shipped planning scenario: the run's length from --tokens, the plan's cost
// from its time at the instance's price, and the choice against the deadline, each worked out by hand below.
#include "cli_util.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace dtsim::testing {
namespace {

// Llama-3-8B pre-training over H100 and A100 instances: the shipped planning scenario.
const std::string kPlanScenario = std::string(DTSIM_SOURCE_DIR) + "/scenarios/llama3-8b-pretraining-plan.json";

// Llama-3-8B on 10 billion tokens over 4 AWS p5.48xlarge, one layout simulated and three trials. By hand:
//   steps = ceil(10e9 / (512 sequences x 8,192 tokens)) = ceil(2,384.19) = 2,385;
//   the cluster costs 4 x 55.04 = 220.16 USD an hour (the preset's on-demand price), so a run of T seconds costs
//   T / 3600 x 220.16 USD; AWS publishes no spot price for p5.48xlarge, so there is one plan, on demand;
//   a run is at least its steps' iterations (checkpoints and restarts only add), and the deadline of 5 days is met.
TEST(PlanCommand, TheShippedPlanCostsItsTimeAtTheInstancesPrice) {
  TempDir dir;
  const auto json = dir.path() / "plan.json";
  const auto inv = run_dtsim("plan '" + kPlanScenario +
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

// An instance whose GPU cannot run the model is a row of the plan saying why, not the end of the plan: the V100 of a
// p3.2xlarge has no bf16 rate (calibration/profiles/v100.json). Its row still carries the cluster's size and price
// from the preset: 4 nodes x 1 GPU, 4 x 3.06 = 12.24 USD an hour.
TEST(PlanCommand, AnInstanceThatCannotRunTheModelIsARowSayingWhy) {
  TempDir dir;
  const auto json = dir.path() / "plan.json";
  const auto inv = run_dtsim("plan '" + kPlanScenario +
                                 "' --steps 10 --instances aws.p3.2xlarge,aws.p5.48xlarge --nodes 4 --layouts 1 "
                                 "--trials 1 --json '" +
                                 json.string() + "'",
                             dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  const auto d = nlohmann::json::parse(read_file(json));
  ASSERT_EQ(d.at("clusters").size(), 2u);
  const auto& v100 = d.at("clusters").at(0);
  EXPECT_EQ(v100.at("instance"), "aws.p3.2xlarge");
  EXPECT_EQ(v100.at("gpus"), 4);
  EXPECT_NEAR(v100.at("price_usd_per_hour").get<double>(), 12.24, 1e-9);
  EXPECT_TRUE(v100.at("why_none").get<std::string>().starts_with("cannot run: /model/precision")) << v100;
  ASSERT_EQ(d.at("plans").size(), 1u);
  EXPECT_EQ(d.at("plans").at(0).at("instance"), "aws.p5.48xlarge");
}

TEST(PlanCommand, AnEmptyInstanceListIsRefused) {
  TempDir dir;
  const auto inv = run_dtsim("plan '" + kPlanScenario + "' --steps 10 --instances ''", dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("--instances"), std::string::npos) << inv.err;
  EXPECT_NE(inv.err.find("is empty"), std::string::npos) << inv.err;
}

// 10^30 tokens in steps of 512 x 8,192 = 4,194,304 tokens make 2.4e23 iterations: refused naming --tokens, where the
// cast to a 64-bit count used to overflow.
TEST(PlanCommand, ARunLongerThanATrillionIterationsIsRefused) {
  TempDir dir;
  const auto inv = run_dtsim("plan '" + kPlanScenario + "' --tokens 1e30", dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("--tokens: makes 2.38e+23 iterations"), std::string::npos) << inv.err;
}

} // namespace
} // namespace dtsim::testing
