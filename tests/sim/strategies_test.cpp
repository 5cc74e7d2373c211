// Strategies end to end (plan -> replay -> report) on the hand-made GPU and network of data_parallel_test.cpp:
// what each scheme sends per worker, and how it behaves with a straggler.
#include "sim/plan/plan.hpp"
#include "sim/simulate.hpp"
#include "sim/strategies/compression.hpp"

#include "tests/sim/round_gpu.hpp"

#include <gtest/gtest.h>

#include <set>

namespace dtsim {
namespace {

using strategies::Kind;

models::Layer linear(std::string name) {
  // 1 GFLOP per sample forward, 2 backward; 1e6 parameters; 1000 activations in and out.
  return {std::move(name), models::LayerKind::matmul, 1e9, 2e9, 1'000'000, 1000, 1000};
}

// The hand scenario with two linear layers, zero-latency NICs and 4 measured iterations.
scenario::Scenario two_layers(int nodes, strategies::StrategySpec strategy) {
  auto s = test::hand_scenario({linear("fc1"), linear("fc2")}, nodes);
  s.cluster.nic = {1e9, 0};
  s.training.strategy = std::move(strategy);
  s.run.iterations = 4;
  return s;
}

strategies::StrategySpec named(const char* name) {
  return strategies::parse_strategy_name(name);
}

constexpr double kModelBytes = 2e6 * 4; // two layers of 1e6 fp32 parameters

// D-PSGD on a ring sends its model to two neighbours every iteration, whatever the number of workers (Lian et al.
// 2017: the point of decentralization); an all-reduce's bytes per worker approach 2 S as n grows, but gossip sends one
// model with probability p.
// Asynchronous workers are timed over the window they all run in. Worker A finishes iterations at 1, 2 and 3 s, then
// waits (its fourth ends at 10 s); worker B ends one every 2 s. One warm-up, four iterations: the window runs from the
// last warm-up end (B's, 2 s) to the first last end (B's, 8 s). A completes its 3rd iteration and 5/7 of its 4th by
// 8 s, 2 by 2 s: 1 5/7 iterations in 6 s, 3.5 s each (timed on its own clock it was (10 - 1) / 3 = 3 s, a pace the
// window never saw); B completes 3 in 6 s, 2 s each. Without a common window (A done before B's warm-up ends), each
// on its own clock.
TEST(Strategies, AsynchronousWorkersAreTimedOverTheWindowTheyAllRun) {
  auto periods = report::shared_window_periods({{1, 2, 3, 10}, {2, 4, 6, 8}}, 1, 4);
  ASSERT_EQ(periods.size(), 2u);
  EXPECT_DOUBLE_EQ(periods[0], 6 / (1 + 5.0 / 7));
  EXPECT_DOUBLE_EQ(periods[0], 3.5);
  EXPECT_DOUBLE_EQ(periods[1], 2);
  periods = report::shared_window_periods({{1, 2, 3, 4}, {5, 10, 15, 20}}, 1, 4);
  EXPECT_DOUBLE_EQ(periods[0], (4 - 1) / 3.0);
  EXPECT_DOUBLE_EQ(periods[1], (20 - 5) / 3.0);
}

TEST(Strategies, DecentralizedBytesPerWorkerDoNotGrowWithTheWorkers) {
  for (int n : {4, 16}) {
    const auto dpsgd = simulate(two_layers(n, named("dpsgd"))).result;
    EXPECT_DOUBLE_EQ(dpsgd.bytes_sent_per_gpu, 2 * kModelBytes) << n;
    EXPECT_DOUBLE_EQ(dpsgd.strategy.bytes_received_per_worker, 2 * kModelBytes) << n;
    const auto gossip = simulate(two_layers(n, named("gossip:1"))).result;
    EXPECT_DOUBLE_EQ(gossip.bytes_sent_per_gpu, kModelBytes + 4) << n;      // the model and its sum weight
    EXPECT_NEAR(gossip.strategy.gossip_rounds_per_worker, 2.0, 1e-12) << n; // one push out, one in on average
  }
}

// D-PSGD's iteration on a ring: the exchange (two models out through one 1 GB/s NIC: 16 ms) runs beside forward and
// backward (2 layers x (2.010 + 4.020) ms = 12.06 ms), then the step mixes the neighbours' models in (2 x 20 us of
// streaming and one 10 us multi-tensor launch): 16.05 ms.
TEST(Strategies, DpsgdOnARingMatchesItsClosedForm) {
  const auto r = simulate(two_layers(8, named("dpsgd"))).result;
  EXPECT_NEAR(r.iteration.mean, 2 * kModelBytes / 1e9 + 2 * 20e-6 + 10e-6, 1e-6);
  EXPECT_NEAR(r.strategy.spectral_gap, 1 - (1 + 2 * std::cos(2 * M_PI / 8)) / 3, 1e-9);
}

// Top-k at 1%: each worker contributes 1% of the values and their int32 indices, all-gathered.
TEST(Strategies, TopKSendsOnePercentOfTheValuesPlusIndices) {
  auto s = two_layers(4, named("allreduce"));
  s.training.compression.kind = strategies::CompressionKind::topk;
  s.training.compression.ratio = 0.01;
  const auto plan = plan::make_plan(s);
  EXPECT_DOUBLE_EQ(plan.wire_bytes, 2 * (1e4 * 4 + 1e4 * 4));
  EXPECT_DOUBLE_EQ(plan.dense_bytes, kModelBytes);
  bool gathered = false;
  for (const auto& op : plan.graph.programs[0].ops)
    if (const auto* c = std::get_if<graph::Collective>(&op.body)) {
      EXPECT_EQ(c->op, collectives::Operation::all_gather);
      gathered = true;
    }
  EXPECT_TRUE(gathered);
  s.training.compression.kind = strategies::CompressionKind::sign;
  EXPECT_DOUBLE_EQ(plan::make_plan(s).wire_bytes, 2 * (1e6 / 8 + 4)); // 1/32 of fp32, plus a scale per tensor
}

// Sign compression as 1-bit Adam exchanges it: an all-to-all of the compressed chunks then an all-gather of the
// recompressed ones, each moving (n-1)/n of the compressed tensor per worker: 2 (n-1)/n (S/32 + scales) bytes per
// worker per iteration, flat in n (an all-gather of every worker's signs would send (n-1) S/32, growing with n). The
// error feedback keeps the worker's residual and its chunk's: (1 + 1/n) gradients.
TEST(Strategies, SignCompressionSendsTheSameBytesPerWorkerAtAnyScale) {
  for (int n : {4, 16}) {
    auto s = two_layers(n, named("allreduce"));
    s.training.compression.kind = strategies::CompressionKind::sign;
    const auto r = simulate(s).result;
    const double compressed = 2 * (1e6 / 8 + 4); // two layers of 1e6 fp32 gradients: bits and a scale each
    const double nn = n;
    EXPECT_NEAR(r.bytes_sent_per_gpu, 2 * (nn - 1) / nn * compressed, 1e-6 * compressed) << n;
    const auto memory = plan::estimate_memory(s);
    double residual = -1;
    for (const auto& item : memory.items)
      if (item.name == "error-feedback residual") residual = item.bytes;
    EXPECT_DOUBLE_EQ(residual, 2e6 * 4 * (1 + 1 / nn)) << n;
  }
}

// 1-bit Adam's two stages (DeepSpeed's freeze_step): 100 dense steps, then sign compression, over a 400-step run. The
// headline figures stay the compressed stage's; the dense stage is the scenario without compression, simulated beside
// it; the run's mean step is (100 t_dense + 300 t_sign) / 400, and its cost and energy follow it.
TEST(Strategies, CompressionWarmUpRunsDenseStepsFirst) {
  auto s = two_layers(4, named("allreduce"));
  s.training.compression.kind = strategies::CompressionKind::sign;
  const auto compressed = simulate(s).result;
  s.training.compression.warmup_steps = 100;
  s.training.steps = 400;
  s.cluster.price_per_node_hour = 3;
  const auto staged = simulate(s).result;
  auto dense = s;
  dense.training.compression = {};
  const auto plain = simulate(dense).result;
  ASSERT_GT(plain.iteration.mean, compressed.iteration.mean); // the 1 GB/s network makes dense slower
  EXPECT_DOUBLE_EQ(staged.iteration.mean, compressed.iteration.mean);
  EXPECT_EQ(staged.stages.warmup_steps, 100);
  EXPECT_EQ(staged.stages.run_steps, 400);
  EXPECT_DOUBLE_EQ(staged.stages.warmup_iteration, plain.iteration.mean);
  const double mean = (100 * plain.iteration.mean + 300 * compressed.iteration.mean) / 400;
  EXPECT_NEAR(staged.stages.run_iteration, mean, 1e-12 * mean);
  EXPECT_NEAR(staged.cost_of_run, 4 * 3.0 * 400 * mean / 3600, 1e-9);
  // Read back from JSON as sweeps and comparisons bring results from their child processes.
  EXPECT_EQ(report::to_json(report::run_result_from_json(report::to_json(staged))), report::to_json(staged));
}

// Synchronous PS on one dedicated server: the last node serves, the others train; the server's NIC carries
// (n - 1) S in and out per iteration.
TEST(Strategies, DedicatedServerTakesTheLastNode) {
  auto s = two_layers(5, named("ps-sync"));
  const auto r = simulate(s).result;
  EXPECT_EQ(r.strategy.workers, 4);
  EXPECT_EQ(r.strategy.servers, 1);
  EXPECT_EQ(r.global_batch, 40);
  // Two buckets (1 MiB first cap, then the rest), each pushed and pulled: 4 workers x 8 MB through one NIC, twice.
  const double network = 2 * 4 * kModelBytes / 1e9;
  EXPECT_GT(r.iteration.mean, network);
  EXPECT_LT(r.iteration.mean, network + 2 * (2.010e-3 + 4.020e-3) + 5e-3);
}

// Chen et al. 2016: one straggler 3x slower, one backup worker: the iteration is the synchronous one without it.
// Compute-bound (1000 parameters per layer), so the round's time is the workers' compute.
TEST(Strategies, BackupWorkerHidesTheStraggler) {
  auto spec = named("ps-sync");
  spec.servers.count = 1;
  auto slow = two_layers(5, spec);
  slow.model.workload.layers[0].parameters = slow.model.workload.layers[1].parameters = 1000;
  slow.stragglers.ranks = {2};
  slow.stragglers.slowdown = 3;
  slow.run.iterations = 8;
  auto without = slow;
  without.stragglers = {};
  slow.training.strategy.backup_workers = 1;
  const auto hidden = simulate(slow).result;
  const auto reference = simulate(without).result;
  EXPECT_NEAR(hidden.iteration.mean, reference.iteration.mean, 0.02 * reference.iteration.mean);
  EXPECT_GT(hidden.strategy.dropped, 0u);
  // Without the backup worker everyone waits for the straggler.
  slow.training.strategy.backup_workers = 0;
  EXPECT_GT(simulate(slow).result.iteration.mean, 1.5 * reference.iteration.mean);
}

// Asynchronous PS with a straggler: throughput is the sum of the workers' own rates; synchronous follows the slowest.
TEST(Strategies, AsynchronousThroughputSumsTheWorkersRates) {
  auto s = two_layers(5, named("ps-async"));
  s.model.workload.layers[0].parameters = s.model.workload.layers[1].parameters = 1000; // compute-bound
  s.stragglers.ranks = {0};
  s.stragglers.slowdown = 2;
  s.run.iterations = 12;
  const auto async = simulate(s).result;
  s.training.strategy = named("ps-sync");
  const auto sync = simulate(s).result;
  // Per worker compute 12.06 ms (the straggler 24.12 ms): 3 fast workers + 1 at half speed = 3.5 workers' worth.
  EXPECT_NEAR(async.throughput / sync.throughput, 3.5 / 2, 0.05 * 3.5 / 2);
  EXPECT_TRUE(async.strategy.asynchronous);
  EXPECT_GT(async.strategy.staleness.max, 0);
  EXPECT_EQ(sync.strategy.staleness.max, 0);
}

// Stragglers' jitter is drawn from the seed: the same seed gives the same run, another seed another.
TEST(Strategies, JitterComesFromTheSeed) {
  auto s = two_layers(4, named("allreduce"));
  s.stragglers.jitter = strategies::Jitter::lognormal;
  s.stragglers.scale = 0.2;
  const auto a = simulate(s).result;
  const auto b = simulate(s).result;
  EXPECT_EQ(a.iteration.samples, b.iteration.samples);
  s.run.seed = 2;
  EXPECT_NE(simulate(s).result.iteration.samples, a.iteration.samples);
}

// A synchronous all-reduce waits for its slowest worker every iteration. Each worker's compute is drawn 1 + 0.2 U(0, 1)
// times its own, and the expected largest of n uniform draws is n / (n + 1) (the n-th order statistic of U(0, 1)), so
// the 12.04 ms forward and backward (2 layers x (2 + 4) ms + 4 launches of 10 us) grows by 0.2 x 8/9 of itself on 8
// workers, against 0.2 x 1/2 on one. Over 400 iterations the mean's standard error is 0.2 x 12.04 ms x 0.099 / 20 =
// 0.012 ms for 8 workers (the largest draw's deviation sqrt(n / ((n + 1)^2 (n + 2))) = 0.099).
TEST(Strategies, SynchronousIterationsWaitForTheLargestDraw) {
  const auto excess = [](int workers) {
    auto s = two_layers(workers, named("allreduce"));
    s.model.workload.layers[0].parameters = s.model.workload.layers[1].parameters = 1000; // compute-bound
    s.run.iterations = 400;
    const double plain = simulate(s).result.iteration.mean;
    s.stragglers.jitter = strategies::Jitter::uniform;
    s.stragglers.scale = 0.2;
    return simulate(s).result.iteration.mean - plain;
  };
  const double compute = 12.04e-3;
  EXPECT_NEAR(excess(1), 0.2 * compute / 2, 4 * 0.2 * compute * 0.289 / 20);
  EXPECT_NEAR(excess(8), 0.2 * compute * 8 / 9, 4 * 0.012e-3);
}

// Local SGD averages the model every H iterations; gradient accumulation multiplies the samples per update.
TEST(Strategies, LocalSgdAveragesEveryPeriodAndAccumulationScalesTheBatch) {
  auto s = two_layers(4, named("local-sgd:2"));
  s.run.iterations = 4;
  s.run.warmup_iterations = 0;
  const auto r = simulate(s).result;
  // Two of four iterations all-reduce the 8 MB model: a ring sends 2 (n-1)/n S = 12 MB per worker each time.
  EXPECT_NEAR(r.bytes_sent_per_gpu, 2.0 * 2 * 3 / 4 * kModelBytes / 4, 1);
  auto acc = two_layers(4, named("allreduce"));
  acc.training.strategy.accumulation = 3;
  EXPECT_EQ(simulate(acc).result.global_batch, 4 * 10 * 3);
}

// Parameter servers keep the optimizer states; error feedback keeps one gradient-sized residual on the GPU.
TEST(Strategies, MemoryFollowsWhereTheOptimizerAndTheResidualLive) {
  const auto has = [](const plan::MemoryEstimate& m, const std::string& name) {
    for (const auto& item : m.items)
      if (item.name == name) return item.bytes;
    return -1.0;
  };
  auto s = two_layers(4, named("allreduce"));
  EXPECT_DOUBLE_EQ(has(plan::estimate_memory(s), "optimizer states"), 2e6 * 4); // momentum: one fp32 state
  s.training.strategy = named("ps-sync");
  EXPECT_EQ(has(plan::estimate_memory(s), "optimizer states"), -1.0);
  s.training.compression.kind = strategies::CompressionKind::topk;
  EXPECT_DOUBLE_EQ(has(plan::estimate_memory(s), "error-feedback residual"), 2e6 * 4);
}

// Sparse pushes: an embedding table's gradient touches the rows the batch looked up. 10 samples x 1000 looked-up
// elements over a 1e6-element table, drawn uniformly: 1 - exp(-0.01) of it, pushed and pulled; the dense layer whole.
TEST(Strategies, SparseEmbeddingsPushOnlyTheTouchedRows) {
  models::Layer table{"embedding", models::LayerKind::embedding, 0, 0, 1'000'000, 100, 1000};
  table.sparse_gradient = true;
  auto spec = named("ps-sync");
  spec.sparse_embeddings = true;
  const auto s = test::hand_scenario({table, linear("fc")}, 3);
  auto sparse = s;
  sparse.training.strategy = spec;
  const auto plan = plan::make_plan(sparse);
  std::vector<std::pair<double, double>> pushes; // (push, pull) bytes per bucket, summed over shards
  for (const auto& op : plan.graph.programs[0].ops)
    if (const auto* p = std::get_if<graph::PushPull>(&op.body)) {
      double push = 0, pull = 0;
      for (const auto& shard : p->shards) {
        push += shard.push_bytes;
        pull += shard.pull_bytes;
      }
      pushes.emplace_back(push, pull);
    }
  ASSERT_EQ(pushes.size(), 2u); // backward order: fc's bucket, then the table's
  EXPECT_DOUBLE_EQ(pushes[0].first, 4e6);
  const double touched = 1 - std::exp(-10.0 * 1000 / 1e6);
  EXPECT_NEAR(pushes[1].first, 4e6 * touched, 1e-6);
  EXPECT_NEAR(pushes[1].second, 4e6 * touched, 1e-6);
}

// BytePS's hierarchy: each node's GPUs reduce to its first, which alone pushes to and pulls from the servers, then
// broadcasts. On 2 nodes x 2 GPUs only ranks 0 and 2 push; each shard gets 2 pushes per bucket, not 4.
TEST(Strategies, HierarchicalServersHearOnlyFromEachNodesFirstGpu) {
  auto spec = named("ps-sync");
  spec.servers = {0, strategies::ServerPlacement::colocated, true};
  auto s = test::hand_scenario({linear("fc1"), linear("fc2")}, 2, 2);
  s.training.strategy = spec;
  const auto plan = plan::make_plan(s);
  ASSERT_EQ(plan.graph.servers.size(), 2u);
  for (int rank = 0; rank < 4; ++rank) {
    int push_pulls = 0, in_node = 0;
    for (const auto& op : plan.graph.program_of(rank).ops) {
      push_pulls += std::holds_alternative<graph::PushPull>(op.body);
      if (const auto* c = std::get_if<graph::Collective>(&op.body)) {
        EXPECT_EQ(plan.graph.groups[c->group], (std::vector<int>{rank / 2 * 2, rank / 2 * 2 + 1}));
        ++in_node;
      }
    }
    EXPECT_EQ(push_pulls, rank % 2 == 0 ? plan.buckets : 0) << rank;
    EXPECT_EQ(in_node, 2 * plan.buckets) << rank; // a reduce and a broadcast per bucket
  }
  const auto r = simulate(s).result;
  EXPECT_EQ(r.strategy.servers, 2);
  EXPECT_EQ(r.strategy.workers, 4);
}

// BytePS's partitions (4,096,000 bytes by default): a bucket goes out in ceil(bytes / partition) parts, the
// iteration's g-th part to server g mod k under a key of its own, so the node's first GPU has many parts in flight and
// takes each sum back as its round closes. Two worker nodes of 2 GPUs and 2 dedicated servers, the 8 MB gradient in
// 1 MB parts: 8 parts, 4 on each server, so each server takes 4 MB from each pushing GPU and sends 4 MB back.
TEST(Strategies, BytePsPushesPartitionsRoundRobinToItsServers) {
  auto spec = named("preset:BytePS");
  EXPECT_EQ(spec.servers.partition_bytes, 4096000);
  spec.servers.placement = strategies::ServerPlacement::dedicated;
  spec.servers.count = 2;
  spec.servers.partition_bytes = 1e6;
  auto s = test::hand_scenario({linear("fc1"), linear("fc2")}, 4, 2);
  s.training.strategy = spec;
  const auto plan = plan::make_plan(s);
  ASSERT_EQ(plan.graph.servers.size(), 2u);
  for (int rank = 0; rank < 4; ++rank) {
    std::vector<double> pushed(2, 0), pulled(2, 0);
    std::set<int> keys;
    for (const auto& op : plan.graph.program_of(rank).ops) {
      if (const auto* c = std::get_if<graph::Collective>(&op.body)) {
        EXPECT_TRUE(c->launched_together) << op.name; // BytePS's root launches them on every GPU of the node
        if (c->op == collectives::Operation::broadcast) {
          EXPECT_EQ(op.stream, graph::Stream::pull);
        }
      }
      const auto* push_pull = std::get_if<graph::PushPull>(&op.body);
      if (push_pull == nullptr) continue;
      EXPECT_TRUE(push_pull->overlapped);
      for (const auto& shard : push_pull->shards) {
        const int key = push_pull->key + shard.key;
        EXPECT_EQ(shard.server, key % 2) << key;
        keys.insert(key);
        pushed[shard.server] += shard.push_bytes;
        pulled[shard.server] += shard.pull_bytes;
      }
    }
    const bool leader = rank % 2 == 0;
    EXPECT_EQ(keys.size(), leader ? 8u : 0u) << rank;
    for (int server = 0; server < 2; ++server) {
      EXPECT_DOUBLE_EQ(pushed[server], leader ? 4e6 : 0) << rank;
      EXPECT_DOUBLE_EQ(pulled[server], leader ? 4e6 : 0) << rank;
    }
  }
  const auto r = simulate(s).result;
  EXPECT_EQ(r.strategy.workers, 4);
  EXPECT_EQ(r.strategy.servers, 2);
}

// TensorFlow keeps each variable whole on one parameter server. Layers of 3e6, 1e6, 1e6 and 1e6 fp32 parameters on
// 2 servers: tf_cnn_benchmarks' least-loaded rule puts the first on server 0 and the next three on server 1 (3e6
// against 0, 1e6 and 2e6 there), 12 MB each; tf.train.replica_device_setter's round robin puts layers 0 and 2 on
// server 0 (16 MB) and 1 and 3 on server 1 (8 MB). A worker pushes each server its layers' gradients and pulls their
// parameters back; split, each server gets half of everything.
TEST(Strategies, ParameterServersHoldTensorsWholeWhereTensorFlowPutsThem) {
  models::Layer big = linear("fc0");
  big.parameters = 3'000'000;
  using strategies::TensorPlacement;
  for (auto [placement, first, second] :
       {std::tuple{TensorPlacement::least_loaded, 12e6, 12e6}, std::tuple{TensorPlacement::round_robin, 16e6, 8e6},
        std::tuple{TensorPlacement::split, 12e6, 12e6}}) {
    auto spec = named("ps-sync");
    spec.servers.count = 2;
    spec.servers.tensors = placement;
    auto s = test::hand_scenario({big, linear("fc1"), linear("fc2"), linear("fc3")}, 4);
    s.training.strategy = spec;
    s.training.bucket_bytes = s.training.first_bucket_bytes = 1; // a bucket a layer: TensorFlow sends each alone
    const auto plan = plan::make_plan(s);
    ASSERT_EQ(plan.graph.servers.size(), 2u);
    for (int rank = 0; rank < 2; ++rank) {
      std::vector<double> pushed(2, 0), pulled(2, 0);
      for (const auto& op : plan.graph.program_of(rank).ops)
        if (const auto* push_pull = std::get_if<graph::PushPull>(&op.body)) {
          if (placement != TensorPlacement::split) {
            EXPECT_EQ(push_pull->shards.size(), 1u) << op.name;
          }
          for (const auto& shard : push_pull->shards) {
            pushed[shard.server] += shard.push_bytes;
            pulled[shard.server] += shard.pull_bytes;
          }
        }
      EXPECT_DOUBLE_EQ(pushed[0], first) << strategies::to_string(placement);
      EXPECT_DOUBLE_EQ(pushed[1], second) << strategies::to_string(placement);
      EXPECT_DOUBLE_EQ(pulled[0], first);
      EXPECT_DOUBLE_EQ(pulled[1], second);
    }
    EXPECT_GT(simulate(s).result.throughput, 0);
  }
}

// BytePS with one worker machine runs without its servers (its best practice: with DMLC_NUM_WORKER=1 "BytePS will not
// use the parameter servers"): one node of 2 GPUs and a dedicated server node reduce and broadcast in the node, and
// push nothing.
TEST(Strategies, BytePsOnOneWorkerMachinePushesNothing) {
  auto spec = named("preset:BytePS");
  spec.servers.placement = strategies::ServerPlacement::dedicated;
  spec.servers.count = 1;
  auto s = test::hand_scenario({linear("fc1"), linear("fc2")}, 2, 2);
  s.training.strategy = spec;
  const auto plan = plan::make_plan(s);
  for (int rank = 0; rank < 2; ++rank) {
    int push_pulls = 0, in_node = 0;
    for (const auto& op : plan.graph.program_of(rank).ops) {
      push_pulls += std::holds_alternative<graph::PushPull>(op.body);
      in_node += std::holds_alternative<graph::Collective>(op.body);
    }
    EXPECT_EQ(push_pulls, 0) << rank;
    EXPECT_EQ(in_node, 2 * plan.buckets) << rank; // a reduce and a broadcast per bucket
  }
  EXPECT_GT(simulate(s).result.throughput, 0);
}

// BytePS's summation service: the servers only add (3 bytes of host memory traffic a byte, no optimizer: 0 s a byte
// to update), and every worker keeps its optimizer states and steps on the pulled sum, as plain data parallelism
// does. The plain parameter server applies momentum SGD there instead (20 B a parameter over 4 B of gradient at the
// host's bandwidth) and the workers take no step.
TEST(Strategies, SummationServersLeaveTheOptimizerOnTheGpu) {
  auto s = test::hand_scenario({linear("fc1"), linear("fc2")}, 2, 2);
  s.training.strategy = strategies::parse_strategy_name("preset:BytePS");
  ASSERT_TRUE(s.training.strategy.servers.sums_only);
  const auto host = s.training.host_memory_bandwidth;
  const auto steps = [](const plan::Plan& p) { // and no model goes back to the servers after the step
    int n = 0;
    for (const auto& op : p.graph.program_of(0).ops) {
      n += op.name == "optimizer step";
      EXPECT_EQ(op.name.find("push-pull model"), std::string::npos) << op.name;
    }
    return n;
  };
  const auto states = [](const scenario::Scenario& sc) {
    for (const auto& item : plan::estimate_memory(sc).items)
      if (item.name == "optimizer states") return item.bytes;
    return 0.0;
  };
  const auto byteps = plan::make_plan(s);
  for (const auto& server : byteps.graph.servers) {
    EXPECT_DOUBLE_EQ(server.aggregate_seconds_per_byte, 3.0 / host);
    EXPECT_EQ(server.update_seconds_per_byte, 0);
  }
  EXPECT_EQ(steps(byteps), 1);
  EXPECT_DOUBLE_EQ(states(s), 2e6 * 4); // momentum: one fp32 state a parameter
  s.training.strategy.servers.sums_only = false;
  const auto ps = plan::make_plan(s);
  for (const auto& server : ps.graph.servers)
    EXPECT_DOUBLE_EQ(server.update_seconds_per_byte, 20.0 / 4 / host);
  EXPECT_EQ(steps(ps), 0);
  EXPECT_EQ(states(s), 0);
}

} // namespace
} // namespace dtsim
