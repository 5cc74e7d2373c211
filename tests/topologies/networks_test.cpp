// The networks dtsim draws switch by switch (k-ary fat-trees, dragonflies, rails, spines, explicit networks), tori
// and the node fabrics (hybrid cube-mesh, PCIe trees): sizes, routes, diameters and cuts, each worked out by hand
// from the topology's definition.
#include "topologies/network_graph.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace dtsim::topologies {
namespace {

constexpr double kNic = 12.5e9; // bytes/s: 100 Gb/s NICs

// Nodes of one GPU on the node's PCIe root: a GPU reaches its NIC over one link ("gpuX-pcie"), so every route
// between nodes is the network's links plus two.
ClusterSpec single_gpu_nodes(int nodes) {
  ClusterSpec c;
  c.nodes = nodes;
  c.intra_kind = IntraNodeKind::pcie;
  c.intra = {32e9, 1e-6};
  c.pcie = c.intra;
  c.nic = {kNic, 2e-6};
  c.switch_latency = 0.5e-6;
  return c;
}

bool contains(const std::vector<std::string>& links, const std::string& name) {
  return std::find(links.begin(), links.end(), name) != links.end();
}

int count_containing(const std::vector<std::string>& links, const std::string& part) {
  return static_cast<int>(
      std::count_if(links.begin(), links.end(), [&](const auto& l) { return l.find(part) != std::string::npos; }));
}

// --- k-ary fat-trees (Al-Fares, Loukissas, Vahdat, "A Scalable, Commodity Data Center Network Architecture",
// SIGCOMM 2008, section 3.2): k pods of k/2 edge and k/2 aggregation switches, (k/2)^2 core switches, k^3/4 hosts.

ClusterSpec fat_tree(int k) {
  auto c = single_gpu_nodes(k * k * k / 4);
  c.fat_tree.k = k;
  return c;
}

// Switches: k pods x (k/2 + k/2) + (k/2)^2 cores = k^2 + k^2/4 = 5k^2/4. Links: each host's PCIe and NIC links
// (2 N), k pods x (k/2)^2 edge-aggregation links and (k/2)^2 cores x k pods core links: 2 N + k^3/2.
// Bisection: a full fat-tree has full bisection bandwidth (Al-Fares et al. section 2.2): the first k/2 pods hold
// the first half of the hosts and reach the rest through k/2 pods x k/2 aggregations x k/2 cores = k^3/8 links
// of b, the same as their N/2 = k^3/8 NICs.
TEST(FatTree, SwitchesLinksAndFullBisectionFollowK) {
  for (const int k : {4, 6, 8}) {
    SCOPED_TRACE(fmt::format("k = {}", k));
    const auto c = fat_tree(k);
    const auto s = summarize(c);
    EXPECT_EQ(s.switches, 5 * k * k / 4);
    EXPECT_EQ(s.links, 2 * c.nodes + k * k * k / 2);
    EXPECT_DOUBLE_EQ(s.bisection_bandwidth, k * k * k / 8 * kNic);
    EXPECT_DOUBLE_EQ(s.bisection_bandwidth, c.nodes / 2 * kNic);
  }
}

// Hosts in different pods: GPU-PCIe, NIC-edge, edge-agg, agg-core, core-agg, agg-edge, edge-NIC, PCIe-GPU: 8 links
// (the NIC's attachment to the PCIe root is no link). Within an edge switch 4, within a pod 6.
TEST(FatTree, DiameterIsEightLinksThroughACore) {
  for (const int k : {4, 6, 8}) {
    SCOPED_TRACE(fmt::format("k = {}", k));
    const auto c = fat_tree(k);
    const auto m = build_network(c);
    EXPECT_EQ(gpu_diameter(m), 8);
    const auto far = path_between(m, 0, c.nodes - 1); // pod 0 to pod k-1
    ASSERT_EQ(far.links.size(), 8u);
    EXPECT_EQ(far.links.front(), "gpu0-pcie");
    EXPECT_EQ(far.links[1], "node0-nic");
    EXPECT_EQ(count_containing(far.links, "-core"), 2);
    EXPECT_EQ(far.links[6], fmt::format("node{}-nic", c.nodes - 1));
    // Latency: 2 PCIe links, 2 NICs and 5 switches crossed (edge, agg, core, agg, edge).
    EXPECT_NEAR(far.latency, 2 * 1e-6 + 2 * 2e-6 + 5 * 0.5e-6, 1e-15);
    EXPECT_EQ(path_between(m, 0, 1).links.size(), 4u);     // hosts 0 .. k/2-1 share edge 0
    EXPECT_EQ(path_between(m, 0, k / 2).links.size(), 6u); // host k/2 is on edge 1 of pod 0
  }
}

// Oversubscribed tiers: an edge switch's k/2 uplinks carry b / o_e each, an aggregation switch's k/2 core links
// b / o_a each. The first k/2 pods send out through either cut:
//   edges:  k/2 pods x k/2 edges x k/2 uplinks x b / o_e = k^3/8 b / o_e
//   cores:  k/2 pods x k/2 aggs  x k/2 links   x b / o_a = k^3/8 b / o_a
// and the bisection is the smaller of the two (and of the NICs' k^3/8 b).
TEST(FatTree, OversubscriptionCutsTheBisectionAtTheNarrowestTier) {
  for (const int k : {4, 6, 8}) {
    SCOPED_TRACE(fmt::format("k = {}", k));
    const double full = k * k * k / 8 * kNic;
    auto c = fat_tree(k);
    c.fat_tree.edge_oversubscription = 2; // edges bind: k^3/16 b
    EXPECT_DOUBLE_EQ(summarize(c).bisection_bandwidth, full / 2);
    c.fat_tree.aggregation_oversubscription = 4; // cores bind: k^3/32 b < k^3/16 b
    EXPECT_DOUBLE_EQ(summarize(c).bisection_bandwidth, full / 4);
    c.fat_tree.edge_oversubscription = 1;
    c.fat_tree.aggregation_oversubscription = 2; // cores bind: k^3/16 b
    EXPECT_DOUBLE_EQ(summarize(c).bisection_bandwidth, full / 2);
  }
}

// --- Tori. Nodes are numbered first dimension fastest, so nodes 0 .. N/2-1 and N/2 .. N-1 are the two halves of
// the LAST dimension. Each of the N / d_last rings along it is cut twice (once in the middle, once at the
// wrap-around): 2 N / d_last links of b. When the last dimension is the largest this is the bisection,
// 2 N / d_max b (Dally & Towles, "Principles and Practices of Interconnection Networks", section 5.2.1).
// The diameter is floor(d/2) hops per dimension, plus the two PCIe links.
TEST(TorusCut, HalfCutIsTwoLinksPerRingAlongTheLastDimension) {
  struct Case {
    std::vector<int> dims;
    int diameter; // sum of floor(d/2), + 2
  };
  for (const auto& [dims, diameter] : {Case{{4, 4}, 2 + 2 + 2}, Case{{2, 4}, 1 + 2 + 2}, Case{{8}, 4 + 2},
                                       Case{{4, 4, 8}, 2 + 2 + 4 + 2}, Case{{3, 6}, 1 + 3 + 2}}) {
    int n = 1;
    for (const int d : dims)
      n *= d;
    SCOPED_TRACE(fmt::format("torus {}", fmt::join(dims, "x")));
    auto c = single_gpu_nodes(n);
    c.torus = dims;
    const auto m = build_network(c);
    const double cut = 2.0 * n / dims.back() * kNic;
    EXPECT_DOUBLE_EQ(half_cut_bandwidth(m, c.nodes), cut);
    EXPECT_DOUBLE_EQ(summarize(c).bisection_bandwidth, cut); // the closed form, 2 N / d_max b
    EXPECT_EQ(gpu_diameter(m), diameter);
  }
}

// The link count of summarize() is the graph's, by hand: a PCIe link per GPU, one link per node along a dimension of
// more than two, and one per pair along a dimension of two ("node0-node1" only: SimGrid's TorusZone routes both
// directions of a pair over its first node's link, so no second one is drawn).
TEST(TorusCut, ClosedFormLinkCountMatchesTheGraph) {
  auto c = single_gpu_nodes(8);
  c.torus = {2, 4};
  int drawn = 0;
  const auto m = build_network(c);
  for (const auto& e : boost::make_iterator_range(boost::edges(m.graph)))
    drawn += m.graph[e].kind != LinkClass::attach;
  EXPECT_EQ(drawn, 8 + 8 / 2 + 8); // PCIe, the dimension of 2, the dimension of 4
  EXPECT_EQ(summarize(c).links, drawn);
}

// --- Dragonflies (Kim, Dally, Scott, Abts, "Technology-Driven, Highly-Scalable Dragonfly Topology", ISCA 2008):
// g groups of a routers joined all-to-all by local links, every pair of groups by L global links, p nodes per
// router. Nodes fill the routers in order, so node (G a + r) p is the first node of router r of group G.

ClusterSpec dragonfly(int groups, int routers, int per_router) {
  auto c = single_gpu_nodes(groups * routers * per_router);
  c.dragonfly = {groups, routers, per_router, 1, 0, 0};
  return c;
}

// Upper bound: every two groups share a global link, so any two routers are at most local + global + local = 3
// router hops apart (Kim et al. section 3.1), 3 + 2 NIC links + 2 PCIe links = 7.
// Lower bound, from build_dragonfly's round robin (group G hands its ports out in the order of the other groups,
// port j to router j mod a; group 0's port j goes to group j + 1, group 2's port j >= 2 to group j + 1):
// - group 0 router 0 holds ports 0, a, 2a, ...: global links to groups 1, 1 + a, 1 + 2a, ..., where they land on
//   that group's port 0 (the link to group 0), router 0;
// - group 2 router 1 holds ports 1, 1 + a, ...: group 1 (its port 1, router 1) and groups 2 + a, 2 + 2a, ...;
// - the link between groups 0 and 2 is group 0's port 1 (router 1) and group 2's port 0 (router 0).
// So the two routers are not adjacent and, for a >= 2, have no neighbour in common (groups 1 + ka and 2 + ka
// never meet, and in group 1 one sees router 0, the other router 1): 3 router hops, 7 links.
TEST(Dragonfly, DiameterIsSevenLinksLocalGlobalLocal) {
  struct Case {
    int g, a, p;
  };
  // g = 9, a = 4, p = 2 is Kim et al.'s balanced dragonfly (a = 2p = 2h, h = 2 global ports per router) at its
  // largest, g = a h + 1.
  for (const auto& [g, a, p] : {Case{4, 2, 2}, Case{6, 3, 1}, Case{9, 4, 2}}) {
    SCOPED_TRACE(fmt::format("g = {}, a = {}, p = {}", g, a, p));
    const auto c = dragonfly(g, a, p);
    const auto m = build_network(c);
    EXPECT_EQ(gpu_diameter(m), 7);
    const int far = (2 * a + 1) * p; // first node of group 2, router 1
    const auto path = path_between(m, 0, far);
    ASSERT_EQ(path.links.size(), 7u);
    EXPECT_EQ(path.links[1], "node0-nic");
    EXPECT_EQ(path.links[5], fmt::format("node{}-nic", far));
    // Three router hops ("groupG-routerR-routerS" local, "groupG-groupH-linkT" global links), at least one global.
    EXPECT_EQ(count_containing(path.links, "group"), 3);
    EXPECT_GE(count_containing(path.links, "-link"), 1);
    // Node p is on router 1 of group 0: PCIe, NIC, local, NIC, PCIe.
    EXPECT_EQ(path_between(m, 0, p).links.size(), 5u);
  }
}

// One router per group: every router pair has its own global link: PCIe, NIC, global, NIC, PCIe.
TEST(Dragonfly, OneRouterPerGroupIsFiveLinksAcross) {
  const auto c = dragonfly(5, 1, 2);
  EXPECT_EQ(gpu_diameter(build_network(c)), 5);
}

// Switches: g a routers. Links: 2 per node (PCIe, NIC), a(a-1)/2 local per group, L g(g-1)/2 global.
// Bisection with an even g: the first g/2 groups hold the first half of the nodes and reach the others through
// (g/2)^2 L global links of b_global or their N/2 NICs of b: min((g/2)^2 L b_global, N/2 b). The min is reached:
// in the cases where the global links bind, every router has at most one crossing link and p NICs of b >= b_global
// behind it (and as many on the far side); where the NICs bind, each router's p NICs feed its crossing link.
TEST(Dragonfly, SwitchesLinksAndBisectionByHand) {
  struct Case {
    int g, a, p;
    double global; // bytes/s per global link
    double bisection;
  };
  for (const auto& [g, a, p, global, bisection] : {
           Case{4, 2, 2, kNic, 4 * kNic},         // global binds: (2)^2 b = 4 b < N/2 b = 8 b
           Case{6, 3, 1, kNic / 2, 9 * kNic / 2}, // global binds: (3)^2 b/2 = 4.5 b < N/2 b = 9 b
           Case{8, 4, 2, kNic, 16 * kNic},        // global binds: (4)^2 b = 16 b < N/2 b = 32 b
           Case{4, 2, 1, 2 * kNic, 4 * kNic},     // NICs bind: N/2 b = 4 b < (2)^2 2b = 8 b
       }) {
    SCOPED_TRACE(fmt::format("g = {}, a = {}, p = {}", g, a, p));
    auto c = dragonfly(g, a, p);
    c.dragonfly.global_bandwidth = global;
    const auto s = summarize(c);
    EXPECT_EQ(s.switches, g * a);
    EXPECT_EQ(s.links, 2 * c.nodes + g * a * (a - 1) / 2 + g * (g - 1) / 2);
    EXPECT_DOUBLE_EQ(s.bisection_bandwidth, bisection);
    EXPECT_DOUBLE_EQ(s.bisection_bandwidth, std::min((g / 2) * (g / 2) * global, c.nodes / 2 * kNic));
  }
}

// --- Rails (NVIDIA DGX SuperPOD reference architecture: NIC r of every node of a scalable unit on rail r's leaf).

ClusterSpec rail_cluster(double pcie) {
  ClusterSpec c;
  c.nodes = 4;
  c.gpus_per_node = 8;
  c.intra_kind = IntraNodeKind::nvlink;
  c.intra = {300e9, 1e-6};
  c.pcie = {pcie, 1e-6};
  c.nic = {8 * 50e9, 2e-6}; // the node's eight 400 Gb/s NICs together
  c.rail = {8, 4, 2, 1};
  return c;
}

// Same rail: GPU 3's NIC 3 and GPU 19's (node 2, local 3) NIC 3 hang on the same leaf: no spine.
TEST(Rails, SameRailStaysOnTheRailLeaf) {
  const auto m = build_network(rail_cluster(32e9));
  const auto p = path_between(m, 3, 2 * 8 + 3);
  EXPECT_EQ(p.links, (std::vector<std::string>{"gpu3-pcie", "node0-nic3", "node2-nic3", "gpu19-pcie"}));
  EXPECT_DOUBLE_EQ(p.bottleneck, std::min(32e9, 8 * 50e9 / 8)); // PCIe is narrower than a rail's 50 GB/s
  // With a wider PCIe the rail's share of the node's NIC bandwidth, 400 / 8 = 50 GB/s, is the bottleneck.
  EXPECT_DOUBLE_EQ(path_between(build_network(rail_cluster(64e9)), 3, 19).bottleneck, 50e9);
}

// Different rails between PCIe nodes: leaf of rail 3, a spine, leaf of rail 5 (GPU 21 = node 2, local 5, on NIC 5).
TEST(Rails, CrossingRailsGoesThroughOneSpine) {
  auto c = rail_cluster(32e9);
  c.intra_kind = IntraNodeKind::pcie;
  const auto m = build_network(c);
  const auto p = path_between(m, 3, 21);
  ASSERT_EQ(p.links.size(), 6u);
  EXPECT_EQ(p.links[0], "gpu3-pcie");
  EXPECT_EQ(p.links[1], "node0-nic3");
  const std::string up = "group0-rail3-spine", down = "group0-rail5-spine";
  ASSERT_EQ(p.links[2].rfind(up, 0), 0u) << p.links[2];
  ASSERT_EQ(p.links[3].rfind(down, 0), 0u) << p.links[3];
  EXPECT_EQ(p.links[2].substr(up.size()), p.links[3].substr(down.size())); // up and down the same spine
  EXPECT_EQ(p.links[4], "node2-nic5");
  EXPECT_EQ(p.links[5], "gpu21-pcie");
  // Spine links: 4 nodes x 50 GB/s below each leaf over 2 spines = 100 GB/s each; a PCIe fabric's GPU link is the
  // fabric's (300 GB/s here), so the rail's 50 GB/s binds.
  EXPECT_DOUBLE_EQ(p.bottleneck, 50e9);
  // 1 group x 8 rail leaves + 2 spines.
  EXPECT_EQ(summarize(c).switches, 8 + 2);
}

// NVSwitch nodes relay across rails over NVLink (PXN): GPU 3 hands the data to GPU 5 of its node, whose NIC is on
// rail 5, and it crosses the network on rail 5's leaf alone.
TEST(Rails, CrossingRailsFromNvswitchNodesRelaysOverNvlinkToTheDestinationsRail) {
  const auto p = path_between(build_network(rail_cluster(32e9)), 3, 21);
  EXPECT_EQ(p.links, (std::vector<std::string>{"gpu3-nvlink", "gpu5-nvlink", "gpu5-pcie", "node0-nic5", "node2-nic5",
                                               "gpu21-pcie"}));
  EXPECT_DOUBLE_EQ(p.bottleneck, 32e9);
}

TEST(Rails, InsideANodeGpusUseTheirNvlinkPorts) {
  const auto p = path_between(build_network(rail_cluster(32e9)), 8 + 2, 8 + 6);
  EXPECT_EQ(p.links, (std::vector<std::string>{"gpu10-nvlink", "gpu14-nvlink"}));
  EXPECT_DOUBLE_EQ(p.bottleneck, 300e9);
}

// --- ECMP on a leaf-spine with every spine drawn: 2 leaves of 4 nodes, 4 spines.

ClusterSpec four_spines() {
  auto c = single_gpu_nodes(8);
  c.tiers = {{4, 1.0}};
  c.spines = 4;
  return c;
}

// The 16 flows from leaf 0's GPUs to leaf 1's each cross one spine (leafX-spineY up, leaf1-spineY down); hashed
// per flow, they spread over all four (a fixed choice would use one).
TEST(Ecmp, FlowsBetweenTwoLeavesUseEverySpine) {
  const auto m = build_network(four_spines());
  std::vector<int> per_spine(4, 0);
  for (int a = 0; a < 4; ++a)
    for (int b = 4; b < 8; ++b) {
      const auto p = path_between(m, a, b);
      ASSERT_EQ(p.links.size(), 6u); // PCIe, NIC, leaf0-spineY, leaf1-spineY, NIC, PCIe
      int used = -1;
      for (int s = 0; s < 4; ++s)
        if (contains(p.links, fmt::format("leaf0-spine{}", s))) {
          EXPECT_EQ(used, -1) << "two spines on one path";
          used = s;
        }
      ASSERT_NE(used, -1);
      EXPECT_TRUE(contains(p.links, fmt::format("leaf1-spine{}", used))); // down from the same spine
      ++per_spine[used];
    }
  for (int s = 0; s < 4; ++s)
    EXPECT_GE(per_spine[s], 1) << "spine " << s << " carries no flow";
}

TEST(Ecmp, RoutesAreTheSameOnEveryBuild) {
  const auto first = build_network(four_spines()), second = build_network(four_spines());
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b) {
      const auto p = path_between(first, a, b), q = path_between(second, a, b);
      EXPECT_EQ(p.links, q.links) << a << " -> " << b;
      EXPECT_EQ(p.vertices, q.vertices) << a << " -> " << b;
    }
}

// --- Hybrid cube-mesh (NVIDIA, "DGX-1 with Tesla V100 System Architecture", WP-08437-002, figure 2).

ClusterSpec cube_mesh() {
  ClusterSpec c;
  c.gpus_per_node = 8;
  c.intra_kind = IntraNodeKind::hybrid_cube_mesh;
  c.intra = {25e9, 1e-6}; // per NVLink2 link
  c.pcie = {16e9, 1e-6};
  c.nic = {kNic, 2e-6};
  return c;
}

// dtsim numbers the GPUs in the NCCL ring order 0,3,2,1,5,6,7,4, and every pair of that ring (the wrap 4-0
// included) has two NVLinks in the white paper: one direct link of 2 x 25 GB/s between consecutive GPUs.
TEST(CubeMesh, ConsecutiveGpusShareADoubleNvlink) {
  const auto m = build_network(cube_mesh());
  for (int a = 0; a < 8; ++a) {
    const int b = (a + 1) % 8;
    SCOPED_TRACE(fmt::format("gpu{} -> gpu{}", a, b));
    const auto p = path_between(m, a, b);
    ASSERT_EQ(p.links.size(), 1u);
    EXPECT_TRUE(p.links[0] == fmt::format("gpu{}-gpu{}-nvlink", a, b) ||
                p.links[0] == fmt::format("gpu{}-gpu{}-nvlink", b, a))
        << p.links[0];
    EXPECT_DOUBLE_EQ(p.bottleneck, 2 * 25e9);
  }
}

// Each V100 has six NVLink2 links (white paper, section 2); 8 x 6 / 2 = 24 links over 16 GPU pairs (8 doubled),
// so 28 - 16 = 12 of the 8 x 7 / 2 = 28 pairs have none and go over PCIe. No such pair shares a PCIe switch
// (the switch pairs 0-1, 2-3, 4-5, 6-7 are all NVLinked), so they cross both switches' uplinks: 4 links.
TEST(CubeMesh, SixNvlinksPerGpuAndPcieForTheRest) {
  const auto m = build_network(cube_mesh());
  const auto& g = m.graph;
  for (int gpu = 0; gpu < 8; ++gpu) {
    double nvlink = 0;
    for (const auto& e : boost::make_iterator_range(boost::out_edges(m.gpu_vertex[gpu], g)))
      if (g[e].kind == LinkClass::fabric) nvlink += g[e].bandwidth;
    EXPECT_DOUBLE_EQ(nvlink / 25e9, 6) << "gpu" << gpu;
  }
  int direct = 0, over_pcie = 0;
  for (int a = 0; a < 8; ++a)
    for (int b = a + 1; b < 8; ++b) {
      const auto p = path_between(m, a, b);
      if (p.links.size() == 1 && p.links[0].find("-nvlink") != std::string::npos) {
        ++direct;
      } else {
        ++over_pcie;
        SCOPED_TRACE(fmt::format("gpu{} -> gpu{}", a, b));
        EXPECT_EQ(p.links.size(), 4u);
        EXPECT_EQ(count_containing(p.links, "-pcie"), 4); // gpuA-pcie, 2 switch uplinks, gpuB-pcie
        EXPECT_EQ(count_containing(p.links, "nvlink"), 0);
        EXPECT_DOUBLE_EQ(p.bottleneck, 16e9);
      }
    }
  EXPECT_EQ(direct, 16);
  EXPECT_EQ(over_pcie, 12);
}

// --- PCIe trees: 4 GPUs, 2 per PCIe switch; GPU links of the fabric's bandwidth, switch uplinks of PCIe's.

ClusterSpec pcie_tree(int nodes) {
  ClusterSpec c;
  c.nodes = nodes;
  c.gpus_per_node = 4;
  c.intra_kind = IntraNodeKind::pcie_tree;
  c.gpus_per_pcie_switch = 2;
  c.intra = {32e9, 1e-6};
  c.pcie = {16e9, 1e-6};
  c.nic = {kNic, 2e-6};
  return c;
}

TEST(PcieTree, GpusBehindOneSwitchTalkWithoutTheRoot) {
  const auto m = build_network(pcie_tree(1));
  const auto same = path_between(m, 0, 1);
  EXPECT_EQ(same.links, (std::vector<std::string>{"gpu0-pcie", "gpu1-pcie"}));
  EXPECT_DOUBLE_EQ(same.bottleneck, 32e9);
  const auto across = path_between(m, 0, 2);
  EXPECT_EQ(across.links, (std::vector<std::string>{"gpu0-pcie", "node0-pcie-switch0-uplink",
                                                    "node0-pcie-switch1-uplink", "gpu2-pcie"}));
  EXPECT_DOUBLE_EQ(across.bottleneck, 16e9);
  EXPECT_NEAR(across.latency, 4e-6, 1e-15);
}

// The node's NIC sits on the first GPU's PCIe switch (as on p4d and DGX nodes): GPU 2 leaves the node through
// its switch's uplink, the root and switch 0's uplink; GPU 4 (node 1, local 0) needs no uplink.
TEST(PcieTree, TheNicSitsBesideTheFirstGpu) {
  const auto p = path_between(build_network(pcie_tree(2)), 2, 4);
  EXPECT_EQ(p.links, (std::vector<std::string>{"gpu2-pcie", "node0-pcie-switch1-uplink", "node0-pcie-switch0-uplink",
                                               "node0-nic", "node1-nic", "gpu4-pcie"}));
}

// --- Descriptions that cannot be built: check_network() says why, naming the element, and build_network()
// throws std::invalid_argument with the same message.

void expect_refused(const ClusterSpec& c, const std::vector<std::string>& parts) {
  const auto problem = check_network(c);
  ASSERT_FALSE(problem.empty());
  for (const auto& part : parts)
    EXPECT_NE(problem.find(part), std::string::npos) << "\"" << part << "\" not in: " << problem;
  try {
    build_network(c);
    ADD_FAILURE() << "build_network accepted: " << problem;
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), problem);
  }
}

TEST(BadNetwork, FatTreesNeedAnEvenKLargeEnough) {
  auto c = single_gpu_nodes(6);
  c.fat_tree.k = 3;
  expect_refused(c, {"even k", "k = 3"});
  auto full = fat_tree(4);
  EXPECT_EQ(check_network(full), "");
  full.nodes = 4 * 4 * 4 / 4 + 1; // 17 > k^3/4
  expect_refused(full, {"k = 4", "16 nodes", "not 17"});
}

TEST(BadNetwork, DragonflyGroupsMustHoldTheNodes) {
  auto c = dragonfly(4, 2, 2);
  EXPECT_EQ(check_network(c), "");
  c.nodes = 15; // 4 x 2 x 2 = 16
  expect_refused(c, {"16 nodes", "15"});
}

TEST(BadNetwork, RailGroupsMustDivideTheNodes) {
  auto c = rail_cluster(32e9);
  c.nodes = 6; // groups of 4
  expect_refused(c, {"6 nodes", "groups of 4"});
}

TEST(BadNetwork, TiersJoiningNoChildrenAreRefused) {
  auto c = single_gpu_nodes(8);
  c.tiers = {{0, 1.0}};
  expect_refused(c, {"tier 0", "leaf", "joins 0 children"});
}

// Nodes 0, 1 on s0 and 2, 3 on s1, s0 - s1 joined.
ClusterSpec two_switches() {
  auto c = single_gpu_nodes(4);
  c.explicit_network.switches = {{"s0", 1e-6}, {"s1", 3e-6}};
  c.explicit_network.links = {{"node0", "s0", {kNic, 2e-6}},
                              {"node1", "s0", {kNic, 2e-6}},
                              {"s0", "s1", {20e9, 5e-6}},
                              {"node2", "s1", {kNic, 2e-6}},
                              {"node3", "s1", {kNic, 2e-6}}};
  return c;
}

TEST(BadNetwork, ExplicitNetworksNameTheBadElement) {
  EXPECT_EQ(check_network(two_switches()), "");

  auto unknown = two_switches();
  unknown.explicit_network.links[2].to = "s9";
  expect_refused(unknown, {"\"s9\"", "neither a listed switch nor a node"});

  auto idle = two_switches();
  idle.explicit_network.switches.push_back({"spare", 0});
  expect_refused(idle, {"\"spare\"", "zero ports"});

  auto split = two_switches();
  split.explicit_network.links.erase(split.explicit_network.links.begin() + 2); // no s0 - s1
  expect_refused(split, {"disconnected", "node2"});

  auto lonely = two_switches();
  lonely.explicit_network.links.pop_back(); // node3 - s1
  expect_refused(lonely, {"node3", "no link"});
}

// --- Explicit networks: routes, and switch latency paid once per crossing (half on each link into a switch).

TEST(ExplicitNetwork, RouteCrossesBothSwitchesAndPaysEachOnce) {
  const auto c = two_switches();
  const auto m = build_network(c);
  const auto p = path_between(m, 0, 2);
  EXPECT_EQ(p.links, (std::vector<std::string>{"gpu0-pcie", "node0-s0", "s0-s1", "node2-s1", "gpu2-pcie"}));
  EXPECT_EQ(p.vertices, (std::vector<std::string>{"gpu0", "node0-pcie-root", "node0-nic", "s0", "s1", "node2-nic",
                                                  "node2-pcie-root", "gpu2"}));
  // PCIe 1 + node0-s0 (2 + 1/2) + s0-s1 (5 + 1/2 + 3/2) + node2-s1 (2 + 3/2) + PCIe 1 = 2 + 9 + 1 + 3 us.
  EXPECT_NEAR(p.latency, 2 * 1e-6 + (2e-6 + 5e-6 + 2e-6) + 1e-6 + 3e-6, 1e-15);
  EXPECT_DOUBLE_EQ(p.bottleneck, kNic);
  // Two nodes on s0: s0 crossed once, its latency paid once (half on each NIC link).
  const auto near = path_between(m, 0, 1);
  EXPECT_EQ(near.links, (std::vector<std::string>{"gpu0-pcie", "node0-s0", "node1-s0", "gpu1-pcie"}));
  EXPECT_NEAR(near.latency, 2 * 1e-6 + 2 * 2e-6 + 1e-6, 1e-15);
  EXPECT_EQ(gpu_diameter(m), 5);
}

// Nodes 0, 1 against 2, 3: the s0 - s1 link (20 GB/s) is narrower than two NICs (25 GB/s).
TEST(ExplicitNetwork, SummaryCountsSwitchesLinksAndTheCut) {
  const auto s = summarize(two_switches());
  EXPECT_EQ(s.switches, 2);
  EXPECT_EQ(s.links, 4 + 5); // 4 PCIe links + 5 listed
  EXPECT_DOUBLE_EQ(s.bisection_bandwidth, 20e9);
}

} // namespace
} // namespace dtsim::topologies
