// Ring all-reduce replayed as flows on a uniform single-switch cluster against its alpha-beta closed form
// (Thakur, Rabenseifner and Gropp 2005): T = 2(n-1) alpha + 2(n-1)/n * S/B.
#include "replay_fixtures.hpp"
#include "sim/collectives/closed_form.hpp"
#include "sim/engine/engine.hpp"

#include <gtest/gtest.h>

namespace dtsim {
namespace {

using testing::uniform_cluster;

graph::ExecutionGraph one_all_reduce(int ranks, double bytes) {
  graph::Collective c;
  c.bytes = bytes;
  return testing::one_collective(ranks, c);
}

// Ring all-reduce on a uniform network without reduction cost: 2(n-1) alpha + 2(n-1)/n S/B.
double ring_closed_form(int n, double bytes, double alpha, double bandwidth) {
  collectives::Request r;
  r.op = collectives::Operation::all_reduce;
  r.algorithm = collectives::Algorithm::ring;
  r.ranks = n;
  r.bytes = bytes;
  return collectives::closed_form_time(r, alpha, bandwidth, 0);
}

double simulated_time(const topologies::ClusterSpec& cluster, double bytes, engine::ReplayOptions options) {
  auto result = engine::replay(cluster, one_all_reduce(cluster.gpu_count(), bytes), options);
  return result.simulated_seconds;
}

struct RingCase {
  int ranks;
  double bytes;
};

class RingClosedForm : public ::testing::TestWithParam<RingCase> {};

TEST_P(RingClosedForm, Cm02WithoutCrossTrafficMatchesAlphaBeta) {
  const auto [n, bytes] = GetParam();
  const double bandwidth = 1.25e9, latency = 5e-6, switch_latency = 1e-6;
  engine::ReplayOptions options;
  options.network_model = engine::NetworkModel::cm02;
  options.cross_traffic = false;
  const double alpha = 2 * latency + switch_latency;
  const double expected = ring_closed_form(n, bytes, alpha, bandwidth);
  EXPECT_NEAR(simulated_time(uniform_cluster(n, bandwidth, latency, switch_latency), bytes, options), expected,
              0.01 * expected);
}

INSTANTIATE_TEST_SUITE_P(Sizes, RingClosedForm,
                         ::testing::Values(RingCase{2, 1024}, RingCase{2, 256.0 * (1 << 20)}, RingCase{3, 1e6},
                                           RingCase{8, 8}, RingCase{8, 64.0 * (1 << 20)}, RingCase{16, 1 << 20},
                                           RingCase{32, 1e9}));

// LV08 (SimGrid's default) scales bandwidth by 0.97 and latency by 13.01 (Velho and Legrand 2009).
TEST(RingClosedForm, Lv08FactorsAccountedFor) {
  const int n = 8;
  const double bytes = 32.0 * (1 << 20), bandwidth = 1.25e9, latency = 5e-6, switch_latency = 1e-6;
  engine::ReplayOptions options;
  options.network_model = engine::NetworkModel::lv08;
  options.cross_traffic = false;
  const double alpha = 13.01 * (2 * latency + switch_latency);
  const double expected = ring_closed_form(n, bytes, alpha, 0.97 * bandwidth);
  EXPECT_NEAR(simulated_time(uniform_cluster(n, bandwidth, latency, switch_latency), bytes, options), expected,
              0.01 * expected);
}

TEST(RingAllReduce, ReplayCountsTheBytesEveryRankSends) {
  engine::ReplayOptions options;
  options.network_model = engine::NetworkModel::cm02;
  const auto result = engine::replay(uniform_cluster(4, 1e9, 1e-6, 0), one_all_reduce(4, 4e6), options);
  ASSERT_EQ(result.ranks.size(), 4u);
  for (const auto& rank : result.ranks)
    EXPECT_DOUBLE_EQ(rank.bytes_sent.at(0), 2.0 * 3 / 4 * 4e6);
  EXPECT_EQ(result.transfers, 4u * 6u);
}

TEST(Replay, MismatchedCollectivesAreReportedAsADeadlock) {
  auto g = one_all_reduce(3, 1e6);
  // Rank 2 joins a second all-reduce that nobody else posts: validate() must refuse the graph.
  g.programs.push_back(g.programs[0]);
  g.programs[1].ops.push_back(g.programs[1].ops[0]);
  g.rank_program[2] = 1;
  EXPECT_THROW(engine::replay(uniform_cluster(3, 1e9, 1e-6, 0), g, {}), std::invalid_argument);
}

// Sends are posted and done at once (isend); receives wait for their sender.
TEST(Replay, UnmatchedReceiveIsReportedWithTheWaitingRank) {
  graph::ExecutionGraph g;
  g.programs.push_back({{graph::Op{"recv from 1", graph::Stream::comm, graph::SendRecv{1, 1e3, false}, {}}}});
  g.programs.push_back({{graph::Op{"recv from 0", graph::Stream::comm, graph::SendRecv{0, 1e3, false}, {}}}});
  g.rank_program = {0, 1};
  try {
    engine::replay(uniform_cluster(2, 1e9, 1e-6, 0), g, {});
    FAIL() << "two receives without sends must deadlock";
  } catch (const engine::DeadlockError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rank 0 comm stream"), std::string::npos) << what;
    EXPECT_NE(what.find("waits on rank 1"), std::string::npos) << what;
  }
}

} // namespace
} // namespace dtsim

namespace dtsim {
namespace {

graph::ExecutionGraph ring_with_reduction(int ranks, double bytes, double reduce_seconds_per_byte) {
  auto g = one_all_reduce(ranks, bytes);
  std::get<graph::Collective>(g.programs[0].ops[0].body).reduce_seconds_per_byte = reduce_seconds_per_byte;
  return g;
}

// Every message pays the sender's software overhead once, as latency: alpha grows by it.
TEST(RingClosedForm, MessageOverheadAddsToEveryStepsLatency) {
  auto cluster = uniform_cluster(8, 1.25e9, 5e-6, 1e-6);
  cluster.message_overhead = 3e-6;
  const double expected = ring_closed_form(8, 1e6, 2 * 5e-6 + 1e-6 + 3e-6, 1.25e9);
  const double simulated = engine::replay(cluster, one_all_reduce(8, 1e6), testing::cm02_options()).simulated_seconds;
  EXPECT_NEAR(simulated, expected, 0.01 * expected);
}

// The reduction overlaps the receive (NCCL reduces slices as they arrive): a reduce-scatter step takes
// alpha + chunk * max(1/B, gamma). With gamma below 1/B it hides; above, it sets the pace of those n-1 steps.
TEST(RingClosedForm, ReductionHidesBehindTheTransferUnlessItIsSlower) {
  const int n = 4;
  const double bytes = 64e6, bandwidth = 1e9, alpha = 2 * 1e-6;
  const auto cluster = uniform_cluster(n, bandwidth, 1e-6, 0);
  const double chunk = bytes / n;
  const double hidden = engine::replay(cluster, ring_with_reduction(n, bytes, 0.5 / bandwidth), testing::cm02_options())
                            .simulated_seconds;
  const double expect_hidden = 2 * (n - 1) * (alpha + chunk / bandwidth);
  EXPECT_NEAR(hidden, expect_hidden, 0.01 * expect_hidden);
  const double slow =
      engine::replay(cluster, ring_with_reduction(n, bytes, 3 / bandwidth), testing::cm02_options()).simulated_seconds;
  const double expect_slow = (n - 1) * (alpha + chunk * 3 / bandwidth) + (n - 1) * (alpha + chunk / bandwidth);
  EXPECT_NEAR(slow, expect_slow, 0.01 * expect_slow);
}

} // namespace
} // namespace dtsim
