// The closed-form estimate of a graph (graph/estimate.hpp): a hand-timed pipeline with an all-reduce, and the replay
// of the same graph, which without contention it should meet.
#include "replay_fixtures.hpp"
#include "sim/engine/engine.hpp"
#include "sim/graph/estimate.hpp"

#include <gtest/gtest.h>

namespace dtsim {
namespace {

constexpr double kBandwidth = 1e9, kNicLatency = 5e-6, kSwitchLatency = 1e-6;
constexpr double kAlpha = 2 * kNicLatency + kSwitchLatency; // NIC, switch, NIC

// Rank 0 computes 1 ms and sends 1 MB to rank 1 (another node), which computes 2 ms on it; both then all-reduce
// 4 MB (a ring of two).
graph::ExecutionGraph pipeline() {
  graph::ExecutionGraph g;
  graph::Collective all_reduce;
  all_reduce.bytes = 4e6;
  g.groups = {{0, 1}};
  g.programs.push_back({{graph::Op{"fwd", graph::Stream::compute, graph::Compute{1e-3, 0, 0}, {}},
                         graph::Op{"send", graph::Stream::p2p, graph::SendRecv{1, 1e6, true}, {0}},
                         graph::Op{"all-reduce", graph::Stream::comm, all_reduce, {1}}}});
  g.programs.push_back({{graph::Op{"recv", graph::Stream::p2p, graph::SendRecv{0, 1e6, false}, {}},
                         graph::Op{"fwd", graph::Stream::compute, graph::Compute{2e-3, 0, 0}, {0}},
                         graph::Op{"all-reduce", graph::Stream::comm, all_reduce, {1}}}});
  g.rank_program = {0, 1};
  return g;
}

// By hand: the receive ends at 1 ms + alpha + 1 MB / B = 2.011 ms, rank 1's forward at 4.011 ms; the ring of two
// all-reduces in 2 steps of S/2 bytes: 2 (alpha + 2 MB / B) = 4.022 ms, so the iteration ends at 8.033 ms. Two
// iterations: rank 0 starts its second at 8.033 ms, and the same chain takes 8.033 ms again.
TEST(Estimate, PipelineAndAllReduceByHand) {
  const auto cluster = testing::uniform_cluster(2, kBandwidth, kNicLatency, kSwitchLatency);
  const double iteration = 1e-3 + (kAlpha + 1e6 / kBandwidth) + 2e-3 + 2 * (kAlpha + 2e6 / kBandwidth);
  EXPECT_NEAR(iteration, 8.033e-3, 1e-12);
  const auto one = graph::estimate(cluster, pipeline(), 1);
  EXPECT_NEAR(one.iteration_seconds, iteration, 1e-12);
  const auto two = graph::estimate(cluster, pipeline(), 2);
  ASSERT_EQ(two.iteration_ends.size(), 2u);
  EXPECT_NEAR(two.iteration_ends[1], 2 * iteration, 1e-12);
  EXPECT_NEAR(two.iteration_seconds, iteration, 1e-12);

  // The replay, where nothing contends either, agrees.
  auto options = testing::cm02_options();
  options.iterations = 2;
  EXPECT_NEAR(engine::replay(cluster, pipeline(), options).simulated_seconds, 2 * iteration, 1e-9);
}

// Graphs it cannot price are said to be such.
TEST(Estimate, RefusesWhatHasNoClosedForm) {
  auto g = pipeline();
  g.programs[0].ops.push_back(graph::Op{"gossip", graph::Stream::comm, graph::Push{{1}, 1e6, 0}, {}});
  EXPECT_THROW(graph::estimate(testing::uniform_cluster(2, kBandwidth, 0, 0), g), graph::EstimateError);
  auto stalled = pipeline();
  stalled.programs[1].ops.erase(stalled.programs[1].ops.begin() + 2); // rank 1 never joins the all-reduce
  EXPECT_THROW(graph::estimate(testing::uniform_cluster(2, kBandwidth, 0, 0), stalled), graph::EstimateError);
}

} // namespace
} // namespace dtsim
