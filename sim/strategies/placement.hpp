#pragma once
// Which server holds each layer's parameters when they live whole on one server (TensorPlacement other than split).
#include "sim/strategies/strategy.hpp"

#include <cstdint>
#include <vector>

namespace dtsim::strategies {

// Per layer, in the model's order (the order the framework creates its variables): the server its parameters live on,
// -1 for a layer without parameters, and -1 everywhere under TensorPlacement::split (every push is spread over all).
// least_loaded: the server with the fewest elements so far, the lowest index on a tie (Python's min over enumerate,
// as tf_cnn_benchmarks picks); round_robin: the i-th layer with parameters on server i mod servers.
std::vector<int> tensor_servers(TensorPlacement placement, const std::vector<std::int64_t>& parameters, int servers);

} // namespace dtsim::strategies
