// Synchronous data parallelism end to end (plan -> replay -> report) on cases worked by hand.
// The GPU and the network are made-up round numbers so that every op time can be written down here.
#include "models/transformer.hpp"
#include "sim/simulate.hpp"

#include "tests/sim/round_gpu.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace dtsim {
namespace {

using calibration::Precision;

using test::round_gpu; // 10 TFLOP/s at 50% for GEMMs, 1 TB/s for memory-bound kernels, 10 us per launch

models::Layer linear(std::string name) {
  // 1 GFLOP per sample forward, 2 backward; 1e6 parameters; 1000 activations in and out.
  return {std::move(name), models::LayerKind::matmul, 1e9, 2e9, 1'000'000, 1000, 1000};
}

// The hand scenario (round GPU, 1 GB/s and 1 us NICs, ring all-reduce: tests/sim/round_gpu.hpp).
scenario::Scenario base_scenario(std::vector<models::Layer> layers, int nodes) {
  return test::hand_scenario(std::move(layers), nodes);
}

// One linear layer, forward at batch 10: 1e10 FLOP / (10e12 * 0.5) = 2 ms (its 4.08 MB of traffic take
// 4.08 us at 1 TB/s, so it is compute-bound) + 10 us launch = 2.010 ms. Backward: 4 ms + two launches = 4.020 ms.
constexpr double kForward = 2.010e-3;
constexpr double kBackward = 4.020e-3;
// Momentum SGD reads p, g, m and writes p, m: 20 B per parameter, 1e6 parameters per layer at 1 TB/s = 20 us, in one
// fused multi-tensor kernel: one launch while the parameters fit one launch's 320 chunks of 65,536 and its 36 tensors.
double optimizer_time(int layers) {
  return layers * 20e-6 + 10e-6;
}

TEST(DataParallel, ComputeOnlyIterationIsTheSumOfItsOpTimes) {
  // A ReLU between two linears: memory-bound, (1000 + 1000) * 10 * 4 B = 80 kB at 1 TB/s = 80 ns, + 10 us launch;
  // its backward moves twice that: 160 ns + 10 us.
  models::Layer relu{"relu", models::LayerKind::elementwise, 1000, 1000, 0, 1000, 1000};
  auto s = base_scenario({linear("fc1"), relu, linear("fc2")}, 1);
  const double relu_forward = 80e-9 + 10e-6, relu_backward = 160e-9 + 10e-6;
  const double expected = 2 * kForward + relu_forward + 2 * kBackward + relu_backward + optimizer_time(2);
  const auto result = simulate(s).result;
  EXPECT_NEAR(result.iteration.mean, expected, 1e-9);
  EXPECT_NEAR(result.breakdown.compute, expected, 1e-9);
  EXPECT_NEAR(result.breakdown.exposed_communication, 0, 1e-12);
  EXPECT_DOUBLE_EQ(result.throughput, 10 / result.iteration.mean);
}

// Two GPUs, three linear layers of 4 MB of fp32 gradients each, one bucket per layer. A ring all-reduce of
// 4 MB over two ranks takes 2 steps of (2 us + 2 MB / 1 GB/s) = 4.004 ms. Its reduce-scatter step's reduction
// (2 MB, moving 3 bytes per byte at 1 TB/s: 6 us) overlaps the 2 ms receive, so it adds nothing.
constexpr double kBucketAllReduce = 2 * (2e-6 + 2e6 / 1e9);

scenario::Scenario three_buckets(bool overlap) {
  auto s = base_scenario({linear("fc1"), linear("fc2"), linear("fc3")}, 2);
  s.training.bucket_bytes = 4e6;
  s.training.first_bucket_bytes = 4e6;
  s.training.overlap = overlap;
  return s;
}

TEST(DataParallel, WithoutOverlapOneAllReduceFollowsBackward) {
  // 12 MB in one all-reduce: 2 * (2 us + 6 ms); the 18 us reduction hides behind the 6 ms receive.
  const double expected = 3 * kForward + 3 * kBackward + 2 * (2e-6 + 6e6 / 1e9) + optimizer_time(3);
  const auto result = simulate(three_buckets(false)).result;
  EXPECT_NEAR(result.iteration.mean, expected, 0.01 * expected);
  EXPECT_EQ(result.buckets, 1);
}

TEST(DataParallel, BucketsOverlapBackwardAsWorkedByHand) {
  // Backward of fc3 ends at 3F + B; its bucket runs for kBucketAllReduce. fc2's backward ends at 3F + 2B, but
  // its bucket waits for the first (the comm stream is FIFO), and so on: since an all-reduce (4.004 ms) is
  // shorter than a backward (4.020 ms), each bucket starts when its layer's backward ends. The optimizer
  // starts when the last bucket ends: 3F + 3B + kBucketAllReduce.
  const double expected = 3 * kForward + 3 * kBackward + kBucketAllReduce + optimizer_time(3);
  const auto result = simulate(three_buckets(true)).result;
  EXPECT_NEAR(result.iteration.mean, expected, 0.01 * expected);
  EXPECT_EQ(result.buckets, 3);

  // And it lies between max(compute, communication) and their sum.
  const double compute = 3 * kForward + 3 * kBackward + optimizer_time(3);
  const double communication = 3 * kBucketAllReduce;
  EXPECT_GE(result.iteration.mean, std::max(compute, communication));
  EXPECT_LE(result.iteration.mean, compute + communication);
  EXPECT_NEAR(result.breakdown.exposed_communication, kBucketAllReduce, 0.01 * kBucketAllReduce);
}

TEST(DataParallel, FirstBucketIsCappedSmallerAsInPyTorchDdp) {
  auto s = three_buckets(true);
  s.training.bucket_bytes = 100e6;   // everything would fit one bucket...
  s.training.first_bucket_bytes = 1; // ...but the first closes after its first layer
  EXPECT_EQ(simulate(s).result.buckets, 2);
}

// Horovod's tensor fusion on the three layers above, a 5 ms cycle from the backward's start: fc3's gradients are ready
// at B = 4.02 ms and go out at the 5 ms tick, fc2's (ready at 2B = 8.04 ms) at 10 ms, fc1's (12.06 ms) at 15 ms, each
// all-reduce (4.004 ms) over before the next tick: the iteration is 3F + 15 ms + kBucketAllReduce + the optimizer,
// 2.94 ms more than DDP's buckets, and the waits sit on the host stream (0.98, 1.96 and 2.94 ms).
TEST(DataParallel, HorovodFusesWhatIsReadyAtEachCycle) {
  auto s = three_buckets(true);
  s.framework.fusion_cycle = 5e-3;
  s.framework.fusion_threshold = 64.0 * 1024 * 1024;
  const double expected = 3 * kForward + 15e-3 + kBucketAllReduce + optimizer_time(3);
  const auto result = simulate(s).result;
  EXPECT_NEAR(result.iteration.mean, expected, 0.01 * expected);
  EXPECT_EQ(result.buckets, 3);
  const auto plan = plan::make_plan(s);
  std::vector<double> waits;
  for (const auto& op : plan.graph.programs.front().ops)
    if (op.stream == graph::Stream::host) waits.push_back(std::get<graph::Compute>(op.body).seconds);
  ASSERT_EQ(waits.size(), 3u);
  EXPECT_NEAR(waits[0], 5e-3 - kBackward, 1e-9);
  EXPECT_NEAR(waits[1], 10e-3 - 2 * kBackward, 1e-9);
  EXPECT_NEAR(waits[2], 15e-3 - 3 * kBackward, 1e-9);
}

// A 15 ms cycle: all three layers' gradients (12 MB) are ready by the first tick. With an 8 MB threshold the fusion
// buffer takes fc3 and fc2 and fc1 goes in a second buffer at the same tick: all-reduces of 8 MB (2 x (2 us + 4 ms))
// and 4 MB one after the other from 15 ms.
TEST(DataParallel, HorovodSplitsACycleAtTheFusionThreshold) {
  auto s = three_buckets(true);
  s.framework.fusion_cycle = 15e-3;
  s.framework.fusion_threshold = 8e6;
  const double expected = 3 * kForward + 15e-3 + 2 * (2e-6 + 4e-3) + kBucketAllReduce + optimizer_time(3);
  const auto result = simulate(s).result;
  EXPECT_NEAR(result.iteration.mean, expected, 0.01 * expected);
  EXPECT_EQ(result.buckets, 2);
  s.framework.fusion_threshold = 64.0 * 1024 * 1024; // one buffer of 12 MB: 2 x (2 us + 6 ms)
  EXPECT_NEAR(simulate(s).result.iteration.mean, 3 * kForward + 15e-3 + 2 * (2e-6 + 6e-3) + optimizer_time(3),
              0.01 * expected);
}

TEST(DataParallel, PlanRefusesAJobThatDoesNotFitWithTheLargestItems) {
  auto s = base_scenario({linear("fc1")}, 1);
  s.gpu.memory_bytes = 1e6;
  try {
    plan::make_plan(s);
    FAIL() << "4 MB of weights cannot fit in 1 MB";
  } catch (const plan::PlanError& e) {
    EXPECT_NE(std::string(e.what()).find("does not fit in GPU memory"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("weights"), std::string::npos);
  }
}

} // namespace
} // namespace dtsim

namespace dtsim {
namespace {

// Dollars by hand: the compute-only iteration above (two linears and a ReLU at batch 10) on one node at
// $3.60 per node-hour. An epoch of 36,000 samples is 3,600 iterations.
TEST(Cost, PerHourPerEpochAndRunFollowTheIterationTime) {
  models::Layer relu{"relu", models::LayerKind::elementwise, 1000, 1000, 0, 1000, 1000};
  auto s = base_scenario({linear("fc1"), relu, linear("fc2")}, 1);
  s.cluster.price_per_node_hour = 3.60;
  s.dataset.samples = 36000;
  s.dataset.epochs = 5;
  const double iteration =
      2 * kForward + (80e-9 + 10e-6) + 2 * kBackward + (160e-9 + 10e-6) + optimizer_time(2); // as above
  const double epoch = 3600 * iteration;
  const auto r = simulate(s).result;
  EXPECT_DOUBLE_EQ(r.price_per_hour, 3.60);
  EXPECT_NEAR(r.epoch_seconds, epoch, 1e-6);
  EXPECT_NEAR(r.cost_per_epoch, 3.60 * epoch / 3600, 1e-9);
  EXPECT_NEAR(r.cost_of_run, 5 * 3.60 * epoch / 3600, 1e-9);
}

} // namespace
} // namespace dtsim

namespace dtsim {
namespace {

// ZeRO's traffic (Rajbhandari et al. 2020, section 7): stages 1 and 2 reduce-scatter the gradients and all-gather the
// updated weights, (n-1)/n S each: the 2 (n-1)/n S of an all-reduce. Stage 3 gathers the weights twice (forward and
// backward) and reduce-scatters the gradients: 3 (n-1)/n S, 1.5x. Here S = 3 layers x 1e6 fp32 parameters = 12 MB
// on 4 ranks, so 18 MB and 27 MB per rank per iteration.
TEST(DataParallel, ZeroStagesMoveWhatThePaperCounts) {
  const double S = 3 * 1e6 * 4, n = 4;
  const std::map<int, double> expected{
      {0, 2 * (n - 1) / n * S}, {1, 2 * (n - 1) / n * S}, {2, 2 * (n - 1) / n * S}, {3, 3 * (n - 1) / n * S}};
  for (const auto& [stage, bytes] : expected) {
    auto s = base_scenario({linear("fc1"), linear("fc2"), linear("fc3")}, 4);
    s.training.zero_stage = stage;
    EXPECT_NEAR(simulate(s).result.bytes_sent_per_gpu, bytes, 1e-6 * bytes) << "stage " << stage;
  }
}

} // namespace
} // namespace dtsim

namespace dtsim {
namespace {

// The collectives of a plan's (shared) program, in the order the communication stream runs them.
std::vector<std::size_t> collectives_of(const graph::Program& program, collectives::Operation op) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < program.ops.size(); ++i)
    if (const auto* c = std::get_if<graph::Collective>(&program.ops[i].body); c && c->op == op) out.push_back(i);
  return out;
}

double bytes_of(const graph::Op& op) {
  return std::get<graph::Collective>(op.body).bytes;
}

// A GPT of two blocks small enough to write down, with an untied LM head so that the ops after the blocks (final
// norm, LM head) are a unit of several layers with parameters.
models::Workload tiny_gpt() {
  models::TransformerSpec t;
  t.name = "tiny-gpt";
  t.layers = 2;
  t.hidden = 64;
  t.heads = 4;
  t.ffn_hidden = 256;
  t.sequence = 32;
  t.max_positions = 32;
  t.vocabulary = 1000;
  t.tied_embeddings = false;
  return models::transformer(t);
}

// ZeRO-3 as FSDP wraps a transformer (transformer_auto_wrap_policy): 4 units, counted by hand from the layer table:
// unit 0 the ops before the first block (the token and position embeddings), units 1 and 2 the blocks, unit 3 the
// ops after the last block (final norm and LM head). Counted as the collective ops of the ranks' shared program (one
// iteration of one micro-batch, 4 ranks, fp32): every unit's weights all-gathered twice, before its forward and
// before its backward, 2 x 4 = 8 all-gathers with none dropped or merged (stage 3 has no all-gather after the step),
// and its gradients reduce-scattered once, 4 reduce-scatters and no all-reduce. The forward gathers go out in unit
// order; in backward each unit's gather goes out ahead of the reduce-scatter of the unit after it (FSDP's
// BACKWARD_PRE); and a forward gather waits for the unit two before it to finish (at most two units' weights gathered:
// limit_all_gathers).
TEST(DataParallel, ZeroThreeGathersAndReduceScattersPerTransformerBlock) {
  const auto w = tiny_gpt();
  std::vector<double> unit_params(4, 0);
  std::vector<std::string> unit_last(4); // the last layer of each unit, forward order
  bool after_blocks = false;
  for (const auto& l : w.layers) {
    after_blocks = after_blocks || l.block >= 0;
    const int u = l.block >= 0 ? 1 + l.block : (after_blocks ? 3 : 0);
    unit_params[u] += static_cast<double>(l.parameters);
    unit_last[u] = l.name;
  }
  ASSERT_EQ(unit_params[0] + unit_params[1] + unit_params[2] + unit_params[3],
            static_cast<double>(w.parameter_count()));
  EXPECT_DOUBLE_EQ(unit_params[0], (1000 + 32) * 64);       // token and position tables
  EXPECT_DOUBLE_EQ(unit_params[1], 12 * 64 * 64 + 13 * 64); // 12 h^2 + 13 h
  EXPECT_DOUBLE_EQ(unit_params[3], 2 * 64 + 1000 * 64);     // final LayerNorm and the untied LM head

  auto s = base_scenario(w.layers, 4);
  s.model.workload = w;
  s.model.batch_per_gpu = 1;
  s.training.zero_stage = 3;
  const auto plan = plan::make_plan(s);
  const auto& program = plan.graph.programs.at(0);
  const auto gathers = collectives_of(program, collectives::Operation::all_gather);
  const auto scatters = collectives_of(program, collectives::Operation::reduce_scatter);
  ASSERT_EQ(gathers.size(), 2 * 4u);
  ASSERT_EQ(scatters.size(), 4u);
  EXPECT_EQ(plan.buckets, 4);
  EXPECT_TRUE(collectives_of(program, collectives::Operation::all_reduce).empty());
  for (int k = 0; k < 4; ++k) {
    EXPECT_DOUBLE_EQ(bytes_of(program.ops[gathers[k]]), unit_params[k] * 4) << "forward gather " << k;
    EXPECT_DOUBLE_EQ(bytes_of(program.ops[gathers[4 + k]]), unit_params[3 - k] * 4) << "backward gather " << k;
    EXPECT_DOUBLE_EQ(bytes_of(program.ops[scatters[k]]), unit_params[3 - k] * 4) << "reduce-scatter " << k;
  }
  EXPECT_NE(program.ops[gathers[1]].name.find("block 0"), std::string::npos) << program.ops[gathers[1]].name;
  // Communication order: 4 forward gathers, the last unit's backward gather, then gather 2, scatter 3, gather 1,
  // scatter 2, gather 0, scatter 1, scatter 0.
  const std::vector<std::size_t> order{gathers[0],  gathers[1], gathers[2],  gathers[3], gathers[4],  gathers[5],
                                       scatters[0], gathers[6], scatters[1], gathers[7], scatters[2], scatters[3]};
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
  for (int k = 2; k < 4; ++k) {
    const auto& deps = program.ops[gathers[k]].deps;
    ASSERT_EQ(deps.size(), 1u) << "forward gather " << k;
    EXPECT_EQ(program.ops[deps[0]].name, unit_last[k - 2] + " fwd");
  }

  // What each GPU sends is still the paper's 3 (n-1)/n S.
  const double S = static_cast<double>(w.parameter_count()) * 4, n = 4;
  EXPECT_NEAR(simulate(s).result.bytes_sent_per_gpu, 3 * (n - 1) / n * S, 1e-6 * S);
}

// BACKWARD_POST (Composer's FSDP default): a unit's backward gather goes out from the post-backward hook of the unit
// after it, so it waits for that unit's gradient computation, the first layer of the unit in forward order, to end;
// under BACKWARD_PRE it waits only for the rate limiter (the unit two before it in backward). The unit before it in
// backward then waits for its weights: the iteration is no shorter.
TEST(DataParallel, ZeroThreeBackwardPostGathersAfterTheUnitsGradients) {
  const auto w = tiny_gpt();
  std::vector<std::string> unit_first(4); // the first layer of each unit, forward order
  bool after_blocks = false;
  for (const auto& l : w.layers) {
    after_blocks = after_blocks || l.block >= 0;
    const int u = l.block >= 0 ? 1 + l.block : (after_blocks ? 3 : 0);
    if (unit_first[u].empty()) unit_first[u] = l.name;
  }
  auto s = base_scenario(w.layers, 4);
  s.model.workload = w;
  s.model.batch_per_gpu = 1;
  s.training.zero_stage = 3;
  const double pre = simulate(s).result.iteration.mean;
  s.framework.backward_prefetch = calibration::BackwardPrefetch::post;
  const auto plan = plan::make_plan(s);
  const auto& program = plan.graph.programs.at(0);
  const auto gathers = collectives_of(program, collectives::Operation::all_gather);
  ASSERT_EQ(gathers.size(), 8u);
  for (int k = 1; k < 4; ++k) { // backward gather k: unit 3 - k, posted after unit 4 - k's gradients
    const auto& deps = program.ops[gathers[4 + k]].deps;
    const auto after = unit_first[4 - k] + " bwd";
    EXPECT_TRUE(std::any_of(deps.begin(), deps.end(), [&](std::uint32_t d) { return program.ops[d].name == after; }))
        << "backward gather " << k << " should wait for " << after;
  }
  EXPECT_GE(simulate(s).result.iteration.mean, pre);
}

// A model without blocks keeps one unit per layer with parameters: the ReLU between the linears gathers nothing.
TEST(DataParallel, ZeroThreeWithoutBlocksGathersEachLayer) {
  models::Layer relu{"relu", models::LayerKind::elementwise, 1000, 1000, 0, 1000, 1000};
  auto s = base_scenario({linear("fc1"), relu, linear("fc2"), linear("fc3")}, 4);
  s.training.zero_stage = 3;
  const auto plan = plan::make_plan(s);
  const auto& program = plan.graph.programs.at(0);
  EXPECT_EQ(collectives_of(program, collectives::Operation::all_gather).size(), 2 * 3u);
  EXPECT_EQ(collectives_of(program, collectives::Operation::reduce_scatter).size(), 3u);
  for (const auto i : collectives_of(program, collectives::Operation::all_gather))
    EXPECT_DOUBLE_EQ(bytes_of(program.ops[i]), 1e6 * 4);
}

} // namespace
} // namespace dtsim
