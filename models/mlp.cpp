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
  // Tensor parallelism as Megatron-LM splits a transformer's MLP (Shoeybi et al. 2019, section 3): the linear layers
  // in pairs, the first column-parallel (its output features split), the second row-parallel (its input features
  // split, its output all-reduced in forward), the ReLU between them on the split features. The ReLU after a pair
  // runs whole on every rank. An odd last layer is column-parallel, as Megatron's output layer is (its logits stay
  // split for a parallel loss).
  bool column = true;
  for (std::size_t i = 0; i < w.layers.size(); ++i) {
    auto& l = w.layers[i];
    if (l.kind == LayerKind::matmul) {
      l.tensor_split = column ? TensorSplit::column : TensorSplit::row;
      column = !column;
    } else if (!column) { // after a column layer, before its row partner
      l.tensor_split = TensorSplit::inner;
    }
  }
  return w;
}

} // namespace dtsim::models
