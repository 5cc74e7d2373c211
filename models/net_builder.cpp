#include "models/net_builder.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace dtsim::models::detail {
namespace {

// Output extent of a convolution or pooling window, as PyTorch computes it (floor mode, dilation 1).
std::int64_t window_out(const std::string& layer, std::int64_t in, int kernel, int stride, int padding) {
  if (kernel < 1 || stride < 1 || padding < 0) throw std::invalid_argument(fmt::format("{}: bad window", layer));
  const std::int64_t out = (in + 2 * padding - kernel) / stride + 1;
  if (in + 2 * padding < kernel || out < 1)
    throw std::invalid_argument(fmt::format("{}: input extent {} is too small for a window of {}", layer, in, kernel));
  return out;
}

// Sum of the extents of PyTorch's adaptive pooling windows along one dimension: window i covers
// [floor(i * in / out), ceil((i + 1) * in / out)). Equals `in` when out divides it (or out == 1).
std::int64_t adaptive_windows_extent(std::int64_t in, std::int64_t out) {
  std::int64_t total = 0;
  for (std::int64_t i = 0; i < out; ++i)
    total += ((i + 1) * in + out - 1) / out - i * in / out;
  return total;
}

} // namespace

void NetBuilder::push(const std::string& name, LayerKind kind, double forward_flops, std::int64_t parameters,
                      std::int64_t input_elements, Shape out) {
  Layer l;
  l.name = name;
  l.kind = kind;
  l.forward_flops = forward_flops;
  l.backward_flops = backward_factor(kind) * forward_flops;
  l.parameters = parameters;
  l.input_elements = input_elements;
  l.output_elements = out.elements();
  // What torchvision-style CNNs keep for backward: every op's output, except the elementwise ops (ReLU, residual
  // adds), which run in place over a tensor another op keeps, or need only their output's sign.
  l.saved_elements = kind == LayerKind::elementwise ? 0 : out.elements();
  layers_.push_back(std::move(l));
  shape_ = out;
}

void NetBuilder::conv(const std::string& name, std::int64_t out_channels, int kernel, int stride, int padding,
                      int groups, bool bias) {
  conv(name, out_channels, {kernel, kernel}, stride, {padding, padding}, groups, bias);
}

void NetBuilder::conv(const std::string& name, std::int64_t out_channels, std::pair<int, int> kernel, int stride,
                      std::pair<int, int> padding, int groups, bool bias) {
  if (groups < 1 || shape_.channels % groups != 0 || out_channels % groups != 0)
    throw std::invalid_argument(fmt::format("{}: channels not divisible by groups {}", name, groups));
  const auto [kh, kw] = kernel;
  const Shape out{out_channels, window_out(name, shape_.height, kh, stride, padding.first),
                  window_out(name, shape_.width, kw, stride, padding.second)};
  const std::int64_t weights = shape_.channels / groups * kh * kw * out_channels;
  const double macs = static_cast<double>(weights) * static_cast<double>(out.height * out.width);
  push(name, LayerKind::convolution, 2 * macs, weights + (bias ? out_channels : 0), shape_.elements(), out);
  layers_.back().bias = bias;
  layers_.back().conv3x3_stride1 = kh == 3 && kw == 3 && stride == 1 && groups == 1;
  // k = Cin/groups x kernel area, from the weights: push() has moved shape_ on to the output.
  layers_.back().gemm = {out.height * out.width, out_channels / groups, weights / out_channels, groups};
}

void NetBuilder::batch_norm(const std::string& name) {
  const auto n = static_cast<double>(shape_.elements());
  push(name, LayerKind::normalization, kBatchNormFlopsPerElement * n, 2 * shape_.channels, shape_.elements(), shape_);
}

void NetBuilder::relu(const std::string& name) {
  push(name, LayerKind::elementwise, kElementwiseFlopsPerElement * static_cast<double>(shape_.elements()), 0,
       shape_.elements(), shape_);
}

void NetBuilder::add(const std::string& name) {
  push(name, LayerKind::elementwise, kElementwiseFlopsPerElement * static_cast<double>(shape_.elements()), 0,
       2 * shape_.elements(), shape_);
}

void NetBuilder::max_pool(const std::string& name, int kernel, int stride, int padding) {
  window_pool(name, kernel, stride, padding);
}

void NetBuilder::avg_pool(const std::string& name, int kernel, int stride, int padding) {
  window_pool(name, kernel, stride, padding);
}

void NetBuilder::window_pool(const std::string& name, int kernel, int stride, int padding) {
  const Shape out{shape_.channels, window_out(name, shape_.height, kernel, stride, padding),
                  window_out(name, shape_.width, kernel, stride, padding)};
  push(name, LayerKind::pooling, static_cast<double>(kernel) * kernel * static_cast<double>(out.elements()), 0,
       shape_.elements(), out);
}

void NetBuilder::adaptive_avg_pool(const std::string& name, std::int64_t out_height, std::int64_t out_width) {
  if (out_height < 1 || out_width < 1) throw std::invalid_argument(fmt::format("{}: bad output size", name));
  const Shape out{shape_.channels, out_height, out_width};
  const double window_elements = static_cast<double>(adaptive_windows_extent(shape_.height, out_height)) *
                                 static_cast<double>(adaptive_windows_extent(shape_.width, out_width));
  push(name, LayerKind::pooling, static_cast<double>(shape_.channels) * window_elements, 0, shape_.elements(), out);
}

void NetBuilder::global_avg_pool(const std::string& name) {
  adaptive_avg_pool(name, 1, 1);
}

void NetBuilder::dropout(const std::string& name) {
  push(name, LayerKind::elementwise, kElementwiseFlopsPerElement * static_cast<double>(shape_.elements()), 0,
       shape_.elements(), shape_);
}

void NetBuilder::sigmoid(const std::string& name) {
  push(name, LayerKind::elementwise, kElementwiseFlopsPerElement * static_cast<double>(shape_.elements()), 0,
       shape_.elements(), shape_);
}

void NetBuilder::multiply(const std::string& name) {
  push(name, LayerKind::elementwise, kElementwiseFlopsPerElement * static_cast<double>(shape_.elements()), 0,
       2 * shape_.elements(), shape_);
}

void NetBuilder::sum_channels(const std::string& name) {
  push(name, LayerKind::elementwise, kElementwiseFlopsPerElement * static_cast<double>(shape_.elements()), 0,
       shape_.elements(), Shape{1, shape_.height, shape_.width});
}

void NetBuilder::linear(const std::string& name, std::int64_t out_features, bool bias) {
  if (out_features < 1) throw std::invalid_argument(fmt::format("{}: out_features must be positive", name));
  const std::int64_t in = shape_.elements();
  const std::int64_t weights = in * out_features;
  push(name, LayerKind::matmul, 2 * static_cast<double>(weights), weights + (bias ? out_features : 0), in,
       Shape{out_features, 1, 1});
  layers_.back().gemm = {1, out_features, in, 1};
  layers_.back().bias = bias;
}

void NetBuilder::concat(const std::string& name, const std::vector<Shape>& parts) {
  if (parts.size() < 2) throw std::invalid_argument(fmt::format("{}: concatenates at least two tensors", name));
  Shape out{0, parts.front().height, parts.front().width};
  std::int64_t in = 0;
  for (const auto& p : parts) {
    if (p.height != out.height || p.width != out.width || p.channels < 1)
      throw std::invalid_argument(fmt::format("{}: cannot concatenate {}x{}x{} with {}x{}x{}", name, p.channels,
                                              p.height, p.width, parts.front().channels, out.height, out.width));
    out.channels += p.channels;
    in += p.elements();
  }
  push(name, LayerKind::elementwise, 0, 0, in, out);
}

void NetBuilder::embedding(const std::string& name, std::int64_t rows, std::int64_t dim, std::int64_t lookups) {
  if (rows < 1 || dim < 1 || lookups < 1)
    throw std::invalid_argument(fmt::format("{}: rows, dim and lookups must be positive", name));
  push(name, LayerKind::embedding, static_cast<double>((lookups - 1) * dim), rows * dim, lookups * dim,
       Shape{dim, 1, 1});
  layers_.back().sparse_gradient = true;
}

void NetBuilder::pairwise_dot(const std::string& name, std::int64_t vectors) {
  if (vectors < 2 || shape_.elements() % vectors != 0)
    throw std::invalid_argument(
        fmt::format("{}: {} elements are not {} vectors of one length", name, shape_.elements(), vectors));
  const std::int64_t dim = shape_.elements() / vectors;
  const GemmShape gemm{vectors, vectors, dim, 1};
  push(name, LayerKind::matmul, gemm.flops(), 0, shape_.elements(), Shape{1, vectors, vectors});
  layers_.back().gemm = gemm;
}

void NetBuilder::lower_triangle(const std::string& name) {
  if (shape_.channels != 1 || shape_.height != shape_.width || shape_.height < 2)
    throw std::invalid_argument(fmt::format("{}: needs an n x n matrix", name));
  const std::int64_t n = shape_.height;
  const std::int64_t pairs = n * (n - 1) / 2;
  push(name, LayerKind::elementwise, 0, 0, pairs, Shape{pairs, 1, 1}); // reads only the entries it keeps
}

} // namespace dtsim::models::detail
