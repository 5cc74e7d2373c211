#pragma once
// NCCL's own model of its collectives (NCCL 2.30.7: src/graph/tuning.cc, search.cc, topo.h, enqueue.cc), as
// dtsim uses it: which algorithm and protocol NCCL picks for a size, on how many channels, and what a protocol
// costs on the wire. The flows of the chosen schedule still carry the bytes (the engine replays them, so
// contention stays real); this file says how many bytes, how fast one rank's channels can push them and what
// each step costs in latency.
//
// NCCL's terms:
// - A channel is one CTA (thread block, on one SM) running its own ring or tree over the group; a collective is
//   cut into one part per channel. The topology search (search.cc) picks how many channels and the speed each is
//   given (bwIntra inside a node, bwInter across nodes) so that channels x speed fits the GPU's links.
// - A protocol is how a channel moves data between GPUs: LL (8-byte stores, a flag with every 4 bytes of data),
//   LL128 (128-byte lines carrying 120 bytes of data and a flag) or Simple (large chunks, then a fence and a
//   flag). LL and LL128 have almost no synchronisation latency but lose bandwidth to their flags; Simple has
//   the whole bandwidth and the most latency per step.
// - The tuning model (tuning.cc) prices each (algorithm, protocol) as latency + bytes / bandwidth and picks the
//   cheapest for every call.
#include "sim/collectives/schedule.hpp"

#include <array>
#include <string>

namespace dtsim::collectives {

// NCCL's algorithms (plugin/nccl_tuner.h's order). dtsim replays ring as Algorithm::ring, tree as
// Algorithm::double_binary_tree and the in-network ones as Algorithm::in_switch; NVLS-tree and PAT are not
// modelled (never chosen).
enum class NcclAlgorithm : std::uint8_t { tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat };
inline constexpr int kNcclAlgorithms = 7;
inline constexpr int kNcclProtocols = 3; // Protocol::ll, ll128, simple
std::string_view to_string(NcclAlgorithm algorithm);

// The link class of a step, NCCL's NCCL_HW_NVLINK, NCCL_HW_PCI and NCCL_HW_NET.
enum class LinkClass : std::uint8_t { nvlink, pcie, network };

// Bytes on the wire for each byte of data (device.h): LL's 16-byte line holds two 4-byte words and their flags
// (ncclLLFifoLine), LL128's 128-byte line holds 15 of its 16 8-byte words (NCCL_LL128_DATAELEMS), Simple sends
// the data as it is.
double wire_factor(Protocol protocol);

// The result of NCCL's topology search for one group (search.cc), reconstructed: the channel count and the
// speed of each channel inside and across nodes (bytes/s).
struct NcclGraph {
  int channels = 0;
  double intra = 0; // bwIntra
  double inter = 0; // bwInter
};

class NcclTuning {
public:
  // The tuning table of `op` over `ranks` positions on `nodes` nodes (ncclTopoTuneModel).
  NcclTuning(Operation op, int ranks, int nodes, const NcclSystem& system);

  // ncclTopoGetAlgoTime: NCCL's estimate in seconds, or a negative number when the pair is not available.
  double estimate(NcclAlgorithm algorithm, Protocol protocol, double bytes) const;
  // topoGetAlgoInfo: the cheapest available pair; `algorithm` / `protocol` not automatic restrict the choice
  // (NCCL_ALGO, NCCL_PROTO). Throws std::invalid_argument when nothing is left.
  struct Choice {
    NcclAlgorithm algorithm = NcclAlgorithm::ring;
    Protocol protocol = Protocol::simple;
  };
  Choice choose(double bytes, std::optional<NcclAlgorithm> algorithm = std::nullopt,
                Protocol protocol = Protocol::automatic) const;
  // Channels a call of `bytes` runs on (topoGetAlgoInfo's channel tuning: fewer channels for small calls), out of
  // comm_channels(), the communicator's (ncclTopoPostset runs every ring of the graph twice).
  int channels(NcclAlgorithm algorithm, Protocol protocol, double bytes) const;
  int comm_channels() const;

  // The pieces, for reports and tests: bus bandwidth (bytes/s, before the conversion to algorithm bandwidth)
  // and latency (seconds) of each pair; 0 bandwidth = not available.
  double bus_bandwidth(NcclAlgorithm a, Protocol p) const { return bus_bw_[index(a)][proto(p)]; }
  double latency(NcclAlgorithm a, Protocol p) const { return latency_[index(a)][proto(p)]; }
  const NcclGraph& ring_graph() const { return ring_; }
  const NcclGraph& tree_graph() const { return tree_; }
  const NcclGraph& nvls_graph() const { return nvls_; }
  // A channel's speed for this group's ring (bwIntra up to 2 nodes, bwInter beyond) and tree.
  double channel_bandwidth() const { return nodes_ <= 2 ? ring_.intra : ring_.inter; }
  double tree_channel_speed() const { return nodes_ <= 2 ? tree_.intra : tree_.inter; }
  // Per-step latency (seconds) of an algorithm and protocol on a link class: hwLatencies, with the inter-node
  // step's network overheads (the terms ncclTopoTuneModel adds to a ring's inter-node steps).
  double step_latency(NcclAlgorithm a, Protocol p, LinkClass link) const;
  double base_latency(NcclAlgorithm a, Protocol p) const;
  // The cap on LL's and LL128's rates: llMaxBw per GPU, perChMaxRingLL128Bw per channel (bytes/s of data).
  double ll_max_bandwidth() const { return ll_max_; }
  double ll128_channel_bandwidth(NcclAlgorithm a) const;
  double tree_channel_bandwidth() const { return tree_channel_max_; }
  // tuning.cc nvlsEfficiency: the share of the links' rate NVLS (and, on Hopper and newer, CollNet) reaches.
  double nvls_efficiency() const;

private:
  static int index(NcclAlgorithm a) { return static_cast<int>(a); }
  static int proto(Protocol p); // ll 0, ll128 1, simple 2

  Operation op_;
  int ranks_, nodes_;
  NcclSystem system_;
  int generation_ = 0; // NCCL's compCapIndex: 0 Volta, 1 Ampere, 2 Hopper, 3 Blackwell
  NcclGraph ring_, tree_, nvls_;
  double ll_max_ = 0, tree_channel_max_ = 0, ring_ll128_channel_max_ = 0, tree_ll128_channel_max_ = 0;
  std::array<std::array<double, kNcclProtocols>, kNcclAlgorithms> bus_bw_{};  // bytes/s (algorithm bandwidth)
  std::array<std::array<double, kNcclProtocols>, kNcclAlgorithms> latency_{}; // seconds
};

// NCCL's ring search, reconstructed (search.cc ncclTopoCompute, ncclTopoDupChannels): the highest channels x speed
// from the architecture's speed array that the GPU's intra-node bandwidth (and, across nodes, the node's NICs, one
// channel per NIC at a time) can carry, at most 32 channels; Volta and Ampere graphs faster than 25 GB/s a channel,
// and Hopper's faster than 50 GB/s, are then doubled into twice the channels at half the speed.
NcclGraph nccl_ring_graph(const NcclSystem& system, int nodes);
// The tree's graph: the ring's channels and speeds, but between two nodes the search raises a tree's intra-node speed
// up to twice its inter-node one (search.cc pass 2), since each node's trees then send over its NICs both ways.
NcclGraph nccl_tree_graph(const NcclSystem& system, int nodes);

// The dtsim algorithm that replays an NCCL algorithm, and the NCCL algorithm a dtsim one stands for (nullopt: an
// MPI algorithm NCCL does not have; it runs over NCCL's point-to-point channels with the Simple protocol).
Algorithm replayed_as(NcclAlgorithm algorithm);
std::optional<NcclAlgorithm> nccl_algorithm(const Request& request, Algorithm algorithm);

// How a resolved collective runs on the wire: what the engine applies to its flows.
struct WireModel {
  Protocol protocol = Protocol::simple;
  int channels = 0;
  double wire_factor = 1;  // bytes on the wire per byte of data
  double rate_cap = 0;     // bytes/s on the wire that one position's flows of a step take together (0: no cap)
  double base_latency = 0; // seconds, once per call (the kernel's launch and setup in NCCL's model)
  std::array<double, 3> step_latency{}; // seconds per step, by LinkClass: what a step costs beyond its bytes
  // NCCL's sends are eager: the sender writes into the receiver's FIFO and goes on, so a step waits for its receives
  // only. MPI's algorithms (and any collective without NCCL) send by rendezvous: a step also waits for its sends.
  bool eager_sends = false;
};
// The request's algorithm and protocol must be resolved (resolve()). Without an NCCL system (CPU ranks: Gloo or
// MPI), the wire model is the identity: no cap, no latency beyond the links'.
WireModel wire_model(const Request& request);
// The share of a GPU's SMs a call holds: NCCL runs each channel as one thread block, an SM of its own, for the whole
// call; at most half the GPU. 0 where the GPU's SM count is not known.
double sm_share(const WireModel& wire, int compute_units);

} // namespace dtsim::collectives
