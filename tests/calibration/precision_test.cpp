#include "calibration/precision.hpp"

#include <gtest/gtest.h>

namespace dtsim::calibration {
namespace {

TEST(Precision, NamesRoundTrip) {
  EXPECT_EQ(precision_names(), (std::vector<std::string>{"fp32", "tf32", "fp16", "bf16", "fp8", "amp"}));
  for (const auto& name : precision_names()) {
    const auto p = parse_precision(name);
    ASSERT_TRUE(p.has_value()) << name;
    EXPECT_EQ(to_string(*p), name);
  }
}

TEST(Precision, UnknownNameIsNullopt) {
  EXPECT_FALSE(parse_precision("fp64").has_value());
  EXPECT_FALSE(parse_precision("").has_value());
}

TEST(Precision, ActivationBytesFollowTheStorageType) {
  EXPECT_EQ(activation_bytes(Precision::fp32), 4);
  EXPECT_EQ(activation_bytes(Precision::tf32), 4); // tf32 is a math mode; tensors stay fp32
  EXPECT_EQ(activation_bytes(Precision::fp16), 2);
  EXPECT_EQ(activation_bytes(Precision::bf16), 2);
  EXPECT_EQ(activation_bytes(Precision::amp), 2);
  // Transformer Engine hands bf16 tensors between modules; only a GEMM's cast input, which Linear saves, is fp8.
  EXPECT_EQ(activation_bytes(Precision::fp8), 2);
  EXPECT_EQ(saved_gemm_input_bytes(Precision::fp8), 1);
  EXPECT_EQ(saved_gemm_input_bytes(Precision::bf16), 2);
}

TEST(Precision, GradientBytesAreFp32ForAmpAndBf16ForFp8) {
  EXPECT_EQ(gradient_bytes(Precision::fp32), 4);
  EXPECT_EQ(gradient_bytes(Precision::tf32), 4);
  EXPECT_EQ(gradient_bytes(Precision::amp), 4); // fp32 master gradients
  EXPECT_EQ(gradient_bytes(Precision::fp16), 2);
  EXPECT_EQ(gradient_bytes(Precision::bf16), 2);
  EXPECT_EQ(gradient_bytes(Precision::fp8), 2); // fp8 GEMMs, bf16 gradients (see precision.cpp)
}

TEST(Precision, AmpComputesInFp16) {
  EXPECT_EQ(math_precision(Precision::amp), Precision::fp16);
  for (auto p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16, Precision::fp8})
    EXPECT_EQ(math_precision(p), p);
}

} // namespace
} // namespace dtsim::calibration
