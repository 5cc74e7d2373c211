#include "models/net_builder.hpp"
#include "models/zoo.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <utility>

namespace dtsim::models {

Workload mlp(const std::vector<int>& widths, std::string name) {
  if (widths.size() < 2)
    throw std::invalid_argument(fmt::format("{}: needs at least an input and an output width", name));
  for (int w : widths)
    if (w < 1) throw std::invalid_argument(fmt::format("{}: widths must be positive, got {}", name, w));

  detail::NetBuilder net(detail::Shape{widths.front(), 1, 1});
  for (std::size_t i = 1; i < widths.size(); ++i) {
    net.linear(fmt::format("fc{}", i), widths[i], /*bias=*/true);
    if (i + 1 < widths.size()) net.relu(fmt::format("relu{}", i)); // no activation after the output layer
  }

  Workload w;
  w.name = std::move(name);
  w.layers = net.take();
  w.sample_unit = "samples";
  return w;
}

} // namespace dtsim::models
