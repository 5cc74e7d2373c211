#include "sim/plan/stage_partition.hpp"

#include <algorithm>
#include <limits>

namespace dtsim::plan {

std::vector<std::vector<std::size_t>> pipeline_units(const models::Workload& w) {
  std::vector<std::vector<std::size_t>> units;
  const bool blocks =
      std::any_of(w.layers.begin(), w.layers.end(), [](const models::Layer& l) { return l.block >= 0; });
  if (!blocks) {
    for (std::size_t i = 0; i < w.layers.size(); ++i)
      units.push_back({i});
    return units;
  }
  std::vector<std::size_t> before; // ops ahead of the first block
  int current = -1;
  for (std::size_t i = 0; i < w.layers.size(); ++i) {
    const int block = w.layers[i].block;
    if (block < 0) {
      (units.empty() ? before : units.back()).push_back(i);
      continue;
    }
    if (block != current) {
      units.emplace_back();
      if (units.size() == 1) units.back() = std::move(before);
      current = block;
    }
    units.back().push_back(i);
  }
  return units;
}

std::vector<int> uniform_split(calibration::PipelineSplit split, std::size_t units, int chunks) {
  const auto n = static_cast<std::size_t>(chunks);
  if (split != calibration::PipelineSplit::uniform || chunks < 1 || units % n != 0) return {};
  return std::vector<int>(n, static_cast<int>(units / n));
}

std::vector<int> framework_split(const scenario::Scenario& s, std::size_t units, int chunks) {
  if (s.parallelism.balance_stages || !s.groups.empty()) return {};
  return uniform_split(s.framework.pipeline_split, units, chunks);
}

std::vector<int> balanced_split(const std::vector<double>& seconds, int chunks) {
  return balanced_split_by_chunk(std::vector<std::vector<double>>(static_cast<std::size_t>(chunks), seconds));
}

std::vector<int> balanced_split_by_chunk(const std::vector<std::vector<double>>& seconds) {
  const int chunks = static_cast<int>(seconds.size());
  const int n = static_cast<int>(seconds.front().size());
  // prefix[c][i]: the first i units' time on chunk c's GPU.
  std::vector<std::vector<double>> prefix(chunks, std::vector<double>(n + 1, 0.0));
  for (int c = 0; c < chunks; ++c)
    for (int i = 0; i < n; ++i)
      prefix[c][i + 1] = prefix[c][i] + seconds[c][i];
  constexpr double kNone = std::numeric_limits<double>::infinity();
  // best[j][i]: the smallest largest part splitting the first i units into j parts; cut[j][i]: where the last starts.
  std::vector<std::vector<double>> best(chunks + 1, std::vector<double>(n + 1, kNone));
  std::vector<std::vector<int>> cut(chunks + 1, std::vector<int>(n + 1, 0));
  best[0][0] = 0;
  for (int j = 1; j <= chunks; ++j)
    for (int i = j; i <= n - (chunks - j); ++i)
      for (int l = i - 1; l >= j - 1; --l) { // the last part is units l .. i-1; later l: shorter last part
        // An earlier start only lengthens the last part: once it alone reaches the best, no earlier l does better
        // (the split is the same as without this stop, which only skips candidates that cannot win).
        const double last = prefix[j - 1][i] - prefix[j - 1][l];
        if (last >= best[j][i]) break;
        const double value = std::max(best[j - 1][l], last);
        if (value < best[j][i]) {
          best[j][i] = value;
          cut[j][i] = l;
        }
      }
  std::vector<int> counts(chunks);
  for (int j = chunks, i = n; j > 0; --j) {
    counts[j - 1] = i - cut[j][i];
    i = cut[j][i];
  }
  return counts;
}

} // namespace dtsim::plan
