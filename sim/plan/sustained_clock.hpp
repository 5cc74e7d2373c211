#pragma once
// Plan-private: the clock each rank's GPU sustains over its iteration (calibration/sustained_clock.hpp), applied to
// a plan the planners built at burst clocks.
#include "sim/plan/plan.hpp"

namespace dtsim::plan::detail {

// For each program, the stretch of its compute-stream kernels (those the cost model priced) on its ranks' GPU sets
// the clock; their clock-sensitive time stretches by 1 / rate. Rank 0's clock goes to `plan.clock` and to its kernel
// rows. Waits for the host stay as they were (a slower GPU would shorten them: the planners' launch timelines ran
// at burst clocks).
void apply_sustained_clocks(Plan& plan, const scenario::Scenario& s);

} // namespace dtsim::plan::detail
