#pragma once
// A closed-form estimate of a plan's iteration, without SimGrid: the same execution graph and the same op costs as
// the replay, with no contention beyond each node's NIC shared evenly by its GPUs. Each rank's streams run their ops
// in program order as soon as their dependencies allow (max-plus, in no particular order: without contention an op's
// end is a function of its inputs' ends alone); a collective starts when the last member of its group posts it and
// lasts its closed-form time (collectives/closed_form.hpp) for the algorithm and protocol NCCL's tuning picks, over
// the group's slowest link class; a receive ends bytes / bandwidth + latency after the later of its send and itself.
// What it leaves out: SimGrid's flow sharing (concurrent collectives over one link, several rings' flows crossing a
// switch uplink), the SMs a collective takes from overlapping kernels. Each rank's kernels take its compute_slowdown
// (its GPU's speed, stragglers), as in the replay. It is what `dtsim search` ranks
// candidates by before it simulates the best.
#include "io/error.hpp"
#include "sim/graph/execution_graph.hpp"
#include "topologies/cluster.hpp"

#include <stdexcept>
#include <vector>

namespace dtsim::graph {

struct Estimate {
  double iteration_seconds = 0;       // the last iteration's, from the first rank's start to the last rank's end
  std::vector<double> iteration_ends; // per iteration, when its last rank finished it
};

// Throws EstimateError for graphs it cannot price: parameter servers and one-sided pushes (their answers depend on
// arrival order), and graphs whose ranks wait on one another for ever.
class EstimateError : public RunError {
public:
  using RunError::RunError;
};

Estimate estimate(const topologies::ClusterSpec& cluster, const ExecutionGraph& graph, int iterations = 2);

// The estimate's price of one collective over `members` (ranks), each node's NIC shared by `sharers` ranks that cross
// the network at once, and of one transfer between two ranks: for closed forms built on the same terms (the search's
// screen, plan/layout_price.hpp).
double collective_seconds(const topologies::ClusterSpec& cluster, const Collective& c, const std::vector<int>& members,
                          int sharers);
double transfer_seconds(const topologies::ClusterSpec& cluster, int from, int to, double bytes, int sharers);

} // namespace dtsim::graph
