// ResNet-101/152, VGG-16 and Inception-v3 against torchvision's published figures. Parameters: torchvision's model
// docs ("num_params", = sum(p.numel() for p in model.parameters())). Compute: the docs' "GFLOPS" column, which
// counts multiply-accumulates of one 224x224 image (299x299 for Inception-v3), in eval mode: resnet101 7.80,
// resnet152 11.51, vgg16 15.47, inception_v3 5.71. We count convolution and linear MACs only.
#include "models/net_builder.hpp"
#include "models/zoo.hpp"

#include "tests/models/workload_lookup.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace dtsim::models {
namespace {

using test::find;
using test::gemm_macs;

int count(const Workload& w, LayerKind kind) {
  return static_cast<int>(
      std::count_if(w.layers.begin(), w.layers.end(), [&](const Layer& l) { return l.kind == kind; }));
}

void expect_distinct_names(const Workload& w) {
  std::set<std::string> names;
  for (const auto& l : w.layers)
    EXPECT_TRUE(names.insert(l.name).second) << w.name << ": duplicate name " << l.name;
}

// --- ResNet-101 and ResNet-152 ---

TEST(ResNetDepths, ParameterCountsAreTorchvisions) {
  EXPECT_EQ(resnet(50).parameter_count(), 25'557'032);
  EXPECT_EQ(resnet(101).parameter_count(), 44'549'160);
  EXPECT_EQ(resnet(152).parameter_count(), 60'192'808);
}

TEST(ResNetDepths, MacsAreWithin2PercentOfPublished) {
  // He et al. 2016, Table 1 gives 7.6 and 11.3 G multiply-adds for v1 (stride on the first 1x1); torchvision's
  // v1.5 (stride on the 3x3): 7.80 and 11.51.
  const double r101 = gemm_macs(resnet(101));
  const double r152 = gemm_macs(resnet(152));
  EXPECT_NEAR(r101, 7.8e9, 0.02 * 7.8e9) << r101;
  EXPECT_NEAR(r152, 11.5e9, 0.02 * 11.5e9) << r152;
  EXPECT_NEAR(r101, 7.80e9, 0.001 * 7.80e9) << "torchvision's 7.80 G, to three digits";
  EXPECT_NEAR(r152, 11.51e9, 0.001 * 11.51e9) << "torchvision's 11.51 G, to four digits";
}

TEST(ResNetDepths, StagesHaveTheBlockCountsOfTable1) {
  for (const auto& [depth, blocks] : {std::pair{101, 3 + 4 + 23 + 3}, std::pair{152, 3 + 8 + 36 + 3}}) {
    const Workload w = resnet(depth);
    EXPECT_EQ(w.name, "resnet" + std::to_string(depth));
    EXPECT_EQ(w.sample_unit, "images");
    EXPECT_EQ(count(w, LayerKind::convolution), 1 + 3 * blocks + 4); // stem, 3 per block, 4 projections
    EXPECT_EQ(count(w, LayerKind::normalization), 1 + 3 * blocks + 4);
    expect_distinct_names(w);
  }
  EXPECT_NO_THROW(find(resnet(101), "layer3.22.conv3"));
  EXPECT_THROW(find(resnet(101), "layer3.23.conv3"), std::runtime_error);
  EXPECT_NO_THROW(find(resnet(152), "layer2.7.conv3"));
  EXPECT_NO_THROW(find(resnet(152), "layer3.35.relu3"));
  EXPECT_EQ(find(resnet(152), "layer4.2.relu3").output_elements, 2048 * 7 * 7);
}

TEST(ResNetDepths, RejectsOtherDepths) {
  EXPECT_THROW(resnet(18), std::invalid_argument); // basic-block ResNets are not modelled
  EXPECT_THROW(resnet(100), std::invalid_argument);
  EXPECT_THROW(resnet(101, 0), std::invalid_argument);
}

// --- VGG-16 ---

TEST(Vgg16, ParameterCountIsTorchvisions) {
  EXPECT_EQ(vgg16().parameter_count(), 138'357'544);
}

TEST(Vgg16, MacsAreWithin2PercentOf15Point5G) {
  // Simonyan and Zisserman 2015 and torchvision (15.47 "GFLOPS"): about 15.5 G multiply-adds at 224x224.
  const double macs = gemm_macs(vgg16());
  EXPECT_NEAR(macs, 15.5e9, 0.02 * 15.5e9) << macs;
  EXPECT_NEAR(macs, 15.47e9, 0.001 * 15.47e9) << "torchvision's 15.47 G";
}

TEST(Vgg16, LayersFollowConfigurationD) {
  const Workload w = vgg16();
  expect_distinct_names(w);
  EXPECT_EQ(count(w, LayerKind::convolution), 13);
  EXPECT_EQ(count(w, LayerKind::matmul), 3);
  EXPECT_EQ(count(w, LayerKind::normalization), 0); // vgg16, not vgg16_bn
  EXPECT_EQ(w.sample_unit, "images");
  // features.28 is the last convolution: 512 x 3 x 3 x 512 weights plus 512 biases, at 14x14.
  const Layer& last_conv = find(w, "features.28");
  EXPECT_EQ(last_conv.kind, LayerKind::convolution);
  EXPECT_EQ(last_conv.parameters, 512 * 9 * 512 + 512);
  EXPECT_DOUBLE_EQ(last_conv.forward_flops, 2.0 * 512 * 9 * 512 * 14 * 14);
  EXPECT_EQ(find(w, "features.30").output_elements, 512 * 7 * 7);    // the fifth max pool
  EXPECT_DOUBLE_EQ(find(w, "avgpool").forward_flops, 512.0 * 7 * 7); // 7x7 to 7x7: one element per window
  EXPECT_EQ(find(w, "classifier.0").parameters, 25088 * 4096 + 4096);
  EXPECT_EQ(find(w, "classifier.6").parameters, 4096 * 1000 + 1000);
  EXPECT_EQ(find(w, "classifier.2").kind, LayerKind::elementwise); // dropout
  EXPECT_EQ(w.layers.back().name, "classifier.6");
}

TEST(Vgg16, AdaptivePoolUsesPyTorchsOverlappingWindows) {
  // At 256x256 the features are 8x8; AdaptiveAvgPool2d(7) takes windows [floor(8i/7), ceil(8(i+1)/7)), each of
  // two rows (and two columns), so 7 * 2 = 14 per dimension and 512 * 14 * 14 additions. The classifier still
  // sees 512 x 7 x 7, so the parameter count does not change.
  const Workload w = vgg16(256);
  EXPECT_EQ(find(w, "features.30").output_elements, 512 * 8 * 8);
  EXPECT_DOUBLE_EQ(find(w, "avgpool").forward_flops, 512.0 * 14 * 14);
  EXPECT_EQ(find(w, "avgpool").output_elements, 512 * 7 * 7);
  EXPECT_EQ(w.parameter_count(), 138'357'544);
}

// --- Inception-v3 ---

TEST(InceptionV3, ParameterCountsAreTorchvisionsWithAndWithoutTheAuxClassifier) {
  EXPECT_EQ(inception_v3(/*aux_logits=*/true).parameter_count(), 27'161'264);
  EXPECT_EQ(inception_v3(/*aux_logits=*/false).parameter_count(), 23'834'568);
  // The aux head by hand: 1x1 768->128 + BN, 5x5 128->768 + BN, fc 768->1000.
  const std::int64_t aux = (768 * 128 + 2 * 128) + (128 * 25 * 768 + 2 * 768) + (768 * 1000 + 1000);
  EXPECT_EQ(aux, 27'161'264 - 23'834'568);
}

TEST(InceptionV3, MacsAreWithin2PercentOf5Point7G) {
  // Szegedy et al. 2016 (abstract: "a computational cost of 5 billion multiply-adds") and torchvision (5.71
  // "GFLOPS", measured in eval mode, so without the aux head).
  const double main = gemm_macs(inception_v3(false));
  EXPECT_NEAR(main, 5.7e9, 0.02 * 5.7e9) << main;
  EXPECT_NEAR(main, 5.71e9, 0.001 * 5.71e9) << "torchvision's 5.71 G";
  // The aux head adds 768*128*5*5 + 128*25*768 + 768*1000 MACs.
  EXPECT_DOUBLE_EQ(gemm_macs(inception_v3(true)) - main, 768.0 * 128 * 25 + 128.0 * 25 * 768 + 768.0 * 1000);
}

TEST(InceptionV3, BlockOutputsHaveTorchvisionsShapes) {
  const Workload w = inception_v3();
  EXPECT_EQ(w.name, "inception-v3");
  EXPECT_EQ(w.sample_unit, "images");
  expect_distinct_names(w);
  EXPECT_EQ(find(w, "Conv2d_1a_3x3.conv").output_elements, 32 * 149 * 149);
  EXPECT_EQ(find(w, "maxpool2").output_elements, 192 * 35 * 35);
  EXPECT_EQ(find(w, "Mixed_5b.cat").output_elements, 256 * 35 * 35);
  EXPECT_EQ(find(w, "Mixed_5d.cat").output_elements, 288 * 35 * 35);
  EXPECT_EQ(find(w, "Mixed_6a.cat").output_elements, 768 * 17 * 17);
  EXPECT_EQ(find(w, "Mixed_6e.cat").output_elements, 768 * 17 * 17);
  EXPECT_EQ(find(w, "Mixed_7a.cat").output_elements, 1280 * 8 * 8);
  EXPECT_EQ(find(w, "Mixed_7b.branch3x3.cat").output_elements, 768 * 8 * 8);
  EXPECT_EQ(find(w, "Mixed_7c.cat").output_elements, 2048 * 8 * 8);
  EXPECT_EQ(find(w, "fc").input_elements, 2048);
  EXPECT_EQ(w.layers.back().name, "fc");
  // A concatenation reads every branch: Mixed_5b's are 64 + 64 + 96 + 32 channels of 35x35.
  EXPECT_EQ(find(w, "Mixed_5b.cat").input_elements, (64 + 64 + 96 + 32) * 35 * 35);
  EXPECT_DOUBLE_EQ(find(w, "Mixed_5b.cat").forward_flops, 0.0);
  // Every branch starts from the block input, not from the previous branch's output.
  EXPECT_EQ(find(w, "Mixed_5b.branch5x5_1.conv").input_elements, 192 * 35 * 35);
  EXPECT_EQ(find(w, "Mixed_5b.avg_pool").input_elements, 192 * 35 * 35);
  EXPECT_EQ(find(w, "Mixed_7b.branch3x3_2b.conv").input_elements, 384 * 8 * 8);
}

TEST(InceptionV3, FactorizedConvolutionsUseRectangularKernels) {
  const Workload w = inception_v3();
  // Mixed_6b.branch7x7_2: 128 -> 128 with a 1x7 kernel, padding (0, 3), at 17x17.
  const Layer& l = find(w, "Mixed_6b.branch7x7_2.conv");
  EXPECT_EQ(l.parameters, 128 * 1 * 7 * 128);
  EXPECT_DOUBLE_EQ(l.forward_flops, 2.0 * 128 * 7 * 128 * 17 * 17);
  EXPECT_EQ(l.output_elements, 128 * 17 * 17);
  EXPECT_EQ(l.gemm.m, 17 * 17);
  EXPECT_EQ(l.gemm.n, 128);
  EXPECT_EQ(l.gemm.k, 128 * 7);
  EXPECT_DOUBLE_EQ(l.gemm.flops(), l.forward_flops);
  EXPECT_EQ(find(w, "Mixed_6b.branch7x7_2.bn").parameters, 2 * 128);
}

TEST(InceptionV3, AuxClassifierBranchesOffMixed6eAndTheMainPathResumes) {
  const Workload w = inception_v3(true);
  EXPECT_EQ(find(w, "AuxLogits.avg_pool").input_elements, 768 * 17 * 17);
  EXPECT_EQ(find(w, "AuxLogits.avg_pool").output_elements, 768 * 5 * 5); // 5x5 window, stride 3
  EXPECT_EQ(find(w, "AuxLogits.conv1.conv").output_elements, 768);       // 5x5 kernel on 5x5
  EXPECT_EQ(find(w, "AuxLogits.fc").parameters, 768 * 1000 + 1000);
  EXPECT_EQ(find(w, "Mixed_7a.branch3x3_1.conv").input_elements, 768 * 17 * 17);
  EXPECT_THROW(find(inception_v3(false), "AuxLogits.fc"), std::runtime_error);
}

TEST(InceptionV3, RejectsTooSmallImages) {
  EXPECT_THROW(inception_v3(false, 74), std::invalid_argument);
  EXPECT_THROW(inception_v3(true, 299, 0), std::invalid_argument);
}

// --- the builder ops they use ---

TEST(NetBuilderBranches, ConcatSumsChannelsAndRejectsMismatchedGrids) {
  detail::NetBuilder net(detail::Shape{8, 10, 10});
  EXPECT_THROW(net.concat("cat", {detail::Shape{4, 10, 10}, detail::Shape{4, 5, 5}}), std::invalid_argument);
  EXPECT_THROW(net.concat("cat", {detail::Shape{4, 10, 10}}), std::invalid_argument);
  net.concat("cat", {detail::Shape{4, 10, 10}, detail::Shape{6, 10, 10}});
  EXPECT_EQ(net.shape(), (detail::Shape{10, 10, 10}));
  const auto layers = net.take();
  EXPECT_EQ(layers.back().input_elements, 10 * 10 * 10);
}

TEST(NetBuilderBranches, AvgPoolCountsTheWindow) {
  detail::NetBuilder net(detail::Shape{4, 9, 9});
  net.avg_pool("pool", 3, 1, 1);
  EXPECT_EQ(net.shape(), (detail::Shape{4, 9, 9}));
  EXPECT_DOUBLE_EQ(net.take().back().forward_flops, 9.0 * 4 * 9 * 9);
}

TEST(CnnPresets, AreListedAndBuild) {
  const auto names = preset_names();
  for (const char* name : {"resnet101", "resnet152", "vgg16", "inception-v3"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
    const auto w = build_preset(name);
    ASSERT_TRUE(w.has_value()) << name;
    EXPECT_EQ(w->name, name);
  }
  EXPECT_EQ(build_preset("inception-v3")->parameter_count(), 27'161'264); // trained with the aux head
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
}

} // namespace
} // namespace dtsim::models
