// Every collective algorithm replayed as flows on SimGrid, against its closed form (sim/collectives/
// closed_form.cpp: Thakur, Rabenseifner and Gropp 2005; NCCL's double binary tree), and the effects only a
// flow-level simulation shows: max-min sharing of a link, hierarchy against a flat ring, skewed all-to-all-v.
#include "replay_fixtures.hpp"
#include "sim/collectives/closed_form.hpp"
#include "sim/engine/engine.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

namespace dtsim {
namespace {

using collectives::Algorithm;
using collectives::Operation;

using testing::kAlpha;
using testing::kNic;
using testing::kNicLatency;
using testing::kSwitchLatency;
constexpr double kGamma = 1e-11; // s per reduced byte: 3 bytes moved per byte at 300 GB/s

// Every transfer costs alpha + bytes / kNic and a rank's concurrent sends share its NIC, as the closed forms assume.
topologies::ClusterSpec uniform(int nodes, int gpus_per_node = 1) {
  return testing::uniform_cluster(nodes, kNic, kNicLatency, kSwitchLatency, gpus_per_node);
}

graph::Collective collective(Operation op, Algorithm algorithm, double bytes, bool aggregate = false) {
  graph::Collective c;
  c.op = op;
  c.algorithm = algorithm;
  c.bytes = bytes;
  c.aggregate = aggregate;
  c.reduce_seconds_per_byte = kGamma;
  return c;
}

// Every rank in `groups` runs its group's collectives, in order, on its comm stream.
graph::ExecutionGraph graph_of(int ranks, const std::vector<std::vector<int>>& groups,
                               const std::vector<graph::Collective>& per_group) {
  graph::ExecutionGraph g;
  g.groups = groups;
  g.rank_program.assign(ranks, 0);
  for (std::size_t i = 0; i < groups.size(); ++i) {
    auto c = per_group[i];
    c.group = static_cast<int>(i);
    g.programs.push_back({{graph::Op{"collective", graph::Stream::comm, c, {}}}});
    for (int r : groups[i])
      g.rank_program[r] = static_cast<std::uint32_t>(i);
  }
  return g;
}

double replay_one(const topologies::ClusterSpec& cluster, const graph::Collective& c, int ranks) {
  return engine::replay(cluster, testing::one_collective(ranks, c), testing::cm02_options()).simulated_seconds;
}

struct Case {
  Operation op;
  Algorithm algorithm;
  int ranks;
  double bytes;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << fmt::format("{} {} n={} {}B", collectives::to_string(c.op), collectives::to_string(c.algorithm), c.ranks,
                     c.bytes);
}

std::vector<Case> every_algorithm() {
  std::vector<Case> cases;
  const Operation ops[] = {Operation::all_reduce, Operation::reduce_scatter, Operation::all_gather,
                           Operation::broadcast,  Operation::reduce,         Operation::all_to_all,
                           Operation::barrier,    Operation::send_recv};
  for (auto op : ops)
    for (auto algorithm : collectives::supported_algorithms(op))
      for (int n : {2, 3, 8, 64, 100})
        for (double bytes : {8.0, 1048576.0, 1e9 + 7}) {
          if (algorithm == Algorithm::hierarchical || algorithm == Algorithm::in_switch)
            continue; // need nodes of several GPUs or reducing switches: tested below
          if (n == 100 && bytes < 1e9 && op == Operation::all_to_all)
            continue; // 10,000 concurrent flows per size: one size is enough
          cases.push_back({op, algorithm, n, bytes});
        }
  return cases;
}

class EveryAlgorithm : public ::testing::TestWithParam<Case> {};

TEST_P(EveryAlgorithm, ReplayMatchesTheClosedFormWithinTwoPercent) {
  const auto& c = GetParam();
  collectives::Request request;
  request.op = c.op;
  request.algorithm = c.algorithm;
  request.ranks = c.ranks;
  request.bytes = c.bytes;
  const double expected = collectives::closed_form_time(request, kAlpha, kNic, kGamma);
  const double simulated = replay_one(uniform(c.ranks), collective(c.op, c.algorithm, c.bytes), c.ranks);
  if (c.algorithm == Algorithm::double_binary_tree && c.ranks == 100) {
    // The tree closed form is the lock-step time. With 100 ranks the trees are not complete, and in the replay a
    // node whose subtree is shallow starts its next chunk before the deepest one finishes: up to ~4% sooner.
    EXPECT_LE(simulated, expected * 1.0001);
    EXPECT_GE(simulated, 0.95 * expected);
  } else {
    EXPECT_NEAR(simulated, expected, 0.02 * expected);
  }
}

INSTANTIATE_TEST_SUITE_P(Collectives, EveryAlgorithm, ::testing::ValuesIn(every_algorithm()));

// When reducing is slower than receiving (gamma above 1/B), the reducing steps run at the GPU's pace.
TEST(ReductionBound, ReducingAlgorithmsFollowTheirClosedFormWhenTheGpuIsTheBottleneck) {
  const double slow_gamma = 4 / kNic;
  const Case cases[] = {{Operation::all_reduce, Algorithm::ring, 8, 1e8},
                        {Operation::all_reduce, Algorithm::rabenseifner, 8, 1e8},
                        {Operation::all_reduce, Algorithm::binomial_tree, 8, 1e8},
                        {Operation::reduce_scatter, Algorithm::ring, 8, 1e8},
                        {Operation::reduce, Algorithm::binomial_tree, 8, 1e8}};
  for (const auto& c : cases) {
    collectives::Request request;
    request.op = c.op;
    request.algorithm = c.algorithm;
    request.ranks = c.ranks;
    request.bytes = c.bytes;
    auto op = collective(c.op, c.algorithm, c.bytes);
    op.reduce_seconds_per_byte = slow_gamma;
    const double expected = collectives::closed_form_time(request, kAlpha, kNic, slow_gamma);
    const double simulated = replay_one(uniform(c.ranks), op, c.ranks);
    EXPECT_NEAR(simulated, expected, 0.02 * expected) << ::testing::PrintToString(c);
  }
}

// nccl-tests' busbw of a large ring all-reduce is the bottleneck link's bandwidth; under LV08 that is the link
// times its bandwidth factor, 0.97 (Velho and Legrand 2009).
TEST(BusBandwidth, LargeRingAllReduceRunsAtTheBottleneckTimesTheModelFactor) {
  const int n = 8;
  const double bytes = 4.0 * (1 << 30);
  engine::ReplayOptions lv08;
  lv08.network_model = engine::NetworkModel::lv08;
  lv08.cross_traffic = false;
  auto c = collective(Operation::all_reduce, Algorithm::ring, bytes);
  c.reduce_seconds_per_byte = 0;
  const double seconds = engine::replay(uniform(n), testing::one_collective(n, c), lv08).simulated_seconds;
  const double busbw = bytes / seconds * collectives::bus_bandwidth_factor(Operation::all_reduce, n);
  EXPECT_NEAR(busbw, 0.97 * kNic, 0.01 * 0.97 * kNic);
}

// Two all-reduces whose flows cross the same NIC links share them fairly (max-min): each takes about twice as
// long as alone. Groups {0, 2} and {1, 3} on two nodes of two GPUs: both groups cross both NICs.
TEST(Contention, TwoCollectivesSharingALinkEachTakeTwiceAsLong) {
  const auto cluster = uniform(2, 2);
  const double bytes = 1e9;
  auto c = collective(Operation::all_reduce, Algorithm::ring, bytes);
  c.reduce_seconds_per_byte = 0;
  const double alone =
      engine::replay(cluster, graph_of(4, {{0, 2}, {1}, {3}}, {c, {}, {}}), testing::cm02_options()).simulated_seconds;
  const auto both = engine::replay(cluster, graph_of(4, {{0, 2}, {1, 3}}, {c, c}), testing::cm02_options());
  EXPECT_NEAR(both.simulated_seconds, 2 * alone, 0.02 * 2 * alone);
}

// Four NVSwitch nodes of 8 GPUs (450 GB/s NVLink per GPU), one 400 Gb/s NIC per node. A flat ring over the
// 32 GPUs crosses every NIC once each way: T = 2 (31/32) S / B_nic. The hierarchical all-reduce moves
// 2 (7/8) S over NVLink and 2 (3/4) S through each NIC (the 8 rail rings share the node's one NIC).
TEST(Hierarchy, HierarchicalBeatsAFlatRingByTheExpectedRatio) {
  topologies::ClusterSpec cluster = uniform(4, 8);
  cluster.intra_kind = topologies::IntraNodeKind::nvlink;
  cluster.intra = {450e9, 0};
  cluster.nic = {50e9, 0};
  cluster.switch_latency = 0;
  const double bytes = 2.0 * (1 << 30);
  auto ring = collective(Operation::all_reduce, Algorithm::ring, bytes);
  auto hier = collective(Operation::all_reduce, Algorithm::hierarchical, bytes);
  ring.reduce_seconds_per_byte = hier.reduce_seconds_per_byte = 0;
  const double t_ring = replay_one(cluster, ring, 32);
  const double t_hier = replay_one(cluster, hier, 32);
  const double expected_ring = 2 * 31.0 / 32 * bytes / 50e9;
  const double expected_hier = 2 * 7.0 / 8 * bytes / 450e9 + 2 * 3.0 / 4 * bytes / 50e9;
  EXPECT_NEAR(t_ring, expected_ring, 0.02 * expected_ring);
  EXPECT_NEAR(t_hier, expected_hier, 0.02 * expected_hier);
  EXPECT_NEAR(t_ring / t_hier, expected_ring / expected_hier, 0.03 * expected_ring / expected_hier);
  EXPECT_GT(t_ring / t_hier, 1.1);
}

// The rail-parallel reduce-scatter and all-gather (ZeRO's collectives) on four NVSwitch nodes of 8 GPUs (450 GB/s
// and 1 us per GPU port), against their two-level closed form: a transfer inside a node crosses two GPU ports
// (alpha_i = 2 us), one across nodes two NICs and the switch (alpha_e = 3 us), and the 8 rails' rings share each
// node's NIC (B_e = NIC / 8), or each has a rail NIC of its own (NIC / 8 each on a rail network). Step by step
// and aggregated. A flat ring on the rail network crosses nodes through one rail: several times slower.
TEST(Hierarchy, RailParallelReduceScatterAndAllGatherMatchTheirClosedForm) {
  topologies::ClusterSpec bonded = uniform(4, 8);
  bonded.intra_kind = topologies::IntraNodeKind::nvlink;
  bonded.intra = {450e9, 1e-6};
  bonded.nic = {50e9, 1e-6};
  bonded.switch_latency = 1e-6;
  auto rails = bonded;
  rails.rail = {8, 4, 1, 1.0};
  for (auto op : {Operation::reduce_scatter, Operation::all_gather})
    for (double bytes : {8.0 * (1 << 20) + 3, 1e9 + 7}) {
      collectives::Request r;
      r.op = op;
      r.algorithm = Algorithm::hierarchical;
      r.ranks = 32;
      r.bytes = bytes;
      for (int p = 0; p < 32; ++p)
        r.node_of.push_back(p / 8);
      const double expected = collectives::closed_form_time(r, 2e-6, 450e9, 3e-6, 50e9 / 8, kGamma);
      for (const auto* cluster : {&bonded, &rails})
        for (bool aggregate : {false, true}) {
          const double simulated = replay_one(*cluster, collective(op, Algorithm::hierarchical, bytes, aggregate), 32);
          EXPECT_NEAR(simulated, expected, 0.02 * expected)
              << collectives::to_string(op) << " " << bytes << " B" << (cluster == &rails ? " rails" : " bonded")
              << (aggregate ? " aggregated" : " step by step");
        }
      if (bytes > 1e9) {
        const double ring = replay_one(rails, collective(op, Algorithm::ring, bytes), 32);
        EXPECT_GT(ring, 4 * expected) << collectives::to_string(op);
      }
    }
}

// All-to-all-v with one heavy pair: the operation ends when that pair's transfer ends.
TEST(AllToAllV, SkewedSizesEndWhenTheLargestPairEnds) {
  const int n = 4;
  auto c = collective(Operation::all_to_all_v, Algorithm::direct, 0);
  std::vector<double> matrix(n * n, 1e3);
  for (int i = 0; i < n; ++i)
    matrix[i * n + i] = 0;
  matrix[0 * n + 3] = 1e9;
  c.matrix = std::make_shared<const std::vector<double>>(std::move(matrix));
  const double simulated = replay_one(uniform(n), c, n);
  // Rank 0's NIC carries the heavy transfer and two small ones; rank 3's receives it and two small ones.
  const double largest = kAlpha + (1e9 + 2e3) / kNic;
  EXPECT_NEAR(simulated, largest, 0.01 * largest);
}

// Aggregate fidelity (each phase as one set of concurrent flows, latency terms added analytically) stays within
// 3% of the step-by-step replay when no other traffic competes.
TEST(Fidelity, AggregateStaysWithinThreePercentOfStepWithoutCompetingTraffic) {
  struct Probe {
    Operation op;
    Algorithm algorithm;
  };
  const Probe probes[] = {{Operation::all_reduce, Algorithm::ring},
                          {Operation::all_reduce, Algorithm::rabenseifner},
                          {Operation::all_reduce, Algorithm::recursive_doubling},
                          {Operation::all_gather, Algorithm::ring},
                          {Operation::broadcast, Algorithm::binomial_tree},
                          {Operation::all_to_all, Algorithm::pairwise}};
  for (const auto& p : probes)
    for (int n : {8, 64})
      for (double bytes : {65536.0, 256.0 * (1 << 20)}) {
        const double step = replay_one(uniform(n), collective(p.op, p.algorithm, bytes), n);
        const double aggregate = replay_one(uniform(n), collective(p.op, p.algorithm, bytes, true), n);
        EXPECT_NEAR(aggregate, step, 0.03 * step)
            << collectives::to_string(p.op) << " " << collectives::to_string(p.algorithm) << " n=" << n
            << " bytes=" << bytes;
      }
}

} // namespace
} // namespace dtsim

namespace dtsim {
namespace {

// NVLink SHARP inside one H100-like node, and InfiniBand SHARP across four: the replay (switches as actors that
// mirror what the GPUs stream through them) against the closed form.
TEST(InSwitch, NvlsInsideANodeMatchesTheClosedForm) {
  auto cluster = testing::uniform_cluster(1, kNic, 0, 0, 8);
  cluster.intra_kind = topologies::IntraNodeKind::nvlink;
  cluster.intra = {450e9, 1e-6};
  cluster.nvswitch_reduces = true;
  const double bytes = 256.0 * (1 << 20);
  collectives::Request r;
  r.algorithm = Algorithm::in_switch;
  r.ranks = 8;
  r.bytes = bytes;
  r.node_of.assign(8, 0);
  r.node_switch_reduces = true;
  const double expected = collectives::closed_form_time(r, 1e-6, 450e9, 0);
  const double simulated = replay_one(cluster, collective(Operation::all_reduce, Algorithm::in_switch, bytes), 8);
  EXPECT_NEAR(simulated, expected, 0.02 * expected);
}

TEST(InSwitch, SharpAcrossNodesMatchesTheClosedFormWithRailsSharingTheNic) {
  auto cluster = testing::uniform_cluster(4, 50e9, 1e-6, 1e-6, 8);
  cluster.intra_kind = topologies::IntraNodeKind::nvlink;
  cluster.intra = {450e9, 1e-6};
  cluster.nvswitch_reduces = true;
  cluster.switch_reduces = true;
  const double bytes = 256.0 * (1 << 20);
  collectives::Request r;
  r.algorithm = Algorithm::in_switch;
  r.ranks = 32;
  r.bytes = bytes;
  for (int p = 0; p < 32; ++p)
    r.node_of.push_back(p / 8);
  r.node_switch_reduces = r.network_switch_reduces = true;
  // To the network switch: NIC (1 us) + switch (1 us); the 8 rails' shards share the node's NIC: B_e = NIC / 8.
  const double expected = collectives::closed_form_time(r, 1e-6, 450e9, 2e-6, 50e9 / 8, 0);
  const double simulated = replay_one(cluster, collective(Operation::all_reduce, Algorithm::in_switch, bytes), 32);
  EXPECT_NEAR(simulated, expected, 0.02 * expected);
  // And it beats the hierarchical all-reduce, whose inter-node ring sends 2 (N-1)/N = 1.5 shards through each
  // NIC per rail against SHARP's one (plus a chunk): about 0.71 of its time here.
  const double hierarchical =
      replay_one(cluster, collective(Operation::all_reduce, Algorithm::hierarchical, bytes), 32);
  EXPECT_LT(simulated, 0.75 * hierarchical);
}

} // namespace
} // namespace dtsim
