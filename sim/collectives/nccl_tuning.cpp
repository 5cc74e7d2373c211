// NCCL's tuning model (NCCL 2.30.7), transcribed: the constants of src/graph/tuning.cc, the speed arrays of
// src/graph/search.cc and the channel tuning of src/enqueue.cc. Bandwidths there are in GB/s (1e9 bytes/s) and
// latencies in microseconds; here bytes/s and seconds. What dtsim leaves out: the CPU's vendor (x86 Intel is
// assumed where the tables depend on it: llMaxBw across nodes, the 1 us network post overhead), PAT (one GPU per
// node, reduce-scatter and all-gather) and NVLS-tree, which are never chosen, and the topology search's details
// (nccl_ring_graph() keeps its outcome on the topologies dtsim draws).
#include "sim/collectives/nccl.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace dtsim::collectives {
namespace {

constexpr double GB = 1e9;
constexpr double us = 1e-6;
constexpr int LL = 0, LL128 = 1, SIMPLE = 2;
constexpr int TREE = 0, RING = 1, COLLNET_DIRECT = 2, COLLNET_CHAIN = 3, NVLS = 4, NVLS_TREE = 5, PAT = 6;

// tuning.cc, ncclTunerConstantsDefaults: baseLatencies[algorithm][protocol] (us).
constexpr double kBaseLatency[kNcclAlgorithms][kNcclProtocols] = {
    {6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {8.0, 8.0, 8.0}};
// hwLatencies[NVLINK, PCI, NET][algorithm][protocol] (us per step).
constexpr double kHwLatency[3][kNcclAlgorithms][kNcclProtocols] = {
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}, {0, 0, 4.0}},
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}},
    {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 14}}};
// llMaxBws[row][nodes 1, 2, more] (GB/s): one node reads the row of its GPU generation, several nodes the row of
// their CPU (0: Intel, the one dtsim assumes).
constexpr double kLlMaxBw[4][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
// perChMaxRingLL128Bws, perChMaxTreeLL128Bws, perChMaxTreeBws [generation][nodes 1, 2, more] (GB/s per channel).
constexpr double kRingLL128ChannelMax[4][3] = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}, {40, 40, 40}};
constexpr double kTreeLL128ChannelMax[4][3] = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
constexpr double kTreeChannelMax[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
// nvlsEfficiency per generation (Volta and Ampere have no NVLS).
constexpr double kNvlsEfficiency[4] = {0, 0, 0.85, 0.74};
// treeCorrectionFactor[protocol][log2(bytes / 64)], 64 B to 256 MiB.
constexpr double kTreeCorrection[kNcclProtocols][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};
// getNetOverhead: 1 us of network post overhead per step on Intel hosts (Simple pays it 3 times).
constexpr double kNetOverhead = 1.0;

// search.cc: the speeds (GB/s per channel) the topology search tries, highest first.
const std::vector<double> kSpeedsIntra = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0};
const std::vector<double> kSpeedsInter = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                          7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
const std::vector<double> kSm90SpeedsIntra = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
const std::vector<double> kSm90SpeedsInter = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                              15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
const std::vector<double> kSm100SpeedsIntra = {90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
const std::vector<double> kSm100SpeedsInter = {96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0,
                                               20.0, 17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr int kMaxRingChannels = 32; // init.cc: ringGraph->maxChannels = MAXCHANNELS / 2
constexpr int kMaxChannels = 64;     // device.h MAXCHANNELS

// enqueue.cc's channel tuning: maxThreads per protocol (tuning.cc: NCCL_LL_MAX_NTHREADS 512, NCCL_LL128_MAX_NTHREADS
// 640, NCCL_SIMPLE_MAX_NTHREADS 512) and threadThresholds (comm.h: 8, 8, 64 bytes per thread; LL's ring x ranks).
constexpr int kMaxThreads[kNcclProtocols] = {512, 640, 512};
constexpr double kThreadThreshold[kNcclProtocols] = {8, 8, 64};

int generation_index(int cc) {
  return cc >= 100 ? 3 : cc >= 90 ? 2 : cc >= 80 ? 1 : 0;
}

const std::vector<double>& speeds(int cc, bool inter) {
  if (cc >= 100) return inter ? kSm100SpeedsInter : kSm100SpeedsIntra;
  if (cc >= 90) return inter ? kSm90SpeedsInter : kSm90SpeedsIntra;
  return inter ? kSpeedsInter : kSpeedsIntra;
}

int nccl_function(Operation op) { // -1: not one of the tuned functions
  switch (op) {
  case Operation::broadcast:
    return 0;
  case Operation::reduce:
    return 1;
  case Operation::all_gather:
    return 2;
  case Operation::reduce_scatter:
    return 3;
  case Operation::all_reduce:
    return 4;
  default:
    return -1;
  }
}

int log2i(double n) {
  int l = 0;
  while (n >= 2) {
    n /= 2;
    ++l;
  }
  return l;
}

} // namespace

std::string_view to_string(NcclAlgorithm algorithm) {
  static constexpr std::string_view names[kNcclAlgorithms] = {
      "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
  return names[static_cast<int>(algorithm)];
}

double wire_factor(Protocol protocol) {
  switch (protocol) {
  case Protocol::ll:
    return 2.0; // 16-byte line: 8 bytes of data, 8 of flags
  case Protocol::ll128:
    return 16.0 / 15.0; // 128-byte line: 120 bytes of data
  default:
    return 1.0;
  }
}

NcclGraph nccl_ring_graph(const NcclSystem& system, int nodes) {
  const int cc = system.compute_capability;
  const double gpu = system.gpu_bandwidth / GB;
  const double nic = system.nic_bandwidth / GB;
  const auto& array = speeds(cc, nodes > 1);
  // search.cc pass 1: from the fastest speed one path carries (maxBw), each speed gets as many channels as the links
  // hold, and the graph with the most channels x speed is kept (ties: the faster, found first). The search stops at
  // a graph that fills the GPU (totalBw), and lowers the speed only while it has no graph or the next speed is more
  // than 0.49 of the kept one's ("Decrease bw until we find a solution"): a slow NIC gets one or two fast channels,
  // never many slow ones.
  NcclGraph best;
  double best_total = 0;
  for (double speed : array) {
    if (speed > gpu || (nodes > 1 && speed > nic)) continue;
    if (best.channels > 0 && speed / (best.inter / GB) <= 0.49) break;
    int channels = std::min(kMaxRingChannels, static_cast<int>(std::floor(gpu / speed + 1e-9)));
    if (nodes > 1)
      channels = std::min(channels, std::max(1, system.nics) * static_cast<int>(std::floor(nic / speed + 1e-9)));
    if (channels >= 1 && channels * speed > best_total + 1e-9) {
      best_total = channels * speed;
      best = {channels, speed * GB, speed * GB};
    }
    if (best_total >= gpu - 1e-9) break;
  }
  if (best.channels == 0) { // slower than every speed: one channel at what the links give (search.cc's fallback)
    const double speed = nodes > 1 ? std::min(gpu, nic) : gpu;
    return {1, speed * GB, speed * GB};
  }
  // ncclTopoDupChannels: fast channels are doubled at half the speed.
  const double intra = best.intra / GB;
  if (intra >= 25.0 && !(cc > 80 && intra < 50.0 && best.channels > 4)) {
    const int doubled = std::min(best.channels * 2, kMaxRingChannels);
    const double split = std::ceil(static_cast<double>(doubled) / best.channels);
    best = {doubled, best.intra / split, best.inter / split};
  }
  return best;
}

NcclGraph nccl_tree_graph(const NcclSystem& system, int nodes) {
  NcclGraph tree = nccl_ring_graph(system, nodes);
  if (nodes != 2) return tree;
  // search.cc pass 2, "increase bwIntra for trees (2 nodes or collnet)": while bwIntra < 2 bwInter, the next faster
  // speed the GPU's links carry on every channel.
  for (double speed : speeds(system.compute_capability, true)) {
    const double s = speed * GB;
    if (s > tree.intra && s <= 2 * tree.inter && tree.channels * s <= system.gpu_bandwidth + 1) {
      tree.intra = s;
      break;
    }
  }
  return tree;
}

int NcclTuning::proto(Protocol p) {
  switch (p) {
  case Protocol::ll:
    return LL;
  case Protocol::ll128:
    return LL128;
  default:
    return SIMPLE;
  }
}

NcclTuning::NcclTuning(Operation op, int ranks, int nodes, const NcclSystem& system)
    : op_(op), ranks_(ranks), nodes_(std::max(1, nodes)), system_(system) {
  const int cc = system.compute_capability;
  generation_ = generation_index(cc);
  const int n2 = nodes_ <= 2 ? nodes_ - 1 : 2;
  ll_max_ = kLlMaxBw[nodes_ == 1 ? generation_ : 0][n2] * GB;
  tree_channel_max_ = kTreeChannelMax[generation_][n2] * GB;
  ring_ll128_channel_max_ = kRingLL128ChannelMax[generation_][n2] * GB;
  tree_ll128_channel_max_ = kTreeLL128ChannelMax[generation_][n2] * GB;
  ring_ = nccl_ring_graph(system, nodes_);
  tree_ = nccl_tree_graph(system, nodes_);
  const double ppn = static_cast<double>(ranks_) / nodes_;
  // NVLS: one channel per GPU of the node (its "heads"), each at the fastest speed the GPU's links carry for all
  // of them; across nodes only with CollNet (tuning.cc skips NVLS otherwise).
  if (system.nvls && system.nvswitch && cc >= 90 && ppn >= 2) {
    const int heads = std::min(32, static_cast<int>(ppn));
    for (double speed : speeds(cc, false))
      if (heads * speed <= system.gpu_bandwidth / GB + 1e-9) {
        nvls_ = {heads, speed * GB, 2 * speed * GB};
        break;
      }
  }
  const int fn = nccl_function(op);
  if (fn < 0 || ranks_ <= 1) return;
  const double n = ranks_;
  const double nsteps = op == Operation::all_reduce                                      ? 2 * (n - 1)
                        : op == Operation::reduce_scatter || op == Operation::all_gather ? n - 1
                                                                                         : n;
  const int intra_hw = system.nvlink ? 0 : 1;
  const int hw = nodes_ == 1 ? intra_hw : 2;
  const bool rs_ag = op == Operation::reduce_scatter || op == Operation::all_gather;
  for (int a = 0; a < kNcclAlgorithms; ++a) {
    if ((op == Operation::broadcast || op == Operation::reduce) && a != RING) continue;
    if (rs_ag && a != RING && a != NVLS && a != COLLNET_DIRECT) continue; // PAT: not modelled
    if (a == PAT || a == NVLS_TREE) continue;
    if (a == TREE && !nccl_has_trees(system.version)) continue; // a release before trees: rings only
    if ((a == COLLNET_DIRECT || a == COLLNET_CHAIN) && (!system.collnet || nodes_ == 1)) continue;
    if (a == COLLNET_DIRECT && (ppn > 8 || !system.nvswitch)) continue;
    if (a == COLLNET_CHAIN && ppn > 8) continue;
    if (a == NVLS && (nvls_.channels < 2 || (nodes_ > 1 && !system.collnet))) continue;
    // NVLS reduce-scatter and all-gather across nodes need CollNet's; dtsim keeps them to one node.
    if (a == NVLS && rs_ag && nodes_ > 1) continue;
    if (a == COLLNET_DIRECT && rs_ag) continue;
    const bool collnet = a == COLLNET_DIRECT || a == COLLNET_CHAIN;
    const NcclGraph& graph = a == NVLS ? nvls_ : a == TREE ? tree_ : ring_;
    for (int p = 0; p < kNcclProtocols; ++p) {
      if ((a == NVLS || collnet) && p != SIMPLE) continue;
      // LL128 needs NVLink inside the node (typeIntra <= PATH_NVB) and, before Hopper, a NIC on the GPU's PCIe switch.
      if (p == LL128 && (!system.nvlink || !nccl_has_ll128(system.version))) continue;
      double bw = (nodes_ <= 2 || collnet ? graph.intra : graph.inter) / GB;
      if (a == NVLS) {
        double intra = graph.intra / GB * kNvlsEfficiency[generation_] * (graph.channels - 1) / graph.channels;
        intra *= op == Operation::all_reduce ? 2.0 : (ppn - 1) / ppn;
        bw = std::min(intra, graph.inter / GB);
      }
      double bus = graph.channels * bw;
      if (a == RING && p == LL) bus = std::min(ll_max_ / GB, bus * 0.5);
      if (a == RING && p == LL128) bus = std::min(bus * 0.92, graph.channels * ring_ll128_channel_max_ / GB);
      if (a == TREE && op == Operation::all_reduce) bus = std::min(bus * 0.92, graph.channels * tree_channel_max_ / GB);
      if (a == TREE && p == LL) bus = std::min(bus / 3.8, ll_max_ / GB);
      if (a == TREE && p == LL128)
        bus = std::min(bus * (nodes_ == 1 ? 7.0 / 9.0 : 120.0 / 128.0), graph.channels * tree_ll128_channel_max_ / GB);
      if (a == COLLNET_DIRECT) {
        double factor = ppn / graph.channels; // GPU : NIC
        factor -= (factor - 1) / 2;
        bus /= factor;
        if (cc >= 90) bus *= 0.85;
      }
      // Bus bandwidth to algorithm bandwidth.
      if (!(a != RING && rs_ag)) bus *= (a == RING || a == NVLS) ? n / nsteps : 0.5;
      bus_bw_[a][p] = bus * GB;

      double lat = kBaseLatency[a][p];
      const double intra_lat = kHwLatency[intra_hw][a][p];
      const double inter_lat = ppn == 1 ? kHwLatency[2][TREE][p] : kHwLatency[2][a][p];
      if (a == RING) {
        if (op == Operation::broadcast || op == Operation::reduce) {
          lat += kHwLatency[hw][a][p];
        } else {
          const double overhead = nodes_ > 1 ? kNetOverhead * (p == SIMPLE ? 3 : 1) : 0;
          const double inter_steps = nodes_ == 1 ? 0 : op == Operation::all_reduce ? 2 * (nodes_ - 1) : nodes_ - 1;
          lat += (nsteps - inter_steps) * std::max(intra_lat, overhead) + inter_steps * inter_lat;
        }
      } else if (a == TREE) {
        if (op == Operation::all_reduce) lat += 2 * ((ppn - 1) * intra_lat + log2i(nodes_) * inter_lat);
      } else if (a == COLLNET_DIRECT) {
        lat += 2 * (std::min(1.0, ppn - 1) * intra_lat + (ppn - 1) * 0.4) + inter_lat;
      } else if (a == COLLNET_CHAIN) {
        lat += 2 * (ppn - 1) * intra_lat + inter_lat;
      } else if (a == NVLS) {
        lat = intra_lat + (nodes_ > 1 ? inter_lat : 0);
      }
      latency_[a][p] = lat * us;
    }
  }
}

double NcclTuning::estimate(NcclAlgorithm algorithm, Protocol protocol, double bytes) const {
  const int a = index(algorithm), p = proto(protocol);
  double bw = bus_bw_[a][p] / GB;
  double lat = latency_[a][p] / us;
  if (bw <= 0) return -1;
  const int log_size = bytes >= 64 ? log2i(bytes / 64) : -1;
  if (a == TREE && op_ == Operation::all_reduce && log_size >= 0 && log_size < 23) bw *= kTreeCorrection[p][log_size];
  // "Plateau effect of ring": Simple rings across nodes pay more latency once every channel has 64 bytes a rank.
  if (a == RING && p == SIMPLE && nodes_ > 1 && op_ == Operation::all_reduce &&
      bytes / (comm_channels() * static_cast<double>(ranks_)) >= 64)
    lat *= system_.compute_capability < 80 ? 1.9 : 1.4;
  return (lat + bytes / (1000 * bw)) * us;
}

NcclTuning::Choice NcclTuning::choose(double bytes, std::optional<NcclAlgorithm> algorithm, Protocol protocol) const {
  Choice best;
  double best_time = std::numeric_limits<double>::infinity();
  for (int a = 0; a < kNcclAlgorithms; ++a) {
    if (algorithm && index(*algorithm) != a) continue;
    for (Protocol p : {Protocol::ll, Protocol::ll128, Protocol::simple}) {
      if (protocol != Protocol::automatic && protocol != p) continue;
      const double t = estimate(static_cast<NcclAlgorithm>(a), p, bytes);
      if (t >= 0 && t < best_time) {
        best_time = t;
        best = {static_cast<NcclAlgorithm>(a), p};
      }
    }
  }
  if (!std::isfinite(best_time))
    throw std::invalid_argument(fmt::format(
        "NCCL has no {}{}{} for {} over {} ranks on this hardware", algorithm ? to_string(*algorithm) : "algorithm",
        protocol == Protocol::automatic ? "" : " with protocol ",
        protocol == Protocol::automatic ? "" : to_string(protocol), to_string(op_), ranks_));
  return best;
}

int NcclTuning::comm_channels() const {
  // connect.cc ncclTopoPostset: the ring graph's channels are run twice (each ring in both directions' CTAs);
  // Hopper across nodes doubles fast (> 45 GB/s) graphs of fewer than 16 channels once more.
  int channels = std::min(kMaxChannels, 2 * ring_.channels);
  if (system_.compute_capability >= 90 && nodes_ > 1 && ring_.intra / GB > 45.0 && channels < 16)
    channels = std::min(kMaxChannels, 2 * channels);
  return channels;
}

int NcclTuning::channels(NcclAlgorithm algorithm, Protocol protocol, double bytes) const {
  if (algorithm == NcclAlgorithm::nvls) return nvls_.channels;
  const int p = proto(protocol);
  int nc = comm_channels();
  double threshold = kThreadThreshold[p];
  if (algorithm == NcclAlgorithm::ring && p == LL) threshold *= ranks_;
  while (bytes < nc * kMaxThreads[p] * threshold && nc >= 2)
    --nc;
  return nc;
}

double NcclTuning::step_latency(NcclAlgorithm a, Protocol p, LinkClass link) const {
  const int ai = index(a), pi = proto(p);
  if (link == LinkClass::network) {
    const double ppn = static_cast<double>(ranks_) / nodes_;
    return (ppn == 1 ? kHwLatency[2][TREE][pi] : kHwLatency[2][ai][pi]) * us;
  }
  const double lat = kHwLatency[link == LinkClass::nvlink ? 0 : 1][ai][pi];
  const double overhead = nodes_ > 1 ? kNetOverhead * (pi == SIMPLE ? 3 : 1) : 0;
  return std::max(lat, a == NcclAlgorithm::ring ? overhead : 0.0) * us;
}

double NcclTuning::base_latency(NcclAlgorithm a, Protocol p) const {
  return kBaseLatency[index(a)][proto(p)] * us;
}

double NcclTuning::nvls_efficiency() const {
  return kNvlsEfficiency[generation_];
}

double NcclTuning::ll128_channel_bandwidth(NcclAlgorithm a) const {
  return a == NcclAlgorithm::tree ? tree_ll128_channel_max_ : ring_ll128_channel_max_;
}

} // namespace dtsim::collectives
