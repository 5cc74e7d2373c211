// Shipped profiles and the profile parser's errors.
#include "calibration/cost_model.hpp"
#include "calibration/profile.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <stdexcept>

namespace dtsim::calibration {
namespace {

using nlohmann::json;

// The error message parse_profile gives for `doc`, or "" if it parses.
std::string error_of(const json& doc) {
  try {
    parse_profile(doc.dump(), "test.json");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

json valid_profile() {
  return json::parse(R"({
    "name": "test", "display_name": "Test GPU", "provenance": "derived", "sources": ["made up"],
    "peak_flops": {"fp32": 10e12, "fp16": 100e12},
    "memory": {"capacity": 16e9, "bandwidth": 1e12, "efficiency": 0.8},
    "links": {"nvlink_bandwidth": 0, "pcie_bandwidth": 16e9},
    "efficiency": {"gemm": {"fp32": 0.9, "fp16": 0.7}, "convolution": {"fp32": 0.8, "fp16": 0.5}},
    "launch_overhead": 5e-6,
    "collectives": {"step_overhead": 1e-6}
  })");
}

TEST(Profiles, TheShippedGpusAreEmbedded) {
  EXPECT_EQ(profile_names(),
            (std::vector<std::string>{"a100-40gb", "a100-80gb", "cpu-xeon-8380x2", "gtx680", "h100-sxm",
                                      "h100-sxm-measured", "h200", "h200-measured", "p100", "v100"}));
  EXPECT_EQ(find_profile("h200")->compute_units, 132);
  EXPECT_DOUBLE_EQ(find_profile("h200")->memory_bytes, 141e9);
  EXPECT_FALSE(find_profile("v100-32gb").has_value());
}

TEST(Profiles, EveryEmbeddedProfileParsesWithSourcesAndProvenance) {
  for (const auto& name : profile_names()) {
    SCOPED_TRACE(name);
    const auto g = find_profile(name);
    ASSERT_TRUE(g.has_value());
    EXPECT_EQ(g->name, name);
    EXPECT_FALSE(g->display_name.empty());
    // Derived from datasheets and published measurements, or fitted by dtsim calibrate from dtsim-probe's runs
    // (calibration/measurements/), which say where they were measured.
    EXPECT_EQ(g->provenance, name.ends_with("-measured") ? "measured" : "derived");
    EXPECT_EQ(g->measured.has_value(), name.ends_with("-measured"));
    EXPECT_GE(g->sources.size(), 5u);
    EXPECT_GT(g->peak(Precision::fp32), 0);
    // A CPU-only node and the Kepler GTX 680 (Coates et al. 2013's GPU): no tensor cores, no NVLink. The Pascal P100
    // has NVLink and no tensor cores, and its fp16 is left out until measured.
    const bool modern = !name.starts_with("cpu-") && name != "gtx680";
    if (modern && name != "p100") {
      EXPECT_GT(g->peak(Precision::amp), g->peak(Precision::fp32));
    } // tensor cores on every other GPU
    EXPECT_GT(g->memory_bytes, 0);
    EXPECT_GT(g->memory_bandwidth, 0);
    if (modern) {
      EXPECT_GT(g->nvlink_bandwidth, g->pcie_bandwidth);
    }
    EXPECT_GT(g->launch_overhead, 0);
    for (const auto& [p, peak] : g->peak_flops) {
      EXPECT_GT(g->efficiency(KernelClass::gemm, p), 0);
      EXPECT_LE(g->efficiency(KernelClass::convolution, p), 1);
    }
  }
}

TEST(Profiles, ShippedPeaksAreTheDatasheetFigures) {
  // shared/reference/hardware.md, "GPU peaks".
  const auto v100 = *find_profile("v100");
  EXPECT_DOUBLE_EQ(v100.peak(Precision::fp32), 15.7e12);
  EXPECT_DOUBLE_EQ(v100.peak(Precision::fp16), 125e12);
  EXPECT_DOUBLE_EQ(v100.memory_bandwidth, 900e9);
  EXPECT_DOUBLE_EQ(v100.nvlink_bandwidth, 150e9); // half of 300 GB/s both directions
  const auto a100 = *find_profile("a100-80gb");
  EXPECT_DOUBLE_EQ(a100.peak(Precision::tf32), 156e12);
  EXPECT_DOUBLE_EQ(a100.peak(Precision::bf16), 312e12);
  EXPECT_DOUBLE_EQ(a100.memory_bandwidth, 2039e9);
  EXPECT_DOUBLE_EQ(find_profile("a100-40gb")->memory_bandwidth, 1555e9);
  const auto h100 = *find_profile("h100-sxm");
  EXPECT_DOUBLE_EQ(h100.peak(Precision::fp8), 1978.9e12);
  EXPECT_DOUBLE_EQ(h100.memory_bandwidth, 3.35e12);
  // The bf16 ceiling reproduces the measured 798 TFLOP/s at 8192^3 (hardware.md) through the tile model: 16 waves at
  // utilization 0.970, each after one HBM round trip, plus the launch.
  const double n = 8192;
  const KernelCost gemm{KernelClass::gemm, Precision::bf16, 2 * n * n * n, 0, 1, {{n, n, n, 1}}};
  EXPECT_NEAR(gemm.flops / kernel_time(h100, gemm) / 1e12, 798, 1);
  EXPECT_DOUBLE_EQ(h100.efficiency(KernelClass::memory, Precision::bf16), 0.90); // ~3.0 / 3.35 TB/s
}

TEST(Profiles, TheGtx680IsItsDatasheet) {
  // calibration/profiles/gtx680.json: 1536 CUDA cores x 2 FLOP x 1006 MHz; 6.008 Gbps x 256 bits; 2048 MB; PCIe 3.0
  // x16; 8 SMX. No fp16 math, no NVLink, and no compute capability: collectives are MPI's, not NCCL's.
  const auto g = *find_profile("gtx680");
  EXPECT_NEAR(g.peak(Precision::fp32), 1536 * 2 * 1.006e9, 0.001e12);
  EXPECT_THROW(g.peak(Precision::fp16), std::out_of_range);
  EXPECT_NEAR(g.memory_bandwidth, 6.008e9 * 256 / 8, 0.1e9);
  EXPECT_DOUBLE_EQ(g.memory_bytes, 2048.0 * (1u << 20));
  EXPECT_NEAR(g.pcie_bandwidth, 8e9 * 16 * 128.0 / 130 / 8, 0.01e9);
  EXPECT_DOUBLE_EQ(g.nvlink_bandwidth, 0);
  EXPECT_EQ(g.compute_units, 8);
  EXPECT_EQ(g.compute_capability, 0);
  EXPECT_GT(g.collective_step_overhead, 0);
}

TEST(Profiles, TheCpuNodeIsItsHandProducts) {
  // calibration/profiles/cpu-xeon-8380x2.json: 2 sockets x 40 cores x 2.3 GHz x 64 fp32 FLOP/cycle (two AVX-512 FMA
  // units x 16 lanes x 2), and 2 sockets x 8 channels x DDR4-3200 x 8 bytes.
  const auto cpu = *find_profile("cpu-xeon-8380x2");
  EXPECT_DOUBLE_EQ(cpu.peak(Precision::fp32), 2.0 * 40 * 2.3e9 * (2 * 16 * 2));
  EXPECT_DOUBLE_EQ(cpu.memory_bandwidth, 2.0 * 8 * 3200e6 * 8);
  EXPECT_DOUBLE_EQ(cpu.memory_bytes, 16.0 * 32 * (1u << 30));
  EXPECT_DOUBLE_EQ(cpu.nvlink_bandwidth, 0);
  EXPECT_NEAR(cpu.pcie_bandwidth, 16e9 * 16 * 128.0 / 130 / 8, 0.01e9); // PCIe 4.0 x16, 31.5 GB/s as usually written
  EXPECT_EQ(cpu.compute_units, 0);                                      // no GEMM wave model
  // Ice Lake-SP has no bf16 (AVX512-BF16 or AMX) and no fp16 math: reduced precisions are refused by name.
  EXPECT_THROW((void)cpu.peak(Precision::bf16), std::out_of_range);
  EXPECT_THROW((void)cpu.peak(Precision::amp), std::out_of_range);
  EXPECT_EQ(cpu.peak_flops.size(), 1u);
}

TEST(Profiles, AmpUsesTheFp16PeakAndEfficiencies) {
  const GpuProfile g = parse_profile(valid_profile().dump(), "test.json");
  EXPECT_DOUBLE_EQ(g.peak(Precision::amp), 100e12);
  EXPECT_DOUBLE_EQ(g.efficiency(KernelClass::gemm, Precision::amp), 0.7);
  EXPECT_DOUBLE_EQ(g.efficiency(KernelClass::convolution, Precision::amp), 0.5);
  EXPECT_DOUBLE_EQ(g.efficiency(KernelClass::memory, Precision::amp), 0.8);
}

TEST(Profiles, MissingPeakThrowsOutOfRangeNamingGpuAndPrecision) {
  const auto v100 = *find_profile("v100");
  try {
    v100.peak(Precision::fp8);
    FAIL() << "expected std::out_of_range";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("GPU 'v100' has no fp8 peak"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fp32, fp16"), std::string::npos) << e.what(); // what it does have
  }
  EXPECT_THROW(v100.peak(Precision::bf16), std::out_of_range);
  EXPECT_THROW(v100.efficiency(KernelClass::gemm, Precision::tf32), std::out_of_range);
}

TEST(ProfileParser, MissingPeakFlopsNamesThePath) {
  json doc = valid_profile();
  doc.erase("peak_flops");
  EXPECT_EQ(error_of(doc), "test.json: /peak_flops: expected an object of FLOP/s by precision, but it is missing");
}

TEST(ProfileParser, WrongTypesNameThePath) {
  json doc = valid_profile();
  doc["peak_flops"] = "312TFLOPS";
  EXPECT_EQ(error_of(doc), "test.json: /peak_flops: expected an object, got string");
  doc = valid_profile();
  doc["peak_flops"]["fp16"] = "125e12";
  EXPECT_EQ(error_of(doc), "test.json: /peak_flops/fp16: expected a positive number in FLOP/s, got string");
  doc = valid_profile();
  doc["memory"]["bandwidth"] = true;
  EXPECT_EQ(error_of(doc), "test.json: /memory/bandwidth: expected a positive number in bytes/s, got boolean");
  doc = valid_profile();
  doc["sources"] = json::array({"ok", 3});
  EXPECT_EQ(error_of(doc), "test.json: /sources/1: expected a string, got number");
}

TEST(ProfileParser, OutOfRangeValuesNameThePath) {
  json doc = valid_profile();
  doc["efficiency"]["gemm"]["fp16"] = 1.2;
  EXPECT_EQ(error_of(doc), "test.json: /efficiency/gemm/fp16: expected a fraction in (0, 1], got 1.2");
  doc = valid_profile();
  doc["memory"]["capacity"] = -1;
  EXPECT_EQ(error_of(doc), "test.json: /memory/capacity: expected a positive number in bytes, got -1");
}

TEST(ProfileParser, UnknownFieldsAndPrecisionsAreErrors) {
  json doc = valid_profile();
  doc["memory"]["bandwith"] = 1e12;
  EXPECT_EQ(error_of(doc),
            "test.json: /memory/bandwith: unknown field (expected one of: capacity, bandwidth, efficiency, latency)");
  doc = valid_profile();
  doc["peak_flops"]["fp64"] = 1e12;
  EXPECT_EQ(error_of(doc),
            "test.json: /peak_flops/fp64: unknown precision (expected one of: fp32, tf32, fp16, bf16, fp8)");
  doc = valid_profile();
  doc["peak_flops"]["amp"] = 1e12;
  EXPECT_EQ(error_of(doc), "test.json: /peak_flops/amp: amp is not a math precision: AMP uses the fp16 entry");
}

TEST(ProfileParser, PeaksAndEfficienciesMustCoverTheSamePrecisions) {
  json doc = valid_profile();
  doc["efficiency"]["convolution"].erase("fp16");
  EXPECT_EQ(error_of(doc), "test.json: /efficiency/convolution/fp16: expected a fraction in (0, 1], but it is missing "
                           "(/peak_flops has fp16)");
  doc = valid_profile();
  doc["efficiency"]["gemm"]["bf16"] = 0.5;
  EXPECT_EQ(error_of(doc), "test.json: /efficiency/gemm/bf16: /peak_flops has no bf16 entry");
  doc = valid_profile();
  doc["peak_flops"].erase("fp32");
  doc["efficiency"]["gemm"].erase("fp32");
  doc["efficiency"]["convolution"].erase("fp32");
  EXPECT_NE(error_of(doc).find("test.json: /peak_flops/fp32: expected"), std::string::npos);
}

TEST(ProfileParser, InvalidJsonAndBadProvenanceAreReported) {
  EXPECT_THROW(parse_profile("{", "broken.json"), std::runtime_error);
  try {
    parse_profile("{", "broken.json");
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("broken.json: invalid JSON", 0), 0u) << e.what();
  }
  EXPECT_EQ(error_of(json::array()), "test.json: /: expected an object, got array");
  json doc = valid_profile();
  doc["provenance"] = "guessed";
  EXPECT_EQ(error_of(doc), "test.json: /provenance: expected \"derived\" or \"measured\", got \"guessed\"");
}

TEST(ProfileParser, AValidDocumentParsesEveryField) {
  const GpuProfile g = parse_profile(valid_profile().dump(), "test.json");
  EXPECT_EQ(g.name, "test");
  EXPECT_EQ(g.display_name, "Test GPU");
  EXPECT_EQ(g.sources, std::vector<std::string>{"made up"});
  EXPECT_DOUBLE_EQ(g.memory_bytes, 16e9);
  EXPECT_DOUBLE_EQ(g.memory_bandwidth, 1e12);
  EXPECT_DOUBLE_EQ(g.nvlink_bandwidth, 0);
  EXPECT_DOUBLE_EQ(g.pcie_bandwidth, 16e9);
  EXPECT_DOUBLE_EQ(g.gemm_efficiency.at(Precision::fp32), 0.9);
  EXPECT_DOUBLE_EQ(g.conv_efficiency.at(Precision::fp32), 0.8);
  EXPECT_DOUBLE_EQ(g.launch_overhead, 5e-6);
  EXPECT_DOUBLE_EQ(g.collective_step_overhead, 1e-6);
}

} // namespace
} // namespace dtsim::calibration
