// What collectives take from the compute they overlap. NCCL runs each channel of a call as one thread block, resident
// on an SM of its own for the whole call, and its copies and reductions stream through the GPU's memory: a kernel
// beside it gets the SMs the channels leave for its math and the bandwidth their traffic leaves for its loads and
// stores. One model for every overlap: FSDP's gathers and reduce-scatters, DDP's buckets, tensor-parallel and
// pipeline traffic alike.
#include "sim/engine/replay.hpp"

#include <algorithm>

namespace dtsim::engine::detail {

namespace {
constexpr double kMostHeld = 0.5; // a collective never takes more than half of either (sm_share's cap)
} // namespace

double math_share(const graph::Compute& compute) {
  // Work the kernel cost model did not price (measured trace kernels, the host's loading) keeps the SM-bound
  // reading the engine always had: all of it needs its SMs.
  const bool priced = compute.math_seconds > 0 || compute.joules > 0;
  if (!priced || compute.seconds <= 0) return 1;
  return std::clamp(compute.math_seconds / compute.seconds, 0.0, 1.0);
}

double RankState::kernel_rate() const {
  const double sms = std::min(kMostHeld, sms_held), hbm = std::min(kMostHeld, hbm_held);
  const double m = kernel_math_share;
  return 1 / (m / (1 - sms) + (1 - m) / (1 - hbm));
}

double RankState::lost_until_now() const {
  return work_lost + (1 - kernel_rate()) * (sg4::Engine::get_clock() - lost_since);
}

// The kernel first sleeps its time at the whole GPU's speed (most kernels overlap nothing); what the collectives
// took meanwhile is then run at the rate they leave, re-rated whenever a collective starts or ends. A rank runs one
// kernel at a time, so the running kernel's math share stands for the rank's until the next one starts.
void Replay::run_kernel(RankState& state, double seconds, double math_share) {
  state.work_lost = state.lost_until_now();
  state.lost_since = sg4::Engine::get_clock();
  state.kernel_math_share = math_share;
  const double lost = state.lost_until_now();
  sg4::this_actor::sleep_for(seconds);
  double left = state.lost_until_now() - lost;
  if (left <= 0) return;
  std::unique_lock lock(*state.mutex);
  state.kernel_waits = true;
  while (left > 0) {
    const double rate = state.kernel_rate(), from = sg4::Engine::get_clock();
    if (state.sms_changed->wait_for(lock, left / rate) == std::cv_status::timeout) break;
    left -= (sg4::Engine::get_clock() - from) * rate;
  }
  state.kernel_waits = false;
}

void Replay::hold(RankState& state, double sms, double hbm) {
  state.work_lost = state.lost_until_now();
  state.lost_since = sg4::Engine::get_clock();
  state.sms_held += sms;
  state.hbm_held += hbm;
  if (state.sms_held < 1e-12) state.sms_held = 0; // the sum of what was held and given back
  if (state.hbm_held < 1e-12) state.hbm_held = 0;
  if (state.kernel_waits) {
    std::unique_lock lock(*state.mutex);
    state.sms_changed->notify_all();
  }
}

// The bandwidth a collective's traffic takes: the bytes a member's port carries each second, times the memory
// accesses each byte costs its GPU. NCCL's ring and tree primitives (prims_simple.h: recvReduceSend, recvCopySend)
// cost three: the peer's write into this GPU's FIFO, the read of it, and the read of the local input (reduce) or the
// write of the output (copy). NVLink SHARP's multimem loads and stores, and a pairwise exchange's copies, cost two:
// a read of the input and a write of the output. The port: the GPU's link into the node's fabric for a group inside
// one node; across nodes the ring runs at the pace of its network hops, the GPU's share of its node's NICs.
double Replay::hbm_share(int group, collectives::Algorithm algorithm) {
  if (cluster_.memory_bandwidth <= 0) return 0;
  auto [it, fresh] = port_rates_.try_emplace(group, 0.0);
  if (fresh) {
    const auto& members = graph_.groups[group];
    double rate = cluster_.intra_data_rate();
    const int node = members.empty() ? 0 : cluster_.node_of(members.front());
    const bool spans_nodes =
        std::any_of(members.begin(), members.end(), [&](int gpu) { return cluster_.node_of(gpu) != node; });
    if (spans_nodes)
      rate = std::min(rate, cluster_.slowest_nic().bandwidth * cluster_.nics_per_node() / cluster_.gpus_per_node);
    it->second = rate;
  }
  const bool two_accesses =
      algorithm == collectives::Algorithm::in_switch || algorithm == collectives::Algorithm::pairwise;
  return std::min(kMostHeld, (two_accesses ? 2.0 : 3.0) * it->second / cluster_.memory_bandwidth);
}

} // namespace dtsim::engine::detail
