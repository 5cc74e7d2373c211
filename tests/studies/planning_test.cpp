// `dtsim plan` checked by hand: the front of time against cost on points chosen by hand, and a small plan (two
// instances, two node counts, on demand and on spot) whose choice a hand calculation from the simulated iterations
// (what `dtsim run` prints) and the run's length and prices (what `dtsim train` multiplies out) makes too.
#include "sim/simulate.hpp"
#include "sim/studies/planning.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <map>
#include <tuple>

namespace dtsim::studies::planning {
namespace {

using nlohmann::json;

TEST(PlanFront, KeepsThePointsNoOtherIsBothFasterAndCheaperThan) {
  // (10 s, 5 USD) beats (11 s, 6 USD) and (10 s, 7 USD); (12 s, 4 USD) and (9 s, 9 USD) trade time for money; a tie
  // with a front point stays on the front.
  const std::vector<FrontPoint> points{{10, 5}, {11, 6}, {12, 4}, {9, 9}, {10, 7}, {12, 4}};
  EXPECT_EQ(pareto_front(points), (std::vector<std::size_t>{0, 2, 3, 5}));
}

// Eight fully connected layers of 10M fp32 weights (momentum SGD), 2e10 FLOPs each per sample forward: no heads or
// blocks, so a cluster's layouts are data parallel only (micro-batch, ZeRO stage, recomputation). 8 samples per GPU
// on one node of 8 GPUs: a global batch of 64 samples, held on every cluster. No failures and no checkpoints, so a
// run lasts exactly its steps' iterations. Spot at no interruptions, so its trials too are exact.
json small_job() {
  json layers = json::array();
  for (int i = 0; i < 8; ++i)
    layers.push_back({{"name", "fc" + std::to_string(i)},
                      {"kind", "matmul"},
                      {"forward_flops", 2e10},
                      {"parameters", 10'000'000},
                      {"input_elements", 4096},
                      {"output_elements", 4096}});
  return {{"version", 1},
          {"name", "plan-test"},
          {"model", {{"layers", layers}, {"batch_per_gpu", 8}}},
          {"cluster", {{"instance", "aws.p4d.24xlarge"}, {"nodes", 1}}},
          {"training", {{"optimizer", "momentum"}, {"steps", 20000}}},
          {"spot", {{"interruptions_per_month", 0}, {"notice", "30s"}, {"replacement", "10min"}}},
          {"run", {{"iterations", 2}, {"warmup_iterations", 1}}}};
}

scenario::Scenario read(const json& document) {
  return scenario::parse_scenario(document.dump(), "plan-test.json");
}

Options two_by_two() {
  Options options;
  options.instances = {"aws.p4d.24xlarge", "gcp.a2-highgpu-8g"};
  options.node_counts = {1, 2};
  options.clusters = 4; // every cluster simulated, so the hand calculation sees them all
  options.trials = 2;
  options.search.jobs = 2;
  return options;
}

TEST(Plan, TheCheapestPlanOnTimeIsTheOneAHandCalculationPicks) {
  const auto base = read(small_job());
  auto options = two_by_two();
  // The hand calculation first, from each cluster's simulated iteration: time = steps x iteration, cost = time x the
  // cluster's price (the instance's per node-hour x nodes; GCP publishes a spot price for a2-highgpu-8g, AWS none
  // for p4d.24xlarge).
  const auto free_run = plan(base, options);
  ASSERT_EQ(free_run.clusters.size(), 4u);
  const std::map<std::string, std::pair<double, double>> price{{"aws.p4d.24xlarge", {21.96, 0}},
                                                               {"gcp.a2-highgpu-8g", {29.38708, 15.42416}}};
  struct Hand {
    double seconds, dollars;
    std::string instance;
    int nodes;
    Capacity capacity;
  };
  std::vector<Hand> hand;
  for (const auto& p : free_run.plans) {
    const auto& c = free_run.clusters[p.cluster];
    // The plan's layout run as `dtsim run` runs it.
    const auto laid_out = search::candidate_scenario(on_cluster(base, c.instance, c.nodes, Capacity::on_demand, 0),
                                                     p.layout.candidate, options.search);
    const double iteration = simulate(laid_out).result.iteration.mean;
    EXPECT_NEAR(p.layout.result.iteration.mean, iteration, 1e-12 * iteration);
    const double seconds = 20000 * iteration;
    const auto [on_demand, spot] = price.at(c.instance);
    const double per_node_hour = p.capacity == Capacity::spot ? spot : on_demand;
    hand.push_back({seconds, seconds / 3600 * per_node_hour * c.nodes, c.instance, c.nodes, p.capacity});
    EXPECT_NEAR(p.seconds.mean, hand.back().seconds, 1e-9 * seconds) << c.instance << " " << c.nodes;
    EXPECT_NEAR(p.dollars.mean, hand.back().dollars, 1e-9 * hand.back().dollars) << c.instance << " " << c.nodes;
  }
  // Two clusters of p4d (on demand), two of a2 (on demand and on spot): six plans.
  ASSERT_EQ(hand.size(), 6u);
  // A deadline halfway between the slowest and the fastest plan.
  double fastest = hand.front().seconds, slowest = fastest;
  for (const auto& h : hand)
    fastest = std::min(fastest, h.seconds), slowest = std::max(slowest, h.seconds);
  const double deadline = (fastest + slowest) / 2;
  const Hand* pick = nullptr;
  for (const auto& h : hand)
    if (h.seconds <= deadline && (!pick || h.dollars < pick->dollars)) pick = &h;
  ASSERT_NE(pick, nullptr);

  options.deadline = deadline;
  const auto planned = plan(base, options);
  ASSERT_TRUE(planned.cheapest_on_time);
  const auto& chosen = planned.plans[*planned.cheapest_on_time];
  EXPECT_EQ(planned.clusters[chosen.cluster].instance, pick->instance);
  EXPECT_EQ(planned.clusters[chosen.cluster].nodes, pick->nodes);
  EXPECT_EQ(chosen.capacity, pick->capacity);
  EXPECT_TRUE(planned.binding.empty()) << planned.binding;
}

// The progress a plan reports counts the work it does: each simulated cluster's layouts (as many as were chosen, which
// may be fewer than --layouts) and its trials on each capacity (two on spot and on demand for a2-highgpu-8g, one for
// p4d), and it ends at its total.
TEST(Plan, ItsProgressCountsItsWorkAndReachesItsTotal) {
  const auto base = read(small_job());
  auto options = two_by_two();
  std::size_t last_done = 0, first_total = 0, last_total = 0;
  const auto planned = plan(base, options, [&](std::size_t done, std::size_t total) {
    EXPECT_GE(done, last_done);
    last_done = done;
    if (first_total == 0) first_total = total;
    last_total = total;
  });
  std::size_t work = 0;
  for (const auto& c : planned.clusters)
    if (c.simulated) work += static_cast<std::size_t>(c.counts.simulated) + 2 * (c.spot_price_per_hour > 0 ? 2 : 1);
  EXPECT_EQ(first_total, work);
  EXPECT_EQ(last_total, work);
  EXPECT_EQ(last_done, work);
}

TEST(Plan, AnUnreachableDeadlineSaysWhichPlanComesNearestAndByHowMuch) {
  const auto base = read(small_job());
  auto options = two_by_two();
  options.deadline = 60; // a minute: 20,000 iterations take hours on any of them
  const auto planned = plan(base, options);
  EXPECT_FALSE(planned.cheapest_on_time);
  ASSERT_TRUE(planned.fastest);
  const auto& fastest = planned.plans[*planned.fastest];
  for (const auto& p : planned.plans)
    EXPECT_GE(p.seconds.mean, fastest.seconds.mean);
  EXPECT_NE(planned.binding.find("no plan meets the deadline of 0.0 h"), std::string::npos) << planned.binding;
  // The fastest's time, over the deadline by that time less a minute (in hours, one decimal).
  const auto over = fmt::format("{:.1f} h over", (fastest.seconds.p90 - 60) / 3600);
  EXPECT_NE(planned.binding.find(over), std::string::npos) << planned.binding << " / " << over;
}

TEST(Plan, NoClusterThatFitsTheModelIsRefusedWithTheNearestMiss) {
  auto document = small_job();
  // 8 x 4e9 fp32 weights with momentum, 12 B a parameter: 384 GB, so even ZeRO-3's shard over one node's 8 GPUs (48
  // GB each) is more than an A100 40GB holds; the message names the smallest need.
  for (auto& layer : document["model"]["layers"])
    layer["parameters"] = 4'000'000'000LL;
  auto options = two_by_two();
  options.node_counts = {1};
  try {
    plan(read(document), options);
    FAIL() << "planned a model that fits nowhere";
  } catch (const scenario::ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("no layout fits: the smallest needs"), std::string::npos) << e.what();
  }
}

} // namespace
} // namespace dtsim::studies::planning
