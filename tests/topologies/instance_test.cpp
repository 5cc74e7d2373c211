// Cloud instance presets: every one parses, carries a dated, sourced price, and matches its published shape.
#include "topologies/instance.hpp"

#include <gtest/gtest.h>

namespace dtsim::topologies {
namespace {

TEST(Instances, TheTenPresetsParseWithPricesDatesAndSources) {
  const auto all = all_instances();
  EXPECT_EQ(all.size(), 10u);
  for (const auto& i : all) {
    EXPECT_GT(i.price.on_demand_per_hour, 0) << i.name;
    EXPECT_FALSE(i.price.date.empty()) << i.name;
    EXPECT_FALSE(i.price.source.empty()) << i.name;
    EXPECT_FALSE(i.sources.empty()) << i.name;
    EXPECT_GE(i.gpus, 1) << i.name;
  }
}

// ../shared/reference/hardware.md: p4d.24xlarge is 8 A100 on NVSwitch (600 GB/s per GPU, both directions) with
// 400 Gb/s of EFA in 4 x 100; p5.48xlarge 8 H100 (900 GB/s) with 3200 Gb/s in 32 x 100.
TEST(Instances, P4dAndP5MatchTheirPublishedShapes) {
  const auto p4d = find_instance("aws.p4d.24xlarge");
  ASSERT_TRUE(p4d);
  EXPECT_EQ(p4d->gpus, 8);
  EXPECT_EQ(p4d->gpu, "a100-40gb");
  EXPECT_DOUBLE_EQ(p4d->intra_bandwidth, 300e9);
  EXPECT_DOUBLE_EQ(p4d->network_bandwidth(), 400e9 / 8);
  const auto p5 = find_instance("aws.p5.48xlarge");
  ASSERT_TRUE(p5);
  EXPECT_EQ(p5->gpu, "h100-sxm");
  EXPECT_DOUBLE_EQ(p5->network_bandwidth(), 3200e9 / 8);
  EXPECT_DOUBLE_EQ(p5->price.on_demand_per_hour, 55.04); // hardware.md, after the 2025 price cut
}

TEST(Instances, MalformedPresetNamesTheField) {
  try {
    parse_instance(R"({"name": "x", "provider": "AWS"})", "x.json");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "x.json: /display_name: missing");
  }
  EXPECT_FALSE(find_instance("aws.p9.huge"));
}

} // namespace
} // namespace dtsim::topologies
