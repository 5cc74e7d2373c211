// The pairwise exchange of an all-to-all-v timed from its links' loads and its rounds' chain (pairwise_exchange.hpp).
#include "sim/collectives/pairwise_exchange.hpp"

#include <algorithm>
#include <stdexcept>

namespace dtsim::collectives {

PairwiseExchange::PairwiseExchange(int n, const std::function<double(int, int)>& bytes,
                                   const std::function<const ExchangePath&(int, int)>& path,
                                   const std::vector<double>& capacity, double rate_cap)
    : n_(n), alone_(static_cast<std::size_t>(std::max(0, n - 1)) * n, -1.0), shared_(alone_.size(), -1.0),
      latency_(alone_.size(), 0.0) {
  // Per link, the exchange's transfers on it as (bytes, round and sender).
  std::vector<std::vector<std::pair<double, std::size_t>>> on_link(capacity.size());
  for (int k = 1; k < n; ++k)
    for (int p = 0; p < n; ++p) {
      const double b = bytes(p, (p + k) % n);
      if (b <= 0) continue; // an empty transfer is skipped, as MPI_Alltoallv skips zero counts
      const auto& route = path(p, (p + k) % n);
      const auto at = index(k, p);
      double cap = route.rate_cap;
      if (rate_cap > 0) cap = cap > 0 ? std::min(cap, rate_cap) : rate_cap;
      double alone = cap > 0 ? b / cap : 0;
      for (int link : route.links) {
        if (link < 0 || link >= static_cast<int>(capacity.size()) || capacity[link] <= 0)
          throw std::invalid_argument("pairwise exchange: a path names a link without a capacity");
        alone = std::max(alone, b / capacity[link]);
        on_link[link].emplace_back(b, at);
      }
      alone_[at] = shared_[at] = alone;
      latency_[at] = route.latency;
    }
  // Processor sharing on each link: the i-th smallest of m transfers ends at (sum of the smaller + (m - i) b_i) / C
  // (0-based i), the time it would take if that link alone limited it.
  for (std::size_t link = 0; link < on_link.size(); ++link) {
    auto& transfers = on_link[link];
    std::sort(transfers.begin(), transfers.end());
    double done = 0; // bytes of the transfers already finished
    const auto m = transfers.size();
    for (std::size_t i = 0; i < m; ++i) {
      auto& ends = shared_[transfers[i].second];
      ends = std::max(ends, (done + static_cast<double>(m - i) * transfers[i].first) / capacity[link]);
      done += transfers[i].first;
    }
  }
}

std::vector<double> PairwiseExchange::finish_times(const std::vector<double>& start) const {
  if (static_cast<int>(start.size()) != n_)
    throw std::invalid_argument("pairwise exchange: one start time per position is needed");
  // The rounds' chain, each transfer at its path's own rate: what latency and the order of the rounds cost.
  std::vector<double> round_end = start, next(start.size());
  std::vector<double> finish = start;
  for (int k = 1; k < n_; ++k) {
    next = round_end;
    for (int p = 0; p < n_; ++p) {
      const auto at = index(k, p);
      if (alone_[at] < 0) continue;
      const int q = (p + k) % n_;
      const double delivered = round_end[p] + alone_[at];
      finish[p] = std::max(finish[p], delivered);
      next[q] = std::max(next[q], delivered + latency_[at]);
    }
    std::swap(round_end, next);
  }
  // Every transfer in flight together from when the last position posts, sharing the links: what bandwidth costs.
  const double all_in = *std::max_element(start.begin(), start.end());
  for (int k = 1; k < n_; ++k)
    for (int p = 0; p < n_; ++p) {
      const auto at = index(k, p);
      if (shared_[at] < 0) continue;
      finish[p] = std::max(finish[p], all_in + shared_[at]);
      auto& q = finish[(p + k) % n_];
      q = std::max(q, all_in + shared_[at] + latency_[at]);
    }
  for (int p = 0; p < n_; ++p)
    finish[p] = std::max(finish[p], round_end[p]);
  return finish;
}

} // namespace dtsim::collectives
