// NCCL releases: see nccl_release.hpp for what differs and where each change is in NCCL's history.
#include "sim/collectives/nccl_release.hpp"

#include "sim/collectives/detail.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

namespace dtsim::collectives {

int parse_nccl_version(std::string_view text) {
  int parts[3] = {0, 0, 0};
  bool ok = true;
  for (int i = 0; i < 3 && ok; ++i) {
    if (i > 0) {
      ok = !text.empty() && text.front() == '.';
      if (ok) text.remove_prefix(1);
    }
    const auto [next, error] = std::from_chars(text.data(), text.data() + text.size(), parts[i]);
    ok = ok && error == std::errc{} && parts[i] >= 0 && parts[i] <= 99;
    if (ok) text.remove_prefix(static_cast<std::size_t>(next - text.data()));
  }
  const int version = ok && text.empty() ? parts[0] * 10000 + parts[1] * 100 + parts[2] : -1;
  if (version < kNcclFirstVersion || version > kNcclTuningVersion)
    throw std::invalid_argument(fmt::format("an NCCL release as MAJOR.MINOR.PATCH from 2.3.5 to {}, such as \"2.6.3\"",
                                            nccl_version_name(kNcclTuningVersion)));
  return version;
}

std::string nccl_version_name(int version) {
  return fmt::format("{}.{}.{}", version / 10000, version / 100 % 100, version % 100);
}

bool nccl_has_trees(int version) {
  return version >= 20402;
}

bool nccl_has_ll128(int version) {
  return version >= 20506;
}

int nccl_tree_chunks(double channel_bytes, int per_node, int nodes, int version) {
  double chunk = detail::kPipelineChunkBytes;
  if (nccl_has_trees(version) && version < 22000) {
    const int log2_nodes = detail::floor_log2(std::max(1, nodes));
    const int depth = version < 20500 ? per_node + log2_nodes : per_node - 1 + log2_nodes;
    // enqueue's loops, with its integer division: bytes / (channels x chunk) < depth x k.
    const auto fewer = [&](int times) { return std::floor(channel_bytes / chunk) < depth * times; };
    while (fewer(8) && chunk > 131072)
      chunk /= 2;
    while (fewer(4) && chunk > 65536)
      chunk /= 2;
    while (fewer(1) && chunk > 32768)
      chunk /= 2;
  }
  return detail::pipeline_chunks(channel_bytes, chunk);
}

} // namespace dtsim::collectives
