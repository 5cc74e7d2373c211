#pragma once
// Report-private: where one rank's time went between two instants, each moment counted once, by what was running:
// a kernel (compute), else a collective or transfer the compute waits on, by the parallel dimension it serves
// (tensor, expert, pipeline, data, in that order of precedence), else nothing (idle: waiting for other ranks, the
// pipeline bubble, or data). A pipeline receive counts only from the moment its sender posted (the engine records
// the transfer, not the wait).
#include "sim/engine/engine.hpp"
#include "sim/graph/execution_graph.hpp"

namespace dtsim::report::detail {

struct TimeShares {
  double compute = 0, tensor = 0, expert = 0, pipeline = 0, data = 0, idle = 0;
  double communication_busy = 0; // every communication op's time, hidden or not (concurrent ones each count)
  double communication() const { return tensor + expert + pipeline + data; }
};

TimeShares attribute_time(const graph::Program& program, const engine::RankTimeline& timeline, double lo, double hi);

} // namespace dtsim::report::detail
