// Single-GPU training throughput of the shipped scenarios against the public measurements in
// ../shared/reference/single-gpu.md: a regression guard at 15%, not a fitting target (no constant was fitted to these
// rows). Today: V100 FP32 -11.3%, V100 AMP -12.9% (its convolution ceilings are the A100's CUTLASS measurement, no
// Volta one being published), A100 AMP -3.3%, BERT-large -3.0% and -2.0%. The A100 TF32 ResNet-50 row is a known miss
// (+29%: no TF32 convolution measurement, docs/validation.md) and is not asserted.
#include "sim/simulate.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

namespace dtsim {
namespace {

const std::filesystem::path kScenarios = std::filesystem::path(DTSIM_SOURCE_DIR) / "scenarios";

struct Published {
  std::string name;
  std::string scenario;
  std::vector<scenario::Override> overrides;
  double measured; // samples/s
};

double predicted(const Published& p) {
  auto s = scenario::load_scenario((kScenarios / p.scenario).string(), p.overrides);
  s.run.iterations = 1;
  return simulate(s).result.throughput;
}

class SingleGpu : public ::testing::TestWithParam<Published> {};

TEST_P(SingleGpu, WithinFifteenPercentOfTheMeasurement) {
  const auto& p = GetParam();
  const double samples_per_second = predicted(p);
  EXPECT_LT(std::abs(samples_per_second / p.measured - 1), 0.15)
      << p.name << ": " << samples_per_second << " samples/s against " << p.measured;
}

std::vector<scenario::Override> resnet(const std::string& gpu, const std::string& precision, int batch) {
  return {{"cluster.nodes", "1"},
          {"cluster.gpu", gpu},
          {"model.precision", precision},
          {"model.batch_per_gpu", std::to_string(batch)}};
}

// NVIDIA DeepLearningExamples, ResNet-50 v1.5 PyTorch (21.03 container); DeepSpeed's BERT-large kernels (2020).
INSTANTIATE_TEST_SUITE_P(Reference, SingleGpu,
                         ::testing::Values(Published{"resnet50_v100_fp32", "resnet50-p3.2xlarge-sync.json",
                                                     resnet("v100", "fp32", 112), 367},
                                           Published{"resnet50_v100_amp", "resnet50-p3.2xlarge-sync.json",
                                                     resnet("v100", "amp", 256), 1200},
                                           Published{"resnet50_a100_80gb_amp", "resnet50-p3.2xlarge-sync.json",
                                                     resnet("a100-80gb", "amp", 256), 2470},
                                           Published{"bert_large_seq128_v100", "bert-large-seq128-v100.json", {}, 272},
                                           Published{"bert_large_seq512_v100", "bert-large-seq512-v100.json", {}, 52}),
                         [](const auto& info) { return info.param.name; });

} // namespace
} // namespace dtsim
