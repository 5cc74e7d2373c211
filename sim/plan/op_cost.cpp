// Kernels per layer (op_cost.hpp). Attention's kernels follow Megatron-LM's unfused path (a batched GEMM, the fused
// scale-mask-softmax, dropout, a batched GEMM) and FlashAttention-2 (Dao 2023) for the fused one.
#include "sim/plan/op_cost.hpp"

#include <numeric>

namespace dtsim::plan {

using calibration::GemmDims;
using calibration::KernelClass;
using calibration::KernelCost;
using calibration::Precision;

namespace {

// FLOPs per score of the scale-mask-softmax and of dropout: only their bytes set their time.
constexpr double kSoftmaxFlopsPerScore = 5;
constexpr double kDropoutFlopsPerScore = 1;

double d(std::int64_t v) {
  return static_cast<double>(v);
}

KernelClass kernel_class(models::LayerKind kind) {
  switch (kind) {
  case models::LayerKind::convolution:
    return KernelClass::convolution;
  case models::LayerKind::matmul:
    return KernelClass::gemm;
  default:
    return KernelClass::memory;
  }
}

GemmDims dims(const models::GemmShape& g) {
  return {d(g.m), d(g.n), d(g.k), d(g.count)};
}

// One batched GEMM of the attention core that moves its operands through memory (A, B read; C written).
KernelCost attention_gemm(Precision p, double element_bytes, GemmDims g) {
  const double bytes = (g.m * g.k + g.k * g.n + g.m * g.n) * g.count * element_bytes;
  return {KernelClass::gemm, p, g.flops(), bytes, 1, {g}};
}

KernelCost memory_kernel(double flops, double bytes) {
  return {KernelClass::memory, Precision::fp32, flops, bytes, 1, {}};
}

// One attention core at a micro-batch: its shape, the precision its GEMMs run in, the bytes of an element, and the
// tile a fused kernel runs per head (128 query rows at a time against the keys it needs: the causal half's).
struct AttentionDims {
  double s, d, heads; // sequence, head dim, heads x samples
  Precision p;
  double e;
  GemmDims tile;
  double scores() const { return heads * s * s; }
};

AttentionDims attention_dims(const models::Layer& layer, const CostContext& c) {
  const auto& a = layer.attention;
  const double s = d(a.sequence), heads = d(a.heads) * d(c.batch);
  return {s,
          d(a.head_dim),
          heads,
          calibration::attention_precision(c.precision),
          calibration::activation_bytes(c.precision),
          {s, d(a.head_dim), a.causal ? s / 2 : s, heads}};
}

// Unfused forward up to the probabilities that P V reads: Q K^T, scale-mask-softmax, dropout. Selective
// recomputation reruns exactly these.
OpCost unfused_scores(const models::Layer& layer, const CostContext& c) {
  const auto a = attention_dims(layer, c);
  OpCost cost;
  cost.kernels.push_back(attention_gemm(a.p, a.e, {a.s, a.s, a.d, a.heads}));
  cost.kernels.push_back(memory_kernel(kSoftmaxFlopsPerScore * a.scores(), 2 * a.e * a.scores()));
  if (layer.attention.dropout)
    cost.kernels.push_back(memory_kernel(kDropoutFlopsPerScore * a.scores(), (2 * a.e + 1) * a.scores()));
  return cost;
}

OpCost attention_forward(const models::Layer& layer, const CostContext& c) {
  const auto a = attention_dims(layer, c);
  if (c.attention == scenario::AttentionKernel::flash) { // Q K^T and P V per tile
    const double bytes = (d(layer.input_elements) + d(layer.output_elements)) * d(c.batch) * a.e;
    return {{KernelCost{KernelClass::attention, a.p, 2 * a.tile.flops(), bytes, 1, {a.tile, a.tile}}}};
  }
  OpCost cost = unfused_scores(layer, c);
  cost.kernels.push_back(attention_gemm(a.p, a.e, {a.s, a.d, a.s, a.heads}));
  return cost;
}

OpCost attention_backward(const models::Layer& layer, const CostContext& c) {
  const auto a = attention_dims(layer, c);
  const Precision p = a.p;
  const double e = a.e;
  if (c.attention == scenario::AttentionKernel::flash) {
    // Recompute S = Q K^T and P, then dV, dP, dQ, dK: five GEMMs of the forward's two (Dao 2023, section 3.1.2).
    // Reads Q, K, V, O, dO; writes dQ, dK, dV; a second kernel converts the fp32 dQ accumulator.
    const double bytes = (2 * d(layer.input_elements) + 2 * d(layer.output_elements)) * d(c.batch) * e;
    const auto& t = a.tile;
    return {{KernelCost{KernelClass::attention, p, 5 * t.flops(), bytes, 2, {t, t, t, t, t}}}};
  }
  OpCost cost;
  if (c.recompute == scenario::Recompute::selective) cost += unfused_scores(layer, c);
  cost.kernels.push_back(attention_gemm(p, e, {a.s, a.d, a.s, a.heads})); // dV = P^T dO
  cost.kernels.push_back(attention_gemm(p, e, {a.s, a.s, a.d, a.heads})); // dP = dO V^T
  if (layer.attention.dropout) cost.kernels.push_back(memory_kernel(a.scores(), (2 * e + 1) * a.scores()));
  cost.kernels.push_back(memory_kernel(kSoftmaxFlopsPerScore * a.scores(), 3 * e * a.scores())); // P, dP -> dS
  cost.kernels.push_back(attention_gemm(p, e, {a.s, a.d, a.s, a.heads}));                        // dQ = dS K
  cost.kernels.push_back(attention_gemm(p, e, {a.s, a.d, a.s, a.heads}));                        // dK = dS^T Q
  return cost;
}

bool is_attention_core(const models::Layer& layer) {
  return layer.kind == models::LayerKind::attention && layer.attention.sequence > 0;
}

} // namespace

double OpCost::seconds(const calibration::GpuProfile& gpu) const {
  double total = 0;
  for (const auto& k : kernels)
    total += calibration::kernel_time(gpu, k);
  return total;
}

double OpCost::flops() const {
  return std::accumulate(kernels.begin(), kernels.end(), 0.0,
                         [](double s, const KernelCost& k) { return s + k.flops; });
}

double OpCost::bytes() const {
  return std::accumulate(kernels.begin(), kernels.end(), 0.0,
                         [](double s, const KernelCost& k) { return s + k.bytes; });
}

OpCost& OpCost::operator+=(const OpCost& other) {
  kernels.insert(kernels.end(), other.kernels.begin(), other.kernels.end());
  return *this;
}

CostContext CostContext::of(const scenario::Scenario& s) {
  return {s.model.batch_per_gpu, s.model.precision, s.model.attention, s.training.recompute};
}

OpCost forward_cost(const models::Layer& layer, const CostContext& c) {
  if (is_attention_core(layer)) return attention_forward(layer, c);
  const double act = calibration::activation_bytes(c.precision);
  const double batch = d(c.batch);
  const double weights = layer.kind == models::LayerKind::embedding ? 0 : d(layer.parameters) * act;
  const double bytes = (d(layer.input_elements) + d(layer.output_elements)) * batch * act + weights;
  KernelCost cost{kernel_class(layer.kind), c.precision, layer.forward_flops * batch, bytes, 1, {}};
  for (const auto& g : models::forward_gemms(layer, c.batch))
    cost.gemms.push_back(dims(g));
  return {{cost}};
}

OpCost backward_cost(const models::Layer& layer, const CostContext& c) {
  OpCost cost;
  if (c.recompute == scenario::Recompute::full && layer.block >= 0) cost = forward_cost(layer, c);
  if (is_attention_core(layer)) return cost += attention_backward(layer, c);
  // The data gradient and, for layers with weights, the weight gradient: kernels that each move about as much as
  // the forward did. Each forward GEMM Y[m x n] = X W gives dX[m x k] = dY W^T and dW[k x n] = X^T dY, whose
  // reduction runs over m.
  KernelCost k = forward_cost(layer, c).kernels.front();
  k.flops = layer.backward_flops * d(c.batch);
  k.bytes *= 2;
  k.kernels = static_cast<int>(models::backward_factor(layer.kind));
  std::vector<GemmDims> backward;
  for (const auto& f : k.gemms) {
    backward.push_back({f.m, f.k, f.n, f.count});
    backward.push_back({f.k, f.n, f.m, f.count});
  }
  k.gemms = std::move(backward);
  cost.kernels.push_back(std::move(k));
  return cost;
}

ModelStateBytes model_state_bytes(scenario::Optimizer optimizer, Precision precision) {
  const double states = 4.0 * (optimizer == scenario::Optimizer::adam       ? 2
                               : optimizer == scenario::Optimizer::momentum ? 1
                                                                            : 0);
  switch (precision) {
  case Precision::fp32:
  case Precision::tf32:
    return {4, 4, 0, states};
  case Precision::amp:
    return {4 + 2, 4, 0, states};
  case Precision::fp16:
  case Precision::bf16:
    return {2, 2, 4, states};
  case Precision::fp8:
    return {2 + 1, 2, 4, states};
  }
  return {4, 4, 0, states};
}

double optimizer_step_bytes(scenario::Optimizer optimizer, Precision precision) {
  const ModelStateBytes m = model_state_bytes(optimizer, precision);
  const double working_copy = m.master > 0 ? calibration::activation_bytes(calibration::Precision::bf16) : 0;
  return m.gradients + 2 * 4 + 2 * m.states + working_copy;
}

OpCost optimizer_step_cost(double parameters, int tensors, const scenario::Scenario& s) {
  KernelCost step = memory_kernel(0, parameters * optimizer_step_bytes(s.training.optimizer, s.model.precision));
  step.kernels = tensors;
  return {{step}};
}

} // namespace dtsim::plan
