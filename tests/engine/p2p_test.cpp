// Exchanges with neighbours (D-PSGD) and one-sided pushes into a peer's inbox (gossip, AD-PSGD).
#include "replay_fixtures.hpp"
#include "sim/engine/engine.hpp"

#include <gtest/gtest.h>

namespace dtsim {
namespace {

constexpr double kBandwidth = 1e9;

// D-PSGD on a ring: each worker sends its model (M bytes) to both neighbours and receives theirs while it computes.
// Both sends leave through the worker's one NIC: the exchange takes 2 M / B, whatever the ring's size.
TEST(Exchange, RingNeighboursCostTwoModelsPerIterationAtAnySize) {
  constexpr double model = 1e6, compute = 1e-4;
  for (int n : {4, 16}) {
    graph::ExecutionGraph g;
    g.rank_program.resize(n);
    for (int r = 0; r < n; ++r) {
      const int left = (r + n - 1) % n, right = (r + 1) % n;
      graph::Exchange e{{{left, model, true}, {right, model, true}, {left, model, false}, {right, model, false}}};
      g.programs.push_back({{graph::Op{"fwd+bwd", graph::Stream::compute, graph::Compute{compute, 0, 0}, {}},
                             graph::Op{"average with neighbours", graph::Stream::comm, e, {}}}});
      g.rank_program[r] = r;
    }
    auto options = testing::cm02_options();
    options.iterations = 4;
    const auto result = engine::replay(testing::uniform_cluster(n, kBandwidth, 0, 0), g, options);
    EXPECT_NEAR(result.simulated_seconds, 4 * 2 * model / kBandwidth, 1e-9) << n;
    for (const auto& rank : result.ranks) {
      EXPECT_DOUBLE_EQ(rank.bytes_sent[1], 2 * model);
      EXPECT_DOUBLE_EQ(rank.bytes_received, 4 * 2 * model);
    }
  }
}

// A pipeline's send is posted and done at once; the receive posted earlier is busy only once the data flows (its wait
// for the sender is the bubble, not communication): rank 1 receives 1 MB that rank 0 sends after 1 ms of compute.
TEST(SendRecv, ReceiveIsBusyFromTheSendOn) {
  graph::ExecutionGraph g;
  g.programs.push_back({{graph::Op{"fwd", graph::Stream::compute, graph::Compute{1e-3, 0, 0}, {}},
                         graph::Op{"send", graph::Stream::p2p, graph::SendRecv{1, 1e6, true}, {0}}}});
  g.programs.push_back({{graph::Op{"recv", graph::Stream::p2p, graph::SendRecv{0, 1e6, false}, {}}}});
  g.rank_program = {0, 1};
  const auto r = engine::replay(testing::uniform_cluster(2, kBandwidth, 0, 0), g, testing::cm02_options());
  const auto& send = r.ranks[0].streams[static_cast<int>(graph::Stream::p2p)].at(0);
  const auto& recv = r.ranks[1].streams[static_cast<int>(graph::Stream::p2p)].at(0);
  EXPECT_NEAR(send.end - send.start, 0, 1e-12);
  EXPECT_NEAR(recv.start, 1e-3, 1e-12);
  EXPECT_NEAR(recv.end, 1e-3 + 1e6 / kBandwidth, 1e-9);
  EXPECT_DOUBLE_EQ(r.ranks[0].bytes_sent[0], 1e6);
}

// Gossip: rank 0 pushes to rank 1, then to nobody, then to rank 2; the peers post nothing.
TEST(Push, OneSidedPushesReachTheirPeersInbox) {
  graph::ExecutionGraph g;
  g.programs.push_back({{graph::Op{"gossip", graph::Stream::comm, graph::Push{{1, -1, 2}, 1e6, 0}, {}}}});
  g.programs.push_back({{graph::Op{"fwd+bwd", graph::Stream::compute, graph::Compute{1e-3, 0, 0}, {}}}});
  g.rank_program = {0, 1, 1};
  auto options = testing::cm02_options();
  options.iterations = 3;
  const auto r = engine::replay(testing::uniform_cluster(3, kBandwidth, 0, 0), g, options);
  EXPECT_EQ(r.ranks[0].pushes_sent, 2u);
  EXPECT_EQ(r.ranks[1].pushes_received, 1u);
  EXPECT_EQ(r.ranks[2].pushes_received, 1u);
  EXPECT_DOUBLE_EQ(r.ranks[1].bytes_received, 1e6);
  EXPECT_NEAR(r.ranks[0].iteration_end[0], 1e-3, 1e-12); // 1 MB at 1 GB/s
  EXPECT_NEAR(r.ranks[0].iteration_end[1], 1e-3, 1e-12); // no push: nothing to do
}

// AD-PSGD: the peer's inbox answers with its model, and the push ends when the answer is in.
TEST(Push, AnsweredPushesWaitForTheReply) {
  graph::ExecutionGraph g;
  g.programs.push_back({{graph::Op{"average with a peer", graph::Stream::comm, graph::Push{{1}, 1e6, 2e6}, {}}}});
  g.programs.push_back({{graph::Op{"fwd+bwd", graph::Stream::compute, graph::Compute{1e-4, 0, 0}, {}}}});
  g.rank_program = {0, 1};
  auto options = testing::cm02_options();
  options.iterations = 2;
  const auto r = engine::replay(testing::uniform_cluster(2, kBandwidth, 0, 0), g, options);
  EXPECT_NEAR(r.ranks[0].iteration_end[1], 2 * 3e-3, 1e-9);
  EXPECT_DOUBLE_EQ(r.ranks[0].bytes_received, 2 * 2e6);
}

// An op with `every` = 3 runs in the third, sixth, ... iteration only (local SGD's averaging every H steps).
TEST(Every, PeriodicOpsRunInTheLastIterationOfEachPeriod) {
  graph::ExecutionGraph g;
  graph::Op average{"average models", graph::Stream::compute, graph::Compute{5e-3, 0, 0}, {0}};
  average.every = 3;
  g.programs.push_back({{graph::Op{"step", graph::Stream::compute, graph::Compute{1e-3, 0, 0}, {}}, average}});
  g.rank_program = {0};
  auto options = testing::cm02_options();
  options.iterations = 6;
  const auto r = engine::replay(testing::uniform_cluster(1, kBandwidth, 0, 0), g, options);
  EXPECT_NEAR(r.ranks[0].iteration_end[1], 2e-3, 1e-12);
  EXPECT_NEAR(r.ranks[0].iteration_end[2], 8e-3, 1e-12);
  EXPECT_NEAR(r.ranks[0].iteration_end[5], 16e-3, 1e-12);
}

} // namespace
} // namespace dtsim
