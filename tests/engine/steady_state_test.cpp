// Iterations that repeat: the replay stops once the last ones repeat the ones before, and the result it extends to
// every iteration is the one a replay of every iteration gives.
#include "replay_fixtures.hpp"
#include "sim/engine/engine.hpp"

#include <gtest/gtest.h>

namespace dtsim {
namespace {

constexpr double kBandwidth = 1e9;

// Two pipeline stages that also reduce their gradients together: rank 0 computes 1 ms and sends 1 MB of
// activations to rank 1, which computes 2 ms; then both all-reduce 4 MB, overlapping the next iteration's forward.
// Ops with `every` = k run once every k iterations (local SGD's averaging).
graph::ExecutionGraph pipeline_with_all_reduce(std::uint32_t all_reduce_every = 1) {
  graph::ExecutionGraph g;
  graph::Collective all_reduce;
  all_reduce.bytes = 4e6;
  g.groups = {{0, 1}};
  graph::Op reduce{"all-reduce", graph::Stream::comm, all_reduce, {1}};
  reduce.every = all_reduce_every;
  g.programs.push_back({{graph::Op{"fwd", graph::Stream::compute, graph::Compute{1e-3, 0, 0}, {}},
                         graph::Op{"send", graph::Stream::p2p, graph::SendRecv{1, 1e6, true}, {0}}, reduce}});
  g.programs.push_back({{graph::Op{"recv", graph::Stream::p2p, graph::SendRecv{0, 1e6, false}, {}},
                         graph::Op{"fwd", graph::Stream::compute, graph::Compute{2e-3, 0, 0}, {0}}, reduce}});
  g.rank_program = {0, 1};
  return g;
}

engine::ReplayOptions options(int iterations, bool skip) {
  auto o = testing::cm02_options();
  o.iterations = iterations;
  o.warmup_iterations = 1;
  o.skip_repeats = skip;
  return o;
}

void expect_same(const engine::ReplayResult& skipped, const engine::ReplayResult& full) {
  const double tolerance = 1e-7 * full.simulated_seconds; // the check's tolerance: 1e-7 of an iteration, per period
  EXPECT_NEAR(skipped.simulated_seconds, full.simulated_seconds, tolerance);
  EXPECT_EQ(skipped.transfers, full.transfers);
  ASSERT_EQ(skipped.ranks.size(), full.ranks.size());
  for (std::size_t r = 0; r < full.ranks.size(); ++r) {
    const auto& a = skipped.ranks[r];
    const auto& b = full.ranks[r];
    ASSERT_EQ(a.iteration_end.size(), b.iteration_end.size()) << r;
    for (std::size_t i = 0; i < b.iteration_end.size(); ++i) {
      EXPECT_NEAR(a.iteration_end[i], b.iteration_end[i], tolerance) << r << " " << i;
      EXPECT_DOUBLE_EQ(a.bytes_sent[i], b.bytes_sent[i]) << r << " " << i;
    }
    for (std::size_t s = 0; s < b.streams.size(); ++s) {
      ASSERT_EQ(a.streams[s].size(), b.streams[s].size()) << r << " " << s;
      for (std::size_t i = 0; i < b.streams[s].size(); ++i) {
        EXPECT_EQ(a.streams[s][i].op, b.streams[s][i].op);
        EXPECT_EQ(a.streams[s][i].iteration, b.streams[s][i].iteration);
        EXPECT_NEAR(a.streams[s][i].start, b.streams[s][i].start, tolerance);
        EXPECT_NEAR(a.streams[s][i].end, b.streams[s][i].end, tolerance);
      }
    }
  }
  ASSERT_EQ(skipped.links.size(), full.links.size());
  for (std::size_t l = 0; l < full.links.size(); ++l)
    EXPECT_NEAR(skipped.links[l].bytes, full.links[l].bytes, 1e-9 * full.links[l].bytes) << full.links[l].name;
}

// One rank computing 1 ms an iteration: 10 iterations end at 10 ms. After the warm-up, iterations 2 and 3 are
// compared (the first that can be) and found equal, so 3 are replayed.
TEST(SteadyState, ComputeAloneRepeatsAtOnce) {
  graph::ExecutionGraph g;
  g.programs.push_back({{graph::Op{"fwd+bwd", graph::Stream::compute, graph::Compute{1e-3, 0, 0}, {}}}});
  g.rank_program = {0};
  const auto r = engine::replay(testing::uniform_cluster(1, kBandwidth, 0, 0), g, options(10, true));
  EXPECT_EQ(r.replayed_iterations, 3);
  EXPECT_EQ(r.repeat_period, 1);
  EXPECT_NEAR(r.simulated_seconds, 10e-3, 1e-15);
  ASSERT_EQ(r.ranks[0].iteration_end.size(), 10u);
  EXPECT_NEAR(r.ranks[0].iteration_end[6], 7e-3, 1e-15);
  EXPECT_EQ(r.ranks[0].streams[0].size(), 10u);
}

TEST(SteadyState, PipelineWithAllReduceGivesTheFullReplaysResult) {
  const auto cluster = testing::uniform_cluster(2, kBandwidth, 5e-6, 1e-6);
  const auto g = pipeline_with_all_reduce();
  const auto skipped = engine::replay(cluster, g, options(20, true));
  const auto full = engine::replay(cluster, g, options(20, false));
  EXPECT_LT(skipped.replayed_iterations, 20);
  EXPECT_EQ(skipped.repeat_period, 1);
  EXPECT_EQ(full.replayed_iterations, 20);
  EXPECT_EQ(full.repeat_period, 0);
  expect_same(skipped, full);
}

// An all-reduce every other iteration: iterations repeat in pairs.
TEST(SteadyState, OpsEveryKthIterationRepeatInPeriodsOfK) {
  const auto cluster = testing::uniform_cluster(2, kBandwidth, 5e-6, 1e-6);
  const auto g = pipeline_with_all_reduce(2);
  const auto skipped = engine::replay(cluster, g, options(21, true));
  const auto full = engine::replay(cluster, g, options(21, false));
  EXPECT_EQ(skipped.repeat_period, 2);
  EXPECT_LT(skipped.replayed_iterations, 21);
  expect_same(skipped, full);
}

// Stragglers make each iteration different: every one is replayed.
TEST(SteadyState, StragglersReplayEveryIteration) {
  auto g = pipeline_with_all_reduce();
  g.compute_slowdown = {{1.0, 1.5, 1.0}, {}};
  const auto r = engine::replay(testing::uniform_cluster(2, kBandwidth, 5e-6, 1e-6), g, options(12, true));
  EXPECT_EQ(r.replayed_iterations, 12);
  EXPECT_EQ(r.repeat_period, 0);
}

// Nothing to skip when the run is no longer than the warm-up and the two periods compared.
TEST(SteadyState, ShortRunsReplayEveryIteration) {
  const auto r =
      engine::replay(testing::uniform_cluster(2, kBandwidth, 5e-6, 1e-6), pipeline_with_all_reduce(), options(3, true));
  EXPECT_EQ(r.replayed_iterations, 3);
}

} // namespace
} // namespace dtsim
