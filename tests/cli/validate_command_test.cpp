// `dtsim validate` as a user runs it: the table and its summary, CSV, a case that fails to run (status 1, with the
// reason), a case file that does not parse (status 2, file and field named), and the held-back points of a
// measurement file.
#include "cli_util.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace dtsim::testing {
namespace {

namespace fs = std::filesystem;

// A source tree of its own: calibration/validation/ with the given cases.
fs::path tree(const TempDir& dir, const std::vector<std::pair<std::string, std::string>>& cases) {
  const auto root = dir.path() / "tree";
  fs::create_directories(root / "calibration" / "validation");
  for (const auto& [name, text] : cases)
    dir.write("tree/calibration/validation/" + name, text);
  return root;
}

const char* kGemmCase = R"({"name": "gemm 4096", "source": "a test", "measured": {"value": 700, "unit": "TFLOP/s"},
  "op": {"profile": "h100-sxm", "kind": "gemm", "precision": "bf16", "m": 4096, "n": 4096, "k": 4096},
  "metric": "tflops"})";

// The shipped H100 cases of 8192 (files op-h100-gemm-8192-*): fp16 an independent one, bf16, tf32, fp32 and fp8 the
// anchors the profile took its ceilings from.
TEST(ValidateCommand, PrintsOpAndEndToEndCasesApartWithTheirErrors) {
  TempDir dir;
  const auto inv = run_dtsim("validate --filter op-h100-gemm-8192", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  EXPECT_NE(inv.out.find("5 case(s) from calibration/validation/"), std::string::npos) << inv.out;
  for (const char* column : {"case", "metric", "predicted", "measured", "unit", "error"})
    EXPECT_NE(inv.out.find(column), std::string::npos) << column;
  EXPECT_NE(inv.out.find("Op level"), std::string::npos) << inv.out;
  EXPECT_NE(inv.out.find("GEMM 8192^3 bf16, H100 SXM [anchor]"), std::string::npos) << inv.out;
  EXPECT_NE(inv.out.find("TFLOP/s"), std::string::npos);
  EXPECT_NE(inv.out.find("|error| over 1 op-level case(s) (anchors excluded): median"), std::string::npos) << inv.out;
  EXPECT_EQ(inv.out.find("End to end"), std::string::npos) << inv.out;

  const auto both = run_dtsim("validate --filter bert-large-seq128", dir);
  ASSERT_EQ(both.status, 0) << both.err;
  EXPECT_NE(both.out.find("End to end"), std::string::npos) << both.out;
  EXPECT_NE(both.out.find("|error| over 1 end-to-end case(s)"), std::string::npos) << both.out;
  EXPECT_EQ(both.out.find("Op level"), std::string::npos) << both.out;
}

TEST(ValidateCommand, CsvHasOneRowPerCaseWithItsLevel) {
  TempDir dir;
  const auto inv = run_dtsim("validate --csv --filter op-h100-gemm-8192", dir);
  ASSERT_EQ(inv.status, 0) << inv.err;
  EXPECT_EQ(
      inv.out.rfind(
          "file,level,anchor,disputed,name,metric,predicted,measured,unit,error_percent,source,note,failure\n", 0),
      0u)
      << inv.out;
  EXPECT_EQ(std::count(inv.out.begin(), inv.out.end(), '\n'), 6);
  EXPECT_NE(inv.out.find("\"op-h100-gemm-8192-bf16.json\",op,true,"), std::string::npos) << inv.out;
  EXPECT_NE(inv.out.find("\"op-h100-gemm-8192-fp16.json\",op,false,"), std::string::npos) << inv.out;
}

TEST(ValidateCommand, ACaseThatFailsToRunGivesStatusOneAndItsReason) {
  TempDir dir;
  const auto root = tree(dir, {{"a.json", kGemmCase}, {"b.json", R"({"name": "missing scenario", "source": "a test",
                                 "measured": {"value": 1, "unit": "samples/s"},
                                 "scenario": "scenarios/nowhere.json", "metric": "throughput"})"}});
  const auto inv = run_dtsim("validate --root '" + root.string() + "'", dir);
  EXPECT_EQ(inv.status, 1) << inv.out << inv.err;
  EXPECT_NE(inv.out.find("missing scenario"), std::string::npos) << inv.out;
  EXPECT_NE(inv.out.find("failed: "), std::string::npos) << inv.out;
  EXPECT_NE(inv.out.find("nowhere.json"), std::string::npos) << inv.out;
  EXPECT_NE(inv.out.find("|error| over 1 op-level case(s)"), std::string::npos) << inv.out;
  EXPECT_NE(inv.out.find("1 case(s) failed to run"), std::string::npos) << inv.out;
}

TEST(ValidateCommand, ABrokenCaseFileIsBadInputNamingFileAndField) {
  TempDir dir;
  const auto root = tree(dir, {{"bad.json", R"({"name": "no source", "measured": {"value": 1, "unit": "s"},
                                  "scenario": "scenarios/quickstart.json", "metric": "iteration_seconds"})"}});
  const auto inv = run_dtsim("validate --root '" + root.string() + "'", dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("bad.json: /source: missing field \"source\""), std::string::npos) << inv.err;
}

TEST(ValidateCommand, RefusesWhatCannotBeValidated) {
  TempDir dir;
  auto inv = run_dtsim("validate --filter no-case-has-this-name", dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("no case matches --filter"), std::string::npos) << inv.err;
  inv = run_dtsim("validate --root '" + dir.path().string() + "'", dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("no calibration/validation/ folder"), std::string::npos) << inv.err;
  inv = run_dtsim("validate --profile h100-sxm", dir);
  EXPECT_EQ(inv.status, 2);
  EXPECT_NE(inv.err.find("--measurements"), std::string::npos) << inv.err;
}

// Five bf16 GEMMs and five copies: the fit holds back the largest of each (every 5th point by size).
TEST(ValidateCommand, AddsTheHeldBackPointsOfAMeasurementFile) {
  TempDir dir;
  const auto root = tree(dir, {{"a.json", kGemmCase}});
  std::string measurements = R"({"dtsim_measurements_version": 1, "probe_version": "1.0.0",
    "date": "2026-11-22T01:30:00Z", "device": {"name": "NVIDIA H100 80GB HBM3", "sms": 132}, "measurements": [)";
  for (int i = 1; i <= 5; ++i) {
    const double n = 1024.0 * i;
    measurements += "{\"kind\": \"gemm\", \"precision\": \"bf16\", \"m\": 4096, \"n\": " + std::to_string(int(n)) +
                    ", \"k\": 4096, \"flops\": " + std::to_string(2 * 4096.0 * n * 4096) +
                    ", \"stats\": {\"runs\": 20, \"median\": " + std::to_string(1e-4 * i) +
                    "}, \"check\": \"passed\"},";
    measurements += "{\"kind\": \"memory\", \"op\": \"copy\", \"bytes\": " + std::to_string(int(1e8 * i)) +
                    ", \"stats\": {\"runs\": 20, \"median\": " + std::to_string(4e-5 * i) +
                    "}, \"check\": \"passed\"}" + (i < 5 ? "," : "");
  }
  measurements += "]}";
  const auto file = dir.write("lab.json", measurements);
  const auto inv = run_dtsim("validate --root '" + root.string() + "' --measurements '" + file.string() + "'", dir);
  ASSERT_EQ(inv.status, 0) << inv.out << inv.err;
  EXPECT_NE(inv.out.find("held back: GEMM 4096x5120x4096 bf16"), std::string::npos) << inv.out;
  EXPECT_NE(inv.out.find("held back: memory copy 500000000 B"), std::string::npos) << inv.out;
  EXPECT_NE(inv.out.find("|error| over 1 op-level case(s)"), std::string::npos) << inv.out;
  EXPECT_NE(inv.out.find("|error| over 2 held-back measurement(s)"), std::string::npos) << inv.out;
  // Predicted on a named profile instead of the device's.
  const auto other =
      run_dtsim("validate --root '" + root.string() + "' --measurements '" + file.string() + "' --profile h200", dir);
  EXPECT_EQ(other.status, 0) << other.err;
  const auto unknown =
      run_dtsim("validate --root '" + root.string() + "' --measurements '" + file.string() + "' --profile h300", dir);
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.err.find("neither a shipped profile"), std::string::npos) << unknown.err;
}

} // namespace
} // namespace dtsim::testing
