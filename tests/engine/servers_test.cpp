// Parameter servers in the replay: the server-link bottleneck of synchronous training, and what asynchronous, bounded
// and backup-worker schedules do with a straggler. Closed forms on an alpha-beta switch with free latency.
#include "replay_fixtures.hpp"
#include "sim/engine/engine.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace dtsim {
namespace {

using graph::ServerSchedule;

constexpr double kBandwidth = 1e9; // bytes/s per NIC direction

struct PsSetup {
  int workers = 4;
  int servers = 1;
  bool colocated = false; // server j on worker j's GPU; else on GPUs workers..workers+servers-1
  double compute = 1e-3;  // seconds per iteration
  double bytes = 1e6;     // gradient (and parameter) bytes per worker
  ServerSchedule schedule = ServerSchedule::synchronous;
  int staleness = 0;
  int backup = 0;
  int slow_rank = -1; // this worker computes `slowdown` times longer
  double slowdown = 1;
  int iterations = 6;
  int partitions = 0;      // > 0: the gradient in this many parts, part g to server g mod servers (BytePS), overlapped
  double channel_rate = 0; // bytes/s a worker's channel to a server carries (an RPC library's); 0: the NICs decide
  double aggregate = 0;    // the server's CPU seconds to sum a pushed byte
  double update = 0;       // ... and to apply the optimizer to a byte of its shard
};

engine::ReplayResult run_ps(const PsSetup& p) {
  graph::ExecutionGraph g;
  graph::PushPull push_pull;
  for (int j = 0; j < p.servers; ++j) {
    g.servers.push_back(
        {p.colocated ? j : p.workers + j, p.schedule, p.staleness, p.backup, p.aggregate, p.update, p.channel_rate});
    if (p.partitions == 0) push_pull.shards.push_back({j, p.bytes / p.servers, p.bytes / p.servers});
  }
  for (int part = 0; part < p.partitions; ++part)
    push_pull.shards.push_back({part % p.servers, p.bytes / p.partitions, p.bytes / p.partitions, part});
  push_pull.overlapped = p.partitions > 0;
  g.programs.push_back({{graph::Op{"fwd+bwd", graph::Stream::compute, graph::Compute{p.compute, 0, 0}, {}},
                         graph::Op{"push-pull", graph::Stream::comm, push_pull, {0}}}});
  g.rank_program.assign(p.workers, 0);
  if (p.slow_rank >= 0) {
    g.compute_slowdown.assign(p.workers, {1.0});
    g.compute_slowdown[p.slow_rank] = {p.slowdown};
  }
  auto options = testing::cm02_options();
  options.iterations = p.iterations;
  const int nodes = p.colocated ? p.workers : p.workers + p.servers;
  return engine::replay(testing::uniform_cluster(nodes, kBandwidth, 0, 0), g, options);
}

// Seconds per iteration of a rank, from its second iteration on (the first has nothing to wait for).
double period(const engine::RankTimeline& rank) {
  const auto& ends = rank.iteration_end;
  return (ends.back() - ends[1]) / static_cast<double>(ends.size() - 2);
}

// Synchronous PS with k dedicated shards: each shard receives n S / k bytes, then sends as much back. With k <= n the
// shard's NIC is the bottleneck: an iteration is compute + 2 n S / (k B).
TEST(ParameterServer, SynchronousShardsMatchTheServerLinkBottleneck) {
  for (int k : {1, 2, 4}) {
    PsSetup p;
    p.workers = 8;
    p.servers = k;
    const auto r = run_ps(p);
    const double expected = p.compute + 2 * p.workers * p.bytes / k / kBandwidth;
    for (const auto& rank : r.ranks)
      EXPECT_NEAR(period(rank), expected, 0.02 * expected) << k << " shards";
    ASSERT_EQ(r.servers.size(), static_cast<std::size_t>(k));
    EXPECT_NEAR(r.servers[0].bytes_received, p.iterations * p.workers * p.bytes / k, 1);
    EXPECT_NEAR(r.servers[0].bytes_sent, p.iterations * p.workers * p.bytes / k, 1);
  }
}

// k = n servers on the workers' own nodes: each worker sends (n-1)/n of its gradient over the network and keeps 1/n
// at home, as a reduce-scatter does; the answers are an all-gather. The iteration is compute + 2 (n-1)/n S / B, the
// bandwidth term of a ring all-reduce.
TEST(ParameterServer, ColocatedShardsMatchTheScatterReduceForm) {
  PsSetup p;
  p.workers = 8;
  p.servers = 8;
  p.colocated = true;
  const auto r = run_ps(p);
  const double expected = p.compute + 2.0 * (p.workers - 1) / p.workers * p.bytes / kBandwidth;
  for (const auto& rank : r.ranks)
    EXPECT_NEAR(period(rank), expected, 0.02 * expected);
}

// BytePS's partitions: k = n dedicated servers, the gradient S in P parts spread round robin. Each server takes one
// part of each worker at a time, n S / P bytes at its NIC's B, and sends that round's sums back while the next round
// comes in, so only the last round's answers are not hidden behind pushes: an iteration is compute + S / B + k S /
// (P B), where the same servers answering the gradient whole take compute + 2 S / B (the test above, k = n).
TEST(ParameterServer, PartitionsOverlapEachPartsPullWithTheNextPush) {
  for (int parts : {8, 64}) {
    PsSetup p;
    p.workers = 8;
    p.servers = 8;
    p.partitions = parts;
    const auto r = run_ps(p);
    const double expected = p.compute + p.bytes / kBandwidth * (1 + static_cast<double>(p.servers) / parts);
    for (const auto& rank : r.ranks)
      EXPECT_NEAR(period(rank), expected, 0.02 * expected) << parts << " partitions";
    // Each server holds parts / k of the parts: parts / k x n x S / parts bytes in, as many out, each iteration.
    for (const auto& server : r.servers) {
      EXPECT_NEAR(server.bytes_received, p.iterations * p.workers * p.bytes / p.servers, 1);
      EXPECT_NEAR(server.bytes_sent, p.iterations * p.workers * p.bytes / p.servers, 1);
    }
  }
}

// TensorFlow's gRPC: each worker's messages to a server and back move at most the channel's rate c. Two workers and a
// server whose NIC carries B = 1 GB/s: with c = 200 MB/s the two channels fill 400 MB/s of it, so the push takes S / c
// and the answer as long, compute + 2 S / c; with c = 2 GB/s the server's NIC is the limit again, compute + 2 n S / B.
TEST(ParameterServer, AnRpcChannelCapsEachWorkersTraffic) {
  for (auto [rate, expected] :
       {std::pair{200e6, 1e-3 + 2 * 1e6 / 200e6}, std::pair{2e9, 1e-3 + 2 * 2 * 1e6 / kBandwidth}}) {
    PsSetup p;
    p.workers = 2;
    p.channel_rate = rate;
    const auto r = run_ps(p);
    for (const auto& rank : r.ranks)
      EXPECT_NEAR(period(rank), expected, 0.02 * expected) << rate;
  }
}

// The server's CPU time a byte: it sums each push as it comes in (a seconds a byte), then applies the optimizer once
// the round is whole (u seconds a byte of its shard), then answers. Two workers, one server, S = 1 MB, B = 1 GB/s,
// a = 1 ns and u = 2 ns a byte: both pushes in at 2 S / B, summed one after the other (2 S a), applied (S u), both
// answers out at 2 S / B: compute + 4 S / B + 2 S a + S u = 1 + 4 + 2 + 2 = 9 ms.
TEST(ParameterServer, TheServersCpuTimeAByteAddsToTheRound) {
  PsSetup p;
  p.workers = 2;
  p.aggregate = 1e-9;
  p.update = 2e-9;
  const auto r = run_ps(p);
  const double expected = p.compute + 4 * p.bytes / kBandwidth + 2 * p.bytes * p.aggregate + p.bytes * p.update;
  EXPECT_NEAR(expected, 9e-3, 1e-12);
  for (const auto& rank : r.ranks)
    EXPECT_NEAR(period(rank), expected, 0.02 * expected);
}

// One worker twice as slow. Tiny messages, so compute decides.
PsSetup straggler(ServerSchedule schedule, int staleness = 0) {
  PsSetup p;
  p.workers = 4;
  p.bytes = 1e3;
  p.schedule = schedule;
  p.staleness = staleness;
  p.slow_rank = 3;
  p.slowdown = 2;
  p.iterations = 20;
  return p;
}

TEST(ParameterServer, SynchronousTrainingFollowsTheSlowestWorker) {
  const auto r = run_ps(straggler(ServerSchedule::synchronous));
  for (const auto& rank : r.ranks)
    EXPECT_NEAR(period(rank), 2e-3, 0.02 * 2e-3);
  for (const auto& u : r.servers[0].updates) {
    EXPECT_EQ(u.staleness, 0);
    EXPECT_EQ(u.update_lag, 0);
  }
}

TEST(ParameterServer, AsynchronousThroughputIsTheSumOfTheWorkersRates) {
  const auto r = run_ps(straggler(ServerSchedule::asynchronous));
  double rate = 0;
  for (const auto& rank : r.ranks)
    rate += 1 / period(rank);
  const double expected = 3 / 1e-3 + 1 / 2e-3; // iterations per second
  EXPECT_NEAR(rate, expected, 0.02 * expected);
  // The fast workers run ahead: by the end the slow one is about half their iterations behind.
  int stalest = 0;
  for (const auto& u : r.servers[0].updates)
    stalest = std::max(stalest, u.staleness);
  EXPECT_GE(stalest, 8);
}

TEST(ParameterServer, BoundedStalenessNeverAppliesAnUpdateStalerThanTheBound) {
  constexpr int bound = 3;
  const auto ssp = run_ps(straggler(ServerSchedule::bounded, bound));
  ASSERT_EQ(ssp.servers[0].updates.size(), 4u * 20u);
  int stalest = 0;
  for (const auto& u : ssp.servers[0].updates) {
    EXPECT_LE(u.staleness, bound) << "worker " << u.worker << " at " << u.time << " s";
    stalest = std::max(stalest, u.staleness);
  }
  EXPECT_EQ(stalest, bound); // the bound binds
  // Between synchronous and asynchronous: the fast workers' total time lands between the two.
  const double sync = run_ps(straggler(ServerSchedule::synchronous)).simulated_seconds;
  const auto async = run_ps(straggler(ServerSchedule::asynchronous));
  const double fast_async = async.ranks[0].iteration_end.back();
  const double fast_ssp = ssp.ranks[0].iteration_end.back();
  EXPECT_GT(fast_ssp, fast_async * 1.01);
  EXPECT_LT(fast_ssp, sync * 0.99);
}

// Chen et al. 2016: with b backup workers a round closes on the first n - b gradients. One straggler and b = 1: the
// rounds come as fast as without the straggler, and its late gradients are dropped.
TEST(ParameterServer, BackupWorkersHideOneStraggler) {
  auto p = straggler(ServerSchedule::synchronous);
  p.slowdown = 3;
  p.backup = 1;
  const auto r = run_ps(p);
  auto without = p;
  without.slow_rank = -1;
  without.backup = 0;
  const auto reference = run_ps(without);
  const auto& rounds = r.servers[0].round_ends;
  const auto& reference_rounds = reference.servers[0].round_ends;
  ASSERT_GE(rounds.size(), 10u);
  const double round = (rounds[9] - rounds[1]) / 8;
  const double reference_round = (reference_rounds[9] - reference_rounds[1]) / 8;
  EXPECT_NEAR(round, reference_round, 0.02 * reference_round);
  EXPECT_GT(r.servers[0].dropped, 0u);
}

} // namespace
} // namespace dtsim
