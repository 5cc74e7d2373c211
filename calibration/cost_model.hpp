#pragma once
// Compute model (DESIGN.md): a roofline with achieved rates,
//   time = max(compute, bytes / (mem_bw * eff_mem)) + kernels * launch overhead,
// where a GEMM's compute runs in waves of output tiles over the GPU's SMs, so small and skinny GEMMs reach far
// less than the class efficiency that large ones do. A measured profile's efficiency curves (by FLOPs, and by bytes
// for memory) replace the class efficiency and the wave model where it has them.
#include "calibration/profile.hpp"

#include <vector>

namespace dtsim::calibration {

// One GEMM C[m x n] = A[m x k] B[k x n], `count` times (batched, grouped).
struct GemmDims {
  double m = 0, n = 0, k = 0, count = 1;
  double flops() const { return 2 * m * n * k * count; }
};

struct KernelCost {
  KernelClass kind = KernelClass::memory;
  Precision precision = Precision::fp32;
  double flops = 0; // floating-point operations
  double bytes = 0; // bytes read and written in device memory
  int kernels = 1;  // launches this op takes (each pays the launch overhead)
  // The GEMMs behind `flops` (gemm and convolution classes); empty: flops at the class efficiency.
  std::vector<GemmDims> gemms;
};

// Output tile of a tensor-core GEMM kernel: cuBLAS and CUTLASS's large-GEMM kernels compute 128 x 128 tiles of C
// per thread block (halved in a dimension where that pads less), one block per SM at a time.
inline constexpr double kGemmTile = 128;
// The least of k one split of a split-K GEMM takes (CUTLASS's split-K and stream-K kernels, Osama et al. 2023).
inline constexpr double kMinSplitK = 256;

// Fraction of the SMs' time a GEMM's useful work fills: it runs in waves of output tiles (times split-K splits)
// over the SMs, and the last wave and the tiles' padding idle part of them ("wave and tile quantization",
// NVIDIA's Matrix Multiplication Background User's Guide, 2023). 1 without an SM count.
double wave_utilization(const GpuProfile& gpu, const GemmDims& gemm);

double kernel_time(const GpuProfile& gpu, const KernelCost& cost);

} // namespace dtsim::calibration
