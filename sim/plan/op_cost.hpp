#pragma once
// What one layer costs on a GPU in forward and in backward: the kernels a framework launches for it, each priced by
// the roofline (calibration/cost_model.hpp). They run one after another on the compute stream, so an op's time is
// the sum of its kernels' times, not the roofline of their sum.
#include "calibration/cost_model.hpp"
#include "models/layer.hpp"
#include "sim/scenario/scenario.hpp"

#include <cstdint>
#include <vector>

namespace dtsim::plan {

struct OpCost {
  std::vector<calibration::KernelCost> kernels;

  double seconds(const calibration::GpuProfile& gpu) const;
  double flops() const; // as the kernels execute them (recomputation and flash's backward included)
  double bytes() const;
  OpCost& operator+=(const OpCost& other);
};

// What the scenario decides about a layer's kernels.
struct CostContext {
  std::int64_t batch = 1; // samples per micro-batch
  calibration::Precision precision = calibration::Precision::fp32;
  scenario::AttentionKernel attention = scenario::AttentionKernel::plain;
  scenario::Recompute recompute = scenario::Recompute::none;

  static CostContext of(const scenario::Scenario& s);
};

// Forward: reads the input and the weights, writes the output (an embedding reads only the rows it looks up).
// Attention cores: unfused, a Q K^T GEMM, the scale-mask-softmax and dropout kernels over the s^2 scores and a P V
// GEMM, each moving its operands through memory; fused, one FlashAttention kernel that reads Q, K, V and writes
// the output, skipping the masked half of a causal attention.
OpCost forward_cost(const models::Layer& layer, const CostContext& context);

// Backward: each forward GEMM's data- and weight-gradient GEMMs; attention's dV, dP, dropout, softmax, dQ and dK
// kernels (fused: FlashAttention-2's backward, 2.5x the forward's FLOPs as it recomputes the scores, Dao 2023);
// twice the forward's traffic for memory-bound ops. Plus what recomputation reruns (Korthikanti et al. 2022):
// full recomputation reruns the forward of every op of a transformer block; selective reruns an unfused attention
// core's Q K^T, softmax and dropout.
OpCost backward_cost(const models::Layer& layer, const CostContext& context);

// Bytes each parameter holds on the GPU, by what they are (before any ZeRO sharding), as the frameworks keep them:
//   fp32, tf32  weights 4, gradients 4, no separate master copy
//   amp         PyTorch autocast: fp32 weights and gradients, plus the fp16 copy of each weight that autocast
//               casts in forward and autograd keeps for backward (weights 4 + 2)
//   fp16, bf16  mixed precision as Megatron-LM and DeepSpeed run it (Micikevicius et al. 2018): 16-bit weights and
//               gradients, fp32 master weights in the optimizer
//   fp8         as bf16, plus the fp8 copy of each weight Transformer Engine caches (1)
// and 4 bytes per optimizer state (SGD 0, momentum 1, Adam 2): mixed-precision Adam is 2 + 2 + 4 + 8 = 16 bytes,
// ZeRO's K = 12 of optimizer memory (Rajbhandari et al. 2020, section 3.1).
struct ModelStateBytes {
  double weights = 0;
  double gradients = 0;
  double master = 0; // fp32 master weights, 0 where the weights are fp32 themselves
  double states = 0;
  double optimizer() const { return master + states; } // what ZeRO stage 1 shards
};
ModelStateBytes model_state_bytes(scenario::Optimizer optimizer, calibration::Precision precision);

// The optimizer step over `parameters` weights in `tensors` tensors, as a fused multi-tensor kernel streams them:
// read the gradient, read and write the fp32 weights (master or own) and each state, write the 16-bit working copy
// where there is one. SGD 12, momentum 20, Adam 28 bytes per parameter in fp32 and in bf16 alike.
OpCost optimizer_step_cost(double parameters, int tensors, const scenario::Scenario& s);
double optimizer_step_bytes(scenario::Optimizer optimizer, calibration::Precision precision);

} // namespace dtsim::plan
