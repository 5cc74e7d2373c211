// with_strategy and compare(): a scenario under another strategy keeps what its own strategy says about the cluster
// and the job where the new scheme uses it, and nothing else of the old scheme; a comparison comes back in order.
#include "sim/simulate.hpp"
#include "sim/studies/compare.hpp"
#include "sim/studies/sweep.hpp"

#include <nlohmann/json.hpp>

#include <stdexcept>

#include <gtest/gtest.h>

namespace dtsim::studies {
namespace {

using scenario::Scenario;
using strategies::Kind;
using strategies::Schedule;
using strategies::ServerPlacement;

// A small MLP on 4 single-GPU nodes, worker `straggler` twice as slow; `strategy` is training.strategy's JSON text.
Scenario four_nodes(const std::string& strategy, int nodes = 4, int straggler = 0) {
  const nlohmann::json document = {
      {"version", 1},
      {"name", "t"},
      {"model", {{"preset", "mlp-small"}, {"batch_per_gpu", 16}}},
      {"cluster", {{"nodes", nodes}, {"gpus_per_node", 1}, {"gpu", "v100"}, {"nic", {{"bandwidth", "10Gbps"}}}}},
      {"training", {{"strategy", nlohmann::json::parse(strategy)}, {"algorithm", "ring"}}},
      {"stragglers", {{"ranks", {straggler}}, {"slowdown", 2}}},
      {"run", {{"iterations", 2}, {"warmup_iterations", 1}}}};
  return scenario::parse_scenario(document.dump(), "t.json");
}

TEST(WithStrategy, TheNameGivesTheSchemeAndTheRestOfTheScenarioStays) {
  const auto base = four_nodes(R"("allreduce")");
  const auto s = with_strategy(base, "ssp:5");
  EXPECT_EQ(s.training.strategy, strategies::parse_strategy_name("ssp:5"));
  auto expected = scenario::to_json(base), got = scenario::to_json(s);
  expected["training"].erase("strategy");
  got["training"].erase("strategy");
  EXPECT_EQ(got, expected); // model, cluster, algorithm, stragglers, run
  EXPECT_EQ(s.origin, "t.json");
}

TEST(WithStrategy, KeepsTheScenariosServersAndJobWhereTheNewSchemeUsesThem) {
  const auto base = four_nodes(R"({"name": "ps-sync", "servers": {"placement": "colocated"}, "backup_workers": 1,
                                   "accumulation": 2, "graph": "exponential", "sparse_embeddings": true})");
  const auto ps = with_strategy(base, "ps-sync").training.strategy;
  EXPECT_EQ(ps.servers.placement, ServerPlacement::colocated);
  EXPECT_EQ(ps.backup_workers, 1);
  EXPECT_TRUE(ps.sparse_embeddings);
  EXPECT_EQ(ps.accumulation, 2);

  const auto async = with_strategy(base, "ps-async").training.strategy;
  EXPECT_EQ(async.schedule, Schedule::asynchronous);
  EXPECT_EQ(async.servers.placement, ServerPlacement::colocated);
  EXPECT_EQ(async.backup_workers, 0); // backup workers belong to synchronous rounds
  EXPECT_TRUE(async.sparse_embeddings);

  const auto dpsgd = with_strategy(base, "dpsgd").training.strategy;
  EXPECT_EQ(dpsgd.kind, Kind::dpsgd);
  EXPECT_EQ(dpsgd.graph, strategies::PeerGraph::exponential);
  EXPECT_EQ(dpsgd.accumulation, 2);
  EXPECT_EQ(dpsgd.servers, strategies::StrategySpec{}.servers); // not used, not carried
  EXPECT_FALSE(dpsgd.sparse_embeddings);

  const auto allreduce = with_strategy(base, "allreduce").training.strategy;
  EXPECT_EQ(allreduce.graph, strategies::PeerGraph::ring);
  EXPECT_EQ(allreduce.accumulation, 2);
}

TEST(WithStrategy, WhatTheOldNameImpliedIsNotCarried) {
  // Petuum's two dedicated servers are the preset's, not the cluster's: ps-async takes its own one.
  const auto base = four_nodes(R"("preset:Petuum")");
  ASSERT_EQ(base.training.strategy.servers.count, 2);
  EXPECT_EQ(with_strategy(base, "ps-async").training.strategy, strategies::parse_strategy_name("ps-async"));
  // And a preset under a plain scenario stays that preset.
  EXPECT_EQ(with_strategy(four_nodes(R"("allreduce")"), "preset:Petuum").training.strategy.preset, "Petuum");
}

TEST(WithStrategy, BadNamesAndScenariosThatDoNotValidate) {
  const auto base = four_nodes(R"("allreduce")");
  EXPECT_THROW(with_strategy(base, "gosip"), std::invalid_argument);
  EXPECT_THROW(with_strategy(base, "ssp:-1"), std::invalid_argument);
  // A dedicated server on a one-node cluster leaves nobody to train; the message names the strategy.
  const auto one = four_nodes(R"("allreduce")", 1);
  try {
    with_strategy(one, "easgd");
    ADD_FAILURE() << "expected a ScenarioError";
  } catch (const scenario::ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("(with strategy \"easgd\")"), std::string::npos) << e.what();
    EXPECT_EQ(e.file(), "t.json");
  }
}

TEST(StrategyList, CommaSeparatedShortNames) {
  EXPECT_EQ(parse_strategy_list("allreduce, ps-sync ,ssp:3"),
            (std::vector<std::string>{"allreduce", "ps-sync", "ssp:3"}));
  EXPECT_THROW(parse_strategy_list(""), std::invalid_argument);
  EXPECT_THROW(parse_strategy_list("allreduce,"), std::invalid_argument);
  try {
    parse_strategy_list("allreduce,bsp");
    ADD_FAILURE() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("\"bsp\""), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("local-sgd[:H]"), std::string::npos) << e.what();
  }
}

TEST(Compare, ResultsInTheOrderGivenWithFailuresInTheirPlace) {
  const auto base = four_nodes(R"("allreduce")", 2, 1);
  EXPECT_THROW(compare(base, {"allreduce", "nope"}, 2), std::invalid_argument);
  std::size_t reported = 0;
  // Two nodes: ps-sync trains on one; its straggler rank 1 is the server's node, so it fails to validate.
  const auto points = compare(base, {"dpsgd", "ps-sync", "allreduce"}, 2, [&](std::size_t, std::size_t total) {
    ++reported;
    EXPECT_EQ(total, 3u);
  });
  EXPECT_EQ(reported, 3u);
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points[0].strategy, "dpsgd");
  EXPECT_TRUE(points[0].ok) << points[0].error;
  EXPECT_EQ(points[0].result.strategy.name, "dpsgd");
  EXPECT_FALSE(points[1].ok);
  EXPECT_NE(points[1].error.find("/stragglers/ranks/0"), std::string::npos) << points[1].error;
  EXPECT_TRUE(points[2].ok) << points[2].error;
  EXPECT_EQ(points[2].result.strategy.name, "allreduce");
  EXPECT_EQ(points[2].result.strategy.workers, 2);
}

} // namespace
} // namespace dtsim::studies
