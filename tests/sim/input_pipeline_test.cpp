// The input pipeline as a stage of the iteration (plan -> replay -> report), on cases worked by hand.
#include "sim/plan/input_pipeline.hpp"
#include "sim/simulate.hpp"

#include "tests/sim/round_gpu.hpp"

#include <gtest/gtest.h>

namespace dtsim {
namespace {

using calibration::Precision;

using test::round_gpu; // 10 TFLOP/s at 50% for GEMMs, 1 TB/s for memory-bound kernels, 10 us per launch

// One linear layer (1 GFLOP per sample forward, 2 backward, 1e6 parameters) at batch 10 on `gpus` GPUs of one node.
scenario::Scenario one_linear(int gpus = 1) {
  return test::hand_scenario({{"fc", models::LayerKind::matmul, 1e9, 2e9, 1'000'000, 1000, 1000}}, 1, gpus);
}

// Forward 2 ms + 10 us launch, backward 4 ms + two launches, momentum step 20 us + one launch: 6.060 ms of GPU work.
constexpr double kGpuWork = 2.010e-3 + 4.020e-3 + 30e-6;

scenario::InputSpec input(int cores, double per_core) {
  scenario::InputSpec in;
  in.cpu_cores = cores;
  in.samples_per_core_per_second = per_core;
  return in;
}

TEST(InputPipeline, NoSectionNoStage) {
  const auto s = one_linear();
  EXPECT_DOUBLE_EQ(plan::input_rates(s).seconds_per_iteration, 0);
  const auto r = simulate(s).result;
  EXPECT_FALSE(r.input.modeled);
  EXPECT_NEAR(r.iteration.mean, kGpuWork, 1e-9);
}

TEST(InputPipeline, ASlowLoaderBoundsTheIteration) {
  // 2 cores x 100 samples/s = 200 samples/s: a batch of 10 takes 50 ms, far longer than the GPU's 6.06 ms.
  auto s = one_linear();
  s.input = input(2, 100);
  const auto r = simulate(s).result;
  EXPECT_NEAR(r.iteration.mean, 10.0 / (2 * 100), 1e-12);
  EXPECT_NEAR(r.throughput, 200, 1e-6);
  ASSERT_TRUE(r.input.modeled);
  EXPECT_DOUBLE_EQ(r.input.samples_per_second, 200);
  EXPECT_DOUBLE_EQ(r.input.cpu_samples_per_second, 200);
  EXPECT_DOUBLE_EQ(r.input.storage_samples_per_second, 0);
  EXPECT_DOUBLE_EQ(r.input.loader_seconds, 0.05);
  EXPECT_NEAR(r.input.gpu_seconds, kGpuWork, 1e-9);
  EXPECT_TRUE(r.input.bounds_iteration());
  // The GPU computes its 6.06 ms and waits the rest: idle, not compute.
  EXPECT_NEAR(r.breakdown.compute, kGpuWork, 1e-9);
  EXPECT_NEAR(r.breakdown.idle, 0.05 - kGpuWork, 1e-9);
  const auto text = report::format_summary(r);
  EXPECT_NE(text.find("input pipeline               200.0 samples/s per node, 50.00 ms per iteration"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("bounds the iteration"), std::string::npos) << text;
}

TEST(InputPipeline, AFastLoaderLeavesTheIterationUnchanged) {
  // 4 cores x 10,000 samples/s: 0.25 ms per batch, hidden behind 6.06 ms of GPU work.
  auto s = one_linear();
  const double without = simulate(s).result.iteration.mean;
  s.input = input(4, 10'000);
  const auto r = simulate(s).result;
  EXPECT_DOUBLE_EQ(r.iteration.mean, without);
  EXPECT_DOUBLE_EQ(r.input.loader_seconds, 10.0 / 40'000);
  EXPECT_FALSE(r.input.bounds_iteration());
  EXPECT_NE(report::format_summary(r).find("the input pipeline is hidden behind it"), std::string::npos);
}

TEST(InputPipeline, StorageBound) {
  // 8 cores x 1000 samples/s could load 8000 samples/s, but 1 MB/s of storage at 100 kB a sample reads 10 per second:
  // a batch of 10 takes 1 s.
  auto s = one_linear();
  s.input = input(8, 1000);
  s.input->sample_bytes = 100e3;
  s.input->storage_bandwidth = 1e6;
  const auto rates = plan::input_rates(s);
  EXPECT_DOUBLE_EQ(rates.storage_samples_per_second, 1e6 / 100e3);
  EXPECT_TRUE(rates.storage_bound());
  const auto r = simulate(s).result;
  EXPECT_NEAR(r.iteration.mean, 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(r.input.samples_per_second, 10);
  EXPECT_DOUBLE_EQ(r.input.cpu_samples_per_second, 8000);
  EXPECT_NE(report::format_summary(r).find("CPU 8000.0 samples/s, storage 10.0 samples/s"), std::string::npos);
  // Sample bytes alone set no storage bound.
  s.input->storage_bandwidth = 0;
  EXPECT_DOUBLE_EQ(plan::input_rates(s).samples_per_second, 8000);
}

TEST(InputPipeline, TheNodesGpusShareItsRate) {
  // Two GPUs on one node share 200 samples/s: each GPU's batch of 10 waits 2 x 10 / 200 = 100 ms.
  auto s = one_linear(2);
  s.input = input(2, 100);
  EXPECT_DOUBLE_EQ(plan::input_rates(s).seconds_per_iteration, 0.1);
  const auto r = simulate(s).result;
  EXPECT_NEAR(r.iteration.mean, 0.1, 1e-9);
  EXPECT_NEAR(r.throughput, 200, 1e-6); // the node's rate, whatever its GPUs could do
}

TEST(InputPipeline, JsonCarriesItAndReadsBack) {
  auto s = one_linear();
  s.input = input(2, 100);
  const auto sim = simulate(s, /*with_trace=*/true);
  const auto j = report::to_json(sim.result);
  ASSERT_TRUE(j.contains("input_pipeline"));
  EXPECT_DOUBLE_EQ(j["input_pipeline"]["input_samples_per_second"].get<double>(), 200);
  EXPECT_DOUBLE_EQ(j["input_pipeline"]["loader_seconds_per_iteration"].get<double>(), 0.05);
  EXPECT_TRUE(j["input_pipeline"]["bounds_iteration"].get<bool>());
  EXPECT_EQ(report::to_json(report::run_result_from_json(j)), j);
  // Without the section the result carries no input figures.
  EXPECT_FALSE(report::to_json(simulate(one_linear()).result).contains("input_pipeline"));
  // The trace shows the loader as its own thread.
  bool input_thread = false;
  for (const auto& e : sim.trace.at("traceEvents"))
    input_thread |= e.at("ph") == "X" && e.at("cat") == "input" && e.at("name") == "load batch";
  EXPECT_TRUE(input_thread);
}

} // namespace
} // namespace dtsim
