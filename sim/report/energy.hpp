#pragma once
// What an iteration draws from the grid. Each kernel of rank 0's iteration runs at the draw its bound sets (math:
// the GPU's compute-bound draw, at its power cap; HBM or L2: its streaming draw; a launch-bound kernel: idle), exposed
// communication at the streaming draw (NCCL's kernels move data through HBM and the links), and the rest of the
// iteration (waiting on a peer, a pipeline bubble, the host) at the idle draw. The figures are the GPU profile's,
// each measured or sourced there; rank 0 stands for every GPU, or on a cluster of mixed GPUs each group's program
// for its group, at its own GPU's figures.
#include "sim/lifecycle/energy.hpp"
#include "sim/report/result.hpp"

namespace dtsim::scenario {
struct Scenario;
}

namespace dtsim::report {

// `result`'s energy from its kernels, breakdown and iteration time (filled by summarize).
IterationEnergy iteration_energy(const scenario::Scenario& scenario, const RunResult& result);

// The node's draw training and idle (a cluster of mixed GPUs: the mean node's), before the facility's PUE.
lifecycle::NodePower node_power(const IterationEnergy& energy);

} // namespace dtsim::report
