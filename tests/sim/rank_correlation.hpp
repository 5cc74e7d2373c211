#pragma once
// Spearman's rank correlation, for the tests that hold an estimate's ranking against another's.
#include <algorithm>
#include <cstddef>
#include <numeric>
#include <vector>

namespace dtsim::test {

// Spearman's rank correlation of two lists (no ties broken: equal figures take consecutive ranks in list order, as
// they do in the search's own order): 1 - 6 sum d^2 / (n (n^2 - 1)).
inline double rank_correlation(const std::vector<double>& a, const std::vector<double>& b) {
  const auto ranks = [](const std::vector<double>& v) {
    std::vector<std::size_t> order(v.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) { return v[i] < v[j]; });
    std::vector<double> r(v.size());
    for (std::size_t k = 0; k < order.size(); ++k)
      r[order[k]] = static_cast<double>(k);
    return r;
  };
  const auto ra = ranks(a), rb = ranks(b);
  double d2 = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    d2 += (ra[i] - rb[i]) * (ra[i] - rb[i]);
  const double n = static_cast<double>(a.size());
  return 1 - 6 * d2 / (n * (n * n - 1));
}

} // namespace dtsim::test
