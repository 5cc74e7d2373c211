// `dtsim calibrate` as a user runs it: a measurement file written here (a synthetic H100 with known curves) becomes
// a profile that parses, says it was measured and holds the curves; bad files are refused with the field's pointer
// and nothing written; nccl-tests output gives alpha, beta and the protocol efficiency.
#include "cli_util.hpp"

#include "calibration/profile.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>

#include <gtest/gtest.h>

namespace dtsim::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string quoted(const fs::path& path) {
  return "'" + path.string() + "'";
}

json stats(double seconds) {
  return {{"runs", 20},
          {"median", seconds},
          {"mean", seconds},
          {"min", seconds * 0.99},
          {"max", seconds * 1.02},
          {"stddev", seconds * 0.005}};
}

// A probe run on an H100: bf16 GEMMs on 0.8 f / (f + 3e8) of the 989.4 TFLOP/s peak, copy/scale/triad at up to 90%
// of 3.35 TB/s, a 4 us launch, copies over PCIe and NVLink, and an all-reduce at 25 us + bytes / 180 GB/s.
json measurement_file(const std::string& device = "NVIDIA H100 80GB HBM3") {
  const double launch = 4e-6;
  json list = json::array();
  for (double n = 256; n <= 16384; n *= std::sqrt(2.0)) {
    const double m = std::round(n), flops = 2 * m * m * m;
    const double eff = 0.8 * flops / (flops + 3e8);
    list.push_back({{"kind", "gemm"},
                    {"library", "cublasLt"},
                    {"precision", "bf16"},
                    {"m", m},
                    {"n", m},
                    {"k", m},
                    {"batch", 1},
                    {"flops", flops},
                    {"stats", stats(flops / (989.4e12 * eff) + launch)},
                    {"check", "passed"}});
  }
  for (double bytes = 1 << 20; bytes <= double(1 << 30); bytes *= 2)
    for (const char* op : {"copy", "scale", "triad"}) {
      const double eff = 0.9 * bytes / (bytes + 2e6);
      list.push_back({{"kind", "memory"},
                      {"op", op},
                      {"bytes", bytes},
                      {"stats", stats(bytes / (3.35e12 * eff) + launch)},
                      {"check", "passed"}});
    }
  for (const char* direction : {"h2d", "d2h"})
    list.push_back({{"kind", "copy"},
                    {"direction", direction},
                    {"pinned", true},
                    {"bytes", 1 << 28},
                    {"stats", stats((1 << 28) / 55e9)}});
  list.push_back({{"kind", "copy"},
                  {"direction", "p2p"},
                  {"src", 0},
                  {"dst", 1},
                  {"bytes", 1 << 28},
                  {"stats", stats((1 << 28) / 390e9)}});
  list.push_back({{"kind", "launch"}, {"stats", stats(launch)}});
  for (double bytes = 1 << 20; bytes <= double(1 << 30); bytes *= 4)
    list.push_back({{"kind", "collective"},
                    {"op", "all_reduce"},
                    {"ranks", 8},
                    {"bytes", bytes},
                    {"precision", "bf16"},
                    {"stats", stats(25e-6 + bytes / 180e9)}});
  return {{"dtsim_measurements_version", 1},
          {"probe_version", "1.0.0"},
          {"date", "2026-11-22T01:30:00Z"},
          {"host", "gpu-node-1"},
          {"device", {{"name", device}, {"count", 8}, {"sms", 132}, {"memory_bytes", 85045870592.0}}},
          {"measurements", list}};
}

TEST(Calibrate, WritesAMeasuredProfileThatParses) {
  TempDir dir;
  const auto input = dir.write("h100.json", measurement_file().dump(1));
  const auto output = dir.path() / "h100-lab.json";
  const auto inv = run_dtsim("calibrate " + quoted(input) + " -o " + quoted(output), dir);
  ASSERT_EQ(inv.status, 0) << inv.err << inv.out;
  // The table: each curve with its held-back error, the fitted figures with their units.
  for (const auto* text : {"Base profile h100-sxm", "gemm bf16", "memory", "held-back error", "FLOPs", "bytes",
                           "launch overhead", "4.00 us", "PCIe bandwidth", "55.0 GB/s", "NVLink bandwidth",
                           "390.0 GB/s", "all_reduce x 8 ranks", "alpha 25.00 us", "180.0 GB/s", "Wrote"})
    EXPECT_NE(inv.out.find(text), std::string::npos) << text << "\n" << inv.out;

  const auto g = calibration::parse_profile(read_file(output), output.string());
  EXPECT_EQ(g.name, "h100-lab"); // the output file's name
  EXPECT_EQ(g.provenance, "measured");
  ASSERT_TRUE(g.measured.has_value());
  EXPECT_EQ(g.measured->device, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g.measured->date, "2026-11-22T01:30:00Z");
  EXPECT_EQ(g.measured->probe_version, "1.0.0");
  EXPECT_EQ(g.measured->measurements, input.string());
  ASSERT_NE(g.curve(calibration::KernelClass::gemm, calibration::Precision::bf16), nullptr);
  EXPECT_FALSE(g.memory_curve.empty());
  EXPECT_NEAR(g.efficiency(calibration::KernelClass::gemm, calibration::Precision::bf16, 1e12),
              0.8 * 1e12 / (1e12 + 3e8), 0.01);
  EXPECT_NEAR(g.memory_efficiency, 0.9, 0.01);
  EXPECT_DOUBLE_EQ(g.launch_overhead, 4e-6);
  EXPECT_DOUBLE_EQ(g.peak(calibration::Precision::bf16), 989.4e12); // from the base
  // No temporary left beside it.
  for (const auto& entry : fs::directory_iterator(dir.path()))
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
}

TEST(Calibrate, BaseAndNameCanBeGiven) {
  TempDir dir;
  const auto input = dir.write("m.json", measurement_file("Some Future GPU").dump());
  const auto output = dir.path() / "out.json";
  // No shipped profile matches the device: --base is needed, and nothing is written without it.
  const auto refused = run_dtsim("calibrate " + quoted(input) + " -o " + quoted(output), dir);
  EXPECT_EQ(refused.status, 2) << refused.out;
  EXPECT_NE(refused.err.find("/device/name"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--base"), std::string::npos) << refused.err;
  EXPECT_FALSE(fs::exists(output));
  const auto inv =
      run_dtsim("calibrate " + quoted(input) + " -o " + quoted(output) + " --base h200 --name future-gpu", dir);
  ASSERT_EQ(inv.status, 0) << inv.err << inv.out;
  const auto g = calibration::parse_profile(read_file(output), output.string());
  EXPECT_EQ(g.name, "future-gpu");
  EXPECT_DOUBLE_EQ(g.memory_bytes, 141e9); // the H200's capacity
  const auto bad_base = run_dtsim("calibrate " + quoted(input) + " -o " + quoted(output) + " --base h300", dir);
  EXPECT_EQ(bad_base.status, 2);
  EXPECT_NE(bad_base.err.find("--base"), std::string::npos) << bad_base.err;
}

TEST(Calibrate, AMalformedFileOrAFailedCheckIsRefusedWritingNothing) {
  TempDir dir;
  const auto output = dir.path() / "p.json";
  json doc = measurement_file();
  doc["measurements"][3]["check"] = "failed";
  const auto failed = run_dtsim("calibrate " + quoted(dir.write("f.json", doc.dump())) + " -o " + quoted(output), dir);
  EXPECT_EQ(failed.status, 2) << failed.out;
  EXPECT_NE(failed.err.find("/measurements/3/check: expected \"passed\", got \"failed\""), std::string::npos)
      << failed.err;
  doc = measurement_file();
  doc["measurements"][0].erase("flops");
  const auto missing = run_dtsim("calibrate " + quoted(dir.write("g.json", doc.dump())) + " -o " + quoted(output), dir);
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("g.json: /measurements/0/flops: expected a positive number in FLOPs, but it is missing"),
            std::string::npos)
      << missing.err;
  EXPECT_FALSE(fs::exists(output));
  // Usage errors.
  EXPECT_EQ(run_dtsim("calibrate " + quoted(dir.write("h.json", measurement_file().dump())), dir).status, 2);
  EXPECT_EQ(run_dtsim("calibrate", dir).status, 2);
}

TEST(Calibrate, NcclTestsOutputGivesAlphaBetaAndProtocolEfficiency) {
  TempDir dir;
  // all_reduce_perf on 8 ranks, written from alpha = 20 us and 200 GB/s (busbw factor 2 x 7 / 8 = 1.75).
  std::string text =
      "# Collective test starting: all_reduce_perf\n"
      "# nThread 1 nGpus 8 minBytes 1048576 maxBytes 1073741824 step: 4(factor) warmup iters: 5 iters: 20\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   "
      "algbw   busbw #wrong\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  "
      "(GB/s)  (GB/s)\n";
  for (double bytes = 1 << 20; bytes <= double(1 << 30); bytes *= 4) {
    const double us = 20 + bytes / 200e9 * 1e6, algbw = bytes / us / 1e3;
    text += fmt::format("{:12.0f}  {:12.0f}     float     sum      -1  {:7.1f}  {:6.2f}  {:6.2f}       0  {:7.1f}  "
                        "{:6.2f}  {:6.2f}       0\n",
                        bytes, bytes / 4, us, algbw, algbw * 1.75, us, algbw, algbw * 1.75);
  }
  text += "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 200.0\n";
  const auto file = dir.write("ar.txt", text);
  const auto inv = run_dtsim("calibrate --nccl-tests " + quoted(file) + " --link-bandwidth 450GB/s", dir);
  ASSERT_EQ(inv.status, 0) << inv.err << inv.out;
  for (const auto* want : {"all_reduce_perf: 8 ranks", "alpha (latency)", " us\n", "s/byte", "200.0 GB/s",
                           "plateau bus bandwidth", "protocol efficiency", "% of the 450.0 GB/s link"})
    EXPECT_NE(inv.out.find(want), std::string::npos) << want << "\n" << inv.out;
  // alpha within 2% of 20 us (the times are printed to 0.1 us).
  const auto at = inv.out.find("alpha (latency)");
  ASSERT_NE(at, std::string::npos);
  EXPECT_NEAR(std::stod(inv.out.substr(at + 15)), 20.0, 0.4) << inv.out;
  const auto bad = run_dtsim("calibrate --nccl-tests " + quoted(file) + " --link-bandwidth fast", dir);
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--link-bandwidth"), std::string::npos) << bad.err;
}

} // namespace
} // namespace dtsim::testing
