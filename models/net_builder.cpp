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
    throw std::invalid_argument(
        fmt::format("{}: input extent {} is too small for a {}x{} window", layer, in, kernel, kernel));
  return out;
}

} // namespace

void NetBuilder::push(const std::string& name, LayerKind kind, double forward_flops, std::int64_t parameters,
                      std::int64_t input_elements, Shape out) {
  Layer l;
  l.name = name;
  l.kind = kind;
  l.forward_flops = forward_flops;
  // Convolutions and matmuls need two GEMMs backward (data gradient and weight gradient) of the forward's size;
  // the memory-bound ops do about as much work backward as forward.
  l.backward_flops = is_gemm_like(kind) ? 2 * forward_flops : forward_flops;
  l.parameters = parameters;
  l.input_elements = input_elements;
  l.output_elements = out.elements();
  layers_.push_back(std::move(l));
  shape_ = out;
}

void NetBuilder::conv(const std::string& name, std::int64_t out_channels, int kernel, int stride, int padding,
                      int groups, bool bias) {
  if (groups < 1 || shape_.channels % groups != 0 || out_channels % groups != 0)
    throw std::invalid_argument(fmt::format("{}: channels not divisible by groups {}", name, groups));
  const Shape out{out_channels, window_out(name, shape_.height, kernel, stride, padding),
                  window_out(name, shape_.width, kernel, stride, padding)};
  const std::int64_t weights = shape_.channels / groups * kernel * kernel * out_channels;
  const double macs = static_cast<double>(weights) * static_cast<double>(out.height * out.width);
  push(name, LayerKind::convolution, 2 * macs, weights + (bias ? out_channels : 0), shape_.elements(), out);
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
  const Shape out{shape_.channels, window_out(name, shape_.height, kernel, stride, padding),
                  window_out(name, shape_.width, kernel, stride, padding)};
  push(name, LayerKind::pooling, static_cast<double>(kernel) * kernel * static_cast<double>(out.elements()), 0,
       shape_.elements(), out);
}

void NetBuilder::global_avg_pool(const std::string& name) {
  push(name, LayerKind::pooling, static_cast<double>(shape_.elements()), 0, shape_.elements(),
       Shape{shape_.channels, 1, 1});
}

void NetBuilder::linear(const std::string& name, std::int64_t out_features, bool bias) {
  if (out_features < 1) throw std::invalid_argument(fmt::format("{}: out_features must be positive", name));
  const std::int64_t in = shape_.elements();
  const std::int64_t weights = in * out_features;
  push(name, LayerKind::matmul, 2 * static_cast<double>(weights), weights + (bias ? out_features : 0), in,
       Shape{out_features, 1, 1});
}

} // namespace dtsim::models::detail
