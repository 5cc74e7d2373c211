#pragma once
// The pairwise exchange of an all-to-all-v (Thakur, Rabenseifner and Gropp 2005, section 4.6) timed on a network
// without replaying its flows. Replayed as flows, a 128-position exchange is 16,256 of them a call, and a max-min
// solver's cost grows faster than linearly with concurrent flows (DESIGN.md); an MoE step has four calls a layer.
//
// The model follows what the step-by-step replay of the schedule does. In round k (1..n-1) position p sends its bytes
// for (p+k) mod n as soon as it starts the round (NCCL's sends are eager: they do not wait to be delivered), then
// waits for its receive from (p-k) mod n; a round with nothing to receive passes at once. Because sends do not wait,
// a position's later rounds' transfers are in flight beside its earlier ones, and a bandwidth-bound exchange
// behaves as if every transfer were in flight at once (measured against the replay: within 3.4%). So:
// - bandwidth: every transfer shares each link of its path with all the exchange's transfers on it as max-min sharing
//   shares one link: on a link of capacity C carrying transfers of b_1 <= ... <= b_m bytes, transfer i ends at
//   (b_1 + ... + b_{i-1} + (m - i + 1) b_i) / C (processor sharing); a transfer ends at the latest of those over its
//   links, and no sooner than its bytes at its rate cap (the protocol's, a TCP connection's);
// - latency and order: position q's round k ends no sooner than max(its round k-1 end, the sender's round k-1 end +
//   the transfer alone on its path + the path's latency), the replay's receive chain in max-plus algebra (small
//   exchanges pay every round's latency, as the replay does).
// A position is done at the later of the two, counted from when the last position posted the exchange.
//
// What it leaves out: other traffic on the same links at the same time (the exchange does not load the links that
// other collectives' flows share), and a transfer bottlenecked on one link leaving its share of another to the rest.
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
  // bytes/s; rate_cap: bytes/s every transfer carries at most besides its path's cap (the protocol's; 0: none).
  PairwiseExchange(int n, const std::function<double(int, int)>& bytes,
                   const std::function<const ExchangePath&(int, int)>& path, const std::vector<double>& capacity,
                   double rate_cap = 0);

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
