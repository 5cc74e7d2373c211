// The topology section: leaf-spine and fat-tree tiers, and clear errors for topologies that cannot be built.
#include "sim/scenario/scenario.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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
                .find("a leaf-spine takes no \"leaves_per_pod\""),
            std::string::npos);
  EXPECT_NE(error_of(with_topology(8, R"({"kind": "dragon-fly"})")).find("/cluster/topology/kind"), std::string::npos);
  EXPECT_NE(error_of(with_topology(8, R"({"kind": "single-switch", "nodes_per_leaf": 4})")).find("takes no"),
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

namespace dtsim::scenario {
namespace {

// Resolving a scenario and reading its resolved form back gives the same network.
void expect_round_trip(const Scenario& s) {
  const auto again = parse_scenario(to_json(s).dump(), "again.json");
  EXPECT_EQ(topologies::network_kind(again.cluster), topologies::network_kind(s.cluster));
  EXPECT_EQ(to_json(again)["cluster"], to_json(s)["cluster"]);
}

TEST(Topology, DrawnSwitchNetworks) {
  auto s = parse_scenario(with_topology(16, R"({"kind": "fat-tree", "k": 4, "oversubscription": [1, 2]})"), "t.json");
  EXPECT_EQ(s.cluster.fat_tree.k, 4);
  EXPECT_DOUBLE_EQ(s.cluster.fat_tree.aggregation_oversubscription, 2);
  expect_round_trip(s);
  s = parse_scenario(with_topology(16, R"({"kind": "leaf-spine", "nodes_per_leaf": 4, "spines": 2})"), "t.json");
  EXPECT_EQ(s.cluster.spines, 2);
  expect_round_trip(s);
  s = parse_scenario(
      with_topology(12, R"({"kind": "dragonfly", "groups": 3, "routers_per_group": 2, "nodes_per_router": 2})"),
      "t.json");
  EXPECT_EQ(s.cluster.dragonfly.groups, 3);
  EXPECT_EQ(s.cluster.dragonfly.links_between_groups, 1);
  expect_round_trip(s);
  s = parse_scenario(with_topology(4, R"({"kind": "explicit", "switches": [{"name": "s0"}, {"name": "s1"}],
      "links": [{"from": "node0", "to": "s0"}, {"from": "node1", "to": "s0"}, {"from": "s0", "to": "s1",
      "bandwidth": "400Gbps"}, {"from": "node2", "to": "s1"}, {"from": "node3", "to": "s1"}]})"),
                     "t.json");
  ASSERT_EQ(s.cluster.explicit_network.links.size(), 5u);
  EXPECT_DOUBLE_EQ(s.cluster.explicit_network.links[2].link.bandwidth, 50e9);   // 400 Gb/s
  EXPECT_DOUBLE_EQ(s.cluster.explicit_network.links[0].link.bandwidth, 12.5e9); // the NIC's 100 Gb/s
  expect_round_trip(s);
}

// p4d.24xlarge has 4 NICs for 8 GPUs: one rail per NIC; p5.48xlarge has 32: one rail per GPU.
TEST(Topology, RailsDefaultToTheInstancesNics) {
  const auto rails = [](const std::string& instance) {
    return parse_scenario(
               R"({"version": 1, "model": {"preset": "mlp-small", "batch_per_gpu": 8}, "cluster": {"instance": ")" +
                   instance + R"(", "nodes": 4, "topology": {"kind": "rail-optimized"}}})",
               "t.json")
        .cluster.rail;
  };
  EXPECT_EQ(rails("aws.p4d.24xlarge").rails, 4);
  EXPECT_EQ(rails("aws.p5.48xlarge").rails, 8);
  EXPECT_EQ(rails("aws.p5.48xlarge").nodes_per_group, 0); // every node: follows the node count in sweeps
  EXPECT_EQ(rails("aws.p5.48xlarge").spines, 0);          // one per node of the group
}

TEST(Topology, BadDrawnNetworksNameTheElement) {
  EXPECT_NE(error_of(with_topology(16, R"({"kind": "fat-tree", "k": 3})"))
                .find("/cluster/topology/k: a k-ary "
                      "fat-tree needs an even k"),
            std::string::npos);
  EXPECT_NE(error_of(with_topology(20, R"({"kind": "fat-tree", "k": 4})")).find("holds k^3/4 = 16 nodes"),
            std::string::npos);
  EXPECT_NE(error_of(with_topology(4, R"({"kind": "explicit", "switches": [{"name": "s0"}],
      "links": [{"from": "node0", "to": "s0"}, {"from": "node1", "to": "s9"}]})"))
                .find("/cluster/topology/links: link 1 (node1 - s9) goes to \"s9\""),
            std::string::npos);
  EXPECT_NE(error_of(with_topology(2, R"({"kind": "explicit", "switches": [{"name": "s0"}, {"name": "s1"}],
      "links": [{"from": "node0", "to": "s0"}, {"from": "node1", "to": "s0"}]})"))
                .find("switch \"s1\" has zero ports"),
            std::string::npos);
  EXPECT_NE(error_of(with_topology(4, R"({"kind": "explicit", "switches": [{"name": "a"}, {"name": "b"}],
      "links": [{"from": "node0", "to": "a"}, {"from": "node1", "to": "a"}, {"from": "node2", "to": "b"},
      {"from": "node3", "to": "b"}]})"))
                .find("disconnected"),
            std::string::npos);
  EXPECT_NE(
      error_of(with_topology(8, R"({"kind": "dragonfly", "groups": 2, "routers_per_group": 2, "nodes_per_router": 1})"))
          .find("make 4 nodes, but the cluster has 8"),
      std::string::npos);
  EXPECT_NE(error_of(with_topology(8, R"({"kind": "dragonfly", "groups": 2, "routers_per_group": 2,
      "nodes_per_router": 2, "spines": 2})"))
                .find("/cluster/topology/spines: a dragonfly takes no \"spines\""),
            std::string::npos);
  EXPECT_NE(error_of(with_topology(8, R"({"kind": "leaf-spine", "nodes_per_leaf": 4, "spines": 0})"))
                .find("/cluster/topology/spines: expected an integer >= 1"),
            std::string::npos);
}

} // namespace
} // namespace dtsim::scenario
