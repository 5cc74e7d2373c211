// The plan's sustained clock (sim/plan/sustained_clock.hpp): a rank's priced kernels set its clock, and only their
// clock-sensitive time stretches.
#include "sim/plan/sustained_clock.hpp"

#include <gtest/gtest.h>

namespace dtsim::plan {
namespace {

using calibration::KernelClass;
using calibration::Precision;

// Idle 100 W, 700 W held at the limit; clock 1980 MHz, 1365 MHz at rate 0.854 (as the H100's).
scenario::Scenario round_scenario() {
  scenario::Scenario s;
  auto& p = s.gpu.power;
  p.tdp = 700, p.idle = 100, p.math = 700, p.memory = 400;
  p.joules_per_flop = {{KernelClass::gemm, {{Precision::bf16, 0.75e-12}}}};
  p.joules_per_byte = 100e-12;
  p.max_clock_mhz = 1980, p.limit_clock_mhz = 1365, p.rate_at_limit = 0.854;
  return s;
}

graph::Op compute(double seconds, double math, double joules) {
  return {"op", graph::Stream::compute, graph::Compute{seconds, 0, 0, math, joules}, {}};
}

// Rank 0 runs three GEMMs (1.25 ms, 0.78 J each), a copy (1 ms, 0.3 J) and a closed-form collective priced on the
// compute stream (0.5 s, no kernel energy); rank 1 runs the copy alone.
Plan round_plan() {
  Plan plan;
  graph::Program gemms, copy;
  for (int i = 0; i < 3; ++i)
    gemms.ops.push_back(compute(1.25e-3, 1.25e-3, 0.78));
  gemms.ops.push_back(compute(1e-3, 0, 0.3));
  gemms.ops.push_back(compute(0.5, 0, 0));
  copy.ops.push_back(compute(1e-3, 0, 0.3));
  plan.graph.programs = {gemms, copy};
  plan.graph.rank_program = {0, 1};
  KernelRow gemm_row;
  gemm_row.seconds = gemm_row.math_seconds = 3 * 1.25e-3;
  gemm_row.efficiency = 0.8;
  KernelRow copy_row;
  copy_row.seconds = 1e-3;
  plan.kernels = {gemm_row, copy_row};
  return plan;
}

double seconds(const graph::Op& op) {
  return std::get<graph::Compute>(op.body).seconds;
}

TEST(SustainedClockPlan, PricedKernelsSetTheirRanksClock) {
  auto plan = round_plan();
  detail::apply_sustained_clocks(plan, round_scenario());
  // Rank 0: 3 x 0.78 + 0.3 = 2.64 J over 3.75 + 1 = 4.75 ms draws 100 + 555.8 = 655.8 W at burst clocks: under 700 W.
  EXPECT_FALSE(plan.clock.capped);
  EXPECT_NEAR(plan.clock.demand_watts, 100 + 2.64 / 4.75e-3, 1e-9);
  EXPECT_DOUBLE_EQ(seconds(plan.graph.programs[0].ops[0]), 1.25e-3);
  EXPECT_DOUBLE_EQ(plan.kernels[0].sm_clock_mhz, 1980);
}

TEST(SustainedClockPlan, ACappedRankStretchesOnlyItsMathAndItsRows) {
  auto plan = round_plan();
  auto s = round_scenario();
  s.gpu.power.math = 500; // 400 W above idle: the 2.64 J need 6.6 ms; the copy keeps 1 ms, the GEMMs 3.75 -> 5.6 ms
  detail::apply_sustained_clocks(plan, s);
  ASSERT_TRUE(plan.clock.capped);
  EXPECT_NEAR(plan.clock.rate, 3.75 / 5.6, 1e-12);
  const auto& ops = plan.graph.programs[0].ops;
  EXPECT_NEAR(seconds(ops[0]), 5.6e-3 / 3, 1e-15);
  EXPECT_DOUBLE_EQ(seconds(ops[3]), 1e-3); // the copy
  EXPECT_DOUBLE_EQ(seconds(ops[4]), 0.5);  // not a priced kernel: neither counted nor stretched
  EXPECT_NEAR(plan.kernels[0].seconds, 5.6e-3, 1e-15);
  EXPECT_NEAR(plan.kernels[0].efficiency, 0.8 * 3.75 / 5.6, 1e-12);
  EXPECT_DOUBLE_EQ(plan.kernels[1].seconds, 1e-3);
  EXPECT_NEAR(plan.kernels[1].sm_clock_mhz, 1980 - (1 - 3.75 / 5.6) * (1980 - 1365) / (1 - 0.854), 1e-9);
  // Rank 1's copy alone draws 400 W, under its limit: its program keeps its time.
  EXPECT_DOUBLE_EQ(seconds(plan.graph.programs[1].ops[0]), 1e-3);
}

} // namespace
} // namespace dtsim::plan
