// The V100's fp32 convolution ceilings against the measurements they came from: Baidu's DeepBench timings
// (calibration/measurements/v100-deepbench-2019-10-07-convolutions.json, cuDNN 7.6.2 at cudnnFind's fastest algorithm).
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

TEST(DeepBenchConvolutions, TheV100Fp32CeilingsPriceTheLongerHalfOfTheirTimingsAtTheMedian) {
  const auto path = std::filesystem::path(DTSIM_SOURCE_DIR) / "calibration" / "measurements" /
                    "v100-deepbench-2019-10-07-convolutions.json";
  const auto document = nlohmann::json::parse(io::read_text_file(path, "measurement file"));
  const GpuProfile v100 = *find_profile("v100");
  std::vector<Timing> winograd, implicit_gemm;
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
      (ran_winograd ? winograd : implicit_gemm).push_back({c.at(key).get<double>() * 1e-6, kernel_time(v100, cost)});
    }
  }
  // The counts the profile's sources name.
  ASSERT_EQ(winograd.size(), 84u);
  ASSERT_EQ(implicit_gemm.size(), 188u);
  EXPECT_NEAR(longer_half_ratio(winograd), 1, 0.01);
  EXPECT_NEAR(longer_half_ratio(implicit_gemm), 1, 0.01);
}

} // namespace
} // namespace dtsim::calibration
