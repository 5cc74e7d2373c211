// Efficiency-curve fitting (calibration/fit.hpp): isotonic regression, knots, a known curve recovered from noisy
// samples with held-back error, alpha-beta least squares, and a whole measurement file turned into a profile.
#include "calibration/fit.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace dtsim::calibration {
namespace {

TEST(FitIsotonic, PoolAdjacentViolatorsOnANonMonotoneInput) {
  // 1, 3, 2, 4, 3.5, 5: the violators (3, 2) and (4, 3.5) pool into their means 2.5 and 3.75.
  const auto blocks = pool_adjacent_violators({1, 3, 2, 4, 3.5, 5});
  ASSERT_EQ(blocks.size(), 4u);
  EXPECT_DOUBLE_EQ(blocks[0].value, 1);
  EXPECT_DOUBLE_EQ(blocks[1].value, 2.5);
  EXPECT_EQ(blocks[1].first, 1u);
  EXPECT_EQ(blocks[1].last, 2u);
  EXPECT_DOUBLE_EQ(blocks[2].value, 3.75);
  EXPECT_DOUBLE_EQ(blocks[3].value, 5);
  // A violation that reaches back: 5, 1, 1, 1 pools into one block at their mean, 2.
  const auto back = pool_adjacent_violators({5, 1, 1, 1});
  ASSERT_EQ(back.size(), 1u);
  EXPECT_DOUBLE_EQ(back[0].value, 2);
  // Weights: 4 (weight 3) and 2 (weight 1) pool at (12 + 2) / 4 = 3.5.
  const auto weighted = pool_adjacent_violators({4, 2}, {3, 1});
  ASSERT_EQ(weighted.size(), 1u);
  EXPECT_DOUBLE_EQ(weighted[0].value, 3.5);
  EXPECT_DOUBLE_EQ(weighted[0].weight, 4);
  // Already monotone: nothing pools.
  EXPECT_EQ(pool_adjacent_violators({1, 2, 2, 3}).size(), 4u);
  EXPECT_THROW(pool_adjacent_violators({1, 2}, {1}), std::invalid_argument);
}

TEST(FitIsotonic, KnotsSitAtThePooledBlocksMeanLogSize) {
  // Efficiencies 0.2, 0.5, 0.4, 0.7 at 1e3 .. 1e6 (given out of order): 0.5 and 0.4 pool at 0.45, and their knot
  // sits at the mean of log10 4 and log10 5, 10^4.5.
  const EfficiencyCurve c = fit_monotone_curve({{1e5, 0.4}, {1e3, 0.2}, {1e6, 0.7}, {1e4, 0.5}});
  ASSERT_EQ(c.knots.size(), 3u);
  EXPECT_DOUBLE_EQ(c.knots[0].size, 1e3);
  EXPECT_DOUBLE_EQ(c.knots[0].efficiency, 0.2);
  EXPECT_NEAR(c.knots[1].size, std::pow(10.0, 4.5), 1e-6);
  EXPECT_DOUBLE_EQ(c.knots[1].efficiency, 0.45);
  EXPECT_DOUBLE_EQ(c.knots[2].size, 1e6);
  EXPECT_DOUBLE_EQ(c.knots[2].efficiency, 0.7);
  // Monotone: interpolation never decreases.
  double last = 0;
  for (double s = 1e2; s < 1e7; s *= 1.5) {
    EXPECT_GE(c.at(s), last);
    last = c.at(s);
  }
  // Repeated sizes become one point (their mean) before pooling: no two knots at one size.
  const EfficiencyCurve repeated = fit_monotone_curve({{1e3, 0.2}, {1e3, 0.4}, {1e4, 0.5}});
  ASSERT_EQ(repeated.knots.size(), 2u);
  EXPECT_DOUBLE_EQ(repeated.knots[0].efficiency, 0.3);
}

// The true curve of the synthetic GPU: smooth and saturating, as GEMMs' efficiency rises with size (a small GEMM
// takes about 3e8 / (0.8 x peak) whatever its FLOPs; a large one reaches 80% of the peak).
double true_efficiency(double flops) {
  return 0.8 * flops / (flops + 3e8);
}

TEST(FitCurve, RecoversAKnownMonotoneCurveFromNoisySamples) {
  constexpr double peak = 100e12, launch = 5e-6;
  std::mt19937 rng(20261122); // seeded: the same samples every run
  std::uniform_real_distribution<double> log_size(7.0, 13.0);
  std::normal_distribution<double> noise(0.0, 0.01); // 1% timing noise
  std::vector<TimedSample> samples;
  for (int i = 0; i < 200; ++i) {
    const double flops = std::pow(10.0, log_size(rng));
    const double work = flops / (peak * true_efficiency(flops));
    samples.push_back({flops, (work + launch) * (1 + noise(rng))});
  }
  const CurveFitOptions options{peak, launch, 5};
  const CurveFit fit = fit_efficiency_curve(samples, options);
  EXPECT_EQ(fit.held_back, 40u); // every 5th of 200
  EXPECT_EQ(fit.fitted, 160u);
  ASSERT_GE(fit.curve.knots.size(), 5u);
  // Every knot lies on the true curve, within the noise: 1% of time is about 1% of efficiency, and a pooled block
  // spans a stretch where the true curve changes a little.
  for (const auto& k : fit.curve.knots)
    EXPECT_NEAR(k.efficiency, true_efficiency(k.size), 0.03 + 0.05 * true_efficiency(k.size)) << "at " << k.size;
  // Between the knots too, from the smallest to the largest size.
  for (const double flops : {1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13})
    EXPECT_NEAR(fit.curve.at(flops), true_efficiency(flops), 0.02 + 0.03 * true_efficiency(flops)) << "at " << flops;
  // The held-back points' times are predicted within a few percent.
  ASSERT_TRUE(fit.median_error.has_value());
  EXPECT_LT(*fit.median_error, 0.02);
  EXPECT_LT(*fit.max_error, 0.06);
}

TEST(FitCurve, EfficiencyTakesTheLaunchOverheadOut) {
  // 1e9 FLOPs in 25 us with a 5 us launch: 1e9 / (20e-6 s x 100e12) = 0.5 (without the launch: 0.4).
  const CurveFitOptions options{100e12, 5e-6, 5};
  EXPECT_DOUBLE_EQ(sample_efficiency({1e9, 25e-6}, options), 0.5);
  EXPECT_DOUBLE_EQ(sample_efficiency({1e9, 25e-6}, {100e12, 0, 5}), 0.4);
  // A time at the launch overhead keeps a tenth of itself as work: efficiency 1e6 / (0.5 us x 100e12) = 0.02.
  EXPECT_DOUBLE_EQ(sample_efficiency({1e6, 5e-6}, options), 0.02);
  // The predicted time adds it back: 1e9 / (100e12 x 0.5) + 5 us = 25 us.
  const EfficiencyCurve flat{{{1e9, 0.5}}};
  EXPECT_DOUBLE_EQ(predicted_seconds(flat, 1e9, options), 25e-6);
}

TEST(FitCurve, FewerThanFivePointsHoldNothingBack) {
  const CurveFit fit = fit_efficiency_curve({{1e9, 1e-4}, {1e10, 5e-4}}, {100e12, 0, 5});
  EXPECT_EQ(fit.held_back, 0u);
  EXPECT_FALSE(fit.median_error.has_value());
  EXPECT_THROW(fit_efficiency_curve({}, {100e12, 0, 5}), std::invalid_argument);
  EXPECT_THROW(fit_efficiency_curve({{1e9, -1}}, {100e12, 0, 5}), std::invalid_argument);
}

TEST(FitAlphaBeta, RecoversLatencyAndBandwidth) {
  // time = 20 us + bytes / 100 GB/s, with 1% alternating error.
  std::vector<TimedSample> samples;
  int i = 0;
  for (double bytes = 1024; bytes <= 1 << 30; bytes *= 4, ++i)
    samples.push_back({bytes, (20e-6 + bytes / 100e9) * (i % 2 ? 1.01 : 0.99)});
  const AlphaBeta ab = fit_alpha_beta(samples);
  EXPECT_NEAR(ab.alpha, 20e-6, 0.4e-6);
  EXPECT_NEAR(ab.bandwidth(), 100e9, 2e9);
  EXPECT_LT(ab.max_error, 0.03);
  // Exact data: exact fit.
  const AlphaBeta exact = fit_alpha_beta({{0, 10e-6}, {1e9, 10e-6 + 0.01}});
  EXPECT_NEAR(exact.alpha, 10e-6, 1e-12);
  EXPECT_NEAR(exact.beta, 1e-11, 1e-20);
  EXPECT_THROW(fit_alpha_beta({{1e6, 1e-3}, {1e6, 2e-3}}), std::invalid_argument);
}

TEST(FitBase, DefaultBaseProfileByDeviceName) {
  EXPECT_EQ(default_base_profile("NVIDIA H100 80GB HBM3"), "h100-sxm");
  EXPECT_EQ(default_base_profile("NVIDIA H200"), "h200");
  EXPECT_EQ(default_base_profile("NVIDIA A100-SXM4-80GB"), "a100-80gb");
  EXPECT_EQ(default_base_profile("NVIDIA A100-PCIE-40GB"), "a100-40gb");
  EXPECT_EQ(default_base_profile("NVIDIA A100 80GB PCIe"), "a100-80gb");
  EXPECT_EQ(default_base_profile("NVIDIA A100-SXM4", 85e9), "a100-80gb");
  EXPECT_EQ(default_base_profile("Tesla V100-SXM2-16GB"), "v100");
  EXPECT_FALSE(default_base_profile("NVIDIA GeForce RTX 4090").has_value());
  EXPECT_FALSE(default_base_profile("NVIDIA A100-SXM4").has_value()); // no size anywhere
}

// A small measurement file of a made-up GPU on the H100 profile: GEMMs on a known curve, copies, launches.
MeasurementFile synthetic_file() {
  MeasurementFile m;
  m.origin = "synthetic.json";
  m.probe_version = "1.0.0";
  m.date = "2026-11-22T01:30:00Z";
  m.device.name = "NVIDIA H100 80GB HBM3";
  m.device.sms = 132;
  const double peak = 989.4e12, launch = 3e-6;
  for (double n = 256; n <= 16384; n *= std::sqrt(2.0)) {
    const double flops = 2 * n * n * n;
    m.gemms.push_back(
        {"cublasLt", Precision::bf16, n, n, n, 1, flops, {20, flops / (peak * true_efficiency(flops)) + launch}});
  }
  for (double bytes = 1 << 20; bytes <= 1 << 30; bytes *= 2)
    m.memory.push_back({"copy", bytes, {20, bytes / (3.35e12 * 0.9) + launch}});
  m.launches = {{20, 3e-6}, {20, 2.9e-6}, {20, 3.2e-6}};
  m.copies.push_back({"h2d", true, -1, -1, 1 << 28, {20, (1 << 28) / 50e9}});
  m.copies.push_back({"d2h", true, -1, -1, 1 << 28, {20, (1 << 28) / 52e9}});
  m.copies.push_back({"h2d", true, -1, -1, 1 << 20, {20, (1 << 20) / 20e9}}); // smaller: not the plateau
  m.copies.push_back({"p2p", false, 0, 1, 1 << 28, {20, (1 << 28) / 380e9}});
  for (double bytes = 1 << 20; bytes <= 1 << 30; bytes *= 4)
    m.collectives.push_back({"all_reduce", 8, bytes, Precision::bf16, {20, 25e-6 + bytes / 150e9}});
  return m;
}

TEST(FitMeasurements, AFileBecomesAMeasuredProfile) {
  const MeasurementFile m = synthetic_file();
  const GpuProfile base = *find_profile("h100-sxm");
  const MeasurementFit fit = fit_measurements(m, base);
  ASSERT_TRUE(fit.launch_overhead.has_value());
  EXPECT_DOUBLE_EQ(*fit.launch_overhead, 3e-6); // the median of 2.9, 3 and 3.2 us
  ASSERT_NE(fit.find(CurveGroup::gemm, Precision::bf16), nullptr);
  ASSERT_NE(fit.find(CurveGroup::memory, std::nullopt), nullptr);
  ASSERT_TRUE(fit.pcie.has_value());
  EXPECT_NEAR(fit.pcie->bytes_per_second, 52e9, 1e6); // the faster direction at the largest size
  ASSERT_TRUE(fit.nvlink.has_value());
  EXPECT_NEAR(fit.nvlink->bytes_per_second, 380e9, 1e6);
  ASSERT_EQ(fit.collectives.size(), 1u);
  EXPECT_NEAR(fit.collectives[0].fit.alpha, 25e-6, 1e-9);
  EXPECT_NEAR(fit.collectives[0].fit.bandwidth(), 150e9, 1e6);

  const GpuProfile g = measured_profile(base, m, fit, "h100-lab", "synthetic.json");
  EXPECT_EQ(g.name, "h100-lab");
  EXPECT_EQ(g.provenance, "measured");
  ASSERT_TRUE(g.measured.has_value());
  EXPECT_EQ(g.measured->device, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g.measured->measurements, "synthetic.json");
  EXPECT_DOUBLE_EQ(g.peak(Precision::bf16), base.peak(Precision::bf16)); // peaks from the base
  EXPECT_DOUBLE_EQ(g.memory_bytes, base.memory_bytes);
  EXPECT_DOUBLE_EQ(g.launch_overhead, 3e-6);
  EXPECT_NEAR(g.memory_efficiency, 0.9, 0.005);
  EXPECT_NEAR(g.pcie_bandwidth, 52e9, 1e6);
  EXPECT_NEAR(g.efficiency(KernelClass::gemm, Precision::bf16, 1e12), true_efficiency(1e12), 0.02);
  EXPECT_NEAR(g.efficiency(KernelClass::gemm, Precision::bf16, 1e9), true_efficiency(1e9), 0.03);
  EXPECT_NE(g.curve(KernelClass::gemm, Precision::bf16), nullptr);
  EXPECT_EQ(g.curve(KernelClass::gemm, Precision::fp32), nullptr); // not measured: the base's constant
  EXPECT_DOUBLE_EQ(g.efficiency(KernelClass::gemm, Precision::fp32, 1e12), base.gemm_efficiency.at(Precision::fp32));
  // Every fitted item is in the sources, with how it was fitted.
  const auto has_source = [&](const std::string& start) {
    for (const auto& s : g.sources)
      if (s.starts_with(start)) return true;
    return false;
  };
  EXPECT_TRUE(has_source("efficiency_curves.gemm.bf16: "));
  EXPECT_TRUE(has_source("efficiency_curves.memory"));
  EXPECT_TRUE(has_source("launch_overhead = "));
  EXPECT_TRUE(has_source("links.pcie_bandwidth = "));
  EXPECT_TRUE(has_source("links.nvlink_bandwidth = "));
  EXPECT_TRUE(has_source("h100-sxm: ")); // the base's own sources, for the figures taken from it
  // What is written reads back as the same profile.
  const GpuProfile back = parse_profile(profile_to_json(g), "h100-lab.json");
  EXPECT_EQ(back.memory_curve.knots, g.memory_curve.knots);
  EXPECT_EQ(back.efficiency_curves.at(KernelClass::gemm).at(Precision::bf16).knots,
            g.efficiency_curves.at(KernelClass::gemm).at(Precision::bf16).knots);
  EXPECT_EQ(back.measured->probe_version, "1.0.0");
}

TEST(FitMeasurements, PrecisionsWithoutAPeakAreLeftOutWithANote) {
  MeasurementFile m = synthetic_file();
  m.gemms.push_back({"cublasLt", Precision::fp8, 4096, 4096, 4096, 1, 1.37e11, {20, 1e-4}});
  const MeasurementFit fit = fit_measurements(m, *find_profile("v100")); // V100: no fp8, no bf16
  EXPECT_EQ(fit.find(CurveGroup::gemm, Precision::fp8), nullptr);
  ASSERT_GE(fit.notes.size(), 2u);
  EXPECT_NE(fit.notes[0].find("no bf16 peak"), std::string::npos) << fit.notes[0];
}

} // namespace
} // namespace dtsim::calibration
