#pragma once
// The request a collective op over `members` makes of sim/collectives: its sizes, the node each member is on and
// which switches reduce. The planner (to resolve `auto` and name it), the estimate, the benchmark and the engine all
// ask the same question, so they build and resolve it here.
#include "sim/collectives/nccl.hpp"
#include "sim/collectives/schedule.hpp"
#include "sim/graph/execution_graph.hpp"
#include "topologies/cluster.hpp"

#include <vector>

namespace dtsim::graph {

// What NCCL sees of the cluster's GPUs and links (absent for CPU clusters).
collectives::NcclSystem nccl_system(const topologies::ClusterSpec& cluster);

collectives::Request collective_request(const Collective& c, const std::vector<int>& members,
                                        const topologies::ClusterSpec& cluster);

// The request as it runs: its algorithm and protocol, where `automatic`, chosen as NCCL's tuning would
// (collectives::resolve). The one place the planner, the estimate, the collective benchmark and the engine resolve a
// collective, so that all four price and replay the same algorithm. An op that stands for several ranks' traffic is
// resolved for one rank's bytes and then carries them all.
collectives::Request resolved_request(const Collective& c, const std::vector<int>& members,
                                      const topologies::ClusterSpec& cluster);
// How the resolved call runs on the wire (collectives::wire_model) for the op's flows: where they stand for several
// ranks (Collective::stands_for), NCCL's channels are one rank's and its rate cap theirs together.
collectives::WireModel wire_model(const Collective& c, const collectives::Request& resolved);

} // namespace dtsim::graph
