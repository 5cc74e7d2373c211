#pragma once
// What one layer costs on a GPU in forward and in backward: the kernels a framework launches for it, each priced by
// the kernel cost model (calibration/cost_model.hpp) and each carrying what the host spends issuing it. They run one
// after another on the compute stream, so an op's time is the sum of its kernels' times, not the roofline of their
// sum; a LaunchTimeline (calibration/launch_timeline.hpp) adds the waits for a host that falls behind.
#include "calibration/cost_model.hpp"
#include "calibration/framework.hpp"
#include "calibration/launch_timeline.hpp"
#include "calibration/sustained_clock.hpp"
#include "models/layer.hpp"
#include "sim/scenario/scenario.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dtsim::plan {

namespace detail {
class KernelTable;
}

struct OpCost {
  std::vector<calibration::KernelCost> kernels;

  double seconds(const calibration::GpuProfile& gpu) const; // the kernels' GPU time, the host never behind
  double flops() const; // as the kernels execute them (recomputation and flash's backward included)
  double bytes() const;
  OpCost& operator+=(const OpCost& other);
};

// An op's kernels priced once on a GPU (planners reuse it for every micro-batch).
struct PricedOp {
  OpCost cost;
  std::vector<calibration::KernelTime> times; // per kernel of `cost`, all its launches
  double flops = 0, bytes = 0;                // cost.flops(), cost.bytes()

  PricedOp() = default;
  PricedOp(OpCost op, const calibration::GpuProfile& gpu);
  // Runs the kernels on a rank's compute stream, each launch issued by the host in turn (calibration/
  // launch_timeline.hpp): returns the time they add to the stream (waits for the host included) at burst clocks, the
  // clock-sensitive part of it and the energy of their work (calibration/sustained_clock.hpp). Each kernel goes into
  // `table` when one is given.
  calibration::Stretch run(calibration::LaunchTimeline& timeline, detail::KernelTable* table = nullptr) const;
};

// What the scenario decides about a layer's kernels.
struct CostContext {
  std::int64_t batch = 1; // samples per micro-batch
  calibration::Precision precision = calibration::Precision::fp32;
  scenario::AttentionKernel attention = scenario::AttentionKernel::plain;
  scenario::Recompute recompute = scenario::Recompute::none;
  calibration::Framework framework; // which kernels are fused, and the host's cost to issue them
  scenario::Fp8Recipe fp8_recipe = scenario::Fp8Recipe::delayed;

  static CostContext of(const scenario::Scenario& s);
};

// Forward: a GEMM or convolution reads its input and weights and writes its output (fp8: its input cast to fp8 first);
// an attention core runs unfused (a Q K^T GEMM, the scale, mask and softmax kernels, dropout, a P V GEMM, each moving
// its operands through memory) or as one FlashAttention kernel; a memory-bound op runs the kernels its form takes in
// the framework (models::MemoryOp: fused bias-activation, bias-dropout-add, Megatron's fp32 cross-entropy, ...).
OpCost forward_cost(const models::Layer& layer, const CostContext& context);

// Backward: each forward GEMM's data- and weight-gradient GEMMs and its bias gradient's reduction; attention's dV, dP,
// dropout, softmax, dQ and dK kernels (fused: FlashAttention-2's backward, 2.5x the forward's FLOPs as it recomputes
// the scores, Dao 2023); a memory-bound op's backward kernels. Plus what recomputation reruns (Korthikanti et al.
// 2022): full recomputation reruns the forward of every op of a transformer block; selective reruns an unfused
// attention core's Q K^T, softmax and dropout.
OpCost backward_cost(const models::Layer& layer, const CostContext& context);

// Names of a linear layer's forward GEMM and its data-gradient GEMM among its kernels.
inline constexpr std::string_view kForwardGemm = "gemm";
inline constexpr std::string_view kDataGradientGemm = "gemm dgrad";

// The GEMM kernel named `kernel` (kForwardGemm, kDataGradientGemm) run as `chunks` GEMMs of m / chunks rows each, one
// after another, as Transformer Engine's userbuffers run a GEMM beside its tensor-parallel exchange (Megatron-LM's
// --tp-comm-overlap): each chunk fills the SMs in waves of its own and reads the whole weight again.
OpCost split_gemm_rows(OpCost cost, std::string_view kernel, int chunks, const CostContext& context);

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

// What the framework runs once per iteration over the `parameters` this rank steps (`tensors` tensors): the loss
// scaler's unscale and overflow check (fp16, amp), the gradients' global norm and clipping (Scenario::clips_gradients),
// fp8 weight casts (Transformer Engine), Megatron's zeroing of its fp32 gradient buffer, and the optimizer step, fused
// (one multi-tensor pass: read the gradient, read and write the fp32 weights and each state, write the 16-bit working
// copy; SGD 12, momentum 20, Adam 28 bytes per parameter) or PyTorch's foreach (a pass per arithmetic step).
OpCost iteration_passes(double parameters, int tensors, const scenario::Scenario& s);
// Bytes of a weight as the forward uses it: the 16-bit working copy in mixed precision (amp, fp16, bf16, fp8), fp32
// otherwise; what ZeRO-3 gathers and the distributed optimizer all-gathers after the step.
double working_weight_bytes(calibration::Precision precision);
// Bytes per parameter of the fused optimizer step alone (what an offloaded step streams on the host).
double optimizer_step_bytes(scenario::Optimizer optimizer, calibration::Precision precision);

} // namespace dtsim::plan
