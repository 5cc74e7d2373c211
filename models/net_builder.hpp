#pragma once
// Internal helper for the model builders in this folder: appends one Layer per framework op and tracks the
// activation shape, so that every FLOP and parameter figure is computed from shapes rather than typed in.
#include "models/layer.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dtsim::models::detail {

// Activation shape of one sample (channels x height x width); a feature vector is {features, 1, 1}.
struct Shape {
  std::int64_t channels = 0;
  std::int64_t height = 1;
  std::int64_t width = 1;
  std::int64_t elements() const { return channels * height * width; }
  bool operator==(const Shape&) const = default;
};

// FLOPs per element of the memory-bound ops. Their time is set by bytes, not FLOPs, so these only need the
// right order of magnitude: ReLU and addition are one operation per output element; batch norm in training
// is (x - mean) * inv_std * gamma + beta (4) plus about one more for the batch statistics, amortized.
inline constexpr double kElementwiseFlopsPerElement = 1;
inline constexpr double kBatchNormFlopsPerElement = 5;

class NetBuilder {
public:
  explicit NetBuilder(Shape input) : shape_(input) {}

  const Shape& shape() const { return shape_; }
  // Rewinds the current shape, e.g. to the block input before a residual downsample branch.
  void set_shape(Shape s) { shape_ = s; }

  // 2-D convolution, square kernel. MACs = Cin/groups * K * K * Cout * Hout * Wout.
  void conv(const std::string& name, std::int64_t out_channels, int kernel, int stride, int padding, int groups = 1,
            bool bias = false);
  // Batch normalization over channels: gamma and beta are the 2*C parameters (running stats are buffers).
  void batch_norm(const std::string& name);
  void relu(const std::string& name);
  // Residual addition of two tensors of the current shape.
  void add(const std::string& name);
  // Max pooling, square window: K*K comparisons per output element.
  void max_pool(const std::string& name, int kernel, int stride, int padding);
  // Adaptive average pooling to 1x1: every input element is summed once.
  void global_avg_pool(const std::string& name);
  // Fully connected layer on the flattened current shape. MACs = in * out.
  void linear(const std::string& name, std::int64_t out_features, bool bias = true);

  std::vector<Layer> take() { return std::move(layers_); }

private:
  void push(const std::string& name, LayerKind kind, double forward_flops, std::int64_t parameters,
            std::int64_t input_elements, Shape out);

  Shape shape_;
  std::vector<Layer> layers_;
};

} // namespace dtsim::models::detail
