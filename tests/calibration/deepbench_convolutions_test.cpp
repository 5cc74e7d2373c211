// The V100's and the P100's fp32 convolution ceilings against the measurements they came from: Baidu's DeepBench
// timings (calibration/measurements/v100-deepbench-2019-10-07-convolutions.json, cuDNN 7.6.2, and
// p100-deepbench-2017-convolutions.json, cuDNN 6.0.21, each at cudnnFind's fastest algorithm).
// Each pass is priced as `dtsim validate` prices a convolution case: its implicit GEMM (forward m = N P Q, n = K,
// k = C R S; data gradient m = N P Q, n = C R S, k = K; weight gradient m = C R S, n = K, k = N P Q), the fp32 input,
// output and weights as its bytes, a 3x3 stride-1 one also as a Winograd transform. The profile's constants price the
// median of the longer half of each set's timings (at or above the set's median time) exactly, so a change to the
// kernel model that moves either median shows here.
#include "calibration/cost_model.hpp"
#include "io/json_text.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace dtsim::calibration {
namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const auto mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

struct Timing {
  double measured = 0;  // seconds
  double predicted = 0; // seconds
};

// The predicted over measured time at the median of the timings at or above the set's median time.
double longer_half_ratio(const std::vector<Timing>& set) {
  std::vector<double> times;
  for (const auto& t : set)
    times.push_back(t.measured);
  const double cut = median(times);
  std::vector<double> ratios;
  for (const auto& t : set)
    if (t.measured >= cut) ratios.push_back(t.predicted / t.measured);
  return median(ratios);
}

struct Sets {
  std::vector<Timing> winograd, implicit_gemm;
};

// Every timing of a transcribed DeepBench sheet priced on `gpu`: the 3x3, stride-1 problems whose forward ran as
// Winograd in one set, the others in the second.
Sets price(const std::string& file, const GpuProfile& gpu) {
  const auto path = std::filesystem::path(DTSIM_SOURCE_DIR) / "calibration" / "measurements" / file;
  const auto document = nlohmann::json::parse(io::read_text_file(path, "measurement file"));
  Sets sets;
  for (const auto& c : document.at("convolutions")) {
    const auto get = [&](const char* key) { return c.at(key).get<int>(); };
    const int stride_h = get("stride_h"), stride_w = get("stride_w");
    const double n = get("n"), ch = get("c"), k = get("k"), r = get("r"), s = get("s"), h = get("h"), w = get("w");
    const double p = (get("h") + 2 * get("pad_h") - get("r")) / stride_h + 1; // output rows, integer division
    const double q = (get("w") + 2 * get("pad_w") - get("s")) / stride_w + 1;
    const bool conv3x3_stride1 = r == 3 && s == 3 && stride_h == 1 && stride_w == 1;
    const bool ran_winograd =
        conv3x3_stride1 && c.at("forward_algorithm").get<std::string>().find("WINOGRAD") != std::string::npos;
    const double bytes = 4 * (n * ch * h * w + n * k * p * q + k * ch * r * s);
    const std::pair<const char*, GemmDims> passes[] = {{"forward_us", {n * p * q, k, ch * r * s, 1, bytes}},
                                                       {"data_gradient_us", {n * p * q, ch * r * s, k, 1, bytes}},
                                                       {"weight_gradient_us", {ch * r * s, k, n * p * q, 1, bytes}}};
    for (const auto& [key, dims] : passes) {
      if (c.at(key).is_null()) continue; // N/A in the sheet: input layers' data gradients
      KernelCost cost{KernelClass::convolution, Precision::fp32, dims.flops(), bytes, 1};
      cost.gemms = {dims};
      cost.winograd = conv3x3_stride1;
      (ran_winograd ? sets.winograd : sets.implicit_gemm)
          .push_back({c.at(key).get<double>() * 1e-6, kernel_time(gpu, cost)});
    }
  }
  return sets;
}

TEST(DeepBenchConvolutions, TheV100Fp32CeilingsPriceTheLongerHalfOfTheirTimingsAtTheMedian) {
  const auto sets = price("v100-deepbench-2019-10-07-convolutions.json", *find_profile("v100"));
  // The counts the profile's sources name.
  ASSERT_EQ(sets.winograd.size(), 84u);
  ASSERT_EQ(sets.implicit_gemm.size(), 188u);
  EXPECT_NEAR(longer_half_ratio(sets.winograd), 1, 0.01);
  EXPECT_NEAR(longer_half_ratio(sets.implicit_gemm), 1, 0.01);
}

// DeepBench's P100 is a PCIe card (a workstation board): the same GP100 and 56 SMs as the SXM2 part the profile
// describes, at a boost clock of 1303 MHz instead of 1480, so 9.34 TFLOP/s of fp32 (3,584 lanes x 2 x 1.303 GHz)
// instead of 10.6. Priced at that peak, the ceilings are shares of the chip's own clock and carry to the SXM2 part.
TEST(DeepBenchConvolutions, TheP100Fp32CeilingsPriceTheLongerHalfOfTheirTimingsAtTheMedian) {
  GpuProfile pcie = *find_profile("p100");
  pcie.peak_flops[Precision::fp32] = 3584 * 2 * 1.303e9;
  const auto sets = price("p100-deepbench-2017-convolutions.json", pcie);
  // The GEMM ceiling from the same sheet's largest GEMM: M = 4096, N = 7133, K = 4096 in 26.287 ms (9.105 TFLOP/s).
  const GemmDims largest{4096, 7133, 4096, 1, 4.0 * (4096 * 4096 + 4096 * 7133 + 4096 * 7133), false};
  KernelCost gemm{KernelClass::gemm, Precision::fp32, largest.flops(), largest.bytes, 1};
  gemm.gemms = {largest};
  EXPECT_NEAR(kernel_time(pcie, gemm) / 26.287e-3, 1, 0.01);
  ASSERT_EQ(sets.winograd.size(), 72u);
  ASSERT_EQ(sets.implicit_gemm.size(), 210u);
  EXPECT_NEAR(longer_half_ratio(sets.winograd), 1, 0.01);
  EXPECT_NEAR(longer_half_ratio(sets.implicit_gemm), 1, 0.01);
}

} // namespace
} // namespace dtsim::calibration
