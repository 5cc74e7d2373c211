// aggregate(): the phases of a schedule as single steps (DESIGN.md: scale needs fewer, larger flows). A
// position's aggregated step posts every transfer of its phase at once, one per peer and direction with the
// bytes summed, reduces everything the phase reduced, and keeps the phase's latency terms (the steps that
// posted a transfer; idle steps stand for none). Steps are merged on demand: a call costs O(steps of the
// phase) schedule steps plus a sort of its transfers.
//
// Fidelity follows from the phases: where every position works in every step of a phase (ring, recursive
// doubling and halving, direct, pairwise, hierarchical) the aggregated time matches the step schedule's on an
// uncontended network; binomial rounds are phases of their own, so they are unchanged; pipelines (chain,
// double binary tree) are not aggregated at all (see aggregate()). All-to-all over more than ~128 positions is sampled
// rather than posted pair by pair (sampled_all_to_all.cpp).
#include "sim/collectives/detail.hpp"

#include <algorithm>

namespace dtsim::collectives {
namespace {

// Sums bytes per peer, ascending peer.
std::vector<Transfer> merged(std::vector<Transfer> transfers) {
  std::stable_sort(transfers.begin(), transfers.end(),
                   [](const Transfer& a, const Transfer& b) { return a.peer < b.peer; });
  std::vector<Transfer> out;
  for (const auto& t : transfers)
    if (!out.empty() && out.back().peer == t.peer) {
      out.back().bytes += t.bytes;
      out.back().forwarded = out.back().forwarded && t.forwarded;
    } else
      out.push_back(t);
  return out;
}

class Aggregated final : public Schedule {
public:
  explicit Aggregated(std::shared_ptr<const Schedule> inner) : inner_(std::move(inner)) {
    if (inner_->step_count() == 0) return;
    bounds_ = inner_->phase_starts();
    bounds_.push_back(inner_->step_count());
  }

  int ranks() const override { return inner_->ranks(); }
  int step_count() const override { return bounds_.empty() ? 0 : static_cast<int>(bounds_.size()) - 1; }
  std::vector<int> phase_starts() const override {
    std::vector<int> starts(std::max(step_count(), 1));
    for (std::size_t i = 0; i < starts.size(); ++i)
      starts[i] = static_cast<int>(i);
    return starts;
  }

  Step step(int position, int k) const override {
    Step out;
    out.latency_terms = 0;
    std::vector<Transfer> sends, recvs;
    for (int s = bounds_[k]; s < bounds_[k + 1]; ++s) {
      Step st = inner_->step(position, s);
      sends.insert(sends.end(), st.sends.begin(), st.sends.end());
      recvs.insert(recvs.end(), st.recvs.begin(), st.recvs.end());
      out.reduce_bytes += st.reduce_bytes;
      out.latency_terms += st.latency_terms;
      if (st.latency_terms > 0 && st.latency_hop[0] >= 0)
        out.latency_hops.push_back(st.latency_hop);
      else if (st.latency_terms > 0 && !(st.sends.empty() && st.recvs.empty()))
        out.latency_peers.push_back(
            {st.sends.empty() ? -1 : st.sends.front().peer, st.recvs.empty() ? -1 : st.recvs.front().peer});
    }
    out.sends = merged(std::move(sends));
    out.recvs = merged(std::move(recvs));
    return out;
  }

private:
  std::shared_ptr<const Schedule> inner_;
  std::vector<int> bounds_; // phase starts, then the step count
};

} // namespace

std::shared_ptr<const Schedule> aggregate(const Request& request) {
  // Pipelines (NCCL's double binary tree, the chain of a ring broadcast or reduce) owe their speed to the
  // overlap of consecutive steps on different links; merging steps loses it (measured: up to 64% off for a
  // 16 MiB chain broadcast over 64 ranks). Their step count grows like chunks + ranks, not ranks squared, so
  // they run step by step in either mode, except NCCL's trees on nodes of GPUs: their chunks (C) outnumber the
  // tree's depth (D = the chain plus log2 of the nodes), so a phase of C steps has every link streaming at once,
  // as the pipeline's steady state does, and the steps' flows (C + 2D chunks x 2 trees x channels, for 1024 GPUs
  // millions) are too many to replay one by one.
  const bool nccl_tree = request.algorithm == Algorithm::double_binary_tree && detail::nccl_node_tree(request);
  const bool pipeline =
      (request.algorithm == Algorithm::double_binary_tree && !nccl_tree) || request.algorithm == Algorithm::in_switch ||
      ((request.op == Operation::broadcast || request.op == Operation::reduce) && request.algorithm == Algorithm::ring);
  if (pipeline) return make_schedule(request);
  // NCCL's channels are merged with the rest: a position's bytes to a peer over every channel make one flow (the
  // channels are alike, so the links carry the same bytes), and the latency terms are the first channel's (they
  // run side by side, each paying its own; concurrent()'s steps name the first lane's hops).
  if (request.op == Operation::all_to_all &&
      static_cast<double>(request.ranks) * (request.ranks - 1) > detail::kMaxExactAggregateFlows) {
    detail::validate_request(request);
    if (auto sampled = detail::sampled_all_to_all(request)) return sampled;
  }
  return std::make_shared<Aggregated>(make_schedule(request));
}

} // namespace dtsim::collectives
