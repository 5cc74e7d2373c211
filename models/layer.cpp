#include "models/layer.hpp"

#include <algorithm>
#include <numeric>
#include <set>
#include <string_view>

namespace dtsim::models {

std::string_view to_string(LayerKind kind) {
  switch (kind) {
  case LayerKind::convolution:
    return "convolution";
  case LayerKind::matmul:
    return "matmul";
  case LayerKind::attention:
    return "attention";
  case LayerKind::elementwise:
    return "elementwise";
  case LayerKind::normalization:
    return "normalization";
  case LayerKind::pooling:
    return "pooling";
  case LayerKind::softmax:
    return "softmax";
  case LayerKind::embedding:
    return "embedding";
  }
  return "unknown"; // unreachable for valid enumerators; keeps -Wreturn-type quiet
}

bool is_gemm_like(LayerKind kind) {
  return kind == LayerKind::convolution || kind == LayerKind::matmul;
}

double backward_factor(LayerKind kind) {
  return is_gemm_like(kind) || kind == LayerKind::attention ? 2.0 : 1.0;
}

double attention_score_bytes(const AttentionShape& a, double element_bytes) {
  const double scores =
      static_cast<double>(a.heads) * static_cast<double>(a.sequence) * static_cast<double>(a.sequence);
  return a.dropout ? scores * (2 * element_bytes + 1) : scores * element_bytes;
}

std::vector<GemmShape> forward_gemms(const Layer& l, std::int64_t batch) {
  if (l.kind == LayerKind::attention && l.attention.sequence > 0) {
    const auto& a = l.attention;
    const std::int64_t count = a.heads * batch;
    return {{a.sequence, a.sequence, a.head_dim, count}, {a.sequence, a.head_dim, a.sequence, count}};
  }
  if (l.gemm.m > 0) return {{l.gemm.m * batch, l.gemm.n, l.gemm.k, l.gemm.count}};
  return {};
}

std::int64_t Workload::parameter_count() const {
  return std::accumulate(layers.begin(), layers.end(), std::int64_t{0},
                         [](std::int64_t sum, const Layer& l) { return sum + l.parameters; });
}

int Workload::block_count() const {
  std::set<int> blocks;
  for (const auto& l : layers)
    if (l.block >= 0) blocks.insert(l.block);
  return static_cast<int>(blocks.size());
}

int Workload::expert_count() const {
  int experts = 0;
  for (const auto& l : layers)
    experts = std::max(experts, l.moe.experts);
  return experts;
}

bool Workload::tensor_splits() const {
  return std::any_of(layers.begin(), layers.end(),
                     [](const Layer& l) { return l.tensor_split != TensorSplit::replicated; });
}

std::int64_t Workload::active_parameter_count() const {
  std::int64_t active = 0;
  for (const auto& l : layers)
    active += l.moe.experts > 0 ? l.parameters / l.moe.experts * l.moe.top_k : l.parameters;
  return active;
}

double Workload::forward_flops_per_sample() const {
  return std::accumulate(layers.begin(), layers.end(), 0.0,
                         [](double sum, const Layer& l) { return sum + l.forward_flops; });
}

double Workload::backward_flops_per_sample() const {
  return std::accumulate(layers.begin(), layers.end(), 0.0,
                         [](double sum, const Layer& l) { return sum + l.backward_flops; });
}

} // namespace dtsim::models
