// aggregate(): one step per phase, the same bytes per pair, reductions and latency terms as the step schedule,
// and cheap enough for big groups.
#include "schedule_checks.hpp"

#include <chrono>

namespace dtsim::collectives {
namespace {

using namespace checks;

struct Param {
  Case c;
  int n;
};

std::vector<Param> params() {
  std::vector<Param> out;
  for (const auto& c : supported_cases())
    for (int n : {1, 2, 3, 8, 64, 100})
      out.push_back({c, n});
  return out;
}

class Aggregate : public ::testing::TestWithParam<Param> {};

TEST_P(Aggregate, KeepsPairBytesReductionsAndLatencyTerms) {
  const auto [c, n] = GetParam();
  const Request request = request_for(c, n, 3.0 * 1024 * 1024 + 5, 1);
  const auto steps = make_schedule(request);
  const auto merged = aggregate(request);
  ASSERT_EQ(merged->ranks(), n);
  const bool pipeline = c.algorithm == Algorithm::double_binary_tree ||
                        ((c.op == Operation::broadcast || c.op == Operation::reduce) && c.algorithm == Algorithm::ring);
  if (pipeline) { // pipelines are not aggregated: merging their steps would lose the pipeline's overlap
    EXPECT_EQ(merged->step_count(), steps->step_count());
    return;
  }
  const auto phases = steps->phase_starts();
  EXPECT_EQ(merged->step_count(), steps->step_count() == 0 ? 0 : static_cast<int>(phases.size()));
  std::vector<int> expected_starts(std::max(merged->step_count(), 1));
  for (std::size_t i = 0; i < expected_starts.size(); ++i)
    expected_starts[i] = static_cast<int>(i);
  EXPECT_EQ(merged->phase_starts(), expected_starts);
  EXPECT_TRUE(pairs_match(*merged));

  const Totals a = totals(*steps), b = totals(*merged);
  EXPECT_EQ(a.pair_bytes, b.pair_bytes);
  EXPECT_EQ(a.latency_terms, b.latency_terms);
  EXPECT_EQ(a.reduced, b.reduced);

  for (int k = 0; k < merged->step_count(); ++k)
    for (int p = 0; p < n; ++p) {
      const Step st = merged->step(p, k);
      for (std::size_t i = 1; i < st.sends.size(); ++i)
        EXPECT_LT(st.sends[i - 1].peer, st.sends[i].peer) << "one send per peer, ascending";
      for (std::size_t i = 1; i < st.recvs.size(); ++i)
        EXPECT_LT(st.recvs[i - 1].peer, st.recvs[i].peer) << "one receive per peer, ascending";
      if (st.sends.empty() && st.recvs.empty()) {
        EXPECT_EQ(st.latency_terms, 0);
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Collectives, Aggregate, ::testing::ValuesIn(params()),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return name_of(info.param.c) + "_n" + std::to_string(info.param.n);
                         });

TEST(Aggregate, RingAllReduceIsTwoStepsOfAllButOneBlock) {
  Request r;
  r.ranks = 10;
  r.bytes = 1000;
  r.algorithm = Algorithm::ring;
  const auto s = aggregate(r);
  ASSERT_EQ(s->step_count(), 2);
  const Step rs = s->step(3, 0);
  ASSERT_EQ(rs.sends.size(), 1u);
  EXPECT_EQ(rs.sends[0].peer, 4);
  EXPECT_EQ(rs.sends[0].bytes, 900);
  EXPECT_EQ(rs.recvs[0].peer, 2);
  EXPECT_EQ(rs.reduce_bytes, 900);
  EXPECT_EQ(rs.latency_terms, 9);
  EXPECT_EQ(s->step(3, 1).reduce_bytes, 0);
}

TEST(Aggregate, HierarchicalKeepsItsThreePhases) {
  const Request r = request_for({Operation::all_reduce, Algorithm::hierarchical}, 64, 1 << 20);
  const auto s = aggregate(r);
  ASSERT_EQ(s->step_count(), 3);
  EXPECT_EQ(s->step(0, 0).latency_terms, 7);  // 8 positions per node
  EXPECT_EQ(s->step(0, 1).latency_terms, 14); // 8 nodes
  EXPECT_EQ(s->step(0, 2).latency_terms, 7);
}

TEST(Aggregate, HierarchicalReduceScatterAndAllGatherKeepTheirTwoPhases) {
  for (auto op : {Operation::reduce_scatter, Operation::all_gather}) {
    const Request r = request_for({op, Algorithm::hierarchical}, 64, 1 << 20);
    const auto s = aggregate(r);
    ASSERT_EQ(s->step_count(), 2);
    const int intra = op == Operation::reduce_scatter ? 0 : 1;
    EXPECT_EQ(s->step(0, intra).latency_terms, 7);     // 8 positions per node
    EXPECT_EQ(s->step(0, 1 - intra).latency_terms, 7); // 8 nodes
    EXPECT_EQ(s->step(0, intra).sends.size(), 1u);     // the ring's successor on the node
    EXPECT_EQ(s->step(0, 1 - intra).sends.size(), 1u); // the rail's successor
    EXPECT_EQ(s->step(0, intra).reduce_bytes + s->step(0, 1 - intra).reduce_bytes,
              op == Operation::reduce_scatter ? (1 << 20) - (1 << 20) / 64 : 0);
  }
}

TEST(Aggregate, BigRingIsCheap) {
  // 1024 positions of a 2046-step ring: every position's two phases, O(steps) each.
  Request r;
  r.ranks = 1024;
  r.bytes = 1 << 30;
  r.algorithm = Algorithm::ring;
  const auto start = std::chrono::steady_clock::now();
  const auto s = aggregate(r);
  double sent = 0;
  for (int p = 0; p < r.ranks; ++p)
    for (int k = 0; k < s->step_count(); ++k)
      sent += s->step(p, k).sends.at(0).bytes;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(sent, 2.0 * 1023 * r.bytes);
  EXPECT_LT(seconds, 10.0);
  RecordProperty("seconds", std::to_string(seconds));
}

} // namespace
} // namespace dtsim::collectives
