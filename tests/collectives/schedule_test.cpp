// Every supported (operation, algorithm) over n in {1, 2, 3, 8, 64, 100} and sizes that n does not divide:
// transfers match pair by pair, the bytes sent and reduced are the operation's theoretical volume, chunking
// conserves the buffer exactly, and step and phase counts follow the algorithm's definition.
#include "schedule_checks.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace dtsim::collectives {
namespace {

using namespace checks;

int ceil_log2(int n) {
  int l = 0;
  while ((1 << l) < n)
    ++l;
  return l;
}

int floor_log2(int n) {
  return ceil_log2(n + 1) - 1;
}

struct Volume {
  double sent = 0;
  double reduced = 0;
  double slack = 0; // bytes of rounding allowed (uneven blocks)
};

// The bytes an algorithm moves and reduces in all, from its definition.
Volume expected_volume(const Request& r) {
  const int n = r.ranks;
  const double S = r.bytes;
  if (n == 1) return {};
  const int q = floor_log2(n), m = 1 << q, rest = n - m;
  const double n1 = n - 1;
  switch (r.op) {
  case Operation::all_reduce:
    switch (r.algorithm) {
    case Algorithm::recursive_doubling:
      return {m * q * S + 2 * rest * S, m * q * S + rest * S};
    case Algorithm::rabenseifner:
      return {2 * (m - 1) * S + 2 * rest * S, (m - 1) * S + rest * S};
    case Algorithm::hierarchical: {
      const double g = gpus_per_node(n), nodes = n / g;
      return {2 * nodes * (g - 1) * S + 2 * (nodes - 1) * S, n1 * S};
    }
    default: // ring, double binary tree, binomial: every edge carries S up and down
      return {2 * n1 * S, n1 * S};
    }
  case Operation::reduce_scatter:
    if (r.algorithm == Algorithm::rabenseifner) return {rest * S + (m - 1) * S + rest * S / n, n1 * S, 1.0 * n};
    return {n1 * S, n1 * S};
  case Operation::all_gather:
  case Operation::broadcast:
  case Operation::all_to_all:
    return {n1 * S, 0};
  case Operation::reduce:
    return {n1 * S, n1 * S};
  case Operation::all_to_all_v: {
    double total = 0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        if (i != j) total += r.matrix[static_cast<std::size_t>(i) * n + j];
    return {total, 0};
  }
  case Operation::barrier:
    return {};
  case Operation::send_recv:
    return {S, 0};
  }
  return {};
}

int pipeline_chunks(double bytes) {
  return static_cast<int>(std::clamp(std::ceil(bytes / (512 * 1024)), 1.0, 1024.0));
}

// -1: not checked here (the double binary tree's count depends on its trees' depth; tested in trees_test).
int expected_steps(const Request& r) {
  const int n = r.ranks;
  if (n == 1) return 0;
  const int L = ceil_log2(n), q = floor_log2(n), folded = (1 << q) < n ? 2 : 0;
  switch (r.algorithm) {
  case Algorithm::ring:
    if (r.op == Operation::all_reduce) return 2 * (n - 1);
    if (r.op == Operation::broadcast || r.op == Operation::reduce) return pipeline_chunks(r.bytes) + n - 2;
    return n - 1;
  case Algorithm::binomial_tree:
    return r.op == Operation::all_reduce ? 2 * L : L;
  case Algorithm::recursive_doubling:
    return r.op == Operation::barrier ? L : q + folded;
  case Algorithm::rabenseifner:
    return (r.op == Operation::all_reduce ? 2 * q : q) + folded;
  case Algorithm::pairwise:
    return n - 1;
  case Algorithm::direct:
    return 1;
  case Algorithm::hierarchical: {
    const int g = gpus_per_node(n);
    const int steps = (g - 1) + (n / g - 1); // reduce-scatter or all-gather: intra-node ring, rail rings
    return r.op == Operation::all_reduce ? 2 * steps : steps;
  }
  default:
    return -1;
  }
}

struct Param {
  Case c;
  int n;
  double bytes;
};

std::vector<Param> params() {
  std::vector<Param> out;
  for (const auto& c : supported_cases())
    for (int n : {1, 2, 3, 8, 64, 100})
      for (double bytes : {7.0, 1000.0, 3.0 * 1024 * 1024 + 5, 100.0 * 1024 * 1024 + 1})
        out.push_back({c, n, bytes});
  return out;
}

class EverySchedule : public ::testing::TestWithParam<Param> {};

TEST_P(EverySchedule, PairsMatchVolumesAndStepsFollowTheDefinition) {
  const auto [c, n, bytes] = GetParam();
  for (int root : {0, n / 2 + 1}) {
    const Request request = request_for(c, n, bytes, root);
    const auto schedule = make_schedule(request);
    ASSERT_EQ(schedule->ranks(), n);
    EXPECT_TRUE(pairs_match(*schedule));

    const Totals t = totals(*schedule);
    const Volume v = expected_volume(request);
    const double tolerance = v.slack + 1e-12 * (v.sent + 1);
    EXPECT_NEAR(t.sent_total, v.sent, tolerance);
    EXPECT_NEAR(t.reduced_total, v.reduced, v.slack + 1e-12 * (v.reduced + 1));
    EXPECT_TRUE(t.integral) << "integral buffers are cut into whole bytes";
    if (v.slack == 0) {
      EXPECT_EQ(t.sent_total, v.sent) << "chunking conserves the buffer exactly";
    }
    double received = 0;
    for (double x : t.received)
      received += x;
    EXPECT_EQ(received, t.sent_total);

    if (const int steps = expected_steps(request); steps >= 0) {
      EXPECT_EQ(schedule->step_count(), steps);
    }
    const auto phases = schedule->phase_starts();
    ASSERT_FALSE(phases.empty());
    EXPECT_EQ(phases.front(), 0);
    for (std::size_t i = 1; i < phases.size(); ++i) {
      EXPECT_LT(phases[i - 1], phases[i]);
      EXPECT_LT(phases[i], schedule->step_count());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Collectives, EverySchedule, ::testing::ValuesIn(params()),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return name_of(info.param.c) + "_n" + std::to_string(info.param.n) + "_" +
                                  std::to_string(static_cast<long long>(info.param.bytes)) + "B";
                         });

TEST(RingAllReduce, EveryPositionSendsTwiceAllButOneBlock) {
  const int n = 64;
  const double S = 1000003; // not divisible by 64
  Request r;
  r.ranks = n;
  r.bytes = S;
  r.algorithm = Algorithm::ring;
  const Totals t = totals(*make_schedule(r));
  for (int p = 0; p < n; ++p) {
    EXPECT_NEAR(t.sent[p], 2.0 * (n - 1) / n * S, 2.0) << p;
    EXPECT_NEAR(t.reduced[p], (n - 1.0) / n * S, 1.0) << p;
  }
}

TEST(RingAllReduce, StepsSendOneChunkToTheSuccessorInTwoPhases) {
  Request r;
  r.ranks = 5;
  r.bytes = 500;
  r.algorithm = Algorithm::ring;
  const auto s = make_schedule(r);
  EXPECT_EQ(s->phase_starts(), (std::vector<int>{0, 4}));
  for (int k = 0; k < 8; ++k) {
    const Step st = s->step(2, k);
    ASSERT_EQ(st.sends.size(), 1u);
    EXPECT_EQ(st.sends[0].peer, 3);
    EXPECT_EQ(st.sends[0].bytes, 100);
    EXPECT_EQ(st.recvs[0].peer, 1);
    EXPECT_EQ(st.reduce_bytes, k < 4 ? 100 : 0);
  }
}

TEST(Folding, ExtraPositionsHandOffFirstAndGetTheResultLast) {
  Request r;
  r.ranks = 6; // m = 4, r = 2: positions 0 and 2 fold into 1 and 3
  r.bytes = 600;
  for (auto a : {Algorithm::recursive_doubling, Algorithm::rabenseifner}) {
    r.algorithm = a;
    const auto s = make_schedule(r);
    const int last = s->step_count() - 1;
    EXPECT_EQ(s->step(0, 0).sends.at(0).peer, 1);
    EXPECT_EQ(s->step(0, 0).sends.at(0).bytes, 600);
    EXPECT_EQ(s->step(1, 0).reduce_bytes, 600);
    EXPECT_TRUE(s->step(4, 0).sends.empty());
    EXPECT_EQ(s->step(4, 0).latency_terms, 0);
    for (int k = 1; k < last; ++k) {
      EXPECT_TRUE(s->step(0, k).sends.empty() && s->step(0, k).recvs.empty());
      EXPECT_EQ(s->step(2, k).latency_terms, 0);
    }
    EXPECT_EQ(s->step(0, last).recvs.at(0).peer, 1);
    EXPECT_EQ(s->step(2, last).recvs.at(0).bytes, 600);
    EXPECT_EQ(s->phase_starts().front(), 0);
    EXPECT_EQ(s->phase_starts()[1], 1);
    EXPECT_EQ(s->phase_starts().back(), last);
  }
}

TEST(Hierarchical, ThreePhasesIntraInterIntra) {
  Request r;
  r.ranks = 8;
  r.bytes = 8000;
  r.algorithm = Algorithm::hierarchical;
  r.node_of = {5, 2, 5, 2, 5, 2, 5, 2}; // node 2 holds 1,3,5,7; node 5 holds 0,2,4,6
  const auto s = make_schedule(r);
  EXPECT_EQ(s->step_count(), 3 + 2 + 3);
  EXPECT_EQ(s->phase_starts(), (std::vector<int>{0, 3, 5}));
  // Intra-node ring among 1,3,5,7 (local 0..3): position 3 (local 1) sends to 5 a quarter of the buffer.
  EXPECT_EQ(s->step(3, 0).sends.at(0).peer, 5);
  EXPECT_EQ(s->step(3, 0).sends.at(0).bytes, 2000);
  EXPECT_EQ(s->step(7, 0).sends.at(0).peer, 1);
  // Across nodes: local index 1 is position 3 on node 2 and position 2 on node 5; a 2-ring of 2000 bytes.
  EXPECT_EQ(s->step(3, 3).sends.at(0).peer, 2);
  EXPECT_EQ(s->step(3, 3).sends.at(0).bytes, 1000);
  EXPECT_EQ(s->step(0, 4).recvs.at(0).peer, 1);
}

TEST(Hierarchical, RailLAllReducesBlockL) {
  Request r;
  r.ranks = 8;
  r.bytes = 8002; // blocks of 2000, 2001, 2000, 2001 bytes
  r.algorithm = Algorithm::hierarchical;
  r.node_of = {5, 2, 5, 2, 5, 2, 5, 2};
  const auto s = make_schedule(r);
  const int local[] = {0, 0, 1, 1, 2, 2, 3, 3};
  for (int p = 0; p < 8; ++p) {
    // Across 2 nodes the ring all-reduce of block l sends each half once: block l in all.
    const double sent = s->step(p, 3).sends.at(0).bytes + s->step(p, 4).sends.at(0).bytes;
    EXPECT_EQ(sent, local[p] % 2 == 0 ? 2000 : 2001) << p;
  }
}

TEST(Hierarchical, OneNodeOrOnePositionPerNodeDegeneratesToARing) {
  Request r;
  r.ranks = 4;
  r.bytes = 400;
  r.algorithm = Algorithm::hierarchical;
  r.node_of = {0, 0, 0, 0};
  EXPECT_EQ(make_schedule(r)->step_count(), 6);
  r.node_of = {3, 2, 1, 0};
  EXPECT_EQ(make_schedule(r)->step_count(), 6);
  r.node_of.clear();
  EXPECT_EQ(make_schedule(r)->step_count(), 6);
}

// The rail-parallel reduce-scatter and all-gather. Position p ends with (starts with) block p of n, as in the
// flat operation: rail l (local position l of every node) owns the blocks of its positions, the intra-node ring's
// block l is their union, and each rail's ring cuts that union back into its positions' blocks. The schedules
// carry bytes, not block identities, so the layout shows in the sizes: with S = 8 * 1000 + 4 the flat blocks
// alternate between 1000 and 1001 bytes (part_offset floors S i / 8), and every transfer must carry the blocks
// its position's layout says.
Request hierarchical_request(Operation op) {
  Request r;
  r.op = op;
  r.ranks = 8;
  r.bytes = 8004; // blocks 0..7: 1000, 1001, 1000, 1001, 1000, 1001, 1000, 1001
  r.algorithm = Algorithm::hierarchical;
  r.node_of = {5, 2, 5, 2, 5, 2, 5, 2}; // node 2 holds 1,3,5,7; node 5 holds 0,2,4,6
  return r;
}

double flat_block(int p) {
  return p % 2 == 0 ? 1000 : 1001;
}

TEST(HierarchicalReduceScatter, IntraNodeRingThenOneRingPerRail) {
  const auto s = make_schedule(hierarchical_request(Operation::reduce_scatter));
  EXPECT_EQ(s->step_count(), 3 + 1);
  EXPECT_EQ(s->phase_starts(), (std::vector<int>{0, 3}));
  EXPECT_TRUE(pairs_match(*s));
  // Rails (nodes in ascending index: node 2, then node 5): rail l = {node 2's local l, node 5's local l}:
  // rail 0 = {1, 0}, rail 1 = {3, 2}, rail 2 = {5, 4}, rail 3 = {7, 6}. Intra-node block l = the rail's two
  // flat blocks = 2001 bytes each.
  for (int p = 0; p < 8; ++p)
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(s->step(p, k).sends.at(0).bytes, 2001) << p;
      EXPECT_EQ(s->step(p, k).reduce_bytes, 2001) << p;
    }
  // Intra-node ring among 1,3,5,7: position 3 sends to 5; among 0,2,4,6: 6 sends to 0.
  EXPECT_EQ(s->step(3, 0).sends.at(0).peer, 5);
  EXPECT_EQ(s->step(6, 0).sends.at(0).peer, 0);
  // On each rail, a 2-ring: each position sends its peer's flat block and receives (and reduces) its own.
  const int rail_peer[] = {1, 0, 3, 2, 5, 4, 7, 6};
  for (int p = 0; p < 8; ++p) {
    const Step st = s->step(p, 3);
    EXPECT_EQ(st.sends.at(0).peer, rail_peer[p]);
    EXPECT_EQ(st.sends.at(0).bytes, flat_block(rail_peer[p])) << p;
    EXPECT_EQ(st.recvs.at(0).bytes, flat_block(p)) << p;
    EXPECT_EQ(st.reduce_bytes, flat_block(p)) << "position " << p << " ends with flat block " << p;
  }
}

TEST(HierarchicalReduceScatter, EveryPositionMovesWhatTheFlatRingMovesAndEndsWithItsOwnBlock) {
  for (int n : {16, 24, 64}) {
    const double S = 1e6 + 37; // uneven blocks
    Request r = request_for({Operation::reduce_scatter, Algorithm::hierarchical}, n, S);
    Request flat = r;
    flat.algorithm = Algorithm::ring;
    const auto s = make_schedule(r);
    const Totals h = totals(*s), f = totals(*make_schedule(flat));
    EXPECT_EQ(h.sent_total, f.sent_total);
    EXPECT_EQ(h.reduced_total, f.reduced_total);
    for (int p = 0; p < n; ++p) {
      const double own = S - f.sent[p]; // the flat ring sends all but block p
      // Sent: every block but p's, exactly. Received and reduced: S less what a position sends first in each ring
      // without having received it (flat: block p-1; here node block l-1 of the intra-node ring, less one rail
      // block of rail l's ring): the same up to the rounding of blocks, a byte per flat block in a node block.
      EXPECT_EQ(h.sent[p], f.sent[p]) << p;
      EXPECT_NEAR(h.received[p], f.received[p], n / gpus_per_node(n) + 1) << p;
      EXPECT_EQ(h.reduced[p], h.received[p]) << p;
      // The last step of each rail's ring receives and reduces the block the position keeps: block p.
      EXPECT_EQ(s->step(p, s->step_count() - 1).reduce_bytes, own) << p;
    }
  }
}

TEST(HierarchicalAllGather, OneRingPerRailThenIntraNodeRing) {
  const auto s = make_schedule(hierarchical_request(Operation::all_gather));
  EXPECT_EQ(s->step_count(), 1 + 3);
  EXPECT_EQ(s->phase_starts(), (std::vector<int>{0, 1}));
  EXPECT_TRUE(pairs_match(*s));
  const int rail_peer[] = {1, 0, 3, 2, 5, 4, 7, 6};
  for (int p = 0; p < 8; ++p) {
    const Step st = s->step(p, 0);
    EXPECT_EQ(st.sends.at(0).peer, rail_peer[p]);
    EXPECT_EQ(st.sends.at(0).bytes, flat_block(p)) << "position " << p << " contributes flat block " << p;
    EXPECT_EQ(st.recvs.at(0).bytes, flat_block(rail_peer[p])) << p;
    EXPECT_EQ(st.reduce_bytes, 0);
    for (int k = 1; k < 4; ++k)
      EXPECT_EQ(s->step(p, k).sends.at(0).bytes, 2001) << p;
  }
  for (int n : {16, 24, 64}) {
    Request r = request_for({Operation::all_gather, Algorithm::hierarchical}, n, 1e6 + 37);
    Request flat = r;
    flat.algorithm = Algorithm::ring;
    const Totals h = totals(*make_schedule(r)), f = totals(*make_schedule(flat));
    for (int p = 0; p < n; ++p)
      EXPECT_EQ(h.received[p], f.received[p]) << "position " << p << " receives every block but its own";
    EXPECT_EQ(h.sent_total, f.sent_total);
  }
}

TEST(HierarchicalReduceScatter, UnevenNodesAreRefusedAndDegenerateCasesAreRings) {
  for (auto op : {Operation::reduce_scatter, Operation::all_gather}) {
    Request r;
    r.op = op;
    r.ranks = 4;
    r.bytes = 400;
    r.algorithm = Algorithm::hierarchical;
    r.node_of = {0, 0, 0, 1};
    try {
      make_schedule(r);
      ADD_FAILURE() << "uneven nodes accepted";
    } catch (const std::invalid_argument& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("hierarchical " + std::string(to_string(op)) + " needs the same number of positions"),
                std::string::npos)
          << message;
    }
    for (auto nodes : {std::vector<int>{0, 0, 0, 0}, std::vector<int>{3, 2, 1, 0}, std::vector<int>{}}) {
      r.node_of = nodes;
      EXPECT_EQ(make_schedule(r)->step_count(), 3);
    }
  }
}

TEST(AllToAllV, FollowsTheMatrixAndSkipsEmptyEntries) {
  Request r;
  r.op = Operation::all_to_all_v;
  r.ranks = 3;
  r.matrix = {0, 10, 0, 20, 0, 30, 40, 0, 0};
  r.algorithm = Algorithm::direct;
  const auto direct = make_schedule(r);
  const Step s1 = direct->step(1, 0);
  ASSERT_EQ(s1.sends.size(), 2u);
  EXPECT_EQ(s1.sends[0].peer, 0);
  EXPECT_EQ(s1.sends[0].bytes, 20);
  EXPECT_EQ(s1.sends[1].bytes, 30);
  ASSERT_EQ(s1.recvs.size(), 1u);
  EXPECT_EQ(s1.recvs[0].bytes, 10);
  r.algorithm = Algorithm::pairwise;
  const auto pairwise = make_schedule(r);
  EXPECT_EQ(pairwise->step(0, 0).sends.at(0).bytes, 10); // 0 -> 1 in round 1
  EXPECT_TRUE(pairwise->step(0, 1).sends.empty());       // 0 -> 2 is empty
  EXPECT_EQ(pairwise->step(0, 1).recvs.at(0).bytes, 20); // 1 -> 0 in round 2
  EXPECT_TRUE(pairs_match(*pairwise));
}

TEST(Barrier, DisseminationRoundsOfZeroByteMessages) {
  Request r;
  r.op = Operation::barrier;
  r.algorithm = Algorithm::recursive_doubling;
  r.ranks = 5;
  const auto s = make_schedule(r);
  ASSERT_EQ(s->step_count(), 3);
  for (int k = 0; k < 3; ++k) {
    const Step st = s->step(4, k);
    EXPECT_EQ(st.sends.at(0).peer, (4 + (1 << k)) % 5);
    EXPECT_EQ(st.sends.at(0).bytes, 0);
    EXPECT_EQ(st.recvs.at(0).peer, (4 - (1 << k) + 5) % 5);
  }
}

TEST(SendRecv, OneTransferFromTheRootToTheNext) {
  Request r;
  r.op = Operation::send_recv;
  r.algorithm = Algorithm::direct;
  r.ranks = 4;
  r.bytes = 123;
  r.root = 3;
  const auto s = make_schedule(r);
  ASSERT_EQ(s->step_count(), 1);
  EXPECT_EQ(s->step(3, 0).sends.at(0).peer, 0);
  EXPECT_EQ(s->step(0, 0).recvs.at(0).bytes, 123);
  EXPECT_TRUE(s->step(1, 0).sends.empty() && s->step(1, 0).recvs.empty());
}

} // namespace
} // namespace dtsim::collectives
