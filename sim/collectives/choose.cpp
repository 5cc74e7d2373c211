// choose_algorithm: what NCCL or MPICH would run. GPUs (Request::nccl present) run NCCL: all-reduce,
// reduce-scatter, all-gather, broadcast and reduce take the algorithm NCCL's tuning model picks (nccl.hpp,
// resolve()). Otherwise (CPU ranks over Gloo or MPI, and the operations NCCL does not tune), by operation
// (S = bytes, n = ranks):
//
// all-reduce
//   0. in_switch     when the switches the group goes through reduce (NVLink SHARP for one node, InfiniBand
//                    SHARP across nodes) and S >= 256 KiB: NCCL's NVLS and CollNet algorithms.
//   1. hierarchical  when node_of shows more than one node, every node holds the same number (> 1) of
//                    positions, and S >= 1 MiB: NCCL's multi-node all-reduce keeps the big transfers on
//                    the intra-node fabric and crosses nodes once per rail.
//   2. ring          when S >= 256 KiB: bandwidth-optimal (2(n-1)/n S per rank); NCCL's tuning picks Ring
//                    for large messages (NVIDIA, "Massively Scale Your Deep Learning Training with NCCL
//                    2.4", 2019).
//   3. recursive_doubling when S < 2 KiB: MPICH's short-message all-reduce (MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE
//                    = 2048; Thakur, Rabenseifner and Gropp 2005), log2 n latency terms.
//   4. double_binary_tree when n > 8 (2 KiB <= S < 256 KiB): NCCL picks Tree for small and medium messages
//                    at scale, where its 2 log2 n latency terms beat the ring's 2(n-1).
//   5. rabenseifner  otherwise (n <= 8, 2 KiB <= S < 256 KiB): MPICH's choice above 2 KiB.
// reduce-scatter, all-gather
//   1. hierarchical  under the all-reduce's node conditions (more than one node, the same number > 1 of
//                    positions on each), at every size: NCCL runs these operations as rings only, but over
//                    several channels whose rings leave each node through different NICs; the rail-parallel
//                    schedule models that (one ring per rail crosses the network, the rest stays on the
//                    intra-node fabric). It has (g-1) + (N-1) latency terms against the flat ring's gN - 1 and
//                    the same bytes per position, so no size favours the flat ring.
//   2. ring          otherwise.
// broadcast, reduce: binomial_tree below 1 MiB (MPICH's short-message broadcast and reduce), ring (NCCL's
//   pipelined chain) from 1 MiB on.
// all-to-all, all-to-all-v: pairwise (MPICH's long-message all-to-all; NCCL posts all pairs in one group,
//   which `direct` models, but pairwise keeps n-1 flows per round instead of n(n-1)).
// barrier: recursive_doubling (dissemination, MPICH's barrier). send-recv: direct.
#include "sim/collectives/schedule.hpp"

#include <map>

namespace dtsim::collectives {
namespace {

constexpr double KiB = 1024;
constexpr double MiB = 1024 * KiB;

// More than one node, more than one position per node, and the same number on every node.
bool multi_node_multi_gpu(const Request& r) {
  if (static_cast<int>(r.node_of.size()) != r.ranks) return false;
  std::map<int, int> per_node;
  for (int node : r.node_of)
    ++per_node[node];
  if (per_node.size() < 2) return false;
  const int g = per_node.begin()->second;
  if (g < 2) return false;
  for (const auto& [node, count] : per_node)
    if (count != g) return false;
  return true;
}

// The switches this group's all-reduce would go through can reduce: the NVSwitch of a single-node group, or
// the network switch of a group over several nodes (NCCL picks NVLS, or CollNet with SHARP, when present).
bool switches_reduce(const Request& r) {
  bool several_nodes = r.node_of.empty() && r.ranks > 1;
  for (int node : r.node_of)
    several_nodes = several_nodes || node != r.node_of.front();
  return several_nodes ? r.network_switch_reduces : r.node_switch_reduces;
}

} // namespace

Algorithm choose_algorithm(const Request& r) {
  const bool tuned_by_nccl = r.op == Operation::all_reduce || r.op == Operation::reduce_scatter ||
                             r.op == Operation::all_gather || r.op == Operation::broadcast || r.op == Operation::reduce;
  if (r.nccl.present() && tuned_by_nccl && r.ranks > 1) {
    Request automatic = r;
    automatic.algorithm = Algorithm::automatic;
    return resolve(std::move(automatic)).algorithm;
  }
  switch (r.op) {
  case Operation::all_reduce:
    if (switches_reduce(r) && r.bytes >= 256 * KiB) return Algorithm::in_switch;
    if (multi_node_multi_gpu(r) && r.bytes >= 1 * MiB) return Algorithm::hierarchical;
    if (r.bytes >= 256 * KiB) return Algorithm::ring;
    if (r.bytes < 2 * KiB) return Algorithm::recursive_doubling;
    return r.ranks > 8 ? Algorithm::double_binary_tree : Algorithm::rabenseifner;
  case Operation::reduce_scatter:
  case Operation::all_gather:
    return multi_node_multi_gpu(r) ? Algorithm::hierarchical : Algorithm::ring;
  case Operation::broadcast:
  case Operation::reduce:
    return r.bytes < 1 * MiB ? Algorithm::binomial_tree : Algorithm::ring;
  case Operation::all_to_all:
  case Operation::all_to_all_v:
    return Algorithm::pairwise;
  case Operation::barrier:
    return Algorithm::recursive_doubling;
  case Operation::send_recv:
    return Algorithm::direct;
  }
  return Algorithm::ring;
}

} // namespace dtsim::collectives
