#pragma once
// Compute model (DESIGN.md): what a kernel costs on a GPU, and what bounds it. Per kernel:
//   time = max(math, memory) + launches x the GPU's per-kernel overhead
// - math: a GEMM, a convolution's implicit GEMM or a fused attention kernel runs its tiles in waves over the SMs
//   (calibration/gemm_model.hpp): the precision's peak x the large-shape efficiency of the kernel class x the share of
//   the SMs' time its useful work fills, each SM's rate capped by what its share of the L2 bandwidth can feed the tile;
// - memory: the bytes it really moves through HBM at the sustained streaming bandwidth;
// - the per-kernel overhead: a kernel's launch and ramp on the GPU, so a memory-bound kernel's achieved bandwidth
//   rises with its size as bytes / (overhead + bytes / bandwidth) does.
// A measured profile's efficiency curves (by FLOPs, and by bytes for memory kernels) replace the class efficiency and
// the wave model where it has them. What the host costs to issue the kernels is not GPU time: KernelCost carries it
// for the launch timeline (calibration/launch_timeline.hpp).
#include "calibration/gemm_model.hpp"
#include "calibration/profile.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace dtsim::calibration {

// The share of a direct convolution's multiplications Winograd's F(4x4, 3x3) does: 36 for 16 outputs of a 3x3 filter
// where direct convolution does 16 x 9 = 144 (Lavin and Gray 2016, section 4).
inline constexpr double kWinogradShare = 36.0 / 144.0;

struct KernelCost {
  KernelClass kind = KernelClass::memory;
  Precision precision = Precision::fp32;
  double flops = 0; // floating-point operations
  double bytes = 0; // bytes read and written in device memory
  int kernels = 1;  // launches this op takes (each pays the launch overhead)
  // The GEMMs behind `flops` (gemm and convolution classes: each its own kernel; attention: the tiles of one fused
  // kernel); empty: flops at the class efficiency, bytes as given.
  std::vector<GemmDims> gemms;
  std::string name;        // what the kernel is, as a profiler would list it ("gemm (dgrad)", "layer_norm bwd")
  double host_seconds = 0; // CPU time to issue all its launches (framework dispatch and cudaLaunchKernel)
  // Memory class: the share of the profile's streaming rate (memory.bandwidth x efficiency) this implementation
  // reaches. 1 for a kernel that streams its bytes; less for one that reduces each row before it writes (a norm) or
  // reads the strided halves of one tensor (a gated activation), as measured for the framework that runs it
  // (calibration/frameworks/*.json, stream_shares).
  double stream_share = 1;
  // A 3x3, stride-1, ungrouped convolution: cuDNN may run it as a Winograd transform instead of an implicit GEMM, and
  // its search (cudnnFind, a framework's benchmark mode) takes the faster. Priced both ways where the profile rates
  // Winograd for the precision (GpuProfile::winograd_efficiency); the faster is its time.
  bool winograd = false;
};

// What sets a kernel's time: the math units, HBM bandwidth, the L2 feeding small tiles, or the per-kernel overhead.
enum class Bound : std::uint8_t { math, hbm, l2, launch };
std::string_view to_string(Bound b);

struct KernelTime {
  double seconds = 0; // on the GPU, every launch and its overhead included
  Bound bound = Bound::launch;
  // The kernel's rate over the peak of what bounds it: FLOP/s over the precision's peak (math, l2, and launch for a
  // kernel with FLOPs), bytes/s over the datasheet bandwidth (hbm, and launch for a kernel without).
  double efficiency = 0;
  // What the SM clock sets: the time of its math- and L2-bound work (a power-capped clock stretches it; HBM-bound
  // work and the per-kernel overhead keep their time), and the energy of its work above the idle draw at the power
  // limit (calibration/sustained_clock.hpp; 0 where the profile has no sustained figures).
  double math_seconds = 0;
  double joules = 0;
  bool winograd = false; // a convolution priced as a Winograd transform (KernelCost::winograd): kWinogradShare FLOPs
};

// A fused attention kernel over `heads` heads (times samples) of sequence s and head dimension d, of `library`
// (KernelClass::attention: FlashAttention-2, Dao 2023; KernelClass::cudnn_attention: cuDNN's, which runs the same
// algorithm): per head, s query rows against the keys they need (the causal half's) make one tile of the GEMM model's
// shape; the forward runs two such products (Q K^T, P V), the backward five (S recomputed, dV, dP, dQ, dK: section
// 3.1.2) in two kernels (the second converts the fp32 dQ accumulator). `bytes`: what it reads and writes.
KernelCost fused_attention_kernel(KernelClass library, double s, double d, double heads, bool causal, bool backward,
                                  Precision p, double bytes);

KernelTime kernel_timing(const GpuProfile& gpu, const KernelCost& cost);
double kernel_time(const GpuProfile& gpu, const KernelCost& cost); // kernel_timing(...).seconds

} // namespace dtsim::calibration
