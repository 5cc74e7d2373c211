// The closed forms against a lock-step reference executor walking the schedules (schedule_checks.hpp): within
// 2% wherever lock step is exact, and the double binary tree's bound holds with its slack accounted for.
#include "schedule_checks.hpp"
#include "sim/collectives/closed_form.hpp"

#include <cmath>

namespace dtsim::collectives {
namespace {

using namespace checks;

struct Cost {
  double alpha, bandwidth, gamma;
};

// The reduction overlaps the receives, so a step that receives and reduces x bytes takes
// alpha + x max(1/B, gamma): the transfer dominates in the first three (gamma < 1/B), the reduction in the last
// (gamma > 1/B).
constexpr Cost kCosts[] = {{1e-5, 1e9, 1e-10}, {2e-6, 1e11, 0}, {0, 1e10, 5e-11}, {2e-6, 1e11, 5e-11}};

struct Param {
  Case c;
  int n;
  double bytes;
};

std::vector<Param> params() {
  std::vector<Param> out;
  for (const auto& c : supported_cases())
    for (int n : {1, 2, 3, 8, 64, 100})
      for (double bytes : {1000.0, 3.0 * 1024 * 1024 + 5, 100.0 * 1024 * 1024 + 1})
        out.push_back({c, n, bytes});
  return out;
}

class ClosedForm : public ::testing::TestWithParam<Param> {};

TEST_P(ClosedForm, AgreesWithTheLockStepExecutor) {
  const auto [c, n, bytes] = GetParam();
  const Request request = request_for(c, n, bytes, 1);
  const auto schedule = make_schedule(request);
  for (const auto& cost : kCosts) {
    const double closed = closed_form_time(request, cost.alpha, cost.bandwidth, cost.gamma);
    const double walked = lock_step_time(*schedule, cost.alpha, cost.bandwidth, cost.gamma);
    // Blocks of an integral buffer differ by up to a byte, and lock step waits for the largest: allow a few
    // bytes per step and position on top of the 2%.
    const double rounding = schedule->step_count() * n * (1 / cost.bandwidth + cost.gamma);
    EXPECT_NEAR(walked, closed, 0.02 * closed + rounding)
        << "alpha " << cost.alpha << " B " << cost.bandwidth << " gamma " << cost.gamma;
    if (c.algorithm == Algorithm::double_binary_tree && n > 1) {
      // NCCL's trees: a position is busy in at most 4 tree links per step and reduces at most 3 chunks, the
      // reduction overlapping the transfers.
      const double chunks = std::clamp(std::ceil(bytes / 2 / (512 * 1024)), 1.0, 1024.0);
      const double chunk = std::ceil(bytes / 2 / chunks);
      const double bound = schedule->step_count() * (cost.alpha + chunk * std::max(4 / cost.bandwidth, 3 * cost.gamma));
      EXPECT_LE(walked, bound);
      EXPECT_GE(walked, schedule->step_count() * cost.alpha * (1 - 1e-9)); // every step moves a chunk somewhere
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Collectives, ClosedForm, ::testing::ValuesIn(params()),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return name_of(info.param.c) + "_n" + std::to_string(info.param.n) + "_" +
                                  std::to_string(static_cast<long long>(info.param.bytes)) + "B";
                         });

TEST(ClosedForm, DoubleBinaryTreeLatencyTermsAreExact) {
  // Without bandwidth and reduction costs every step costs alpha: (C + 2D - 1) alpha exactly.
  for (int n : {2, 3, 8, 12, 13, 64, 100})
    for (double bytes : {1000.0, 64.0 * 1024 * 1024}) {
      Request r;
      r.ranks = n;
      r.bytes = bytes;
      r.algorithm = Algorithm::double_binary_tree;
      const auto s = make_schedule(r);
      const double closed = closed_form_time(r, 1e-5, 1e300, 0);
      EXPECT_NEAR(lock_step_time(*s, 1e-5, 1e300, 0), closed, 1e-12 * closed) << n;
    }
}

TEST(ClosedForm, TextbookFormulasForPowersOfTwo) {
  const double a = 1e-5, B = 1e9, S = 1 << 20;
  // The reduction overlaps the receives: a step that receives and reduces x bytes takes a + x R, R = max(1/B, g),
  // the transfer's time with g = 1e-10 and the reduction's with g = 1e-8.
  for (const double g : {1e-10, 1e-8}) {
    SCOPED_TRACE(g);
    const double R = std::max(1 / B, g);
    Request r;
    r.ranks = 8;
    r.bytes = S;
    r.algorithm = Algorithm::ring;
    EXPECT_DOUBLE_EQ(closed_form_time(r, a, B, g), 7 * (a + S / 8 * R) + 7 * (a + S / 8 / B));
    r.algorithm = Algorithm::recursive_doubling;
    EXPECT_DOUBLE_EQ(closed_form_time(r, a, B, g), 3 * (a + S * R));
    r.algorithm = Algorithm::rabenseifner;
    EXPECT_DOUBLE_EQ(closed_form_time(r, a, B, g), 6 * a + 7.0 / 8 * S * R + 7.0 / 8 * S / B);
    r.algorithm = Algorithm::binomial_tree;
    EXPECT_DOUBLE_EQ(closed_form_time(r, a, B, g), 3 * (a + S * R) + 3 * (a + S / B));
    r.ranks = 6; // folded: m = 4
    r.algorithm = Algorithm::recursive_doubling;
    EXPECT_DOUBLE_EQ(closed_form_time(r, a, B, g), 2 * (a + S * R) + (a + S * R) + (a + S / B));
    r.op = Operation::reduce_scatter;
    r.ranks = 8;
    r.algorithm = Algorithm::ring;
    EXPECT_DOUBLE_EQ(closed_form_time(r, a, B, g), 7 * (a + S / 8 * R));
    r.op = Operation::reduce;
    r.algorithm = Algorithm::binomial_tree;
    EXPECT_DOUBLE_EQ(closed_form_time(r, a, B, g), 3 * (a + S * R));
    r.op = Operation::all_to_all;
    r.algorithm = Algorithm::pairwise;
    EXPECT_DOUBLE_EQ(closed_form_time(r, a, B, g), 7 * (a + S / 8 / B));
    r.algorithm = Algorithm::direct;
    EXPECT_DOUBLE_EQ(closed_form_time(r, a, B, g), a + 7 * S / 8 / B);
    r.op = Operation::barrier;
    r.algorithm = Algorithm::recursive_doubling;
    r.ranks = 100;
    EXPECT_DOUBLE_EQ(closed_form_time(r, a, B, g), 7 * a);
    r.ranks = 1;
    EXPECT_EQ(closed_form_time(r, a, B, g), 0);
  }
}

// Lock step on two kinds of link: a transfer within a node costs (alpha_i, B_i), across nodes (alpha_e, B_e); the
// reduction overlaps the step's transfers, as in lock_step_time.
double two_level_lock_step(const Schedule& s, const std::vector<int>& node_of, double ai, double bi, double ae,
                           double be, double gamma) {
  double total = 0;
  for (int k = 0; k < s.step_count(); ++k) {
    double slowest = 0;
    for (int p = 0; p < s.ranks(); ++p) {
      const Step st = s.step(p, k);
      double alpha = 0, out = 0, in = 0;
      for (const auto& x : st.sends) {
        const bool intra = node_of[p] == node_of[x.peer];
        alpha = std::max(alpha, intra ? ai : ae);
        out += x.bytes / (intra ? bi : be);
      }
      for (const auto& x : st.recvs) {
        const bool intra = node_of[p] == node_of[x.peer];
        alpha = std::max(alpha, intra ? ai : ae);
        in += x.bytes / (intra ? bi : be);
      }
      slowest = std::max(slowest, alpha + std::max(std::max(out, in), st.reduce_bytes * gamma)); // overlapped
    }
    total += slowest;
  }
  return total;
}

TEST(ClosedForm, HierarchicalWithDifferentIntraAndInterNodeLinks) {
  // 1/B_i = 5e-12 and 1/B_e = 4e-11 seconds per byte: the reduction is hidden behind both kinds of transfer,
  // outlasts the intra-node ones only, or outlasts both.
  for (double gamma : {1e-12, 1e-11, 1e-10})
    for (int n : {8, 64, 100})
      for (double bytes : {1e6 + 3, 3e8 + 1}) {
        for (auto op : {Operation::all_reduce, Operation::reduce_scatter, Operation::all_gather}) {
          const Request r = request_for({op, Algorithm::hierarchical}, n, bytes);
          const double ai = 2e-6, bi = 2e11, ae = 1e-5, be = 2.5e10;
          const double closed = closed_form_time(r, ai, bi, ae, be, gamma);
          const double walked = two_level_lock_step(*make_schedule(r), r.node_of, ai, bi, ae, be, gamma);
          EXPECT_NEAR(walked, closed, 0.02 * closed)
              << to_string(op) << " " << n << " ranks, " << bytes << " bytes, gamma " << gamma;
          EXPECT_DOUBLE_EQ(closed_form_time(r, ae, be, ae, be, gamma), closed_form_time(r, ae, be, gamma));
        }
      }
}

// By hand, 4 nodes of 8 (g = 8, N = 4), S = 64 MiB: the reduce-scatter's intra-node ring moves 7 blocks of S/8
// and reduces them (R_i = max(1/B_i, gamma)), then each rail's ring 3 blocks of S/32 (R_e); the all-gather the
// rails' rings first, then the intra-node ring, without reducing. Together they are the hierarchical all-reduce.
TEST(ClosedForm, HierarchicalReduceScatterAndAllGatherByHand) {
  const double ai = 1e-6, bi = 2e11, ae = 5e-6, be = 1e10, S = 64.0 * (1 << 20);
  for (double gamma : {1e-12, 1e-11}) {
    const double Ri = std::max(1 / bi, gamma), Re = std::max(1 / be, gamma);
    Request r;
    r.ranks = 32;
    r.bytes = S;
    r.algorithm = Algorithm::hierarchical;
    for (int p = 0; p < 32; ++p)
      r.node_of.push_back(p / 8);
    r.op = Operation::reduce_scatter;
    const double rs = closed_form_time(r, ai, bi, ae, be, gamma);
    EXPECT_DOUBLE_EQ(rs, 7 * (ai + S / 8 * Ri) + 3 * (ae + S / 32 * Re));
    r.op = Operation::all_gather;
    const double ag = closed_form_time(r, ai, bi, ae, be, gamma);
    EXPECT_DOUBLE_EQ(ag, 3 * (ae + S / 32 / be) + 7 * (ai + S / 8 / bi));
    r.op = Operation::all_reduce;
    EXPECT_DOUBLE_EQ(closed_form_time(r, ai, bi, ae, be, gamma), rs + ag);
    // One kind of link: fewer latency terms than the flat ring's 31 and the same bytes per position.
    r.op = Operation::reduce_scatter;
    const double one_link = 10 * ae + (7 * S / 8 + 3 * S / 32) * Re;
    EXPECT_NEAR(closed_form_time(r, ae, be, gamma), one_link, 1e-12 * one_link);
    Request ring = r;
    ring.algorithm = Algorithm::ring;
    EXPECT_LT(closed_form_time(r, ae, be, gamma), closed_form_time(ring, ae, be, gamma));
  }
}

TEST(ClosedForm, TwoLevelFormOnlyForHierarchical) {
  Request r;
  r.ranks = 8;
  r.bytes = 1e6;
  r.algorithm = Algorithm::ring;
  EXPECT_THROW(closed_form_time(r, 1e-6, 1e11, 1e-5, 1e10, 0), std::invalid_argument);
  for (auto op : {Operation::reduce_scatter, Operation::all_gather}) {
    r.op = op;
    EXPECT_THROW(closed_form_time(r, 1e-6, 1e11, 1e-5, 1e10, 0), std::invalid_argument);
    r.algorithm = Algorithm::hierarchical;
    r.node_of = {0, 0, 0, 0, 1, 1, 1, 1};
    EXPECT_NO_THROW(closed_form_time(r, 1e-6, 1e11, 1e-5, 1e10, 0));
    r.node_of = {0, 0, 0, 1, 1, 1, 1, 1};
    EXPECT_THROW(closed_form_time(r, 1e-6, 1e11, 1e-5, 1e10, 0), std::invalid_argument);
    r.algorithm = Algorithm::ring;
    r.node_of.clear();
  }
}

TEST(ClosedForm, AutomaticIsResolvedAndBadRequestsThrow) {
  Request r;
  r.ranks = 16;
  r.bytes = 64 << 20;
  Request ring = r;
  ring.algorithm = Algorithm::ring;
  EXPECT_DOUBLE_EQ(closed_form_time(r, 1e-5, 1e10, 0), closed_form_time(ring, 1e-5, 1e10, 0));
  r.algorithm = Algorithm::pairwise;
  EXPECT_THROW(closed_form_time(r, 1e-5, 1e10, 0), std::invalid_argument);
}

} // namespace
} // namespace dtsim::collectives
