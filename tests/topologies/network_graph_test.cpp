// The cluster as a graph: the routes the engine takes, their bottlenecks, diameter and bisection, by hand.
#include "topologies/network_graph.hpp"

#include <gtest/gtest.h>

namespace dtsim::topologies {
namespace {

ClusterSpec two_nvswitch_nodes() {
  ClusterSpec c;
  c.nodes = 2;
  c.gpus_per_node = 8;
  c.intra_kind = IntraNodeKind::nvlink;
  c.intra = {300e9, 1e-6};
  c.pcie = {31.5e9, 1e-6};
  c.nic = {50e9, 5e-6};
  c.switch_latency = 1e-6;
  return c;
}

TEST(NetworkGraph, InsideANodeGpusTalkOverNvlink) {
  const auto p = path_between(build_network(two_nvswitch_nodes()), 0, 3);
  EXPECT_EQ(p.links, (std::vector<std::string>{"gpu0-nvlink", "gpu3-nvlink"}));
  EXPECT_DOUBLE_EQ(p.bottleneck, 300e9);
  EXPECT_DOUBLE_EQ(p.latency, 2e-6);
}

TEST(NetworkGraph, AcrossNodesGpusGoThroughPcieTheNicsAndTheSwitch) {
  const auto p = path_between(build_network(two_nvswitch_nodes()), 1, 9);
  EXPECT_EQ(p.links, (std::vector<std::string>{"gpu1-pcie", "node0-nic", "node1-nic", "gpu9-pcie"}));
  EXPECT_DOUBLE_EQ(p.bottleneck, 31.5e9);                          // PCIe is narrower than the NIC
  EXPECT_NEAR(p.latency, 1e-6 + 5e-6 + 1e-6 + 5e-6 + 1e-6, 1e-15); // PCIe, NIC, switch, NIC, PCIe
}

TEST(NetworkGraph, DiameterAndBisectionOfASingleSwitch) {
  const auto c = two_nvswitch_nodes();
  EXPECT_EQ(gpu_diameter(build_network(c)), 4); // PCIe, NIC, NIC, PCIe
  auto four = c;
  four.nodes = 4;
  // Half the nodes on each side: their NICs carry the cut, 2 x 50 GB/s.
  EXPECT_DOUBLE_EQ(summarize(four).bisection_bandwidth, 2 * 50e9);
}

TEST(NetworkGraph, UnknownGpusAreRefused) {
  EXPECT_THROW(path_between(build_network(two_nvswitch_nodes()), 0, 16), std::out_of_range);
}

} // namespace
} // namespace dtsim::topologies
