#pragma once
// The pairwise exchange of an all-to-all-v (Thakur, Rabenseifner and Gropp 2005, section 4.6) timed on a network
// without replaying its flows. Replayed as flows, a 128-position exchange is 16,256 of them a call, and a max-min
// solver's cost grows faster than linearly with concurrent flows (DESIGN.md); an MoE step has four calls a layer.
//
// The model follows the schedule the step-by-step replay runs. In round k (1..n-1) position p sends its bytes for
// (p+k) mod n as soon as it starts the round (NCCL's sends are eager), then waits for its receive from (p-k) mod n;
// a round with nothing to receive passes at once. A transfer's duration is set by the links of its path as max-min
// sharing sets it when every flow of the round shares one link at a time: a link of capacity C carrying the round's
// flows of b_1 <= b_2 <= ... <= b_m bytes serves them equally until the smallest is done, then the rest equally,
// so flow i ends at (b_1 + ... + b_{i-1} + (m - i + 1) b_i) / C (processor sharing). A transfer takes the longest
// of those over its path's links, and no less than its bytes at its rate cap (the protocol's, a TCP connection's).
// Position q's round k then ends at max(its round k-1 end, sender's round k-1 end + duration + path latency): the
// receive chain of the replay in max-plus algebra.
//
// What it leaves out: rounds that overlap on a link when positions drift apart (each round's link shares are
// computed as if it ran alone), and other traffic on the same links at the same time (the call does not load the
// links that other collectives' flows share).
#include <functional>
#include <vector>

namespace dtsim::collectives {

struct ExchangePath {
  std::vector<int> links; // the links the transfer crosses, as indices into the capacities
  double latency = 0;     // seconds from its last byte leaving to the receiver having it
  double rate_cap = 0;    // bytes/s the transfer carries at most; 0: no cap
};

class PairwiseExchange {
public:
  // n positions; bytes(p, q): the bytes p sends q (on the wire); path(p, q): its route; capacity[l]: link l's
  // bytes/s.
  PairwiseExchange(int n, const std::function<double(int, int)>& bytes,
                   const std::function<const ExchangePath&(int, int)>& path, const std::vector<double>& capacity);

  int positions() const { return n_; }
  // Round k's transfer from p (k in 1..n-1), without the path's latency: how long it takes alone on its path, and
  // sharing the links with every other transfer of the exchange. Negative: there is none.
  double alone(int k, int p) const { return alone_[index(k, p)]; }
  double shared(int k, int p) const { return shared_[index(k, p)]; }
  // When each position is done (its receives in, its sends delivered), from when each started the exchange.
  std::vector<double> finish_times(const std::vector<double>& start) const;

private:
  std::size_t index(int k, int p) const { return static_cast<std::size_t>(k - 1) * n_ + p; }
  int n_;
  std::vector<double> alone_, shared_; // per round and sender
  std::vector<double> latency_;        // per round and sender: its path's latency
};

} // namespace dtsim::collectives
