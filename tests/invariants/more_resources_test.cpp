// More of what carries the gradients never makes a job slower: a socket connection of more streams or faster ones
// (every shipped scenario whose network talks TCP), and a parameter server's shards spread over more servers, beside
// the workers or on machines of their own. Held to 0.5%, as the faster-hardware invariants are (event ordering may move
// a few sends).
#include "sim/simulate.hpp"
#include "tests/shipped_scenarios.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fmt/format.h>
#include <string>

namespace dtsim {
namespace {

namespace fs = std::filesystem;
const fs::path kScenarios = fs::path(DTSIM_SOURCE_DIR) / "scenarios";

double iteration(scenario::Scenario s) {
  s.run.iterations = 1;
  s.run.warmup_iterations = 0;
  return simulate(s).result.iteration.mean;
}

class MoreStreams : public ::testing::TestWithParam<std::string> {};

TEST_P(MoreStreams, MoreOrFasterSocketsNeverLengthenTheIteration) {
  const auto shipped = scenario::load_scenario((kScenarios / (GetParam() + ".json")).string());
  if (!shipped.cluster.tcp.enabled) GTEST_SKIP() << "its network is not TCP";
  const double base = iteration(shipped);
  auto more = shipped;
  more.cluster.tcp.streams *= 2;
  EXPECT_LE(iteration(more), base * 1.005) << "twice the streams a connection";
  auto faster = shipped;
  faster.cluster.tcp.stream_bandwidth *= 2;
  EXPECT_LE(iteration(faster), base * 1.005) << "each stream twice as fast";
}

INSTANTIATE_TEST_SUITE_P(Every, MoreStreams, ::testing::ValuesIn(testing::shipped_scenarios()),
                         [](const auto& info) { return testing::test_name(info.param); });

// ResNet-50 on p3.2xlarge nodes under a synchronous parameter server: its shards on 1, 2, 4 and 8 of the 8 nodes
// beside the workers, then on 1, 2 and 4 machines of their own among 12 nodes (the workers the rest: each worker's
// traffic stays its gradients and weights, while each server's shrinks); every push split over the shards, and each
// layer whole on one, as TensorFlow places its variables.
TEST(MoreServers, MoreShardsNeverLengthenTheIteration) {
  const auto scenario = (kScenarios / "resnet50-p3.2xlarge-sync.json").string();
  for (const std::string tensors : {"split", "least-loaded", "round-robin"})
    for (const std::string placement : {"colocated", "dedicated"}) {
      double last = 0;
      for (const int count : placement == "colocated" ? std::vector<int>{1, 2, 4, 8} : std::vector<int>{1, 2, 4}) {
        const auto s = scenario::load_scenario(
            scenario,
            {{"cluster.nodes", placement == "colocated" ? "8" : "12"},
             {"training.strategy",
              fmt::format(R"({{"name": "ps-sync", "servers": {{"placement": "{}", "count": {}, "tensors": "{}"}}}})",
                          placement, count, tensors)}});
        const double mean = iteration(s);
        if (last > 0) {
          EXPECT_LE(mean, last * 1.005) << count << " " << placement << " servers, tensors " << tensors;
        }
        last = mean;
      }
    }
}

// The same job under TensorFlow's parameter servers (preset:TensorFlow: each variable whole, round robin) with RPC
// channels of 250 MB/s, 500 MB/s (its gRPC's), 1 GB/s and no cap: a faster channel never lengthens the iteration.
// Synchronous, since a bounded schedule's mean iteration moves with how its workers interleave (about 1% either way
// over six iterations), whatever carries the bytes.
TEST(MoreServers, FasterChannelsNeverLengthenTheIteration) {
  const auto scenario = (kScenarios / "resnet50-p3.2xlarge-sync.json").string();
  double last = 0;
  for (const std::string channel : {"2Gbps", "4Gbps", "8Gbps", "0"}) {
    const auto s = scenario::load_scenario(
        scenario,
        {{"cluster.nodes", "8"},
         {"training.strategy",
          fmt::format(R"({{"preset": "TensorFlow", "schedule": "sync", "servers": {{"channel_bandwidth": "{}"}}}})",
                      channel)}});
    const double mean = iteration(s);
    if (last > 0) {
      EXPECT_LE(mean, last * 1.005) << "channels of " << channel;
    }
    last = mean;
  }
}

} // namespace
} // namespace dtsim
