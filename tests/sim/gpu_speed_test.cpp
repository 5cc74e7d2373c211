// GPUs that differ (plan/gpu_speed.hpp): a run's GPUs take the expected order statistics of the population's speeds,
// placed on ranks by the seed, and synchronous jobs wait for their slowest: a data-parallel job for the slowest of
// its n GPUs, a pipeline for its slowest stage at every micro-batch.
#include "sim/plan/gpu_speed.hpp"
#include "sim/simulate.hpp"

#include "tests/sim/round_gpu.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>

namespace dtsim {
namespace {

// E[max of n standard normal draws] = integral of z n phi(z) Phi(z)^(n-1) dz, by the trapezoid rule over [-9, 9].
double expected_maximum(int n) {
  const double h = 1e-4;
  double sum = 0;
  for (double z = -9; z <= 9; z += h) {
    const double phi = std::exp(-z * z / 2) / std::sqrt(2 * std::numbers::pi);
    const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
    sum += z * n * phi * std::pow(cdf, n - 1) * h;
  }
  return sum;
}

// Blom's order statistics stand for the expected ones: the largest of n within 0.03 standard deviations of the
// expected maximum (1/sqrt(pi) = 0.564 for two draws; 3.24 for 1,024), the median GPU for one, symmetric about it.
TEST(GpuSpeed, TheSlowestOfNIsTheExpectedMaximumOfNDraws) {
  EXPECT_NEAR(expected_maximum(2), 1 / std::sqrt(std::numbers::pi), 1e-6);
  for (int n : {2, 8, 64, 1024, 16384})
    EXPECT_NEAR(plan::expected_normal_order_statistic(n, n), expected_maximum(n), 0.03) << n << " GPUs";
  EXPECT_DOUBLE_EQ(plan::expected_normal_order_statistic(1, 1), 0);
  for (int k = 1; k <= 8; ++k)
    EXPECT_NEAR(plan::expected_normal_order_statistic(k, 8), -plan::expected_normal_order_statistic(9 - k, 8), 1e-12);
}

// The same seed places the same speeds on the same ranks; another seed permutes them; sigma 0 and one GPU are the
// profile's speed.
TEST(GpuSpeed, SpeedsArePlacedByTheSeed) {
  const auto a = plan::gpu_time_factors(8, 0.02, 1);
  EXPECT_EQ(a, plan::gpu_time_factors(8, 0.02, 1));
  const auto b = plan::gpu_time_factors(8, 0.02, 2);
  EXPECT_NE(a, b);
  auto sorted_a = a, sorted_b = b;
  std::sort(sorted_a.begin(), sorted_a.end());
  std::sort(sorted_b.begin(), sorted_b.end());
  EXPECT_EQ(sorted_a, sorted_b);
  for (int k = 1; k <= 8; ++k)
    EXPECT_DOUBLE_EQ(sorted_a[k - 1], std::exp(0.02 * plan::expected_normal_order_statistic(k, 8)));
  EXPECT_EQ(plan::gpu_time_factors(8, 0, 1), std::vector<double>(8, 1.0));
  EXPECT_EQ(plan::gpu_time_factors(1, 0.05, 1), std::vector<double>(1, 1.0));
}

models::Layer linear(std::string name) {
  // 1 GFLOP per sample forward, 2 backward, at batch 10 on the round GPU: 2 + 4 ms; 1000 parameters (a negligible
  // all-reduce).
  return {std::move(name), models::LayerKind::matmul, 1e9, 2e9, 1000, 1000, 1000};
}

// An all-reduce job on n one-GPU nodes waits every iteration for its slowest GPU: the 12.04 ms forward and backward
// (2 layers x (2 + 4) ms + 4 launches of 10 us) grows by exp(sigma z_n) - 1 of itself, z_n = Phi^-1((n - 3/8) /
// (n + 1/4)): 1.4342 for 8 GPUs, at sigma 0.05 a factor 1.0743 (0.896 ms); nothing for one GPU, the median GPU.
TEST(GpuSpeed, DataParallelIterationsWaitForTheSlowestGpu) {
  const auto excess = [](int nodes) {
    auto s = test::hand_scenario({linear("fc1"), linear("fc2")}, nodes);
    s.cluster.nic = {1e9, 0};
    const double identical = simulate(s).result.iteration.mean;
    s.stragglers.gpu_speed_sigma = 0.05;
    return simulate(s).result.iteration.mean - identical;
  };
  EXPECT_NEAR(excess(8), (std::exp(0.05 * 1.4342) - 1) * 12.04e-3, 0.01e-3);
  EXPECT_DOUBLE_EQ(excess(1), 0);
}

// A pipeline of p one-GPU stages, each taking T_s = f_s x 60.06 ms a micro-batch (2 slabs x (10 + 20 + 0.03) ms) on
// its GPU of factor f_s, paces its micro-batches by its slowest stage. Under GPipe with free communication the
// forwards are m identical jobs through a flow line, whose makespan is sum_s t_s + (m - 1) max_s t_s, and so are the
// backwards after them: sum_s T_s + (m - 1) max_s T_s (uniform stages: (m + p - 1) T). At sigma 0.1 the 4 GPUs' factors
// are exp(0.1 z_k), z_k = Phi^-1((k - 3/8) / 4.25) = -1.049, -0.297, 0.297, 1.049: 0.9004, 0.9707, 1.0302, 1.1106;
// 8 micro-batches take (4.0119 + 7 x 1.1106) x 60.06 ms = 707.9 ms against 660.7 ms for identical GPUs, wherever the
// seed puts the slowest stage. 1F1B interleaves forwards and backwards and hides some of the fast stages' time in the
// slow one's; it takes no longer than GPipe and no less than the slowest stage's own work, 8 x 1.1106 x 60.06 ms.
TEST(GpuSpeed, APipelineRunsAtItsSlowestStagesPace) {
  auto s = test::pipeline_scenario(8, 4, 8, scenario::PipelineSchedule::gpipe);
  EXPECT_NEAR(simulate(s).result.iteration.mean, 11 * 60.06e-3, 0.005 * 11 * 60.06e-3);
  s.stragglers.gpu_speed_sigma = 0.1;
  const double gpipe = (4.0119 + 7 * 1.1106) * 60.06e-3;
  for (std::uint64_t seed : {1, 2, 3}) {
    s.run.seed = seed;
    s.parallelism.schedule = scenario::PipelineSchedule::gpipe;
    EXPECT_NEAR(simulate(s).result.iteration.mean, gpipe, 0.005 * gpipe) << "seed " << seed;
    s.parallelism.schedule = scenario::PipelineSchedule::one_f_one_b;
    const double one_f_one_b = simulate(s).result.iteration.mean;
    EXPECT_LE(one_f_one_b, gpipe * 1.001) << "seed " << seed;
    EXPECT_GE(one_f_one_b, 8 * 1.1106 * 60.06e-3) << "seed " << seed;
  }
}

} // namespace
} // namespace dtsim
