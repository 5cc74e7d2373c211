#pragma once
// A model as the simulator sees it: an ordered list of layers with their per-sample cost.
// Plain value types; nothing here knows about GPUs, precisions or the simulator.
#include <cstdint>
#include <string>
#include <vector>

namespace dtsim::models {

enum class LayerKind : std::uint8_t {
  convolution,   // im2col-able: compute-bound, runs on tensor cores where the precision allows
  matmul,        // fully connected / linear layer: a GEMM of shape (m, n, k)
  elementwise,   // activation functions, residual additions: memory-bound
  normalization, // batch or layer norm: memory-bound
  pooling,       // max/avg pooling: memory-bound
  softmax,       // memory-bound
  embedding,     // table lookup: memory-bound, sparse gradients
};

std::string_view to_string(LayerKind kind);
// Convolutions and matmuls: backward costs twice the forward (data and weight gradients).
bool is_gemm_like(LayerKind kind);

// Everything per sample (one image, one sequence). The plan multiplies by the batch.
struct Layer {
  std::string name;
  LayerKind kind = LayerKind::elementwise;
  double forward_flops = 0;  // FLOPs per sample (1 multiply-accumulate = 2 FLOPs)
  double backward_flops = 0; // FLOPs per sample for the data and weight gradients
  std::int64_t parameters = 0;
  std::int64_t input_elements = 0;  // activations read per sample
  std::int64_t output_elements = 0; // activations written per sample (kept for backward)
};

struct Workload {
  std::string name;
  std::vector<Layer> layers;           // in forward order
  std::string sample_unit = "samples"; // what one sample is called in reports ("images", "sequences")

  std::int64_t parameter_count() const;
  double forward_flops_per_sample() const;
  double backward_flops_per_sample() const;
};

} // namespace dtsim::models
