// Layer kinds, workload totals, the MLP builder and the preset table.
#include "models/layer.hpp"
#include "models/zoo.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace dtsim::models {
namespace {

TEST(LayerKind, OnlyConvolutionAndMatmulAreGemmLike) {
  EXPECT_TRUE(is_gemm_like(LayerKind::convolution));
  EXPECT_TRUE(is_gemm_like(LayerKind::matmul));
  for (auto k :
       {LayerKind::elementwise, LayerKind::normalization, LayerKind::pooling, LayerKind::softmax, LayerKind::embedding})
    EXPECT_FALSE(is_gemm_like(k)) << to_string(k);
}

TEST(LayerKind, NamesAreTheEnumeratorNames) {
  EXPECT_EQ(to_string(LayerKind::convolution), "convolution");
  EXPECT_EQ(to_string(LayerKind::matmul), "matmul");
  EXPECT_EQ(to_string(LayerKind::normalization), "normalization");
  EXPECT_EQ(to_string(LayerKind::embedding), "embedding");
}

TEST(Workload, TotalsSumTheLayers) {
  Workload w;
  w.layers = {Layer{"a", LayerKind::matmul, 10, 20, 3, 1, 1}, Layer{"b", LayerKind::elementwise, 1.5, 1.5, 0, 1, 1}};
  EXPECT_EQ(w.parameter_count(), 3);
  EXPECT_DOUBLE_EQ(w.forward_flops_per_sample(), 11.5);
  EXPECT_DOUBLE_EQ(w.backward_flops_per_sample(), 21.5);
  EXPECT_EQ(Workload{}.parameter_count(), 0);
}

TEST(Workload, BackwardIsTwiceForwardForGemmLikeLayersAndEqualOtherwise) {
  for (const Workload& w : {resnet50(), mlp({784, 1024, 1024, 10})}) {
    for (const auto& l : w.layers) {
      const double factor = is_gemm_like(l.kind) ? 2.0 : 1.0;
      EXPECT_DOUBLE_EQ(l.backward_flops, factor * l.forward_flops) << w.name << " " << l.name;
      EXPECT_GT(l.forward_flops, 0) << l.name;
    }
  }
}

TEST(Mlp, ParametersMatchAHandCalculation) {
  // Linear(784->1024): 784*1024 + 1024 = 803,840
  // Linear(1024->1024): 1024*1024 + 1024 = 1,049,600
  // Linear(1024->10): 1024*10 + 10 = 10,250
  // total 1,863,690; the two ReLUs have none.
  EXPECT_EQ(mlp({784, 1024, 1024, 10}).parameter_count(), 1'863'690);
}

TEST(Mlp, ForwardFlopsMatchAHandCalculation) {
  // matmuls: 2 * (784*1024 + 1024*1024 + 1024*10) = 2 * 1,861,632 = 3,723,264; ReLUs: 1024 + 1024 = 2,048.
  EXPECT_DOUBLE_EQ(mlp({784, 1024, 1024, 10}).forward_flops_per_sample(), 3'725'312.0);
}

TEST(Mlp, AlternatesLinearAndReluWithNoActivationAfterTheOutput) {
  const Workload w = mlp({4, 8, 2}, "tiny");
  ASSERT_EQ(w.layers.size(), 3u);
  EXPECT_EQ(w.name, "tiny");
  EXPECT_EQ(w.layers[0].name, "fc1");
  EXPECT_EQ(w.layers[0].kind, LayerKind::matmul);
  EXPECT_EQ(w.layers[0].input_elements, 4);
  EXPECT_EQ(w.layers[0].output_elements, 8);
  EXPECT_EQ(w.layers[1].name, "relu1");
  EXPECT_EQ(w.layers[1].kind, LayerKind::elementwise);
  EXPECT_EQ(w.layers[2].name, "fc2");
  EXPECT_EQ(w.layers[2].parameters, 8 * 2 + 2);
}

// Megatron-LM's MLP split (Shoeybi et al. 2019, section 3): column, then row, the activation between them split too,
// the one after a pair whole; an odd last layer is column-parallel, like Megatron's output layer.
TEST(Mlp, LinearLayersSplitColumnThenRow) {
  const Workload w = mlp({784, 1024, 1024, 10});
  ASSERT_EQ(w.layers.size(), 5u); // fc1 relu1 fc2 relu2 fc3
  EXPECT_EQ(w.layers[0].tensor_split, TensorSplit::column);
  EXPECT_EQ(w.layers[1].tensor_split, TensorSplit::inner);
  EXPECT_EQ(w.layers[2].tensor_split, TensorSplit::row);
  EXPECT_EQ(w.layers[3].tensor_split, TensorSplit::replicated);
  EXPECT_EQ(w.layers[4].tensor_split, TensorSplit::column);
  EXPECT_TRUE(w.tensor_splits());
  const Workload pair = mlp({4, 8, 4});
  EXPECT_EQ(pair.layers[0].tensor_split, TensorSplit::column);
  EXPECT_EQ(pair.layers[1].tensor_split, TensorSplit::inner);
  EXPECT_EQ(pair.layers[2].tensor_split, TensorSplit::row);
  EXPECT_EQ(mlp({4, 2}).layers[0].tensor_split, TensorSplit::column);
  EXPECT_FALSE(resnet50().tensor_splits()); // convolutions say nothing
}

// The dense stand-in for Coates et al. 2013's largest network: 40,000 pixels -> 140,000 -> 40,000 is
// 2 x 40,000 x 140,000 = 11.2e9 weights and 140,000 + 40,000 biases; 2 FLOPs per weight per image forward.
TEST(Zoo, CotsHpcStandInHasThePapersParameters) {
  const auto w = *build_preset("cots-hpc-11b");
  EXPECT_EQ(w.parameter_count(), 11'200'180'000);
  EXPECT_DOUBLE_EQ(w.layers[0].forward_flops, 2.0 * 40'000 * 140'000);
  EXPECT_EQ(w.layers[0].gemm.n, 140'000);
  EXPECT_EQ(w.layers[0].gemm.k, 40'000);
  EXPECT_EQ(w.layers[2].tensor_split, TensorSplit::row);
  EXPECT_EQ(w.layers[2].output_elements, 40'000);
}

TEST(Mlp, RejectsFewerThanTwoWidthsOrNonPositiveWidths) {
  EXPECT_THROW(mlp({10}), std::invalid_argument);
  EXPECT_THROW(mlp({10, 0, 5}), std::invalid_argument);
}

TEST(Zoo, PresetNamesAreSortedAndEachBuilds) {
  const auto names = preset_names();
  for (const char* expected : {"mlp-small", "resnet50", "resnet101", "vgg16", "inception-v3", "dlrm"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  for (const auto& n : names) {
    const auto w = build_preset(n);
    ASSERT_TRUE(w.has_value()) << n;
    EXPECT_EQ(w->name, n);
    EXPECT_FALSE(w->layers.empty());
  }
}

TEST(Zoo, PresetsCarryTheirSampleUnits) {
  EXPECT_EQ(build_preset("resnet50")->sample_unit, "images");
  EXPECT_EQ(build_preset("resnet50")->parameter_count(), 25'557'032);
  EXPECT_EQ(build_preset("mlp-small")->sample_unit, "samples");
  EXPECT_EQ(build_preset("mlp-small")->parameter_count(), 1'863'690);
}

TEST(Zoo, UnknownPresetIsNullopt) {
  EXPECT_FALSE(build_preset("resnet-50").has_value());
  EXPECT_FALSE(build_preset("").has_value());
}

} // namespace
} // namespace dtsim::models

namespace dtsim::models {
namespace {

// A GPT-2 attention core (s = 1024, 12 heads of 64) for 8 sequences: Q K^T is 1024 x 1024 x 64 and P V is
// 1024 x 64 x 1024, each for 12 x 8 = 96 (head, sample) pairs; together 4 s^2 (heads x d) per sample, the
// layer's forward FLOPs.
TEST(ForwardGemms, AttentionIsQkAndPvPerHeadAndSample) {
  Layer core;
  core.kind = LayerKind::attention;
  core.attention = {1024, 12, 64, true};
  core.forward_flops = 4.0 * 1024 * 1024 * 768;
  const auto gemms = forward_gemms(core, 8);
  ASSERT_EQ(gemms.size(), 2u);
  EXPECT_EQ(gemms[0].m, 1024);
  EXPECT_EQ(gemms[0].n, 1024);
  EXPECT_EQ(gemms[0].k, 64);
  EXPECT_EQ(gemms[1].n, 64);
  EXPECT_EQ(gemms[1].k, 1024);
  EXPECT_EQ(gemms[0].count, 96);
  EXPECT_DOUBLE_EQ(gemms[0].flops() + gemms[1].flops(), 8 * core.forward_flops);
  EXPECT_DOUBLE_EQ(backward_factor(LayerKind::attention), 2.0);
}

// A matmul's rows grow with the batch; memory-bound layers run no GEMM.
TEST(ForwardGemms, MatmulRowsScaleWithTheBatch) {
  Layer fc;
  fc.kind = LayerKind::matmul;
  fc.gemm = {1, 1000, 2048, 1};
  const auto gemms = forward_gemms(fc, 256);
  ASSERT_EQ(gemms.size(), 1u);
  EXPECT_EQ(gemms[0].m, 256);
  EXPECT_EQ(gemms[0].n, 1000);
  EXPECT_EQ(gemms[0].k, 2048);
  Layer relu;
  relu.kind = LayerKind::elementwise;
  EXPECT_TRUE(forward_gemms(relu, 256).empty());
  EXPECT_DOUBLE_EQ(backward_factor(LayerKind::elementwise), 1.0);
}

} // namespace
} // namespace dtsim::models
