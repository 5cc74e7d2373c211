#pragma once
// How long one GEMM (or a convolution's implicit GEMM, or an attention kernel's tiles) runs on a GPU, from its shape:
//   - output tiles: the library computes C in tiles of tile_m x tile_n per thread block (CUTLASS's and cuBLAS's tile
//     set, kGemmTiles), padding partial tiles;
//   - waves: the tiles run one per SM at a time, so the last wave leaves SMs idle ("wave quantization", NVIDIA's
//     Matrix Multiplication Background User's Guide), and each wave waits one HBM round trip for its first operands
//     before its math starts (the prologue of CUTLASS's multistage pipelines);
//   - split-K: too few tiles split the reduction dimension over more SMs, at the price of writing the partial sums
//     in fp32 and reducing them in a kernel of their own (CUTLASS's parallel split-K, media/docs/efficient_gemm.md,
//     "Parallelized Reductions");
//   - each SM's rate: the precision's peak times the large-shape efficiency the GPU's kernels reach (a measured
//     constant of the profile), unless the SM's share of the L2 bandwidth cannot feed the tile's operands: a tile of
//     tm x tn reads (tm + tn) x k elements for 2 tm tn k FLOPs, so small tiles are bound by L2, not by math;
//   - a roofline on HBM: the GEMM reads A and B and writes C at least once.
// The library picks the tiling that finishes first, as cuBLAS's heuristics and CUTLASS's profiler aim to.
#include "calibration/profile.hpp"

#include <array>
#include <cstdint>
#include <initializer_list>

namespace dtsim::calibration {

// One GEMM C[m x n] = A[m x k] B[k x n], `count` times (batched, grouped). `bytes`: what it moves through HBM when the
// caller knows better than the operands' sizes (a convolution reads its input image, not the larger im2col matrix);
// 0: (m k + k n) x the input element size + m n x the output element size, per GEMM.
// `unaligned`: a leading dimension of an operand is not a whole number of 16-byte vectors (an odd vocabulary), which
// keeps cuBLAS from its vectorized kernels (its documentation's Tensor Core usage: leading dimensions multiples of
// 16 bytes): it runs alignment-1 kernels instead. Which dimensions lead depends on the layout, so the caller says
// (leading_dims_unaligned for a row-major C = A B, whose leading dimensions are k and n).
struct GemmDims {
  double m = 0, n = 0, k = 0, count = 1;
  double bytes = 0;
  bool unaligned = false;
  double flops() const { return 2 * m * n * k * count; }
};

// Whether any of `dims` is not a whole number of 16-byte vectors of `p`'s input elements (8 bf16, 16 fp8 values).
bool off_16_bytes(std::initializer_list<double> dims, Precision p);

// Threadblock tiles of C the tensor-core GEMM kernels are instantiated with, Volta to Hopper: CUTLASS's kernel
// generator (python/cutlass_library/generator.py, GenerateSM80_TensorOp_16816: 256x128, 128x256, 256x64, 64x256,
// 128x128, 128x64, 64x128, 64x64), the tiles cuBLAS's heuristics choose among.
inline constexpr std::array<std::array<double, 2>, 8> kGemmTiles = {
    {{256, 128}, {128, 256}, {256, 64}, {64, 256}, {128, 128}, {128, 64}, {64, 128}, {64, 64}}};
// The least of k one split of a split-K GEMM takes (CUTLASS's split-K and stream-K kernels, Osama et al. 2023).
inline constexpr double kMinSplitK = 256;

// How a GEMM runs: its tile, splits of k, waves, the share of the SMs' time its useful work fills, and the rate each
// SM reaches on that tile as a fraction of the peak.
struct GemmTiling {
  double tile_m = 0, tile_n = 0;
  double splits = 1;
  double waves = 1;
  double utilization = 1;       // useful work over waves x SMs x one tile's work
  double tile_efficiency = 1;   // the SM's rate on this tile over the peak: the large-shape efficiency or the L2 feed
  bool l2_bound = false;        // the L2 feed, not the math, sets the tile's rate
  double math_seconds = 0;      // the waves at the tile's rate, each after its pipeline's first loads
  double reduction_seconds = 0; // split-K: the fp32 partial sums written, read back and reduced, and that kernel's
                                // launch
  double efficiency() const { return utilization * tile_efficiency; }
  double seconds() const { return math_seconds + reduction_seconds; }
};

// The tiling the library would pick for `g` at `precision` (math precision of a tensor-core kernel, or fp32), with
// `ceiling` the large-shape efficiency of the kernel class. Without an SM count: one perfect wave at the ceiling.
GemmTiling gemm_tiling(const GpuProfile& gpu, const GemmDims& g, Precision precision, double ceiling);

// Bytes of one element of a GEMM's inputs and of its output at a precision: fp8 GEMMs read 1-byte operands and write
// bf16 (Transformer Engine's recipe); tf32 runs on fp32 tensors.
double gemm_input_bytes(Precision p);
double gemm_output_bytes(Precision p);

} // namespace dtsim::calibration
