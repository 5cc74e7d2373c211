// A cloud instance in a scenario fills in the node; explicit fields override it.
#include "sim/scenario/scenario.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace dtsim::scenario {
namespace {

std::string with_cluster(const std::string& cluster) {
  return R"({"version": 1, "model": {"preset": "mlp-small", "batch_per_gpu": 8}, "cluster": )" + cluster + "}";
}

TEST(InstanceScenario, P5FillsGpusFabricNetworkAndPrice) {
  const auto s = parse_scenario(with_cluster(R"({"instance": "aws.p5.48xlarge", "nodes": 4})"), "p5.json");
  EXPECT_EQ(s.cluster.gpus_per_node, 8);
  EXPECT_EQ(s.cluster.gpu, "h100-sxm");
  EXPECT_EQ(s.cluster.intra_kind, topologies::IntraNodeKind::nvlink);
  EXPECT_DOUBLE_EQ(s.cluster.intra.bandwidth, 450e9);
  EXPECT_DOUBLE_EQ(s.cluster.nic.bandwidth, 32 * 100e9 / 8); // 32 x 100 Gb/s EFA as one link
  EXPECT_DOUBLE_EQ(s.cluster.price_per_node_hour, 55.04);
  EXPECT_EQ(to_json(s)["cluster"]["instance"], "aws.p5.48xlarge");
}

TEST(InstanceScenario, ExplicitFieldsOverrideTheInstance) {
  const auto s = parse_scenario(with_cluster(R"({"instance": "aws.p4d.24xlarge", "nodes": 2, "price_per_hour": 12.5,
                       "nic": {"bandwidth": "100Gbps"}})"),
                                "p4d.json");
  EXPECT_DOUBLE_EQ(s.cluster.price_per_node_hour, 12.5);
  EXPECT_DOUBLE_EQ(s.cluster.nic.bandwidth, 12.5e9);
}

TEST(InstanceScenario, AnUnpublishedNetworkRateMustBeGiven) {
  try {
    parse_scenario(with_cluster(R"({"instance": "azure.nc6s-v3", "nodes": 2})"), "nc.json");
    FAIL() << "NC6s v3 publishes no network bandwidth";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(e.pointer(), "/cluster/nic/bandwidth");
    EXPECT_NE(std::string(e.what()).find("does not publish"), std::string::npos) << e.what();
  }
}

} // namespace
} // namespace dtsim::scenario
