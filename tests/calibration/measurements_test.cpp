// The measurement-file parser (docs/measurement-format.md): every kind read into its value type, and malformed files
// refused with the file, the JSON pointer of the field and what was expected.
#include "calibration/measurements.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace dtsim::calibration {
namespace {

using nlohmann::json;

json valid_file() {
  return json::parse(R"({
    "dtsim_measurements_version": 1, "probe_version": "1.0.0", "date": "2026-11-22T01:30:00Z", "host": "node1",
    "quick": false,
    "device": {"name": "NVIDIA H100 80GB HBM3", "count": 8, "compute_capability": "9.0", "sms": 132,
               "clock_hz": 1980000000, "memory_clock_hz": 2619000000, "memory_bus_bits": 5120,
               "memory_bytes": 85045870592, "l2_bytes": 52428800},
    "driver_version": "550.54.15", "cuda_version": "13.0", "cublas_version": "13.0.0", "nccl_version": "2.21.5",
    "measurements": [
      {"kind": "gemm", "library": "cublasLt", "precision": "bf16", "m": 8192, "n": 8192, "k": 8192, "batch": 1,
       "flops": 1.0995e12, "stats": {"runs": 20, "median": 1.4e-3, "mean": 1.41e-3, "min": 1.39e-3, "max": 1.5e-3,
       "stddev": 1e-5}, "check": "passed"},
      {"kind": "memory", "op": "copy", "bytes": 2147483648, "stats": {"runs": 20, "median": 7.1e-4}, "check": "passed"},
      {"kind": "kernel", "op": "softmax", "precision": "bf16", "elements": 16777216, "bytes": 67108864,
       "stats": {"runs": 20, "median": 3e-5}, "check": "passed"},
      {"kind": "attention", "variant": "fused", "precision": "bf16", "batch": 4, "heads": 16, "sequence": 2048,
       "head_dim": 128, "causal": true, "flops": 2.2e11, "stats": {"runs": 20, "median": 6e-4}, "check": "passed"},
      {"kind": "copy", "direction": "h2d", "pinned": true, "bytes": 268435456, "stats": {"runs": 20, "median": 5e-3}},
      {"kind": "copy", "direction": "p2p", "src": 0, "dst": 1, "bytes": 268435456, "stats": {"runs": 20, "median": 7e-4}},
      {"kind": "launch", "stats": {"runs": 100, "median": 4e-6}},
      {"kind": "collective", "op": "all_reduce", "ranks": 8, "bytes": 1073741824, "precision": "bf16",
       "stats": {"runs": 20, "median": 6e-3}}
    ]
  })");
}

// The error parse_measurements gives for `doc`, or "" if it parses.
std::string error_of(const json& doc) {
  try {
    parse_measurements(doc.dump(), "m.json");
  } catch (const CalibrationError& e) {
    return e.what();
  }
  return "";
}

TEST(MeasurementFile, EveryKindIsRead) {
  const MeasurementFile m = parse_measurements(valid_file().dump(), "m.json");
  EXPECT_EQ(m.origin, "m.json");
  EXPECT_EQ(m.probe_version, "1.0.0");
  EXPECT_EQ(m.device.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(m.device.sms, 132);
  EXPECT_DOUBLE_EQ(m.device.l2_bytes, 52428800);
  EXPECT_EQ(m.nccl_version, "2.21.5");
  ASSERT_EQ(m.gemms.size(), 1u);
  EXPECT_EQ(m.gemms[0].precision, Precision::bf16);
  EXPECT_DOUBLE_EQ(m.gemms[0].m, 8192);
  EXPECT_DOUBLE_EQ(m.gemms[0].flops, 1.0995e12);
  EXPECT_DOUBLE_EQ(m.gemms[0].stats.median, 1.4e-3);
  EXPECT_DOUBLE_EQ(m.gemms[0].stats.stddev, 1e-5);
  ASSERT_EQ(m.memory.size(), 1u);
  EXPECT_EQ(m.memory[0].op, "copy");
  ASSERT_EQ(m.kernels.size(), 1u);
  EXPECT_DOUBLE_EQ(m.kernels[0].elements, 16777216);
  ASSERT_EQ(m.attention.size(), 1u);
  EXPECT_EQ(m.attention[0].variant, "fused");
  EXPECT_TRUE(m.attention[0].causal);
  ASSERT_EQ(m.copies.size(), 2u);
  EXPECT_TRUE(m.copies[0].pinned);
  EXPECT_EQ(m.copies[1].dst, 1);
  ASSERT_EQ(m.launches.size(), 1u);
  EXPECT_DOUBLE_EQ(m.launches[0].median, 4e-6);
  ASSERT_EQ(m.collectives.size(), 1u);
  EXPECT_EQ(m.collectives[0].ranks, 8);
  EXPECT_EQ(m.size(), 8u);
}

TEST(MeasurementFile, AMissingFieldIsNamedByItsPointer) {
  json doc = valid_file();
  doc["measurements"][0].erase("flops");
  EXPECT_EQ(error_of(doc), "m.json: /measurements/0/flops: expected a positive number in FLOPs, but it is missing");
  doc = valid_file();
  doc["measurements"][1]["stats"].erase("median");
  EXPECT_EQ(error_of(doc),
            "m.json: /measurements/1/stats/median: expected a positive number in seconds, but it is missing");
  doc = valid_file();
  doc["device"].erase("sms");
  EXPECT_EQ(error_of(doc), "m.json: /device/sms: expected a whole number from 1 to 2147483647, but it is missing");
  doc = valid_file();
  doc.erase("date");
  EXPECT_EQ(error_of(doc), "m.json: /date: expected a string, but it is missing");
  doc = valid_file();
  doc["measurements"][6].erase("stats");
  EXPECT_EQ(error_of(doc),
            "m.json: /measurements/6/stats: expected an object with runs and median (seconds), but it is missing");
}

TEST(MeasurementFile, AMalformedFieldIsNamedByItsPointer) {
  json doc = valid_file();
  doc["measurements"][0]["m"] = "8192";
  EXPECT_EQ(error_of(doc), "m.json: /measurements/0/m: expected a whole number >= 1, got string");
  doc = valid_file();
  doc["measurements"][0]["m"] = 81.5;
  EXPECT_EQ(error_of(doc), "m.json: /measurements/0/m: expected a whole number >= 1, got 81.5");
  doc = valid_file();
  doc["measurements"][1]["stats"]["median"] = -1;
  EXPECT_EQ(error_of(doc), "m.json: /measurements/1/stats/median: expected a positive number in seconds, got -1");
  doc = valid_file();
  doc["measurements"][0]["precision"] = "fp64";
  EXPECT_EQ(error_of(doc), "m.json: /measurements/0/precision: expected a precision (one of: fp32, tf32, fp16, bf16, "
                           "fp8), got \"fp64\"");
  doc = valid_file();
  doc["measurements"][2]["kind"] = "conv";
  EXPECT_EQ(error_of(doc), "m.json: /measurements/2/kind: expected one of: gemm, memory, kernel, attention, copy, "
                           "launch, collective, got \"conv\"");
  doc = valid_file();
  doc["measurements"][4]["direction"] = "h2h";
  EXPECT_EQ(error_of(doc), "m.json: /measurements/4/direction: expected one of: h2d, d2h, d2d, p2p, got \"h2h\"");
  doc = valid_file();
  doc["measurements"][3]["causal"] = "yes";
  EXPECT_EQ(error_of(doc), "m.json: /measurements/3/causal: expected true or false, got string");
  doc = valid_file();
  doc["measurements"][7]["stats"]["runs"] = 0;
  EXPECT_EQ(error_of(doc), "m.json: /measurements/7/stats/runs: expected a whole number from 1 to 2147483647, got 0");
  // A count past what an int holds is refused, not wrapped (the fuzzer's find: 85045870592 SMs read as -853475328).
  doc = valid_file();
  doc["device"]["sms"] = 85045870592;
  EXPECT_EQ(error_of(doc), "m.json: /device/sms: expected a whole number from 1 to 2147483647, got 85045870592");
  doc = valid_file();
  doc["measurements"] = json::array();
  EXPECT_EQ(error_of(doc), "m.json: /measurements: expected a non-empty array, got an empty array");
}

TEST(MeasurementFile, AFailedCheckIsRefused) {
  json doc = valid_file();
  doc["measurements"][0]["check"] = "failed";
  const std::string error = error_of(doc);
  EXPECT_EQ(error.rfind("m.json: /measurements/0/check: expected \"passed\", got \"failed\"", 0), 0u) << error;
  EXPECT_NE(error.find("must not report a fast time"), std::string::npos) << error;
  // A computing kernel without a check is refused too; a copy (which computes nothing) may omit it, not fail it.
  doc = valid_file();
  doc["measurements"][1].erase("check");
  EXPECT_EQ(error_of(doc).rfind("m.json: /measurements/1/check: expected \"passed\", but it is missing", 0), 0u);
  doc = valid_file();
  doc["measurements"][4]["check"] = "mismatch";
  EXPECT_EQ(error_of(doc).rfind("m.json: /measurements/4/check: expected \"passed\", got \"mismatch\"", 0), 0u);
}

TEST(MeasurementFile, VersionAndDocumentErrors) {
  json doc = valid_file();
  doc["dtsim_measurements_version"] = 2;
  EXPECT_EQ(error_of(doc), "m.json: /dtsim_measurements_version: expected 1 (the version this dtsim reads), got 2");
  doc.erase("dtsim_measurements_version");
  EXPECT_EQ(error_of(doc), "m.json: /dtsim_measurements_version: expected 1, but it is missing");
  EXPECT_EQ(error_of(json::array()), "m.json: /: expected an object, got array");
  try {
    parse_measurements("{\"dtsim_measurements_version\": 1,", "broken.json");
    FAIL() << "expected a CalibrationError";
  } catch (const CalibrationError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("broken.json: invalid JSON", 0), 0u) << e.what();
  }
  // The pointer and the message are there for callers too.
  doc = valid_file();
  doc["measurements"][0].erase("flops");
  try {
    parse_measurements(doc.dump(), "m.json");
  } catch (const CalibrationError& e) {
    EXPECT_EQ(e.file(), "m.json");
    EXPECT_EQ(e.pointer(), "/measurements/0/flops");
  }
  EXPECT_THROW(load_measurements("/nonexistent/m.json"), CalibrationError);
}

TEST(MeasurementFile, OptionalFieldsTakeTheirDefaultsAndUnknownOnesAreIgnored) {
  json doc = valid_file();
  doc.erase("probe_version");
  doc["measurements"][0].erase("batch");
  doc["measurements"][0]["tile"] = "128x256"; // a newer probe's field
  doc["future_section"] = {{"x", 1}};
  const MeasurementFile m = parse_measurements(doc.dump(), "m.json");
  EXPECT_EQ(m.probe_version, "unknown");
  EXPECT_DOUBLE_EQ(m.gemms[0].batch, 1);
}

TEST(MeasurementFile, WhatTheProbeSkippedOrFoundBrokenIsKept) {
  json doc = valid_file();
  doc["skipped"] = json::parse(R"([{"what": "attention fused", "reason": "built without cuDNN"}])");
  doc["failed_checks"] = json::parse(R"([{"what": "gemm fp8", "error": "element 17 differs"}])");
  const MeasurementFile m = parse_measurements(doc.dump(), "m.json");
  ASSERT_EQ(m.skipped.size(), 1u);
  EXPECT_EQ(m.skipped[0].what, "attention fused");
  EXPECT_EQ(m.skipped[0].why, "built without cuDNN");
  ASSERT_EQ(m.failed_checks.size(), 1u);
  EXPECT_EQ(m.failed_checks[0].why, "element 17 differs");
  doc["failed_checks"][0].erase("error");
  EXPECT_EQ(error_of(doc), "m.json: /failed_checks/0/error: expected a string, but it is missing");
}

} // namespace
} // namespace dtsim::calibration
