#include "sim/scenario/units.hpp"

#include <gtest/gtest.h>

namespace dtsim::scenario {
namespace {

double q(std::string_view text, Dimension dim) {
  const auto v = parse_quantity(text, dim);
  EXPECT_TRUE(v.has_value()) << "\"" << text << "\" should parse";
  return v.value_or(-1);
}

TEST(Units, BandwidthInBitsIsDecimalAndDividedByEight) {
  EXPECT_DOUBLE_EQ(q("10Gbps", Dimension::bandwidth), 1.25e9);
  EXPECT_DOUBLE_EQ(q("100 Mbps", Dimension::bandwidth), 12.5e6);
  EXPECT_DOUBLE_EQ(q("1Kbps", Dimension::bandwidth), 125.0);
  EXPECT_DOUBLE_EQ(q("1.6Tbps", Dimension::bandwidth), 200e9);
  EXPECT_DOUBLE_EQ(q("25Gb/s", Dimension::bandwidth), 3.125e9);
}

TEST(Units, BandwidthInBytesBothSpellingsDecimalAndBinary) {
  EXPECT_DOUBLE_EQ(q("25GB/s", Dimension::bandwidth), 25e9);
  EXPECT_DOUBLE_EQ(q("25GBps", Dimension::bandwidth), 25e9);
  EXPECT_DOUBLE_EQ(q("1.25 GB/s", Dimension::bandwidth), 1.25e9);
  EXPECT_DOUBLE_EQ(q("300MB/s", Dimension::bandwidth), 300e6);
  EXPECT_DOUBLE_EQ(q("2TB/s", Dimension::bandwidth), 2e12);
  EXPECT_DOUBLE_EQ(q("8KB/s", Dimension::bandwidth), 8e3);
  EXPECT_DOUBLE_EQ(q("1B/s", Dimension::bandwidth), 1.0);
  EXPECT_DOUBLE_EQ(q("1KiB/s", Dimension::bandwidth), 1024.0);
  EXPECT_DOUBLE_EQ(q("1MiB/s", Dimension::bandwidth), 1024.0 * 1024);
  EXPECT_DOUBLE_EQ(q("16GiB/s", Dimension::bandwidth), 16.0 * 1024 * 1024 * 1024);
  // bits and bytes differ by case: 8 Gbps is one GB/s
  EXPECT_DOUBLE_EQ(q("8Gbps", Dimension::bandwidth), q("1GBps", Dimension::bandwidth));
}

TEST(Units, Bytes) {
  EXPECT_DOUBLE_EQ(q("16GiB", Dimension::bytes), 16.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(q("25MB", Dimension::bytes), 25e6);
  EXPECT_DOUBLE_EQ(q("25MiB", Dimension::bytes), 25.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(q("512KiB", Dimension::bytes), 512.0 * 1024);
  EXPECT_DOUBLE_EQ(q("512KB", Dimension::bytes), 512e3);
  EXPECT_DOUBLE_EQ(q("8B", Dimension::bytes), 8.0);
  EXPECT_DOUBLE_EQ(q("2TB", Dimension::bytes), 2e12);
  EXPECT_DOUBLE_EQ(q("1TiB", Dimension::bytes), 1024.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(q("80 GB", Dimension::bytes), 80e9);
}

TEST(Units, Time) {
  EXPECT_DOUBLE_EQ(q("5us", Dimension::time), 5e-6);
  EXPECT_DOUBLE_EQ(q("5\u00b5s", Dimension::time), 5e-6);
  EXPECT_DOUBLE_EQ(q("1.5ms", Dimension::time), 1.5e-3);
  EXPECT_DOUBLE_EQ(q("2s", Dimension::time), 2.0);
  EXPECT_DOUBLE_EQ(q("100ns", Dimension::time), 100e-9);
  EXPECT_DOUBLE_EQ(q("0us", Dimension::time), 0.0);
}

TEST(Units, DecimalSubmultiplesAreTheNearestDoubles) {
  // Exactly what a person would type as a plain number, so canonical JSON shows 5e-06 and not 4.9999999999999996e-06.
  EXPECT_EQ(q("5us", Dimension::time), 5e-6);
  EXPECT_EQ(q("25us", Dimension::time), 25e-6);
  EXPECT_EQ(q("1.5ms", Dimension::time), 1.5e-3);
  EXPECT_EQ(q("100ns", Dimension::time), 100e-9);
  EXPECT_EQ(q("10Gbps", Dimension::bandwidth), 1.25e9);
}

TEST(Units, FlopRate) {
  EXPECT_DOUBLE_EQ(q("125TFLOPS", Dimension::flop_rate), 125e12);
  EXPECT_DOUBLE_EQ(q("15.7 TFLOP/s", Dimension::flop_rate), 15.7e12);
  EXPECT_DOUBLE_EQ(q("900GFLOPS", Dimension::flop_rate), 900e9);
  EXPECT_DOUBLE_EQ(q("1PFLOP/s", Dimension::flop_rate), 1e15);
  EXPECT_DOUBLE_EQ(q("2 PFLOPS", Dimension::flop_rate), 2e15);
}

TEST(Units, BareNumbersAreBaseUnits) {
  EXPECT_DOUBLE_EQ(q("1250000000", Dimension::bandwidth), 1.25e9);
  EXPECT_DOUBLE_EQ(q("1e-6", Dimension::time), 1e-6);
  EXPECT_DOUBLE_EQ(q(" 42 ", Dimension::bytes), 42.0);
  EXPECT_DOUBLE_EQ(q("1e3MB", Dimension::bytes), 1e9);
}

TEST(Units, NegativesParseTheCallerRejectsThem) {
  EXPECT_DOUBLE_EQ(q("-5us", Dimension::time), -5e-6);
}

TEST(Units, Rejects) {
  for (const char* bad : {"", "   ", "Gbps", "10 parsecs", "10 Gbps extra", "10Gbps/s", "ten Gbps", "10gbps", "1e",
                          "inf", "nan", "10GiBps extra", "--5Gbps"})
    EXPECT_FALSE(parse_quantity(bad, Dimension::bandwidth)) << "\"" << bad << "\"";
  EXPECT_FALSE(parse_quantity("5 mins", Dimension::time));
  EXPECT_FALSE(parse_quantity("12 TFLOPs", Dimension::flop_rate));
}

TEST(Units, RejectsTheWrongDimension) {
  EXPECT_FALSE(parse_quantity("16GiB", Dimension::bandwidth));
  EXPECT_FALSE(parse_quantity("10Gbps", Dimension::bytes));
  EXPECT_FALSE(parse_quantity("25GB/s", Dimension::bytes));
  EXPECT_FALSE(parse_quantity("5us", Dimension::bytes));
  EXPECT_FALSE(parse_quantity("8B", Dimension::time));
  EXPECT_FALSE(parse_quantity("125TFLOPS", Dimension::bandwidth));
  EXPECT_FALSE(parse_quantity("1GB/s", Dimension::flop_rate));
}

TEST(Units, DescribeGivesExamples) {
  EXPECT_EQ(describe(Dimension::bandwidth), "a bandwidth such as \"10Gbps\" or \"25GB/s\"");
  EXPECT_NE(describe(Dimension::bytes).find("\"25MiB\""), std::string::npos);
  EXPECT_NE(describe(Dimension::time).find("\"5us\""), std::string::npos);
  EXPECT_NE(describe(Dimension::flop_rate).find("TFLOPS"), std::string::npos);
}

} // namespace
} // namespace dtsim::scenario
