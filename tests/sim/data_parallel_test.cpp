// Synchronous data parallelism end to end (plan -> replay -> report) on cases worked by hand.
// The GPU and the network are made-up round numbers so that every op time can be written down here.
#include "sim/simulate.hpp"

#include "tests/sim/round_gpu.hpp"

#include <gtest/gtest.h>

#include <map>

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
// Momentum SGD reads p, g, m and writes p, m: 20 B per parameter, 1e6 parameters per layer at 1 TB/s = 20 us,
// plus one launch per parameter tensor.
double optimizer_time(int layers) {
  return layers * (20e-6 + 10e-6);
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
