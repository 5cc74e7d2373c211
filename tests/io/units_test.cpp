// io/units.hpp: each quantity's ladder, the rule that picks a unit, and one unit for a column.
#include "io/units.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <vector>

namespace dtsim::io {
namespace {

TEST(Units, ATimeTakesTheLargestUnitItReaches) {
  EXPECT_EQ(format(Quantity::time, 812.5e-6), "812.50 us");
  EXPECT_EQ(format(Quantity::time, 0.34519), "345.19 ms");
  EXPECT_EQ(format(Quantity::time, 63.0766), "63.077 s");
  // Minutes from 120 s, hours from 2 h, days from 2 d: 150 s = 2.5 min, 3 h = 180 min reads "3.00 h".
  EXPECT_EQ(format(Quantity::time, 150), "2.5 min");
  EXPECT_EQ(format(Quantity::time, 7199), "120.0 min");
  EXPECT_EQ(format(Quantity::time, 3 * 3600), "3.00 h");
  EXPECT_EQ(format(Quantity::time, 12.5 * 86400), "12.50 d");
}

TEST(Units, BytesAreBinaryAndBandwidthIsInBits) {
  EXPECT_EQ(format(Quantity::bytes, 512), "512 B");
  EXPECT_EQ(format(Quantity::bytes, 97.49 * 1024 * 1024), "97.49 MiB");
  EXPECT_EQ(format(Quantity::bytes, 40e9), "37.25 GiB"); // 40e9 / 2^30
  EXPECT_EQ(format(Quantity::bandwidth, 1.25e9), "10.00 Gbps");
  EXPECT_EQ(format(Quantity::bandwidth, 50e9), "400.00 Gbps");
  EXPECT_EQ(format(Quantity::bandwidth, 1e6), "8.00 Mbps");
}

TEST(Units, EnergyIsOneFamilyWithThreeSignificantFigures) {
  EXPECT_EQ(format(Quantity::energy, 1.8753e-6), "1.88 mWh"); // an iteration of quickstart
  EXPECT_EQ(format(Quantity::energy, 0.441), "441 Wh");
  EXPECT_EQ(format(Quantity::energy, 39.7), "39.7 kWh");
  // 999.6 Wh would round to "1000 Wh": the next unit takes it.
  EXPECT_EQ(format(Quantity::energy, 0.9996), "1.00 kWh");
  EXPECT_EQ(format(Quantity::money, 3.4214), "$3.42");
}

TEST(Units, AColumnTakesTheUnitOfItsLargestValue) {
  // A sweep's time per epoch from 1 to 8 nodes: 8.2 min down to 63 s, all in minutes.
  const std::vector<double> epochs{493.58, 250.1, 126.7, 63.0766};
  const auto& unit = unit_for_all(Quantity::time, epochs);
  EXPECT_EQ(unit.symbol, "min");
  EXPECT_EQ(format_in(Quantity::time, unit, epochs.back()), "1.1 min");
  EXPECT_EQ(number_in(unit, epochs.front()), "8.2");
}

TEST(Units, TheDocumentHoldsEveryLadderForTheReport) {
  const auto document = units_document();
  EXPECT_EQ(document["time"]["base"], "seconds");
  EXPECT_EQ(document["energy"]["base"], "kwh");
  ASSERT_EQ(document["bytes"]["units"].size(), units_of(Quantity::bytes).size());
  EXPECT_EQ(document["bytes"]["units"][2]["symbol"], "MiB");
  EXPECT_EQ(document["bytes"]["units"][2]["scale"], 1048576.0);
}

} // namespace
} // namespace dtsim::io
