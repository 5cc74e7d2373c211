// The topology section: leaf-spine and fat-tree tiers, and clear errors for topologies that cannot be built.
#include "sim/scenario/scenario.hpp"

#include <gtest/gtest.h>

namespace dtsim::scenario {
namespace {

std::string with_topology(int nodes, const std::string& topology) {
  return R"({"version": 1, "model": {"preset": "mlp-small", "batch_per_gpu": 8}, "cluster": {"nodes": )" +
         std::to_string(nodes) + R"(, "gpu": "v100", "nic": {"bandwidth": "100Gbps"}, "topology": )" + topology + "}}";
}

std::string error_of(const std::string& text) {
  try {
    parse_scenario(text, "t.json");
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

TEST(Topology, LeafSpineAndFatTreeBecomeTiers) {
  auto s = parse_scenario(with_topology(16, R"({"kind": "leaf-spine", "nodes_per_leaf": 8, "oversubscription": 2})"),
                          "t.json");
  ASSERT_EQ(s.cluster.tiers.size(), 1u);
  EXPECT_EQ(s.cluster.tiers[0].fan_in, 8);
  EXPECT_DOUBLE_EQ(s.cluster.tiers[0].oversubscription, 2);
  s = parse_scenario(
      with_topology(32,
                    R"({"kind": "fat-tree", "nodes_per_leaf": 4, "leaves_per_pod": 4, "oversubscription": [1, 3]})"),
      "t.json");
  ASSERT_EQ(s.cluster.tiers.size(), 2u);
  EXPECT_EQ(s.cluster.tiers[1].fan_in, 4);
  EXPECT_DOUBLE_EQ(s.cluster.tiers[1].oversubscription, 3);
  EXPECT_EQ(to_json(s)["cluster"]["topology"]["kind"], "fat-tree");
  EXPECT_TRUE(parse_scenario(with_topology(4, R"({"kind": "single-switch"})"), "t.json").cluster.tiers.empty());
}

TEST(Topology, BadTopologiesNameTheProblem) {
  EXPECT_NE(error_of(with_topology(10, R"({"kind": "leaf-spine", "nodes_per_leaf": 4})")).find("multiple of 4"),
            std::string::npos);
  EXPECT_NE(error_of(with_topology(8, R"({"kind": "leaf-spine", "nodes_per_leaf": 0})"))
                .find("/cluster/topology/nodes_per_leaf: expected an integer >= 1"),
            std::string::npos);
  EXPECT_NE(error_of(with_topology(8, R"({"kind": "leaf-spine", "nodes_per_leaf": 4, "oversubscription": 0.5})"))
                .find("/cluster/topology/oversubscription"),
            std::string::npos);
  EXPECT_NE(error_of(with_topology(8, R"({"kind": "leaf-spine", "nodes_per_leaf": 4, "leaves_per_pod": 2})"))
                .find("fat-tree"),
            std::string::npos);
  EXPECT_NE(error_of(with_topology(8, R"({"kind": "dragon-fly"})")).find("/cluster/topology/kind"), std::string::npos);
  EXPECT_NE(error_of(with_topology(8, R"({"kind": "single-switch", "nodes_per_leaf": 4})")).find("no tiers"),
            std::string::npos);
}

} // namespace
} // namespace dtsim::scenario

namespace dtsim::scenario {
namespace {

TEST(Topology, TorusAndRing) {
  auto s = parse_scenario(with_topology(16, R"({"kind": "torus", "dimensions": [4, 4]})"), "t.json");
  EXPECT_EQ(s.cluster.torus, (std::vector<int>{4, 4}));
  s = parse_scenario(with_topology(6, R"({"kind": "ring"})"), "t.json");
  EXPECT_EQ(s.cluster.torus, (std::vector<int>{6}));
  EXPECT_NE(error_of(with_topology(16, R"({"kind": "torus", "dimensions": [4, 3]})")).find("makes 12 nodes"),
            std::string::npos);
  EXPECT_NE(error_of(with_topology(16, R"({"kind": "torus"})")).find("/cluster/topology/dimensions"),
            std::string::npos);
  EXPECT_NE(error_of(with_topology(16, R"({"kind": "torus", "dimensions": [0, 16]})")).find("positive integers"),
            std::string::npos);
}

} // namespace
} // namespace dtsim::scenario
