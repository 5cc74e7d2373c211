// The GEMM model (calibration/gemm_model.hpp) on a made-up 80-SM GPU: tiles, waves, split-K and the L2 feed counted by
// hand, and the roofline of a skinny GEMM.
#include "calibration/cost_model.hpp"

#include <gtest/gtest.h>

namespace dtsim::calibration {
namespace {

// 80 SMs, fp16 at 100 TFLOP/s (1.25 TFLOP/s per SM), tiles at the full peak unless L2 feeds them less; memory so fast
// it never binds.
GpuProfile eighty_sms() {
  GpuProfile g;
  g.name = "test";
  g.peak_flops = {{Precision::fp16, 100e12}, {Precision::fp32, 10e12}};
  g.gemm_efficiency = {{Precision::fp16, 1.0}, {Precision::fp32, 1.0}};
  g.conv_efficiency = g.gemm_efficiency;
  g.memory_bandwidth = 1e15;
  g.compute_units = 80;
  return g;
}

double gemm_seconds(const GpuProfile& g, double m, double n, double k) {
  return kernel_time(g, {KernelClass::gemm, Precision::fp16, 2 * m * n * k, 0, 0, {{m, n, k, 1}}});
}

TEST(GemmTiles, FullWavesRunAtTheCeiling) {
  // 80 tiles of 256 x 128 (or 160 of 128 x 128, two waves): every SM busy in every wave.
  const auto t = gemm_tiling(eighty_sms(), {256 * 80, 128, 4096, 1}, Precision::fp16, 1.0);
  EXPECT_DOUBLE_EQ(t.utilization, 1.0);
  EXPECT_DOUBLE_EQ(t.efficiency(), 1.0);
}

TEST(GemmTiles, TheTileThatPadsLeastWins) {
  // m = 128 x 81, n = 128, each tile shape's waves over 80 SMs:
  //   256x128: 41 tiles, 1 wave, 10368 x 128 / (80 x 256 x 128) = 0.506;  128x128: 81 tiles, 2 waves, 81/160
  //   128x64 and 64x128: 162 tiles, 3 waves, 162/240 = 0.675;             64x64: 324 tiles, 5 waves, 324/400 = 0.81
  const auto t = gemm_tiling(eighty_sms(), {128 * 81, 128, 4096, 1}, Precision::fp16, 1.0);
  EXPECT_NEAR(t.utilization, 324.0 / 400, 1e-12);
  EXPECT_EQ(t.tile_m, 64);
  EXPECT_EQ(t.waves, 5);
}

TEST(GemmTiles, PartialTilesArePadded) {
  // n = 96 in one wave of 80 tiles of 256 x 128: each tile does 256 x 128 of work for 256 x 96 of it.
  EXPECT_NEAR(gemm_tiling(eighty_sms(), {256 * 80, 96, 4096, 1}, Precision::fp16, 1.0).utilization, 96.0 / 128, 1e-12);
  // n = 64: 256 x 64 tiles fit exactly.
  EXPECT_NEAR(gemm_tiling(eighty_sms(), {256 * 80, 64, 4096, 1}, Precision::fp16, 1.0).utilization, 1.0, 1e-12);
}

TEST(GemmTiles, SmallOutputsSplitTheReduction) {
  // A weight gradient: m x n = 128 x 128, k = 100 x 256. Four 64 x 64 tiles split k 20 ways (floor(80 / 4)): 80
  // blocks, one full wave.
  EXPECT_NEAR(gemm_tiling(eighty_sms(), {128, 128, 256 * 100, 1}, Precision::fp16, 1.0).utilization, 1.0, 1e-12);
  // k = 10 x 256: at most 10 splits of 256 each; four 64 x 64 tiles x 10 = 40 of 80 SMs.
  EXPECT_NEAR(gemm_tiling(eighty_sms(), {128, 128, 256 * 10, 1}, Precision::fp16, 1.0).utilization, 40.0 / 80, 1e-12);
}

// L2 at 1.5625 TB/s: each SM's share, 19.53 GB/s, feeds a 128 x 128 fp16 tile (64 FLOPs per byte of A and B it reads:
// 2 x 128 x 128 / (256 x 2)) exactly its 1.25 TFLOP/s; a 64 x 64 tile (32 FLOPs per byte) half of it, a 128 x 64 tile
// (42.7) two thirds.
GpuProfile fed_by_l2() {
  auto g = eighty_sms();
  g.l2_bandwidth = 1.5625e12;
  return g;
}

TEST(GemmTiles, SmallTilesAreBoundByTheL2Feed) {
  const auto g = fed_by_l2();
  // 324 tiles of 64 x 64 in 5 waves (0.81) would now run at half rate: 0.405; 162 tiles of 128 x 64 in 3 waves at
  // two thirds: 0.45; 41 tiles of 256 x 128 in one wave, or 81 of 128 x 128 in two, at the full rate: 0.506, the best
  // (of equals, the larger tile: the first CUTLASS lists).
  const auto t = gemm_tiling(g, {128 * 81, 128, 4096, 1}, Precision::fp16, 1.0);
  EXPECT_EQ(t.tile_m, 256);
  EXPECT_EQ(t.tile_n, 128);
  EXPECT_NEAR(t.efficiency(), 81.0 / 160, 1e-12);
  EXPECT_FALSE(t.l2_bound);
  // n = 64: 80 tiles of 256 x 64 fill one wave exactly, at 2 x 256 x 64 / (320 x 2) = 51.2 FLOPs per byte, 0.8 of
  // the rate; a 128-wide tile would waste half its work on padding (0.5).
  const auto narrow = gemm_tiling(g, {256 * 80, 64, 4096, 1}, Precision::fp16, 1.0);
  EXPECT_EQ(narrow.tile_m, 256);
  EXPECT_EQ(narrow.tile_n, 64);
  EXPECT_NEAR(narrow.efficiency(), 0.8, 1e-12);
  EXPECT_TRUE(narrow.l2_bound);
  const KernelCost cost{KernelClass::gemm,        Precision::fp16, 2.0 * 256 * 80 * 64 * 4096, 0, 0,
                        {{256 * 80, 64, 4096, 1}}};
  EXPECT_EQ(kernel_timing(g, cost).bound, Bound::l2);
}

// The test by hand: with tiles held at 128 x 128 (the L2 feed makes smaller ones slower), m = 128 x 240 fills
// exactly 3 waves of the 80 SMs; one more row of tiles (m + 128) needs a 4th wave, so the GEMM costs a whole wave more
// for 1/240 more work.
TEST(GemmTiles, OneTileMoreCostsAWholeWave) {
  const auto g = fed_by_l2();
  const double three = gemm_seconds(g, 128 * 240, 128, 4096);
  const double four = gemm_seconds(g, 128 * 241, 128, 4096);
  const double wave = 2.0 * 128 * 128 * 4096 / 1.25e12; // one tile on one SM
  EXPECT_NEAR(three, 3 * wave, 1e-15);
  EXPECT_NEAR(four, 4 * wave, 1e-15);
}

// Time never drops when a GEMM grows in any dimension (partial tiles pay full tiles; splits never make more work
// faster).
TEST(GemmTiles, TimeGrowsWithEveryDimension) {
  for (const auto& g : {eighty_sms(), fed_by_l2()})
    for (double m : {1.0, 64.0, 127.0, 128.0, 129.0, 1000.0, 10240.0, 10241.0})
      for (double n : {1.0, 63.0, 64.0, 65.0, 128.0, 1000.0})
        for (double k : {1.0, 255.0, 256.0, 511.0, 512.0, 4096.0, 20480.0, 20481.0}) {
          EXPECT_LE(gemm_seconds(g, m, n, k), gemm_seconds(g, m + 1, n, k) + 1e-18) << m << " " << n << " " << k;
          EXPECT_LE(gemm_seconds(g, m, n, k), gemm_seconds(g, m, n + 1, k) + 1e-18) << m << " " << n << " " << k;
          EXPECT_LE(gemm_seconds(g, m, n, k), gemm_seconds(g, m, n, k + 1) + 1e-18) << m << " " << n << " " << k;
        }
}

// A skinny GEMM is bound by HBM: m = n = 8192, k = 1 in fp16 reads A and B and writes C,
// (8192 + 8192 + 8192^2) x 2 bytes = 134.25 MB, at 1 TB/s 134 us, against 134 MFLOP at 100 TFLOP/s = 1.3 us.
TEST(GemmTiles, SkinnyGemmsAreMemoryBound) {
  auto g = eighty_sms();
  g.memory_bandwidth = 1e12;
  const double m = 8192, n = 8192, k = 1;
  const double bytes = (m * k + k * n + m * n) * 2;
  const KernelCost cost{KernelClass::gemm, Precision::fp16, 2 * m * n * k, bytes, 1, {{m, n, k, 1}}};
  const auto t = kernel_timing(g, cost);
  EXPECT_NEAR(t.seconds, bytes / 1e12, 1e-12);
  EXPECT_EQ(t.bound, Bound::hbm);
  EXPECT_NEAR(t.efficiency, 1.0, 1e-12); // the datasheet bandwidth, reached
}

// fp8 GEMMs read 1-byte operands and write bf16 (Transformer Engine's recipe): a memory-bound one moves
// m k + k n + 2 m n bytes.
TEST(GemmTiles, Fp8OperandsAreOneByteAndItsOutputTwo) {
  auto g = eighty_sms();
  g.peak_flops[Precision::fp8] = 200e12;
  g.gemm_efficiency[Precision::fp8] = 1;
  g.memory_bandwidth = 1e12;
  const double m = 16, n = 8192, k = 8192;
  const KernelCost cost{KernelClass::gemm, Precision::fp8, 2 * m * n * k, 0, 1, {{m, n, k, 1}}};
  EXPECT_NEAR(kernel_time(g, cost), (m * k + k * n + 2 * m * n) / 1e12, 1e-15);
}

} // namespace
} // namespace dtsim::calibration
