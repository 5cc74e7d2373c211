#pragma once
// Changes of a scenario's hardware that may only make its iteration shorter, shared by the invariant tests.
#include "sim/scenario/scenario.hpp"

namespace dtsim::invariants {

// A GPU twice as fast in every rate the profile gives (peak FLOP/s per precision, memory and L2 bandwidth) and twice
// as frugal (half the energy a FLOP and a byte cost, so that it holds its power limit at twice the rate: at the same
// energy a power-capped GPU cannot be faster). The network stays the same.
inline scenario::Scenario with_faster_gpu(scenario::Scenario s) {
  for (auto& [precision, flops] : s.gpu.peak_flops)
    flops *= 2;
  s.gpu.memory_bandwidth *= 2;
  s.gpu.l2_bandwidth *= 2;
  s.cluster.memory_bandwidth *= 2;
  for (auto& [kind, by_precision] : s.gpu.power.joules_per_flop)
    for (auto& [precision, joules] : by_precision)
      joules /= 2;
  s.gpu.power.joules_per_byte /= 2;
  return s;
}

} // namespace dtsim::invariants
