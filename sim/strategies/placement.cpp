#include "sim/strategies/placement.hpp"

#include <algorithm>
#include <stdexcept>

namespace dtsim::strategies {

std::vector<int> tensor_servers(TensorPlacement placement, const std::vector<std::int64_t>& parameters, int servers) {
  if (servers < 1) throw std::invalid_argument("tensor_servers: at least one server");
  std::vector<int> server(parameters.size(), -1);
  if (placement == TensorPlacement::split) return server;
  std::vector<std::int64_t> load(static_cast<std::size_t>(servers), 0);
  int next = 0;
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    if (parameters[i] <= 0) continue;
    const int s = placement == TensorPlacement::round_robin
                      ? next++ % servers
                      : static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    load[static_cast<std::size_t>(s)] += parameters[i];
    server[i] = s;
  }
  return server;
}

} // namespace dtsim::strategies
