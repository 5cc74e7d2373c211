// Kernels that vary, and the groups that wait for them (plan/kernel_noise.hpp): the expected maximum of a group's
// draws at each synchronization, by hand; Megatron's synchronizations counted as the paper counts them; one wait at
// every fidelity; and a pipeline whose critical path stretches by exactly that wait.
#include "sim/plan/kernel_noise.hpp"
#include "sim/plan/plan.hpp"
#include "sim/simulate.hpp"

#include "tests/sim/round_gpu.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace dtsim {
namespace {

// Blom's expected maxima of 2 and 8 standard normal draws, Phi^-1((g - 3/8) / (g + 1/4)): Phi^-1(0.72222) and
// Phi^-1(0.92424) from a normal table. (The exact maxima are 0.5642 and 1.4236.)
constexpr double kZ2 = 0.58946, kZ8 = 1.43420;

TEST(KernelNoise, EachSynchronizationWaitsForTheExpectedMaximumOfItsGroup) {
  // 100 kernels of 1 ms and 100 of 3 ms: T = 0.4 s, Q = 100 x 1e-6 + 100 x 9e-6 = 1e-3 s^2. Over 100
  // synchronizations of 8 GPUs, each segment's sum has standard deviation sigma sqrt(Q / 100) = 0.01 x 3.1623 ms,
  // and each costs z(8) of that: 100 x 1.4342 x 31.623 us = 4.5353 ms, 1.1338% of the 0.4 s.
  const std::vector<plan::KernelRow> kernels{{.launches = 100, .seconds = 0.1}, {.launches = 100, .seconds = 0.3}};
  EXPECT_NEAR(plan::synchronization_wait(0.01, kernels, {{8, 100}}), 100 * kZ8 * 0.01 * std::sqrt(1e-5) / 0.4, 1e-6);
  // Half of them with a pair instead: the segments are the same, the pairs wait z(2) each.
  EXPECT_NEAR(plan::synchronization_wait(0.01, kernels, {{2, 50}, {8, 50}}),
              (50 * kZ2 + 50 * kZ8) * 0.01 * std::sqrt(1e-5) / 0.4, 1e-6);
  // A group of one waits for nobody; kernels without spread, or no synchronization, cost nothing.
  EXPECT_EQ(plan::synchronization_wait(0.01, kernels, {{1, 100}}), 0);
  EXPECT_EQ(plan::synchronization_wait(0, kernels, {{8, 100}}), 0);
  EXPECT_EQ(plan::synchronization_wait(0.01, kernels, {}), 0);
}

TEST(KernelNoise, MegatronsTensorParallelLayersSynchronizeAsThePaperCounts) {
  // Shoeybi et al. (2019): per layer and micro-batch, 2 all-reduces forward and 2 backward; with sequence parallelism
  // (Korthikanti et al. 2022) 4 reduce-scatters and 6 all-gathers. The test GPT has 2 layers and one micro-batch, and
  // its vocabulary is split too: without sequence parallelism the embedding's forward all-reduce, the loss's 2 (the
  // logits' maximum and the sum of their exponentials) and the LM head's backward all-reduce, 8 + 4 = 12; with it the
  // embedding's reduce-scatter and its backward all-gather, the LM head's all-gather forward and all-gather and
  // reduce-scatter backward, and the loss's 2, 20 + 7 = 27.
  for (const bool sp : {false, true}) {
    auto s = test::small_gpt(2, 2, sp);
    s.stragglers.kernel_noise_sigma = 0.01;
    const auto plan = plan::make_plan(s);
    const int by_hand = sp ? 2 * 10 + 7 : 2 * 4 + 4;
    int tensor_collectives = 0;
    for (const auto& op : plan.graph.program_of(0).ops)
      if (std::holds_alternative<graph::Collective>(op.body) && op.axis == graph::Axis::tensor) ++tensor_collectives;
    EXPECT_EQ(tensor_collectives, by_hand) << "sequence parallel " << sp;
    EXPECT_GT(plan.synchronization_wait, 0);
    // Priced on the passes' kernels: the optimizer's (here its fused momentum step) run after the last
    // synchronization. The round GPU has no power limit: burst clocks are the clocks.
    std::vector<plan::KernelRow> passes;
    for (const auto& k : plan.kernels)
      if (k.name.rfind("optimizer step", 0) != 0) passes.push_back(k);
    ASSERT_LT(passes.size(), plan.kernels.size());
    EXPECT_NEAR(plan.synchronization_wait, plan::synchronization_wait(0.01, passes, {{2, by_hand}}), 1e-12)
        << "sequence parallel " << sp;
    // Every rank's compute waits the same.
    for (const auto& slowdown : plan.graph.compute_slowdown)
      EXPECT_DOUBLE_EQ(slowdown.at(0), 1 + plan.synchronization_wait);
  }
}

TEST(KernelNoise, EveryFidelityWaitsTheSame) {
  auto s = test::small_gpt(4, 2, true);
  s.cluster.nodes = 2;
  s.cluster.gpus_per_node = 2;
  s.parallelism.data = 2;
  s.stragglers.kernel_noise_sigma = 0.01;
  std::vector<double> waits;
  for (const auto fidelity : {scenario::Fidelity::step, scenario::Fidelity::aggregate, scenario::Fidelity::coarse}) {
    s.run.fidelity = fidelity;
    waits.push_back(plan::make_plan(s).synchronization_wait);
  }
  EXPECT_GT(waits[0], 0);
  EXPECT_NEAR(waits[1], waits[0], 1e-12 * waits[0]);
  EXPECT_NEAR(waits[2], waits[0], 1e-12 * waits[0]);
}

TEST(KernelNoise, APipelinesCriticalPathStretchesByTheWait) {
  // Tensor 2 x pipeline 2 with 4 micro-batches on free links: every stage's compute is its kernels plus the wait at
  // its tensor-parallel synchronizations, so the critical path (warm-up, steady state, cool-down: (m + p - 1) stage
  // times with nothing exposed but the collectives' own latency) grows by at most that factor, and the compute the
  // run reports by exactly it.
  auto s = test::small_gpt(4, 2, false);
  s.parallelism.pipeline = 2;
  s.parallelism.micro_batches = 4;
  s.run.fidelity = scenario::Fidelity::step;
  const auto quiet = simulate(s).result;
  s.stragglers.kernel_noise_sigma = 0.01;
  const auto noisy = simulate(s).result;
  const double wait = noisy.synchronization_wait;
  ASSERT_GT(wait, 0);
  EXPECT_NEAR(noisy.breakdown.compute / quiet.breakdown.compute, 1 + wait, 1e-9);
  EXPECT_GT(noisy.iteration.mean, quiet.iteration.mean);
  EXPECT_LE(noisy.iteration.mean, quiet.iteration.mean * (1 + wait) + 1e-12);
}

} // namespace
} // namespace dtsim
