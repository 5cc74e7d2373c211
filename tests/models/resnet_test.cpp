// ResNet-50 v1.5 against the figures torchvision and He et al. publish.
#include "models/zoo.hpp"

#include "tests/models/workload_lookup.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace dtsim::models {
namespace {

using test::find;
using test::gemm_macs;

TEST(ResNet50, ParameterCountIsTorchvisionsPublished25557032) {
  // torchvision.models.resnet50: sum(p.numel() for p in model.parameters()) == 25,557,032.
  EXPECT_EQ(resnet50().parameter_count(), 25'557'032);
}

TEST(ResNet50, ForwardMacsAreWithin2PercentOf4Point1G) {
  // He et al. 2016 (Table 1) and torchvision's model card give about 4.1 G multiply-adds at 224x224
  // (torchvision: 4.09 "GFLOPS", which counts MACs). We count convolution and fc MACs only.
  const double macs = gemm_macs(resnet50());
  EXPECT_NEAR(macs, 4.1e9, 0.02 * 4.1e9) << "conv+fc MACs: " << macs;
  EXPECT_NEAR(macs, 4.089e9, 0.001 * 4.089e9) << "torchvision's 4.09 G, to three digits";
}

TEST(ResNet50, ParameterCountDoesNotDependOnImageSize) {
  EXPECT_EQ(resnet50(160).parameter_count(), 25'557'032);
  EXPECT_LT(gemm_macs(resnet50(160)), gemm_macs(resnet50(224)));
}

TEST(ResNet50, HasOneLayerPerOpWithDistinctTorchvisionNames) {
  const Workload w = resnet50();
  std::set<std::string> names;
  int convs = 0, norms = 0, adds = 0;
  for (const auto& l : w.layers) {
    EXPECT_TRUE(names.insert(l.name).second) << "duplicate name " << l.name;
    convs += l.kind == LayerKind::convolution;
    norms += l.kind == LayerKind::normalization;
    adds += l.name.ends_with(".add");
  }
  // 1 stem conv + 16 blocks x 3 convs + 4 downsample convs; one BN per conv; one residual add per block.
  EXPECT_EQ(convs, 1 + 16 * 3 + 4);
  EXPECT_EQ(norms, convs);
  EXPECT_EQ(adds, 16);
  EXPECT_EQ(w.layers.front().name, "conv1");
  EXPECT_EQ(w.layers.back().name, "fc");
  EXPECT_NO_THROW(find(w, "layer3.2.conv2"));
  EXPECT_NO_THROW(find(w, "layer3.2.bn2"));
  EXPECT_NO_THROW(find(w, "layer4.0.downsample.0"));
  EXPECT_THROW(find(w, "layer1.1.downsample.0"), std::runtime_error); // only first blocks project
  EXPECT_EQ(w.sample_unit, "images");
}

TEST(ResNet50, ShapesFollowTheStemStagesAndHead) {
  const Workload w = resnet50();
  EXPECT_EQ(find(w, "conv1").input_elements, 3 * 224 * 224);
  EXPECT_EQ(find(w, "conv1").output_elements, 64 * 112 * 112);
  EXPECT_EQ(find(w, "maxpool").output_elements, 64 * 56 * 56);
  EXPECT_EQ(find(w, "layer1.2.relu3").output_elements, 256 * 56 * 56);
  EXPECT_EQ(find(w, "layer4.2.relu3").output_elements, 2048 * 7 * 7);
  EXPECT_EQ(find(w, "avgpool").output_elements, 2048);
  EXPECT_EQ(find(w, "fc").input_elements, 2048);
  EXPECT_EQ(find(w, "fc").output_elements, 1000);
  EXPECT_EQ(find(w, "fc").parameters, 2048 * 1000 + 1000);
  EXPECT_EQ(find(w, "layer1.0.add").input_elements, 2 * 256 * 56 * 56); // both branches are read
}

TEST(ResNet50, V1Point5StridesOnTheThreeByThreeConvolution) {
  const Workload w = resnet50();
  EXPECT_EQ(find(w, "layer2.0.conv1").output_elements, 128 * 56 * 56); // v1 would already be 28x28 here
  EXPECT_EQ(find(w, "layer2.0.conv2").output_elements, 128 * 28 * 28);
  EXPECT_EQ(find(w, "layer2.0.downsample.0").output_elements, 512 * 28 * 28);
  // layer2.0.conv2: 128 * 3 * 3 * 128 MACs per output position, 28 * 28 positions, 2 FLOPs each.
  EXPECT_DOUBLE_EQ(find(w, "layer2.0.conv2").forward_flops, 2.0 * 128 * 9 * 128 * 28 * 28);
  EXPECT_EQ(find(w, "layer2.0.conv2").parameters, 128 * 9 * 128); // no bias before BN
  EXPECT_EQ(find(w, "layer2.0.bn2").parameters, 2 * 128);         // gamma and beta
}

TEST(ResNet50, MemoryBoundOpsCostAFewFlopsPerElement) {
  const Workload w = resnet50();
  const Layer& relu = find(w, "relu");
  EXPECT_DOUBLE_EQ(relu.forward_flops, 64.0 * 112 * 112);
  EXPECT_DOUBLE_EQ(find(w, "bn1").forward_flops, 5.0 * 64 * 112 * 112);
  EXPECT_DOUBLE_EQ(find(w, "maxpool").forward_flops, 9.0 * 64 * 56 * 56);
  EXPECT_DOUBLE_EQ(find(w, "avgpool").forward_flops, 2048.0 * 7 * 7);
}

TEST(ResNet50, RejectsNonPositiveSizes) {
  EXPECT_THROW(resnet50(0), std::invalid_argument);
  EXPECT_THROW(resnet50(224, 0), std::invalid_argument);
}

} // namespace
} // namespace dtsim::models
