#pragma once
// Collective operations as step schedules: for each place in the group (a "position", 0..n-1) and each
// step, the transfers it posts and the bytes it reduces. Engine-agnostic: sim/engine turns every step
// into flows on the platform; tests check schedules and their closed forms without SimGrid.
//
// Step semantics: a position posts all of a step's sends and receives at once, waits for all of them and
// reduces `reduce_bytes` (GPU work) as the receives arrive, then moves to its next step. Positions synchronize only
// through matching transfers: a send to p in step k matches p's receive from this position in p's step k' (transfers
// between one pair are matched in the order they are posted, so every algorithm must post the transfers of a pair in
// the same order on both sides).
#include "sim/collectives/nccl_release.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dtsim::collectives {

enum class Operation : std::uint8_t {
  all_reduce,
  reduce_scatter, // bytes = the whole input buffer; each position ends with bytes/n
  all_gather,     // bytes = the whole output buffer; each position contributes bytes/n
  broadcast,
  reduce,
  all_to_all,   // bytes = each position's whole send buffer; bytes/n goes to every position
  all_to_all_v, // uneven: Request::matrix gives the bytes from each position to each position
  barrier,
  send_recv, // point to point, from the root to position (root + 1) % n
};

enum class Algorithm : std::uint8_t {
  automatic, // chosen by size, group and topology (choose_algorithm)
  ring,
  double_binary_tree,
  binomial_tree,
  recursive_doubling,
  rabenseifner, // recursive halving (reduce-scatter) + recursive doubling (all-gather)
  pairwise,     // all-to-all as n-1 rounds of pairwise exchange
  direct,       // every transfer in one round
  hierarchical, // all-reduce: intra-node reduce-scatter, inter-node all-reduce per rail, intra-node all-gather;
                // reduce-scatter: intra-node, then one ring per rail; all-gather: the reverse
  in_switch,    // the switches reduce: NVLink SHARP (NVLS) inside a node, InfiniBand SHARP across nodes
};

// How NCCL moves a channel's data between two GPUs (nccl.hpp): LL, LL128 or Simple. Algorithms NCCL does not have
// run with Simple.
enum class Protocol : std::uint8_t { automatic, ll, ll128, simple };

std::string_view to_string(Operation op);
std::string_view to_string(Algorithm algorithm);
std::string_view to_string(Protocol protocol);
std::optional<Operation> parse_operation(std::string_view name); // "all-reduce", "reduce-scatter", ...
std::optional<Algorithm> parse_algorithm(std::string_view name); // "ring", "tree" (double binary), ...
std::optional<Protocol> parse_protocol(std::string_view name);   // "LL", "LL128", "Simple", "auto"
std::vector<std::string> operation_names();
std::vector<std::string> algorithm_names();
std::vector<std::string> protocol_names();

// Peers that are not positions: the switches that reduce in-network (Algorithm::in_switch). The engine
// routes them to the position's own node switch (NVSwitch) or to the network switch; the switch reduces what
// every position of its scope sent in a step and returns the result in the next.
inline constexpr int kNodeSwitch = -1;
inline constexpr int kNetworkSwitch = -2;

struct Transfer {
  int peer = 0; // position in the group, or kNodeSwitch / kNetworkSwitch
  double bytes = 0;
  // Data this position received and passes on along a tree (every tree send but a leaf's upward one). NCCL's LL and
  // LL128 forward it line by line as each line's flag arrives (prims_ll.h, prims_ll128.h: recvReduceSend,
  // recvCopySend), so only the data's entry into the tree waits on the protocol's rate; the engine lets these go at
  // what the links carry.
  bool forwarded = false;
};

struct Step {
  std::vector<Transfer> sends;
  std::vector<Transfer> recvs;
  double reduce_bytes = 0; // bytes of input this position reduces as the step's receives arrive; the reduction
                           // overlaps them, so a step takes alpha + max(transfer, reduction)
  int latency_terms = 1;   // alpha terms the step stands for (more than 1 in aggregated schedules)
  // A step in which a position posts nothing (it waits out a phase other positions run) has latency_terms 0, and so
  // do a pipeline's steps behind the first chunk through a hop (their latency hides behind the chunk in flight).
  // The engine charges each term the larger of the path's latency and NCCL's per-step latency (nccl.hpp).
  // Aggregated steps: for each merged step that moved something, a peer it sent to and one it received from
  // (-1: none); the slower of the two paths is that step's alpha term. Empty: every term costs the slowest
  // outgoing path's latency.
  std::vector<std::array<int, 2>> latency_peers;
  // Rings: the hop (from, to positions) on the data's path whose latency this step's term is. A ring pipelines its
  // chunks around the ring, so over a phase a position waits for every hop's latency once, not for its own link's
  // n - 1 times; aggregate() collects these into latency_hops. -1: the position's own link.
  std::array<int, 2> latency_hop{-1, -1};
  std::vector<std::array<int, 2>> latency_hops; // aggregated steps: the hops of the merged steps that named one
};

class Schedule {
public:
  virtual ~Schedule() = default;
  virtual int ranks() const = 0;
  virtual int step_count() const = 0;
  virtual Step step(int position, int k) const = 0;
  // First step of each phase, ascending, starting with 0 (e.g. hierarchical: intra-node reduce-scatter,
  // inter-node all-reduce, intra-node all-gather). aggregate() merges the steps of a phase, never across.
  virtual std::vector<int> phase_starts() const { return {0}; }
  // Independent parts over the same positions that run each at its own pace (NCCL's channels: every ring or tree
  // of a channel is its own thread block and never waits for another channel); step() is their union, step by step.
  // Empty: one part. The engine runs each lane as its own sequence of steps.
  virtual std::vector<std::shared_ptr<const Schedule>> lanes() const { return {}; }
};

// What NCCL's topology detection sees of the GPUs a group runs on (NCCL src/graph/topo.cc), for its tuning model
// (nccl.hpp). Bandwidths are in NCCL's own count: an NVLink link is what NCCL's ring reaches over it
// (topo.h: 20 GB/s for NVLink 2 and 3, 20.6 GB/s for NVLink 4), a PCIe link its usable rate (topo.cc's
// kvDictPciGen: 12 GB/s for Gen3 x16), a NIC its line rate.
struct NcclSystem {
  int compute_capability = 0;       // CUDA compute capability x 10 (70 Volta, 80 Ampere, 90 Hopper); 0: not NCCL (CPUs)
  bool nvlink = false;              // the node's GPUs reach each other over NVLink (NCCL_HW_NVLINK), else over PCIe
  bool nvswitch = false;            // through an NVSwitch (NVLS needs one)
  double gpu_bandwidth = 0;         // bytes/s of one GPU's intra-node path (its NVLinks together, or its PCIe link)
  double nic_bandwidth = 0;         // bytes/s of one NIC
  int nics = 1;                     // NICs a node's channels spread over
  bool nvls = false;                // the NVSwitch reduces (NVLink SHARP), so NVLS is available
  bool collnet = false;             // the network switch reduces (InfiniBand SHARP), so CollNet is available
  int version = kNcclTuningVersion; // the NCCL release (nccl_release.hpp): its algorithms and tree pipeline
  bool present() const { return compute_capability > 0; }
};

struct Request {
  Operation op = Operation::all_reduce;
  Algorithm algorithm = Algorithm::automatic;
  Protocol protocol = Protocol::automatic;
  int ranks = 1;
  double bytes = 0;
  int root = 0;                        // broadcast, reduce, send_recv
  std::vector<int> node_of;            // node index of each position (hierarchical; empty: every position its own node)
  std::vector<double> matrix;          // all_to_all_v: bytes from i to j at [i * ranks + j]
  bool node_switch_reduces = false;    // in_switch: the nodes' NVSwitches reduce (NVLink SHARP)
  bool network_switch_reduces = false; // in_switch: the network switch reduces (InfiniBand SHARP)
  NcclSystem nccl;                     // the GPUs as NCCL sees them; absent (CPU ranks): MPI's choices
};

// The schedule of a request; throws std::invalid_argument for an algorithm that does not implement the
// operation (the message lists those that do). `automatic` must be resolved first (choose_algorithm).
std::shared_ptr<const Schedule> make_schedule(const Request& request);

// The algorithms make_schedule implements for an operation (never `automatic`).
std::vector<Algorithm> supported_algorithms(Operation op);

// One step per phase: every transfer of a phase posted at once, bytes summed per peer, the phase's step
// count kept as latency terms (DESIGN.md: scale needs it). Without competing traffic the time differs
// from the step schedule only where steps would have queued on different links.
std::shared_ptr<const Schedule> aggregate(const Request& request);

// The algorithm NCCL or MPI would pick, documented in the implementation.
Algorithm choose_algorithm(const Request& request);

// The request with its algorithm and protocol resolved: `automatic` ones as NCCL's tuning picks them (MPI's rules
// without an NCCL system), a forced algorithm with the protocol NCCL would pick for it, algorithms NCCL does not
// have with Simple. Throws std::invalid_argument for a protocol the algorithm cannot run (NVLS with LL).
Request resolve(Request request);

// nccl-tests' bus bandwidth factor: busbw = algbw * factor (nccl-tests doc/PERFORMANCE.md).
double bus_bandwidth_factor(Operation op, int ranks);

} // namespace dtsim::collectives
