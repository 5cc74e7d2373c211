// All-to-all-v in aggregate fidelity: the pairwise exchange timed from its rounds' link loads
// (collectives/pairwise_exchange.hpp) instead of replayed as flows. Its time against a hand calculation and against
// the step-by-step replay of the same exchange, and its bytes on every link against the replay's.
#include "replay_fixtures.hpp"
#include "sim/engine/engine.hpp"

#include <gtest/gtest.h>

namespace dtsim {
namespace {

using collectives::Algorithm;
using collectives::Operation;

using testing::kAlpha;
using testing::kNic;
using testing::kNicLatency;
using testing::kSwitchLatency;

graph::Collective exchange(std::vector<double> matrix, bool aggregate) {
  graph::Collective c;
  c.op = Operation::all_to_all_v;
  c.algorithm = Algorithm::pairwise;
  c.aggregate = aggregate;
  c.matrix = std::make_shared<const std::vector<double>>(std::move(matrix));
  return c;
}

engine::ReplayResult replay(const topologies::ClusterSpec& cluster, const std::vector<double>& matrix, int ranks,
                            bool aggregate) {
  return engine::replay(cluster, testing::one_collective(ranks, exchange(matrix, aggregate)), testing::cm02_options());
}

// A skewed exchange like an MoE layer's dispatch: every pair sends 1 MB, except that some ranks' experts draw
// more tokens (position q receives (1 + (q mod 3)) MB from each other position).
std::vector<double> skewed(int n) {
  std::vector<double> m(static_cast<std::size_t>(n) * n, 0.0);
  for (int p = 0; p < n; ++p)
    for (int q = 0; q < n; ++q)
      if (p != q) m[static_cast<std::size_t>(p) * n + q] = 1e6 * (1 + q % 3);
  return m;
}

// Four single-GPU nodes, skewed: position q takes (1 + q mod 3) MB from each other position. Position 2's NIC link
// down carries three 3 MB transfers, the most of any link: 9 MB at 12.5 GB/s is 720 us, plus the path's latency
// (two NIC links and the switch, 5 us). The rounds' chain at the transfers' own rates is shorter (480 us of bytes and
// three latencies), so bandwidth decides.
TEST(TimedAllToAll, EndsWhenTheBusiestLinkHasCarriedItsBytes) {
  const auto cluster = testing::uniform_cluster(4, kNic, kNicLatency, kSwitchLatency);
  const double expected = 9e6 / kNic + kAlpha;
  EXPECT_NEAR(replay(cluster, skewed(4), 4, true).simulated_seconds, expected, 1e-9);
  // The step-by-step replay of the same exchange, its sends eager, loads that link the same way.
  EXPECT_NEAR(replay(cluster, skewed(4), 4, false).simulated_seconds, expected, 0.02 * expected);
}

// One byte a pair over eight nodes: latency decides. Each of the 7 rounds waits for its receive, one path latency
// (5 us) and a byte at 12.5 GB/s, as the step-by-step replay's receive chain does.
TEST(TimedAllToAll, SmallExchangesPayEveryRoundsLatency) {
  const int n = 8;
  const auto cluster = testing::uniform_cluster(n, kNic, kNicLatency, kSwitchLatency);
  std::vector<double> ones(n * n, 1.0);
  for (int p = 0; p < n; ++p)
    ones[p * n + p] = 0;
  const double expected = (n - 1) * (kAlpha + 1 / kNic);
  EXPECT_NEAR(replay(cluster, ones, n, true).simulated_seconds, expected, 1e-12);
  EXPECT_NEAR(replay(cluster, ones, n, false).simulated_seconds, expected, 0.01 * expected);
}

// Against the step-by-step replay on nodes of 1, 4 and 8 GPUs sharing one NIC, 2 to 8 nodes: within 4% (measured:
// -3.4% to 0%; the model never counts a link's bytes twice, while the replay's rounds that drift apart leave a link
// idle now and then). The bytes on every link are the replay's, exactly.
TEST(TimedAllToAll, StaysWithinFourPercentOfStepWithTheSameBytesOnEveryLink) {
  for (int gpus : {1, 4, 8})
    for (int nodes : {2, 4, 8}) {
      const auto cluster = testing::uniform_cluster(nodes, kNic, kNicLatency, kSwitchLatency, gpus);
      const int n = nodes * gpus;
      const auto step = replay(cluster, skewed(n), n, false);
      const auto timed = replay(cluster, skewed(n), n, true);
      EXPECT_NEAR(timed.simulated_seconds, step.simulated_seconds, 0.04 * step.simulated_seconds)
          << nodes << " nodes of " << gpus << " GPUs";
      ASSERT_EQ(timed.links.size(), step.links.size());
      for (std::size_t l = 0; l < step.links.size(); ++l)
        EXPECT_NEAR(timed.links[l].bytes, step.links[l].bytes, 1e-6 * step.links[l].bytes + 1e-6) << step.links[l].name;
      ASSERT_EQ(timed.ranks.size(), step.ranks.size());
      for (std::size_t r = 0; r < step.ranks.size(); ++r)
        EXPECT_DOUBLE_EQ(timed.ranks[r].bytes_sent.at(0), step.ranks[r].bytes_sent.at(0));
    }
}

} // namespace
} // namespace dtsim
